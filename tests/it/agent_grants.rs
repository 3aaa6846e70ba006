//! Grant enforcement: not granted → Blocked and nothing created; grant
//! removed (agent restarted with a file lacking it) → Blocked, pods keep
//! running, nothing changed; clearing the profile rolls onto the default
//! runtime; RuntimeGrants are published with status and pruned.

use std::time::Duration;

use berth_shared::api::RuntimeGrant;
use berth_tests::harness::{wait_for, wait_for_value};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, binding, create_runtime, setup, wait_condition, write_grants,
};

const WAIT: Duration = Duration::from_secs(120);

#[tokio::test]
async fn agent_not_granted_is_blocked_and_creates_nothing() {
    let (ns, class) = setup("agent-ng").await;
    let bw = format!("{}-bw", ns.name);
    let grants = write_grants(&[binding("other", &class, "bounded-runc")]);
    let _agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": bw})).await;
    let rt = wait_condition(&ns, "web", "Blocked", "True", Some("NotGranted")).await;
    let status = rt.status.expect("status");
    assert_eq!(
        status.profile.expect("profile").state.as_str(),
        "NotGranted"
    );
    let pg = status
        .conditions
        .iter()
        .find(|c| c.type_ == "ProfileGranted")
        .expect("ProfileGranted");
    assert_eq!(
        (pg.status.as_str(), pg.reason.as_str()),
        ("False", "NotGranted")
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    let deps: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    assert!(
        deps.list(&ListParams::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
    let cms: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &ns.name);
    assert!(cms.get_opt("web-config").await.expect("get").is_none());
}

#[tokio::test]
async fn agent_grant_removed_blocks_then_clearing_profile_retires() {
    let (ns, class) = setup("agent-revoke").await;
    let bw = format!("{}-bw", ns.name);
    let granted = write_grants(&[binding(&bw, &class, "bounded-runc")]);
    let mut agent = Agent::start(AgentOpts::new(&ns.name, Some(&granted))).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": bw})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    let deps: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    let before = deps.get("web").await.expect("deployment");

    // Restart with a file lacking the grant (same lease: the new agent
    // takes over once the old one is gone).
    agent.kill();
    let empty = write_grants(&[]);
    let mut opts = AgentOpts::new(&ns.name, Some(&empty));
    opts.identity = format!("{}-b", ns.name);
    let _agent2 = Agent::start(opts).await;
    let rt = wait_condition(&ns, "web", "Blocked", "True", Some("Revoked")).await;
    assert_eq!(
        rt.status
            .expect("status")
            .profile
            .expect("profile")
            .state
            .as_str(),
        "Revoked"
    );
    // Also change the spec: a blocked Runtime's objects stay as they are.
    let rts: Api<berth_shared::api::Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    rts.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await
    .expect("patch runtime");
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = deps.get("web").await.expect("deployment");
    assert_eq!(
        before.metadata.generation, after.metadata.generation,
        "nothing changed on the Deployment"
    );
    let ready = after.status.and_then(|s| s.ready_replicas);
    assert_eq!(ready, Some(2), "pods keep running");

    // Clearing the profile is a retirement: carried out, onto the default runtime.
    rts.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"runtimeProfile": null}})),
    )
    .await
    .expect("clear profile");
    wait_for("Deployment rolled onto the default runtime", WAIT, || {
        let deps = deps.clone();
        async move {
            deps.get("web").await.ok().is_some_and(|d| {
                let spec = d.spec.unwrap_or_default();
                spec.replicas == Some(3)
                    && spec
                        .template
                        .spec
                        .is_some_and(|p| p.runtime_class_name.is_none())
            })
        }
    })
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
}

#[tokio::test]
async fn agent_publishes_runtime_grants_with_status() {
    let (ns, class) = setup("agent-rtg").await;
    let alias = format!("{}-bw", ns.name);
    let gone = format!("{}-gone", ns.name);
    let grants = write_grants(&[binding(&alias, &class, "bounded-runc")]);
    // A grant published earlier by this agent whose binding left the file.
    let api: Api<RuntimeGrant> = Api::all(ns.client.clone());
    api.patch(
        &gone,
        &PatchParams::apply("berth-agent").force(),
        &Patch::Apply(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "RuntimeGrant",
            "metadata": {"name": gone, "labels": {
                "app.kubernetes.io/managed-by": "berth-agent",
                "berth.dev/published-by": format!("agent-{}", ns.name)}},
            "spec": {"project": "demo", "environment": "production", "application": "analytics",
                "service": "worker", "runtimeClass": class, "handler": "bounded-runc"}
        })),
    )
    .await
    .expect("stale grant");
    // An unmanaged Deployment still referencing the class: retained.
    let deps: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    let legacy: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "legacy"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "legacy"}},
            "template": {"metadata": {"labels": {"app": "legacy"}},
                "spec": {"runtimeClassName": class, "containers": [{"name": "a", "image": "x"}]}}}
    }))
    .expect("deployment");
    deps.create(&Default::default(), &legacy)
        .await
        .expect("legacy");

    let _agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": alias})).await;
    let grant = wait_for_value("RuntimeGrant status", WAIT, || {
        let api = api.clone();
        let alias = alias.clone();
        async move {
            let g = api.get_opt(&alias).await.ok().flatten()?;
            let s = g.status.as_ref()?;
            (s.class_present
                && !s.runtimes.is_empty()
                && s.retained.iter().any(|w| w.name == "legacy"))
            .then_some(g)
        }
    })
    .await;
    let s = grant.status.expect("status");
    assert!(s.handler_matches);
    let nodes = s.nodes.expect("nodes");
    // Nodes another test adds without a handler list count as unknown.
    assert_eq!(nodes.with_handler + nodes.unknown, nodes.total);
    assert!(nodes.total >= 1);
    assert_eq!(s.runtimes[0].name, "web");
    let src = s.source.expect("source");
    assert_eq!(src.sha256.as_deref().map(str::len), Some(64));
    assert!(src.loaded_at.is_some());
    assert!(
        s.conditions
            .iter()
            .any(|c| c.type_ == "RestartRequired" && c.status == "False")
    );
    wait_for("stale RuntimeGrant pruned", WAIT, || {
        let api = api.clone();
        let gone = gone.clone();
        async move { matches!(api.get_opt(&gone).await, Ok(None)) }
    })
    .await;

    // Changing the file on disk: restart required.
    let text = std::fs::read_to_string(&grants).expect("read");
    std::fs::write(&grants, format!("{text}\n# edited\n")).expect("edit");
    wait_for("RestartRequired", WAIT, || {
        let api = api.clone();
        let alias = alias.clone();
        async move {
            api.get_opt(&alias).await.ok().flatten().is_some_and(|g| {
                g.status.is_some_and(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.type_ == "RestartRequired" && c.status == "True")
                })
            })
        }
    })
    .await;
}

/// Whether an `apiserver_request_total` label set is a write to
/// RuntimeGrants (any verb that changes, any subresource: status too).
fn runtime_grant_write(labels: &str) -> bool {
    let has = |k: &str, v: &str| labels.contains(&format!("{k}=\"{v}\""));
    has("group", "berth.dev")
        && has("resource", "runtimegrants")
        && ["POST", "PUT", "PATCH", "APPLY", "DELETE"]
            .iter()
            .any(|v| has("verb", v))
}

/// Issue 29: the publisher is a pipeline driven by the changes that
/// matter. In a cluster of its own (the apiserver's counters carry no
/// client label), with the file look and the backstop timer an hour
/// apart: once the grant and its status are published and the cluster is
/// quiet, the apiserver counts zero RuntimeGrant writes over the window
/// (a pass woken by its own status write must write nothing); an intruder
/// changing the grant's spec (another field manager) is undone because
/// the change woke the publisher, not the timer; so is a RuntimeClass
/// deleted under it (the status says so).
#[tokio::test]
async fn agent_grants_publisher_is_quiet_at_rest_and_woken_by_changes() {
    use berth_tests::harness::{self, TestNamespace};
    use k8s_openapi::api::node::v1::RuntimeClass;

    let cluster = tokio::task::spawn_blocking(|| harness::private_cluster("grants-quiet"))
        .await
        .expect("cluster thread");
    let client = cluster.admin_client().await;
    harness::install_crds(&client).await;
    harness::create_runtime_class(&client, "bounded", "bounded-runc").await;
    let ns_name = "grants-quiet";
    let ns = TestNamespace::create(
        client.clone(),
        ns_name.to_string(),
        &[
            ("berth.dev/project", crate::agent_support::PROJECT),
            ("berth.dev/environment", crate::agent_support::ENVIRONMENT),
        ],
    )
    .await;
    let grants = write_grants(&[binding("bw", "bounded", "bounded-runc")]);
    let mut opts = AgentOpts::new(ns_name, Some(&grants));
    opts.kubeconfig = Some(cluster.kubeconfig.clone());
    // The timer out of the way: only a change wakes the publisher.
    opts.grants_interval_seconds = 3600;
    let agent = Agent::start(opts).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": "bw"})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;

    let api: Api<RuntimeGrant> = Api::all(client.clone());
    // Published, and its status lists the Runtime: the creation of the
    // grant and the Runtime woke the passes that wrote them.
    wait_for("RuntimeGrant bw lists web", WAIT, || {
        let api = api.clone();
        async move {
            api.get_opt("bw").await.ok().flatten().is_some_and(|g| {
                g.status
                    .is_some_and(|s| s.class_present && s.runtimes.iter().any(|r| r.name == "web"))
            })
        }
    })
    .await;
    // Let the Runtime's own rollout settle (its counts wake nothing, its
    // states may), then measure.
    let deployments = Api::<Deployment>::namespaced(client.clone(), ns_name);
    wait_for("Deployment web rolled out", WAIT, || {
        let deployments = deployments.clone();
        async move {
            deployments.get("web").await.ok().is_some_and(|d| {
                let want = d.spec.as_ref().and_then(|s| s.replicas);
                d.status.as_ref().is_some_and(|s| {
                    s.observed_generation == d.metadata.generation
                        && s.ready_replicas == want
                        && s.updated_replicas == want
                })
            })
        }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    let before = harness::apiserver_requests(&client, runtime_grant_write).await;
    tokio::time::sleep(Duration::from_secs(20)).await;
    let after = harness::apiserver_requests(&client, runtime_grant_write).await;
    assert_eq!(
        after - before,
        0.0,
        "RuntimeGrant writes at rest; agent log:\n{}",
        agent.log_text()
    );

    // An intruder rewrites the grant's handler: the watch wakes the
    // publisher, which applies the binding's spec again.
    api.patch(
        "bw",
        &PatchParams::apply("intruder").force(),
        &Patch::Apply(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "RuntimeGrant",
            "metadata": {"name": "bw"},
            "spec": {"handler": "runc"}
        })),
    )
    .await
    .expect("intruder patch");
    wait_for("RuntimeGrant bw spec restored", WAIT, || {
        let api = api.clone();
        async move {
            api.get_opt("bw")
                .await
                .ok()
                .flatten()
                .is_some_and(|g| g.spec.handler == "bounded-runc")
        }
    })
    .await;

    // The class goes: the RuntimeClass watch wakes it, the status says so.
    Api::<RuntimeClass>::all(client.clone())
        .delete("bounded", &Default::default())
        .await
        .expect("delete class");
    wait_for("RuntimeGrant bw says its class is missing", WAIT, || {
        let api = api.clone();
        async move {
            api.get_opt("bw").await.ok().flatten().is_some_and(|g| {
                g.status.is_some_and(|s| {
                    !s.class_present
                        && s.conditions.iter().any(|c| {
                            c.type_ == "ClassReady"
                                && c.status == "False"
                                && c.reason == "ClassMissing"
                        })
                })
            })
        }
    })
    .await;
}
