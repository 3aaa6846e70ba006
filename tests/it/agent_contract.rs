//! Issue 12 on the real control plane: an agent at rest writes nothing for
//! any valid spec (counted at its transport layer and, independently, by
//! the apiserver's `apiserver_request_total` in a cluster of its own); what
//! the production contract forbids is removed whoever added it, in one
//! write; a reshaped PodDisruptionBudget is restored; Events alarm only on
//! trouble.

use std::time::Duration;

use berth_shared::api::Runtime;
use berth_tests::grants_file::TestBinding;
use berth_tests::harness::{self, TestNamespace, wait_for, wait_for_value};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::agent_support::{
    Agent, AgentOpts, ENVIRONMENT, Granted, PROJECT, binding, create_runtime, metric_sum,
    reconciles, setup_granted, wait_condition, wait_reconciles, write_grants, writes,
};

/// The namespace labels that give Runtimes the test identity.
fn identity_labels() -> [(&'static str, &'static str); 2] {
    [
        ("berth.dev/project", PROJECT),
        ("berth.dev/environment", ENVIRONMENT),
    ]
}

/// A spec that uses every optional feature and non-canonical quantities.
fn busy_spec(profile: &str) -> Value {
    json!({
        "runtimeProfile": profile,
        "resources": {
            "requests": {"cpu": "0.5", "memory": "1024Mi"},
            "limits": {"cpu": "1.5", "memory": "1.5Gi"},
        },
        "autoscaling": {"enabled": true, "minReplicas": 2, "maxReplicas": 4},
        "networkPolicy": {"enabled": true, "ingress": [{"podLabels": {"role": "frontend"}}]},
        "jobs": [{"name": "migrate"}],
        "schedules": [{"name": "nightly", "schedule": "0 3 * * *"}],
        "config": {"env": {"MODE": "prod"}},
    })
}

#[tokio::test]
async fn agent_contract_zero_writes_at_rest_counted_by_the_apiserver() {
    // A cluster of its own: the apiserver's counters carry no client label.
    let cluster = tokio::task::spawn_blocking(|| harness::private_cluster("quiet"))
        .await
        .expect("cluster thread");
    let client = cluster.admin_client().await;
    harness::install_crds(&client).await;
    harness::create_runtime_class(&client, "bounded", "bounded-runc").await;
    let ns_name = "quiet";
    let tns = TestNamespace::create(client.clone(), ns_name.to_string(), &identity_labels()).await;
    let grants = write_grants(&[binding("bw", "bounded", "bounded-runc")]);
    let mut opts = AgentOpts::new(ns_name, Some(&grants));
    opts.kubeconfig = Some(cluster.kubeconfig.clone());
    let agent = Agent::start(opts).await;

    create_runtime(&tns, "web", busy_spec("bw")).await;
    // A plain one too, on the default runtime (another service: one Runtime
    // per identity).
    create_runtime(
        &tns,
        "plain",
        json!({"service": "plain", "resources": {"requests": {"memory": "0.5Gi"}}}),
    )
    .await;
    wait_condition(&tns, "web", "Ready", "True", None).await;
    wait_condition(&tns, "plain", "Ready", "True", None).await;
    // Ready comes with the minimum available; the rest of the rollout
    // still moves the status (counts), which is not "at rest". On a loaded
    // machine that took longer than the settle below. web has an HPA
    // (minReplicas 2) over a Deployment created at 1 replica: the HPA
    // scales it at its first sync, about 15 s after it was created, and
    // that second rollout is not "at rest" either (CI once counted its
    // status write inside the idle window).
    for (name, min_replicas) in [("web", 2), ("plain", 1)] {
        crate::contract_adversary::rolled_out(&client, ns_name, name, min_replicas).await;
    }
    // The last status-only Deployment update wakes the reconcile at most
    // 5 s late (agent `controller::pace`) and its progress write is paced
    // (5 s per Runtime): let both land.
    tokio::time::sleep(Duration::from_secs(11)).await;

    // Another field manager adds a label and an annotation (tolerated).
    let foreign = PatchParams {
        field_manager: Some("policy-engine".to_string()),
        ..Default::default()
    };
    let tag = json!({"metadata": {
        "labels": {"policy.example/checked": "true"},
        "annotations": {"mesh.example/inject": "false"}}});
    Api::<Deployment>::namespaced(client.clone(), ns_name)
        .patch("web", &foreign, &Patch::Merge(&tag))
        .await
        .expect("foreign label on Deployment");
    Api::<Service>::namespaced(client.clone(), ns_name)
        .patch("web", &foreign, &Patch::Merge(&tag))
        .await
        .expect("foreign label on Service");

    // Settle (the foreign patch itself triggers one reconcile, which must
    // write nothing either), then count over several forced resyncs.
    wait_reconciles(&agent, 4.0).await;
    let agent_before = agent.metrics().await;
    let server_before = harness::apiserver_requests(&client, harness::agent_kind_write).await;
    wait_reconciles(&agent, 8.0).await;
    let agent_after = agent.metrics().await;
    let server_after = harness::apiserver_requests(&client, harness::agent_kind_write).await;
    let resyncs = reconciles(&agent_after) - reconciles(&agent_before);
    let agent_writes = writes(&agent_after) - writes(&agent_before);
    let server_writes = server_after - server_before;
    eprintln!(
        "idle window: {resyncs} reconciles, {agent_writes} writes at the agent's transport, \
         {server_writes} writes counted by the apiserver"
    );
    let lines = |m: &str| -> Vec<String> {
        m.lines()
            .filter(|l| l.starts_with("berth_agent_api_requests_total"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        agent_writes,
        0.0,
        "an idle reconcile must not write;\nbefore: {:#?}\nafter: {:#?}\nlog:\n{}",
        lines(&agent_before),
        lines(&agent_after),
        agent.log_text()
    );
    assert_eq!(
        server_writes,
        0.0,
        "the apiserver counted writes to the agent's kinds while idle; log:\n{}",
        agent.log_text()
    );
    // The counters are alive: a real change is counted by both.
    let api: Api<Runtime> = Api::namespaced(client.clone(), ns_name);
    api.patch(
        "plain",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"config": {"env": {"MODE": "changed"}}}})),
    )
    .await
    .expect("change plain");
    // The apiserver counts this test's own PATCH of the Runtime too, so
    // the agent's part is more than one write beyond the window; and the
    // agent's own count is waited for, not read once (it raced the
    // apiserver's: a failure seen on 2026-12-06 with a clean idle window).
    let own_after = writes(&agent_after);
    wait_for_value(
        "the change applied, by both counts",
        Duration::from_secs(60),
        || {
            let (client, agent) = (client.clone(), &agent);
            async move {
                let n = harness::apiserver_requests(&client, harness::agent_kind_write).await;
                let own = writes(&agent.metrics().await);
                (n > server_after + 1.0 && own > own_after).then_some(())
            }
        },
    )
    .await;
}

/// A foreign change by `intruder` (strategic merge patch).
async fn intrude<K>(api: &Api<K>, name: &str, patch: Value)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = PatchParams {
        field_manager: Some("intruder".to_string()),
        ..Default::default()
    };
    api.patch(name, &params, &Patch::Strategic(&patch))
        .await
        .unwrap_or_else(|e| panic!("foreign patch {patch}: {e}"));
}

fn agent_writes_to(metrics: &str, resource: &str) -> f64 {
    let wanted = format!("resource=\"{resource}\"");
    metric_sum(metrics, "berth_agent_api_requests_total", |l| {
        !l.contains("method=\"GET\"") && l.contains(&wanted)
    })
}

#[tokio::test]
async fn agent_contract_removes_forbidden_fields_whoever_added_them() {
    let Granted { ns, bw, grants, .. } = setup_granted("agent-contract").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": bw, "replicas": 1})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    let deployments: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    let pod = |extra: Value| json!({"spec": {"template": {"spec": extra}}});
    let container =
        |sc: Value| pod(json!({"containers": [{"name": "app", "securityContext": sc}]}));
    // (what is added, how to see it is still there)
    type Still = fn(&Value) -> bool;
    let cases: Vec<(&str, Value, Still)> = vec![
        ("hostNetwork", pod(json!({"hostNetwork": true})), |p| {
            p["hostNetwork"] == json!(true)
        }),
        ("hostPID", pod(json!({"hostPID": true})), |p| {
            p["hostPID"] == json!(true)
        }),
        ("hostIPC", pod(json!({"hostIPC": true})), |p| {
            p["hostIPC"] == json!(true)
        }),
        (
            "privileged",
            container(json!({"privileged": true, "allowPrivilegeEscalation": true})),
            |p| p["containers"][0]["securityContext"]["privileged"] == json!(true),
        ),
        (
            "capabilities.add",
            container(json!({"capabilities": {"add": ["NET_ADMIN"]}})),
            |p| !p["containers"][0]["securityContext"]["capabilities"]["add"].is_null(),
        ),
        (
            "allowPrivilegeEscalation",
            container(json!({"allowPrivilegeEscalation": true})),
            |p| p["containers"][0]["securityContext"]["allowPrivilegeEscalation"] == json!(true),
        ),
        (
            "readOnlyRootFilesystem",
            container(json!({"readOnlyRootFilesystem": false})),
            |p| p["containers"][0]["securityContext"]["readOnlyRootFilesystem"] == json!(false),
        ),
        (
            "initContainers",
            pod(json!({"initContainers": [{"name": "sneak", "image": "registry.invalid/x:1"}]})),
            |p| !p["initContainers"].is_null(),
        ),
        (
            "extra container",
            pod(json!({"containers": [{"name": "sidecar", "image": "registry.invalid/x:1"}]})),
            |p| p["containers"].as_array().is_some_and(|c| c.len() > 1),
        ),
        (
            "hostPath volume",
            pod(json!({"volumes": [{"name": "host", "hostPath": {"path": "/"}}]})),
            |p| {
                p["volumes"]
                    .as_array()
                    .is_some_and(|v| v.iter().any(|v| v["name"] == "host"))
            },
        ),
        (
            "serviceAccountName",
            pod(json!({"serviceAccountName": "default"})),
            |p| p["serviceAccountName"] == json!("default"),
        ),
        (
            "automountServiceAccountToken",
            pod(json!({"automountServiceAccountToken": true})),
            |p| p["automountServiceAccountToken"] == json!(true),
        ),
    ];
    for (what, patch, still) in cases {
        let before = agent.metrics().await;
        intrude(&deployments, "web", patch).await;
        wait_for(
            &format!("{what} removed from the Deployment's pod template"),
            Duration::from_secs(30),
            || {
                let deployments = deployments.clone();
                async move {
                    let d = deployments.get("web").await.expect("deployment");
                    let v = serde_json::to_value(&d).expect("json");
                    !still(&v["spec"]["template"]["spec"])
                }
            },
        )
        .await;
        // Then quiet: several reconciles later, exactly one write fixed it.
        wait_reconciles(&agent, 3.0).await;
        let after = agent.metrics().await;
        let sent = agent_writes_to(&after, "deployments") - agent_writes_to(&before, "deployments");
        assert_eq!(
            sent,
            1.0,
            "{what}: one correcting write to the Deployment, then quiet; log:\n{}",
            agent.log_text()
        );
    }
    wait_condition(&ns, "web", "Ready", "True", None).await;

    // (c) A PodDisruptionBudget reshaped to minAvailable is restored.
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(ns.client.clone(), &ns.name);
    let params = PatchParams {
        field_manager: Some("intruder".to_string()),
        ..Default::default()
    };
    pdbs.patch(
        "web",
        &params,
        &Patch::Merge(&json!({"spec": {"maxUnavailable": null, "minAvailable": 1}})),
    )
    .await
    .expect("reshape pdb");
    let before = agent.metrics().await;
    wait_for("the PDB restored", Duration::from_secs(30), || {
        let pdbs = pdbs.clone();
        async move {
            let spec = pdbs.get("web").await.expect("pdb").spec.expect("spec");
            spec.min_available.is_none()
                && spec.max_unavailable
                    == Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1))
        }
    })
    .await;
    wait_reconciles(&agent, 3.0).await;
    let after = agent.metrics().await;
    let sent = agent_writes_to(&after, "poddisruptionbudgets")
        - agent_writes_to(&before, "poddisruptionbudgets");
    assert!(
        sent <= 1.0,
        "the PDB is restored in one write (sent {sent}); log:\n{}",
        agent.log_text()
    );
    assert!(
        !agent.log_text().contains("reconcile failed"),
        "no reconcile failed; log:\n{}",
        agent.log_text()
    );
}

async fn events_for(client: &Client, ns: &str, name: &str) -> Vec<Event> {
    Api::<Event>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some("Runtime") && r.name.as_deref() == Some(name)
            })
        })
        .collect()
}

#[tokio::test]
async fn agent_contract_events_alarm_only_on_trouble() {
    let Granted { ns, bw, grants, .. } = setup_granted("agent-events").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(&ns, "fresh", json!({"runtimeProfile": bw})).await;
    // Not granted: no binding has this alias.
    create_runtime(&ns, "refused", json!({"runtimeProfile": "not-granted"})).await;
    wait_condition(&ns, "fresh", "Ready", "True", None).await;
    wait_condition(&ns, "refused", "Blocked", "True", None).await;
    wait_reconciles(&agent, 4.0).await;

    let fresh = events_for(&ns.client, &ns.name, "fresh").await;
    let warnings: Vec<_> = fresh
        .iter()
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .map(|e| (e.reason.clone(), e.note.clone()))
        .collect();
    assert!(
        warnings.is_empty(),
        "a fresh Runtime's first rollout raises no Warning: {warnings:#?}"
    );
    let refused = events_for(&ns.client, &ns.name, "refused").await;
    let warnings: Vec<_> = refused
        .iter()
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .collect();
    assert_eq!(
        warnings.len(),
        1,
        "a Blocked Runtime raises exactly one Warning: {refused:#?}"
    );
    assert_eq!(
        warnings[0].series.as_ref().map(|s| s.count),
        None,
        "and raises it once, not as a repeating series"
    );
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The idle-window write count of a realistic world, measured by the
/// apiserver's own counters (issue 12). Not run by default (minutes of
/// work): `cargo test -p berth-tests --release --test it -- --ignored
/// --nocapture agent_contract_idle_writes_at_scale`, sized by
/// `BERTH_SCALE_RUNTIMES` (500), `BERTH_SCALE_REPLICAS` (4),
/// `BERTH_SCALE_GRANTED` (64), `BERTH_SCALE_CLASSES` (20),
/// `BERTH_SCALE_NODES` (50), `BERTH_SCALE_RESYNC` (15 s) and
/// `BERTH_SCALE_IDLE` (45 s).
#[tokio::test]
#[ignore = "a measurement at scale; run on demand"]
async fn agent_contract_idle_writes_at_scale() {
    let runtimes = env_usize("BERTH_SCALE_RUNTIMES", 500);
    let replicas = env_usize("BERTH_SCALE_REPLICAS", 4);
    let granted = env_usize("BERTH_SCALE_GRANTED", 64).min(64).min(runtimes);
    let classes = env_usize("BERTH_SCALE_CLASSES", 20).max(1);
    let nodes = env_usize("BERTH_SCALE_NODES", 50);
    let resync = env_usize("BERTH_SCALE_RESYNC", 15);
    let idle = env_usize("BERTH_SCALE_IDLE", 45);
    let nodes_arg = nodes.to_string();
    let started = std::time::Instant::now();
    let cluster = tokio::task::spawn_blocking(move || {
        harness::private_cluster_with("scale", &["--nodes", &nodes_arg])
    })
    .await
    .expect("cluster thread");
    let client = cluster.admin_client().await;
    harness::install_crds(&client).await;
    for c in 0..classes {
        harness::create_runtime_class(&client, &format!("class-{c}"), "bounded-runc").await;
    }
    let ns_name = "scale";
    TestNamespace::create(client.clone(), ns_name.to_string(), &identity_labels()).await;
    let bindings: Vec<String> = (0..granted)
        .map(|i| {
            TestBinding {
                name: &format!("b{i}"),
                project: PROJECT,
                environment: ENVIRONMENT,
                application: "app",
                service: &format!("svc-{i}"),
                runtime_class: &format!("class-{}", i % classes),
                handler: "bounded-runc",
            }
            .toml()
        })
        .collect();
    let grants = write_grants(&bindings);
    let mut opts = AgentOpts::new(ns_name, Some(&grants));
    opts.kubeconfig = Some(cluster.kubeconfig.clone());
    opts.resync_seconds = u64::try_from(resync).unwrap_or(15);
    let agent = Agent::start(opts).await;
    let api: Api<Runtime> = Api::namespaced(client.clone(), ns_name);
    let created = std::time::Instant::now();
    for i in 0..runtimes {
        let mut spec = json!({
            "application": "app", "service": format!("svc-{i}"),
            "image": {"repository": "registry.invalid/berth/app", "tag": "1"},
            "replicas": replicas,
        });
        if i < granted {
            spec["runtimeProfile"] = json!(format!("b{i}"));
        }
        if i % 2 == 0 {
            // Non-canonical quantities, as teams write them.
            spec["resources"] = json!({"requests": {"cpu": "0.5", "memory": "1024Mi"}});
        }
        let rt: Runtime = serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
            "metadata": {"name": format!("rt-{i}"), "namespace": ns_name},
            "spec": spec,
        }))
        .expect("runtime");
        api.create(&PostParams::default(), &rt)
            .await
            .expect("create");
    }
    let ready_count = || {
        let api = api.clone();
        async move {
            api.list(&ListParams::default())
                .await
                .map(|l| {
                    l.items
                        .iter()
                        .filter(|r| {
                            r.status.as_ref().is_some_and(|s| {
                                s.conditions
                                    .iter()
                                    .any(|c| c.type_ == "Ready" && c.status == "True")
                            })
                        })
                        .count()
                })
                .unwrap_or(0)
        }
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(1800);
    loop {
        let n = ready_count().await;
        if n == runtimes {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "only {n} of {runtimes} Runtimes Ready"
        );
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    let converged = created.elapsed();
    // Settle one resync, then the idle window.
    tokio::time::sleep(Duration::from_secs(u64::try_from(resync).unwrap_or(15))).await;
    let agent_before = agent.metrics().await;
    let server_before = harness::apiserver_requests(&client, harness::agent_kind_write).await;
    tokio::time::sleep(Duration::from_secs(u64::try_from(idle).unwrap_or(45))).await;
    let agent_after = agent.metrics().await;
    let server_after = harness::apiserver_requests(&client, harness::agent_kind_write).await;
    let resyncs = reconciles(&agent_after) - reconciles(&agent_before);
    let agent_writes = writes(&agent_after) - writes(&agent_before);
    let server_writes = server_after - server_before;
    println!(
        "scale: {runtimes} Runtimes ({granted} granted over {classes} classes), {} pods, {nodes} nodes, \
         resync {resync}s\n  all Ready {:.1}s after the first create ({:.1}s since cluster start)\n  \
         idle window {idle}s: {resyncs} reconciles, {agent_writes} writes at the agent's transport, \
         {server_writes} writes to the agent's kinds counted by apiserver_request_total",
        runtimes * replicas,
        converged.as_secs_f64(),
        started.elapsed().as_secs_f64(),
    );
    assert!(
        resyncs >= runtimes as f64,
        "every Runtime was reconciled in the window"
    );
    assert_eq!(agent_writes, 0.0, "agent log:\n{}", agent.log_text());
    assert_eq!(server_writes, 0.0);
}

/// A ValidatingAdmissionPolicy (in the apiserver, nothing mocked) that
/// refuses any update of this namespace's Deployments that takes
/// `hostNetwork: true` away: the agent's correction of a foreign
/// `hostNetwork` then fails, as it would behind a site's own policy.
fn keep_host_network_policy(ns: &str) -> (Value, Value) {
    let name = format!("{ns}-keep-host-network");
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                "resourceRules": [{
                    "apiGroups": ["apps"], "apiVersions": ["v1"],
                    "operations": ["UPDATE"], "resources": ["deployments"],
                }],
            },
            "validations": [{
                "expression": "!(has(oldObject.spec.template.spec.hostNetwork) && oldObject.spec.template.spec.hostNetwork) || (has(object.spec.template.spec.hostNetwork) && object.spec.template.spec.hostNetwork)",
                "message": "test policy: hostNetwork stays",
            }],
        },
    });
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    });
    (policy, binding)
}

#[tokio::test]
async fn agent_contract_a_failed_step_names_itself_in_status_events_and_metrics() {
    use k8s_openapi::api::admissionregistration::v1::{
        ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    };
    let Granted { ns, bw, grants, .. } = setup_granted("agent-failstep").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": bw, "replicas": 1})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;

    let (policy, policy_binding) = keep_host_network_policy(&ns.name);
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(ns.client.clone());
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(ns.client.clone());
    let policy: ValidatingAdmissionPolicy = serde_json::from_value(policy).expect("policy");
    let policy_binding: ValidatingAdmissionPolicyBinding =
        serde_json::from_value(policy_binding).expect("binding");
    let pp = PostParams::default();
    policies.create(&pp, &policy).await.expect("create policy");
    bindings
        .create(&pp, &policy_binding)
        .await
        .expect("create binding");
    // The policy takes a moment to load: probe it on a Deployment nobody
    // manages until it refuses the same kind of change.
    let deployments: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    let probe: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "probe"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "probe"}},
            "template": {
                "metadata": {"labels": {"app": "probe"}},
                "spec": {"hostNetwork": true, "containers": [{"name": "c", "image": "registry.invalid/x:1"}]},
            },
        },
    }))
    .expect("probe");
    deployments.create(&pp, &probe).await.expect("create probe");
    wait_for(
        "the test policy refuses taking hostNetwork away",
        Duration::from_secs(30),
        || {
            let deployments = deployments.clone();
            async move {
                let dry = PatchParams {
                    dry_run: true,
                    ..Default::default()
                };
                deployments
                    .patch(
                        "probe",
                        &dry,
                        &Patch::Merge(
                            &json!({"spec": {"template": {"spec": {"hostNetwork": null}}}}),
                        ),
                    )
                    .await
                    .is_err()
            }
        },
    )
    .await;

    // A foreign hostNetwork the agent cannot take away: the correction step
    // fails, and says so under its own name.
    intrude(
        &deployments,
        "web",
        json!({"spec": {"template": {"spec": {"hostNetwork": true}}}}),
    )
    .await;
    let rt = wait_condition(&ns, "web", "Degraded", "True", Some("CorrectionFailed")).await;
    let degraded = rt
        .status
        .iter()
        .flat_map(|s| s.conditions.iter())
        .find(|c| c.type_ == "Degraded")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(
        degraded.starts_with("Deployment/web: ") && degraded.contains("hostNetwork stays"),
        "the message names the object and the cause: {degraded}"
    );
    let failures = |metrics: &str| {
        metric_sum(metrics, "berth_agent_apply_errors_total", |l| {
            l.contains("kind=\"Deployment\"") && l.contains("reason=\"CorrectionFailed\"")
        })
    };
    // Counted after the status is written, when the reconcile returns its
    // error: the status can be seen first.
    wait_for(
        "apply_errors_total counts the failed step",
        Duration::from_secs(20),
        || {
            let agent = &agent;
            async move { failures(&agent.metrics().await) >= 1.0 }
        },
    )
    .await;
    let warned = wait_for_value(
        "a Warning Event whose reason is the failed step",
        Duration::from_secs(20),
        || {
            let client = ns.client.clone();
            let name = ns.name.clone();
            async move {
                events_for(&client, &name, "web")
                    .await
                    .into_iter()
                    .find(|e| {
                        e.type_.as_deref() == Some("Warning")
                            && e.reason.as_deref() == Some("CorrectionFailed")
                    })
            }
        },
    )
    .await;
    assert!(
        warned
            .note
            .as_deref()
            .unwrap_or_default()
            .contains("Deployment/web"),
        "{warned:?}"
    );

    // The policy goes: the correction goes through, the Runtime recovers.
    let name = format!("{}-keep-host-network", ns.name);
    bindings
        .delete(&name, &Default::default())
        .await
        .expect("delete binding");
    policies
        .delete(&name, &Default::default())
        .await
        .expect("delete policy");
    wait_condition(&ns, "web", "Degraded", "False", None).await;
    let d = deployments.get("web").await.expect("deployment");
    let v = serde_json::to_value(&d).expect("json");
    assert_ne!(
        v["spec"]["template"]["spec"]["hostNetwork"],
        json!(true),
        "hostNetwork removed once the policy is gone"
    );
}
