//! The RuntimeClass side of a grant on a real control plane: a class
//! deleted under a granted Runtime blocks it without touching anything; a
//! class whose handler differs from the grant's, or that sets overhead or
//! scheduling, is refused; HandlerReady reports nodes that lack the handler.

use std::time::Duration;

use berth_shared::api::Runtime;
use berth_tests::harness::{TestNamespace, wait_for};
use berth_tests::localcluster::nodes::set_handlers;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, Granted, binding, condition, create_class, create_runtime, server_pods,
    setup, setup_granted, wait_condition, wait_reconciles, write_grants,
};

const WAIT: Duration = Duration::from_secs(120);

async fn merge_runtime(ns: &TestNamespace, name: &str, patch: serde_json::Value) {
    Api::<Runtime>::namespaced(ns.client.clone(), &ns.name)
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("patch Runtime");
}

fn cond_of(rt: &Runtime, type_: &str) -> (String, String, String) {
    let c = condition(rt, type_).unwrap_or_else(|| panic!("{type_} condition"));
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

#[tokio::test]
async fn agent_class_deleted_after_grant_blocks_and_changes_nothing() {
    let Granted {
        ns,
        class,
        bw,
        grants,
    } = setup_granted("agent-rcdel").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": bw,
               "schedules": [{"name": "nightly", "schedule": "0 3 * * *"}]}),
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    let deps: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    let crons: Api<CronJob> = Api::namespaced(ns.client.clone(), &ns.name);
    let before = deps.get("web").await.expect("deployment");
    let cron_before = crons.get("web-cron-nightly").await.expect("cronjob");

    Api::<RuntimeClass>::all(ns.client.clone())
        .delete(&class, &DeleteParams::default())
        .await
        .expect("delete RuntimeClass");
    let rt = wait_condition(&ns, "web", "Blocked", "True", Some("ClassMissing")).await;
    let (status, reason, message) = cond_of(&rt, "HandlerReady");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ClassMissing")
    );
    assert!(message.contains(&class), "{message}");
    let (status, reason, _) = cond_of(&rt, "Ready");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ClassMissing")
    );
    let rollout = rt.status.as_ref().and_then(|s| s.rollout.clone());
    assert_eq!(rollout.map(|r| r.phase.as_str()), Some("Blocked"));

    // A spec change the agent would otherwise carry out.
    merge_runtime(&ns, "web", json!({"spec": {"replicas": 3}})).await;
    wait_reconciles(&agent, 3.0).await;
    let rt = wait_condition(&ns, "web", "Blocked", "True", Some("ClassMissing")).await;
    assert_eq!(
        rt.status.as_ref().and_then(|s| s.observed_generation),
        rt.metadata.generation,
        "the agent saw the change"
    );
    let after = deps.get("web").await.expect("deployment");
    assert_eq!(
        before.metadata.generation, after.metadata.generation,
        "nothing changed on the Deployment"
    );
    assert_eq!(after.spec.and_then(|s| s.replicas), Some(2));
    assert_eq!(after.status.and_then(|s| s.ready_replicas), Some(2));
    let pods = server_pods(&ns, "web").await;
    assert_eq!(pods.len(), 2, "pods keep running");
    assert!(pods.iter().all(|p| {
        p.metadata.deletion_timestamp.is_none()
            && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    }));
    let cron_after = crons.get("web-cron-nightly").await.expect("cronjob");
    assert_eq!(
        cron_before.metadata.generation,
        cron_after.metadata.generation
    );
    assert_eq!(cron_after.spec.and_then(|s| s.suspend), Some(false));

    // Retirement is always carried out, blocked or not.
    merge_runtime(&ns, "web", json!({"spec": {"suspend": true}})).await;
    wait_for("suspended while blocked", WAIT, || {
        let (deps, crons) = (deps.clone(), crons.clone());
        async move {
            let d = deps.get("web").await.ok();
            let c = crons.get("web-cron-nightly").await.ok();
            d.and_then(|d| d.spec).and_then(|s| s.replicas) == Some(0)
                && c.and_then(|c| c.spec).and_then(|s| s.suspend) == Some(true)
        }
    })
    .await;
}

async fn create_class_json(client: &Client, value: serde_json::Value) {
    let rc: RuntimeClass = serde_json::from_value(value).expect("RuntimeClass");
    Api::<RuntimeClass>::all(client.clone())
        .create(&PostParams::default(), &rc)
        .await
        .expect("create RuntimeClass");
}

#[tokio::test]
async fn agent_handler_mismatch_and_unsupported_classes_are_blocked() {
    let (ns, _class) = setup("agent-rcbad").await;
    let c = &ns.client;
    let mismatch = format!("{}-mismatch", ns.name);
    let overhead = format!("{}-overhead", ns.name);
    let scheduling = format!("{}-scheduling", ns.name);
    create_class(c, &mismatch, "runc").await;
    create_class_json(
        c,
        json!({"metadata": {"name": overhead}, "handler": "bounded-runc",
               "overhead": {"podFixed": {"cpu": "100m"}}}),
    )
    .await;
    create_class_json(
        c,
        json!({"metadata": {"name": scheduling}, "handler": "bounded-runc",
               "scheduling": {"nodeSelector": {"type": "kwok"}}}),
    )
    .await;
    let (mm, oh, sc) = (
        format!("{}-mm", ns.name),
        format!("{}-oh", ns.name),
        format!("{}-sc", ns.name),
    );
    let grants = write_grants(&[
        binding(&mm, &mismatch, "bounded-runc"),
        binding(&oh, &overhead, "bounded-runc"),
        binding(&sc, &scheduling, "bounded-runc"),
    ]);
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    for (name, alias) in [("mm", &mm), ("oh", &oh), ("sc", &sc)] {
        create_runtime(&ns, name, json!({"runtimeProfile": alias})).await;
    }
    let cases = [
        ("mm", "HandlerMismatch", vec!["runc", "bounded-runc"]),
        ("oh", "ClassUnsupported", vec!["overhead"]),
        ("sc", "ClassUnsupported", vec!["scheduling"]),
    ];
    for (name, reason, words) in cases {
        let rt = wait_condition(&ns, name, "Blocked", "True", Some(reason)).await;
        for type_ in ["HandlerReady", "ProfileGranted", "Ready"] {
            let (status, r, _) = cond_of(&rt, type_);
            assert_eq!(
                (status.as_str(), r.as_str()),
                ("False", reason),
                "{name} {type_}"
            );
        }
        let (_, _, message) = cond_of(&rt, "Blocked");
        for w in words {
            assert!(message.contains(w), "{name}: {message:?} names {w}");
        }
        let profile = rt.status.and_then(|s| s.profile).expect("profile");
        assert_eq!(profile.state.as_str(), reason, "{name}");
    }
    // Nothing was created for any of them.
    wait_reconciles(&agent, 3.0).await;
    let deps = Api::<Deployment>::namespaced(c.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .expect("list");
    assert!(deps.items.is_empty());
    let cms = Api::<ConfigMap>::namespaced(c.clone(), &ns.name)
        .list(&ListParams::default().labels("app.kubernetes.io/managed-by=berth"))
        .await
        .expect("list");
    assert!(cms.items.is_empty());

    for class in [mismatch, overhead, scheduling] {
        let _ = Api::<RuntimeClass>::all(c.clone())
            .delete(&class, &DeleteParams::default())
            .await;
    }
}

fn is_ready(n: &Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn handler_names(n: &Node) -> Vec<String> {
    n.status
        .as_ref()
        .and_then(|s| s.runtime_handlers.as_ref())
        .map(|hs| hs.iter().filter_map(|h| h.name.clone()).collect())
        .unwrap_or_default()
}

/// Adds (`add`) or removes a handler on one node, keeping the others.
async fn toggle_handler(client: &Client, node: &str, handler: &str, add: bool) {
    let nodes: Api<Node> = Api::all(client.clone());
    let n = nodes.get(node).await.expect("node");
    let mut hs: Vec<String> = handler_names(&n)
        .into_iter()
        .filter(|h| h != handler)
        .collect();
    if add {
        hs.push(handler.to_string());
    }
    set_handlers(client, node, &hs).await.expect("set handlers");
}

#[tokio::test]
async fn agent_handler_missing_on_some_nodes_is_placement_incomplete() {
    let (ns, _class) = setup("agent-place").await;
    let c = &ns.client;
    let nodes: Api<Node> = Api::all(c.clone());
    let ready: Vec<Node> = nodes
        .list(&ListParams::default())
        .await
        .expect("nodes")
        .items
        .into_iter()
        .filter(is_ready)
        .collect();
    assert!(ready.len() >= 2, "needs two Ready nodes");
    let mut names: Vec<String> = ready
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    names.sort();
    let node = names[0].clone();
    // A handler only this node reports: added to the node's list, so the
    // other tests sharing the nodes see no difference.
    let handler = format!("partial-{}", ns.name);
    toggle_handler(c, &node, &handler, true).await;
    // Still reported after kwok's heartbeats.
    wait_for("node reports the added handler", WAIT, || {
        let nodes = nodes.clone();
        let (node, handler) = (node.clone(), handler.clone());
        async move {
            nodes
                .get(&node)
                .await
                .is_ok_and(|n| handler_names(&n).contains(&handler))
        }
    })
    .await;

    let class = format!("{}-partial", ns.name);
    create_class(c, &class, &handler).await;
    let alias = format!("{}-p", ns.name);
    let grants = write_grants(&[binding(&alias, &class, &handler)]);
    let _agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": alias})).await;
    let rt = wait_condition(
        &ns,
        "web",
        "HandlerReady",
        "False",
        Some("PlacementIncomplete"),
    )
    .await;
    let (_, _, message) = cond_of(&rt, "HandlerReady");
    let total = names.len();
    let expected = format!("{} of {total} Ready nodes", total - 1);
    assert!(
        message.starts_with(&expected),
        "{expected:?} in {message:?}"
    );
    for other in names.iter().skip(1) {
        assert!(message.contains(other.as_str()), "{other} in {message:?}");
    }
    assert!(!message.contains(&format!("{node},")) && !message.ends_with(node.as_str()));
    let (status, reason, _) = cond_of(&rt, "Degraded");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "PlacementIncomplete")
    );
    let (status, _, _) = cond_of(&rt, "Ready");
    assert_eq!(status, "False");

    // Scheduled only onto the node that has it: complete.
    merge_runtime(
        &ns,
        "web",
        json!({"spec": {"scheduling": {"nodeSelector": {"kubernetes.io/hostname": node}}}}),
    )
    .await;
    let rt = wait_condition(&ns, "web", "HandlerReady", "True", Some("HandlerPresent")).await;
    let (_, _, message) = cond_of(&rt, "HandlerReady");
    assert!(message.contains("all 1 Ready nodes"), "{message}");
    wait_condition(&ns, "web", "Ready", "True", None).await;

    // The handler leaves that node too: absent everywhere it may run.
    toggle_handler(c, &node, &handler, false).await;
    let rt = wait_condition(&ns, "web", "HandlerReady", "False", Some("HandlerAbsent")).await;
    let (status, _, _) = cond_of(&rt, "Ready");
    assert_eq!(status, "False");
    let _ = Api::<RuntimeClass>::all(c.clone())
        .delete(&class, &DeleteParams::default())
        .await;
}
