//! A deletion wakes the Runtime it concerns at once, not at the next
//! resync. The agent here resyncs every 300 s, as in production (every
//! other test agent resyncs every 2 s, which hid this): another user
//! deletes the Runtime's PodDisruptionBudget, Service and ConfigMap, and
//! each is back within 20 s; then its RuntimeClass is deleted, and the
//! Runtime is Blocked `ClassMissing` within 20 s. Before the fix the PDB
//! came back after 302 s and the Runtime stayed Granted as long
//! (reproduced by hand on 2026-12-07). And the only node a Runtime may
//! run on, reporting its handler, is deleted: its HandlerReady turns
//! `False/HandlerAbsent` within 20 s.

use std::time::Duration;

use berth_tests::harness::wait_for_value;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Service};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::DeleteParams;
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, Granted, condition, create_runtime, reconciles, setup_granted,
    wait_condition, wait_condition_within,
};
use crate::support::own_node::OwnNode;

/// Far below the agent's resync: only a wake explains a repair within it.
const WITHIN: Duration = Duration::from_secs(20);
/// How long the agent may take to settle.
const WAIT: Duration = Duration::from_secs(120);

/// Deletes `name` of kind `K` in the namespace and waits for a new one.
async fn deleted_and_back<K>(client: &kube::Client, ns: &str, name: &str, what: &str)
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let before = api.get(name).await.expect(what);
    let uid = before.meta().uid.clone();
    api.delete(name, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("deleting the {what}: {e}"));
    wait_for_value(&format!("the {what} recreated"), WITHIN, || async {
        let now = api.get_opt(name).await.ok()??;
        (now.meta().uid != uid && now.meta().deletion_timestamp.is_none()).then_some(())
    })
    .await;
}

#[tokio::test]
async fn agent_deletions_wake_the_runtime_without_waiting_for_a_resync() {
    let Granted {
        ns,
        class,
        bw,
        grants,
    } = setup_granted("agent-del").await;
    let mut opts = AgentOpts::new(&ns.name, Some(&grants));
    opts.resync_seconds = 300;
    let _agent = Agent::start(opts).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": bw, "replicas": 1})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;

    deleted_and_back::<PodDisruptionBudget>(&ns.client, &ns.name, "web", "PodDisruptionBudget")
        .await;
    deleted_and_back::<Service>(&ns.client, &ns.name, "web", "Service").await;
    deleted_and_back::<ConfigMap>(&ns.client, &ns.name, "web-config", "ConfigMap").await;

    Api::<RuntimeClass>::all(ns.client.clone())
        .delete(&class, &DeleteParams::default())
        .await
        .expect("delete the RuntimeClass");
    wait_condition_within(&ns, "web", "Blocked", "True", Some("ClassMissing"), WITHIN).await;
}

#[tokio::test]
async fn agent_deletions_a_deleted_node_wakes_the_runtimes_that_may_run_there() {
    let Granted { ns, bw, grants, .. } = setup_granted("agent-del-node").await;
    let node = format!("own-{}", ns.name);
    let own = OwnNode::create(
        &ns.client,
        &node,
        "berth.dev/own-node",
        &node,
        Some(&["bounded-runc"]),
    )
    .await;
    let mut opts = AgentOpts::new(&ns.name, Some(&grants));
    opts.resync_seconds = 300;
    let agent = Agent::start(opts).await;
    let placement = own.placement();
    // No replica: a pod on the node would be deleted with it, and its
    // Deployment's change would wake the Runtime whatever the Node's
    // deletion did.
    create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": bw, "replicas": 0, "scheduling": placement}),
    )
    .await;
    let rt = wait_condition(&ns, "web", "HandlerReady", "True", Some("HandlerPresent")).await;
    let present = &condition(&rt, "HandlerReady")
        .expect("HandlerReady")
        .message;
    assert!(present.contains("all 1 Ready nodes"), "{present}");
    // Settled: no reconcile for QUIET, so no requeue is pending (the
    // status step's paced write retries after 5 s). A first form of this
    // test deleted the node at once, and that retry, not the deletion,
    // saw it gone: it passed on the code before the fix too.
    quiet(&agent).await;
    let before = reconciles(&agent.metrics().await);

    Api::<Node>::all(ns.client.clone())
        .delete(&node, &DeleteParams::default())
        .await
        .expect("delete the node");
    wait_condition_within(
        &ns,
        "web",
        "HandlerReady",
        "False",
        Some("HandlerAbsent"),
        WITHIN,
    )
    .await;
    let after = reconciles(&agent.metrics().await);
    assert!(after > before, "reconciles {before} → {after}");
}

/// How long the agent must not reconcile to count as settled: beyond the
/// status step's 5 s progress interval, far below the 300 s resync.
const QUIET: Duration = Duration::from_secs(12);

/// Waits until the agent has not reconciled for [`QUIET`].
async fn quiet(agent: &Agent) {
    let start = reconciles(&agent.metrics().await);
    let last = std::cell::Cell::new((start, std::time::Instant::now()));
    wait_for_value("the agent quiet", WAIT, || async {
        let now = reconciles(&agent.metrics().await);
        if now != last.get().0 {
            last.set((now, std::time::Instant::now()));
        }
        (last.get().1.elapsed() >= QUIET).then_some(())
    })
    .await;
}
