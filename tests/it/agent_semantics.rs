//! Issue 13 on the real control plane: suspend → resume with autoscaling
//! comes back to minReplicas; one-time Jobs run once per template; a
//! Runtime without a profile runs in an unlabeled namespace; podMetadata
//! cannot weaken the contract; a NetworkPolicy never fails open; a grants
//! file without bindings keeps the agent up.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use berth_shared::api::Runtime;
use berth_tests::harness::{self, TestNamespace, wait_for, wait_for_value};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PropagationPolicy};
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, Granted, binding, binding_for_service, create_runtime, setup, setup_granted,
    wait_condition, wait_reconciles, write_grants,
};
use crate::support::own_node::OwnNode;
use crate::support::unmanaged::create_suspended_cronjob;

const WAIT: Duration = Duration::from_secs(120);

async fn merge(ns: &TestNamespace, name: &str, patch: serde_json::Value) {
    Api::<Runtime>::namespaced(ns.client.clone(), &ns.name)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("patch {name} with {patch}: {e}"));
}

async fn deployment_replicas(ns: &TestNamespace, name: &str) -> Option<i32> {
    Api::<Deployment>::namespaced(ns.client.clone(), &ns.name)
        .get_opt(name)
        .await
        .expect("get deployment")
        .and_then(|d| d.spec)
        .and_then(|s| s.replicas)
}

#[tokio::test]
async fn agent_semantics_resume_with_autoscaling_comes_back_to_min_replicas() {
    let (ns, class) = setup("agent-resume").await;
    let bw = format!("{}-bw", ns.name);
    // "zero" below is another service: one Runtime per identity.
    let zero_alias = format!("{}-zero", ns.name);
    let grants = write_grants(&[
        binding(&bw, &class, "bounded-runc"),
        binding_for_service(&zero_alias, &class, "bounded-runc", "zero"),
    ]);
    let _agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    let autoscaled = json!({
        "runtimeProfile": bw,
        "resources": {"requests": {"cpu": "100m"}},
        "autoscaling": {"enabled": true, "minReplicas": 2, "maxReplicas": 3},
    });
    create_runtime(&ns, "web", autoscaled).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;

    merge(&ns, "web", json!({"spec": {"suspend": true}})).await;
    wait_for("suspended to 0 replicas", WAIT, || async {
        deployment_replicas(&ns, "web").await == Some(0)
    })
    .await;
    wait_condition(&ns, "web", "Ready", "False", Some("Suspended")).await;

    merge(&ns, "web", json!({"spec": {"suspend": false}})).await;
    // Ready is never True while nothing is available.
    let api: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let rt = api.get("web").await.expect("runtime");
        let ready = crate::agent_support::condition(&rt, "Ready").map(|c| c.status.clone());
        let available = rt
            .status
            .as_ref()
            .and_then(|s| s.rollout.as_ref())
            .map_or(0, |r| r.available);
        if ready.as_deref() == Some("True") {
            assert!(available >= 2, "Ready with {available} available replicas");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not Ready again after resume; replicas {:?}",
            deployment_replicas(&ns, "web").await
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(deployment_replicas(&ns, "web").await >= Some(2));

    // Autoscaling turned on for a Runtime at replicas 0.
    create_runtime(
        &ns,
        "zero",
        json!({"service": "zero", "runtimeProfile": zero_alias, "replicas": 0,
               "resources": {"requests": {"cpu": "100m"}}}),
    )
    .await;
    wait_for("zero at 0 replicas", WAIT, || async {
        deployment_replicas(&ns, "zero").await == Some(0)
    })
    .await;
    merge(
        &ns,
        "zero",
        json!({"spec": {"autoscaling": {"enabled": true, "minReplicas": 2, "maxReplicas": 3}}}),
    )
    .await;
    wait_for("autoscaled up to minReplicas", WAIT, || async {
        deployment_replicas(&ns, "zero").await >= Some(2)
    })
    .await;
    wait_condition(&ns, "zero", "Ready", "True", None).await;
}

async fn job_exists(ns: &TestNamespace, name: &str) -> bool {
    Api::<Job>::namespaced(ns.client.clone(), &ns.name)
        .get_opt(name)
        .await
        .expect("get job")
        .is_some_and(|j| j.metadata.deletion_timestamp.is_none())
}

async fn delete_job(ns: &TestNamespace, name: &str) {
    let jobs: Api<Job> = Api::namespaced(ns.client.clone(), &ns.name);
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..Default::default()
    };
    jobs.delete(name, &params).await.expect("delete job");
    wait_for("the Job gone", WAIT, || async {
        jobs.get_opt(name).await.expect("get").is_none()
    })
    .await;
}

#[tokio::test]
async fn agent_semantics_one_time_jobs_run_once_per_template() {
    let Granted { ns, bw, grants, .. } = setup_granted("agent-jobs").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": bw, "replicas": 1, "jobs": [{"name": "migrate", "args": ["up"]}]}),
    )
    .await;
    let job = "web-job-migrate";
    wait_for("the migration Job", WAIT, || job_exists(&ns, job)).await;
    let api: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    let recorded = wait_for_value("the run recorded in status", WAIT, || {
        let api = api.clone();
        async move {
            let rt = api.get("web").await.ok()?;
            rt.status?.jobs.into_iter().find(|r| r.name == "migrate")
        }
    })
    .await;
    assert_eq!(recorded.job, job);

    // Deleted (as a TTL cleanup would): never created again.
    delete_job(&ns, job).await;
    wait_reconciles(&agent, 4.0).await;
    assert!(
        !job_exists(&ns, job).await,
        "a Job that ran is not recreated"
    );
    // Not on suspend → resume either.
    merge(&ns, "web", json!({"spec": {"suspend": true}})).await;
    wait_condition(&ns, "web", "Ready", "False", Some("Suspended")).await;
    merge(&ns, "web", json!({"spec": {"suspend": false}})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    wait_reconciles(&agent, 3.0).await;
    assert!(!job_exists(&ns, job).await, "resume does not rerun the Job");

    // A changed definition runs once more, and says so.
    merge(
        &ns,
        "web",
        json!({"spec": {"jobs": [{"name": "migrate", "args": ["up", "--to", "7"]}]}}),
    )
    .await;
    wait_for("the changed Job created", WAIT, || job_exists(&ns, job)).await;
    let rerun = wait_for_value("the new run recorded", WAIT, || {
        let api = api.clone();
        let old = recorded.template_hash.clone();
        async move {
            let rt = api.get("web").await.ok()?;
            rt.status?
                .jobs
                .into_iter()
                .find(|r| r.name == "migrate" && r.template_hash != old)
        }
    })
    .await;
    assert_ne!(rerun.template_hash, recorded.template_hash);
    let events = wait_for_value("a JobRerun Event", WAIT, || {
        let client = ns.client.clone();
        let ns = ns.name.clone();
        async move {
            let list = Api::<Event>::namespaced(client, &ns)
                .list(&ListParams::default())
                .await
                .ok()?;
            let found: Vec<Event> = list
                .items
                .into_iter()
                .filter(|e| e.reason.as_deref() == Some("JobRerun"))
                .collect();
            (!found.is_empty()).then_some(found)
        }
    })
    .await;
    assert_eq!(events[0].type_.as_deref(), Some("Normal"));
    // And only once: deleted again, it stays gone.
    delete_job(&ns, job).await;
    wait_reconciles(&agent, 4.0).await;
    assert!(!job_exists(&ns, job).await);
}

#[tokio::test]
async fn agent_semantics_unlabeled_namespace_blocks_only_a_requested_profile() {
    let ns = TestNamespace::new("agent-unlabeled").await;
    harness::install_crds(&ns.client).await;
    let class = format!("{}-bounded", ns.name);
    harness::create_runtime_class(&ns.client, &class, "bounded-runc").await;
    let grants = write_grants(&[binding("bw", &class, "bounded-runc")]);
    let _agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(&ns, "plain", json!({"replicas": 1})).await;
    create_runtime(&ns, "wants", json!({"replicas": 1, "runtimeProfile": "bw"})).await;
    create_runtime(
        &ns,
        "parked",
        json!({"replicas": 1, "runtimeProfile": "bw", "suspend": true}),
    )
    .await;
    // No profile: runs on the default runtime wherever it is.
    wait_condition(&ns, "plain", "Ready", "True", None).await;
    wait_condition(&ns, "plain", "Blocked", "False", None).await;
    // A profile needs the identity labels.
    wait_condition(&ns, "wants", "Blocked", "True", Some("IdentityIncomplete")).await;
    assert_eq!(deployment_replicas(&ns, "wants").await, None);
    // Suspend is always carried out.
    wait_condition(&ns, "parked", "Blocked", "False", None).await;
    wait_for("parked at 0 replicas", WAIT, || async {
        deployment_replicas(&ns, "parked").await == Some(0)
    })
    .await;
}

#[tokio::test]
async fn agent_semantics_network_policy_never_fails_open_and_targets_port_9000() {
    let (ns, _class) = setup("agent-netpol").await;
    let _agent = Agent::start(AgentOpts::new(&ns.name, None)).await;
    create_runtime(
        &ns,
        "closed",
        json!({"replicas": 1, "networkPolicy": {"enabled": true}}),
    )
    .await;
    create_runtime(
        &ns,
        "open",
        json!({"service": "open", "replicas": 1, "networkPolicy": {"enabled": true,
            "ingress": [{"podLabels": {"role": "frontend"}}]}}),
    )
    .await;
    let policies: Api<NetworkPolicy> = Api::namespaced(ns.client.clone(), &ns.name);
    let closed = wait_for_value("the deny-all policy", WAIT, || {
        let policies = policies.clone();
        async move { policies.get_opt("closed").await.ok().flatten() }
    })
    .await;
    let spec = closed.spec.expect("spec");
    assert_eq!(spec.policy_types, Some(vec!["Ingress".to_string()]));
    assert!(
        spec.ingress.as_ref().is_none_or(Vec::is_empty),
        "no ingress rule admits nothing: {:?}",
        spec.ingress
    );
    let open = wait_for_value("the peer policy", WAIT, || {
        let policies = policies.clone();
        async move { policies.get_opt("open").await.ok().flatten() }
    })
    .await;
    let rules = open.spec.and_then(|s| s.ingress).expect("rules");
    assert_eq!(rules.len(), 1);
    let d = wait_for_value("the Deployment", WAIT, || {
        let deployments: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
        async move { deployments.get_opt("open").await.ok().flatten() }
    })
    .await;
    let ports = d
        .spec
        .and_then(|s| s.template.spec)
        .expect("pod")
        .containers[0]
        .ports
        .clone()
        .expect("ports");
    assert_eq!(ports[0].container_port, 9000);
    assert_eq!(ports[0].name.as_deref(), Some("http"));
}

#[tokio::test]
async fn agent_semantics_pod_metadata_keys_that_weaken_the_contract_are_refused() {
    let (ns, _class) = setup("agent-podmeta").await;
    let api: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    for (field, key) in [
        (
            "annotations",
            "container.apparmor.security.beta.kubernetes.io/app",
        ),
        ("annotations", "seccomp.security.alpha.kubernetes.io/pod"),
        ("labels", "pod-template-hash"),
        ("labels", "batch.kubernetes.io/controller-uid"),
        ("labels", "controller-uid"),
        ("labels", "app.kubernetes.io/managed-by"),
    ] {
        let rt: Runtime = serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
            "metadata": {"name": "meta", "namespace": ns.name},
            "spec": {"application": "analytics", "service": "worker",
                "image": {"repository": "registry.invalid/app", "tag": "1"},
                "podMetadata": {field: {key: "unconfined"}}},
        }))
        .expect("runtime");
        let err = api
            .create(&Default::default(), &rt)
            .await
            .expect_err("refused");
        let text = err.to_string();
        assert!(
            text.contains(key) && text.contains(&format!("podMetadata.{field}")),
            "the refusal names the key {key}: {text}"
        );
    }
}

#[tokio::test]
async fn agent_semantics_grants_file_without_bindings_keeps_the_agent_up() {
    let (ns, _class) = setup("agent-nobind").await;
    let path = write_grants(&[]);
    // Exactly what deleting the last [[bindings]] table leaves.
    std::fs::write(&path, "# every grant revoked\nschema_version = 1\n").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let _agent = Agent::start(AgentOpts::new(&ns.name, Some(&path))).await;
    create_runtime(&ns, "plain", json!({"replicas": 1})).await;
    create_runtime(&ns, "wants", json!({"replicas": 1, "runtimeProfile": "bw"})).await;
    wait_condition(&ns, "plain", "Ready", "True", None).await;
    wait_condition(&ns, "wants", "Blocked", "True", Some("NotGranted")).await;
}

#[tokio::test]
async fn agent_semantics_nodes_without_a_handler_list_are_unknown_not_absent() {
    use k8s_openapi::api::core::v1::Node;
    let Granted { ns, bw, grants, .. } = setup_granted("agent-silent").await;
    let _agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    // A kwok node whose "kubelet" reports no handler list, tainted so that
    // only this test's pods land there.
    let nodes: Api<Node> = Api::all(ns.client.clone());
    let name = format!("silent-{}", ns.name);
    let silent = OwnNode::create(&ns.client, &name, "berth.dev/silent", &ns.name, None).await;
    let placement = silent.placement();
    create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": bw, "replicas": 1, "scheduling": placement}),
    )
    .await;
    // Unknown, not absent; Ready follows the rollout alone.
    wait_condition(
        &ns,
        "web",
        "HandlerReady",
        "Unknown",
        Some("HandlerUnknown"),
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;

    // Mixed: a node that does report handlers joins the placement; the
    // silent one still counts as unknown, not missing.
    let all = nodes.list(&ListParams::default()).await.expect("nodes");
    let reporting = all
        .items
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .filter(|n| n.starts_with("kwok-node"))
        .min()
        .expect("a kwok node that reports handlers");
    let label =
        |value: serde_json::Value| json!({"metadata": {"labels": {"berth.dev/silent": value}}});
    nodes
        .patch(
            &reporting,
            &PatchParams::default(),
            &Patch::Merge(&label(json!(ns.name))),
        )
        .await
        .expect("label node");
    let rt = wait_condition(&ns, "web", "HandlerReady", "True", Some("HandlerPresent")).await;
    let message = crate::agent_support::condition(&rt, "HandlerReady")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(
        message.contains("1 report no handler list"),
        "the silent node is named as unknown: {message}"
    );
    wait_condition(&ns, "web", "Ready", "True", None).await;
    nodes
        .patch(
            &reporting,
            &PatchParams::default(),
            &Patch::Merge(&label(serde_json::Value::Null)),
        )
        .await
        .expect("unlabel node");
    nodes
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete node");
}

#[tokio::test]
async fn agent_semantics_retained_workloads_of_a_removed_grant_stay_published() {
    use berth_shared::api::RuntimeGrant;
    use k8s_openapi::api::apps::v1::StatefulSet;
    use k8s_openapi::api::batch::v1::CronJob;
    use k8s_openapi::api::core::v1::Pod;
    let (ns, class) = setup("agent-retired").await;
    let alias = format!("{}-bw", ns.name);
    let grants = write_grants(&[binding(&alias, &class, "bounded-runc")]);
    // Bare pods are counted only in the opt-in mode (issue 27, point 9).
    let watch_pods = vec!["--watch-bare-pods".to_string()];
    let mut opts = AgentOpts::new(&ns.name, Some(&grants));
    opts.extra_args.clone_from(&watch_pods);
    let mut agent = Agent::start(opts).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": alias, "replicas": 1})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    // Workloads berth does not manage that use the class: a bare pod, a
    // StatefulSet (and so its ControllerRevision) and a CronJob.
    let pod_spec = json!({"runtimeClassName": class, "containers": [{"name": "a", "image": "x"}]});
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "bare"}, "spec": pod_spec}))
        .expect("pod");
    Api::<Pod>::namespaced(ns.client.clone(), &ns.name)
        .create(&Default::default(), &pod)
        .await
        .expect("bare pod");
    let sts: StatefulSet = serde_json::from_value(json!({"metadata": {"name": "db"},
        "spec": {"replicas": 0, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": pod_spec}}}))
    .expect("sts");
    Api::<StatefulSet>::namespaced(ns.client.clone(), &ns.name)
        .create(&Default::default(), &sts)
        .await
        .expect("statefulset");
    create_suspended_cronjob(&ns, "report", &class).await;

    // The binding leaves the file (agent restarted with no grants).
    agent.kill();
    let empty = write_grants(&[]);
    let mut opts = AgentOpts::new(&ns.name, Some(&empty));
    opts.identity = format!("{}-b", ns.name);
    opts.extra_args = watch_pods;
    let agent = Agent::start(opts).await;
    wait_condition(&ns, "web", "Blocked", "True", Some("Revoked")).await;
    let grants_api: Api<RuntimeGrant> = Api::all(ns.client.clone());
    let kinds = wait_for_value(
        "the retired RuntimeGrant lists every retained workload",
        WAIT,
        || {
            let api = grants_api.clone();
            let alias = alias.clone();
            async move {
                let g = api.get_opt(&alias).await.ok().flatten()?;
                let s = g.status?;
                let retired = s
                    .conditions
                    .iter()
                    .any(|c| c.type_ == "Retired" && c.status == "True");
                let kinds: std::collections::BTreeSet<String> =
                    s.retained.iter().map(|w| w.kind.clone()).collect();
                (retired
                    && [
                        "Pod",
                        "ControllerRevision",
                        "CronJob",
                        "StatefulSet",
                        "Deployment",
                    ]
                    .iter()
                    .all(|k| kinds.contains(*k)))
                .then_some(kinds)
            }
        },
    )
    .await;
    assert!(kinds.contains("ControllerRevision"), "{kinds:?}");
    let metric = wait_for_value("the retained-workloads metric", WAIT, || async {
        let m = agent.metrics().await;
        let n = crate::agent_support::metric_sum(&m, "berth_agent_retained_workloads", |l| {
            l.contains(&format!("runtime_class=\"{class}\""))
        });
        (n >= 5.0).then_some(n)
    })
    .await;
    assert!(metric >= 5.0);

    // Everything retired: the grant goes.
    let dp = DeleteParams::default();
    Api::<Runtime>::namespaced(ns.client.clone(), &ns.name)
        .delete("web", &dp)
        .await
        .expect("delete runtime");
    Api::<Pod>::namespaced(ns.client.clone(), &ns.name)
        .delete(
            "bare",
            &DeleteParams {
                grace_period_seconds: Some(0),
                ..Default::default()
            },
        )
        .await
        .expect("delete pod");
    Api::<StatefulSet>::namespaced(ns.client.clone(), &ns.name)
        .delete(
            "db",
            &DeleteParams {
                propagation_policy: Some(PropagationPolicy::Foreground),
                ..Default::default()
            },
        )
        .await
        .expect("delete sts");
    Api::<CronJob>::namespaced(ns.client.clone(), &ns.name)
        .delete("report", &dp)
        .await
        .expect("delete cronjob");
    wait_for("the retired grant pruned", Duration::from_secs(180), || {
        let api = grants_api.clone();
        let alias = alias.clone();
        async move { matches!(api.get_opt(&alias).await, Ok(None)) }
    })
    .await;
}
