//! Operating the agent (issue 30): readiness that is the webhook's, not the
//! leader's, and reconcile log lines that name their Runtime.

use std::time::Duration;

use berth_shared::api::Runtime;
use berth_tests::harness::{wait_for, wait_for_value};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use serde_json::{Value, json};

use crate::agent_lifecycle::{agent_kubeconfig, delete_rbac, install_shipped_rbac};
use crate::agent_support::{
    Agent, AgentOpts, binding, create_runtime, setup, wait_condition, write_grants,
};

/// `/health/ready` (the readiness probe, so the endpoints of the Service in
/// front of the webhook) says whether this replica serves admission, which
/// every replica does: a leader whose caches have not synced is still
/// ready, and only `/health/leader` says it does not lead yet. The
/// adversary is a cache that never syncs (the shipped RBAC without
/// ReplicaSets); before the fix, taking the lease made the replica unready
/// until its caches synced, so at each failover the webhook lost the new
/// leader's endpoint, and a leader stuck listing stayed out of the Service.
#[tokio::test]
async fn agent_leader_with_unsynced_caches_stays_ready() {
    let (ns, class) = setup("agent-rdy").await;
    let bw = format!("{}-bw", ns.name);
    let grants = write_grants(&[binding(&bw, &class, "bounded-runc")]);
    let (roles, bindings) = install_shipped_rbac(&ns.client, &ns.name, |doc| {
        if doc["kind"] == "ClusterRole"
            && let Some(rules) = doc["rules"].as_array_mut()
        {
            for rule in rules.iter_mut() {
                if let Some(resources) = rule["resources"].as_array_mut() {
                    resources.retain(|r| r != "replicasets");
                }
            }
            rules.retain(|rule| rule["resources"].as_array().is_none_or(|r| !r.is_empty()));
        }
    })
    .await;
    let kubeconfig = agent_kubeconfig(&ns, &grants).await;
    let mut opts = AgentOpts::new(&ns.name, Some(&grants));
    opts.kubeconfig = Some(kubeconfig);
    // Long enough that it holds the lease, unsynced, while this test looks.
    opts.cache_sync_timeout_seconds = 120;
    let lease_name = opts.lease_name.clone();
    let identity = opts.identity.clone();
    let mut agent = Agent::spawn(opts).await;

    let leases: Api<Lease> = Api::namespaced(ns.client.clone(), &ns.name);
    wait_for("the agent takes the lease", Duration::from_secs(60), || {
        let leases = leases.clone();
        let (lease_name, identity) = (lease_name.clone(), identity.clone());
        async move {
            leases
                .get_opt(&lease_name)
                .await
                .ok()
                .flatten()
                .and_then(|l| l.spec)
                .and_then(|s| s.holder_identity)
                .is_some_and(|h| h == identity)
        }
    })
    .await;
    // It leads; its ReplicaSet cache cannot list, so it never syncs.
    assert_eq!(
        agent.get("/health/leader").await.map(|(code, _)| code),
        Some(503),
        "leading without synced caches is not /health/leader:\n{}",
        agent.log_text()
    );
    assert_eq!(
        agent.get("/health/ready").await.map(|(code, _)| code),
        Some(200),
        "the leader with unsynced caches is ready (it serves admission):\n{}",
        agent.log_text()
    );
    assert_eq!(agent.exit_code(), None, "{}", agent.log_text());
    agent.kill();
    delete_rbac(&ns.client, roles, bindings).await;
}

/// The `reconcile` span of one JSON log line: its fields.
fn reconcile_span(line: &Value) -> Option<&Value> {
    line["spans"]
        .as_array()?
        .iter()
        .find(|s| s["name"] == "reconcile")
}

/// A reconcile's log lines, in the agent's default JSON format, carry the
/// Runtime's namespace, name and generation from the reconcile span, and
/// the line that ends it also carries the outcome. The lines are the real
/// agent's output for a real Runtime (its status write is logged inside
/// the reconcile); without the span fields the lines name no Runtime
/// generation and no outcome, and the test fails.
#[tokio::test]
async fn agent_reconcile_log_lines_carry_the_runtime_span_in_json() {
    let (ns, class) = setup("agent-span").await;
    let bw = format!("{}-bw", ns.name);
    let grants = write_grants(&[binding(&bw, &class, "bounded-runc")]);
    let mut opts = AgentOpts::new(&ns.name, Some(&grants));
    // The line that closes a reconcile is at debug level.
    opts.env
        .push(("RUST_LOG".into(), "info,berth_agent=debug".into()));
    let agent = Agent::start(opts).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": bw})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    let runtime: Runtime = Api::namespaced(ns.client.clone(), &ns.name)
        .get("web")
        .await
        .expect("runtime");
    let generation = runtime.metadata.generation.expect("generation");

    // Both lines are written by now or soon (the closing one after the
    // status write that made Ready true).
    let lines = wait_for_value(
        "the reconcile of web logged its status write and its end",
        Duration::from_secs(60),
        || {
            let text = agent.log_text();
            async move {
                let lines: Vec<Value> = text
                    .lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .filter(|l| reconcile_span(l).is_some_and(|s| s["runtime"] == "web"))
                    .collect();
                let has = |msg: &str| lines.iter().any(|l| l["message"] == msg);
                (has("writing status") && has("reconciled")).then_some(lines)
            }
        },
    )
    .await;
    let log = agent.log_text();
    for line in &lines {
        let span = reconcile_span(line).expect("span");
        assert_eq!(span["namespace"], ns.name.as_str(), "{line}");
        assert!(span["generation"].as_i64().is_some(), "{line}");
    }
    let status_lines: Vec<&Value> = lines
        .iter()
        .filter(|l| l["message"] == "writing status")
        .collect();
    assert!(
        status_lines
            .iter()
            .any(|l| reconcile_span(l).expect("span")["generation"] == generation),
        "a status write names generation {generation}:\n{log}"
    );
    let ends: Vec<&Value> = lines
        .iter()
        .filter(|l| l["message"] == "reconciled")
        .collect();
    assert!(
        ends.iter()
            .all(|l| reconcile_span(l).expect("span")["outcome"].is_string()),
        "every closing line carries the outcome:\n{log}"
    );
    assert!(
        ends.iter()
            .any(|l| reconcile_span(l).expect("span")["outcome"] == "ok"),
        "a reconcile of web ended ok:\n{log}"
    );
    // Every line the reconcile module writes is inside a reconcile span.
    for l in log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        if l["target"] == "berth_agent::controller::reconcile" {
            assert!(reconcile_span(&l).is_some(), "outside the span: {l}");
        }
    }
}
