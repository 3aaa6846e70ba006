//! Issue 31 on the real control plane: `berth get handlers --matrix -o
//! json` against kwok nodes with different handler sets (one reporting
//! the same set in another order, as some runtimes do, and re-reordered by
//! another field manager), and the console model's relations from a grant
//! to its class, Runtime, workload, pods and nodes and back from a pod to
//! the grant, over the scoped watches the screen asks for.

use std::time::Duration;

use berth_console::model::{ClusterId, Kind, Scope, Screen};
use berth_console::rows::relations::{Anchor, identity_selector, relations};
use berth_shared::api::RuntimeGrant;
use berth_tests::harness::{self, TestNamespace, wait_for, wait_for_value};
use berth_tests::localcluster::nodes::runtime_handlers;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, binding, create_runtime, setup, wait_condition, write_grants,
};
use crate::console::{Live, berth_binary};
use crate::support::own_node::OwnNode;

const WAIT: Duration = Duration::from_secs(120);

/// The group (of the `groups` array) that holds `node`.
fn group_of<'a>(doc: &'a serde_json::Value, node: &str) -> Option<&'a serde_json::Value> {
    doc["groups"].as_array()?.iter().find(|g| {
        g["nodes"]
            .as_array()
            .is_some_and(|ns| ns.iter().any(|n| n == node))
    })
}

fn cell<'a>(group: &'a serde_json::Value, class: &str) -> Option<&'a serde_json::Value> {
    group["cells"]
        .as_array()?
        .iter()
        .find(|c| c["class"] == class)
}

async fn matrix_json(ns: &str) -> Option<serde_json::Value> {
    let bin = tokio::task::spawn_blocking(berth_binary)
        .await
        .expect("build");
    let kubeconfig = tokio::task::spawn_blocking(|| harness::cluster().kubeconfig.clone())
        .await
        .expect("cluster");
    let out = tokio::process::Command::new(bin)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["-n", ns, "get", "handlers", "--matrix", "-o", "json"])
        .output()
        .await
        .expect("run berth");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.bytes().any(|b| b < 0x20 && b != b'\n'),
        "control byte in the output"
    );
    if !out.status.success() {
        return None;
    }
    serde_json::from_str(&stdout).ok()
}

/// Three nodes: `a` and `b` report the same handlers in another order,
/// `c` lacks the class's handler and runs one of its pods anyway (placed
/// by name). `a` and `b` are one column; `c` is its own, with the handler
/// absent and the pod counted. A runtime that reorders its list (another
/// field manager rewriting `a`'s status) changes nothing.
#[tokio::test]
async fn get_handlers_matrix_groups_nodes_by_handler_set() {
    let ns = TestNamespace::new("matrix").await;
    let client = ns.client.clone();
    let mark = ns.name.clone();
    let (a, b, c) = (
        format!("{mark}-a"),
        format!("{mark}-b"),
        format!("{mark}-c"),
    );
    const KEY: &str = "berth.dev/matrix";
    let node = OwnNode::create(&client, &a, KEY, &mark, Some(&["runc", "runsc", "kata"])).await;
    OwnNode::create(&client, &b, KEY, &mark, Some(&["kata", "runc", "runsc"])).await;
    OwnNode::create(&client, &c, KEY, &mark, Some(&["runc"])).await;
    let class = format!("{mark}-gvisor");
    let rc: RuntimeClass = serde_json::from_value(json!({
        "metadata": {"name": class}, "handler": "runsc",
        "scheduling": node.placement(),
    }))
    .expect("class");
    let classes: Api<RuntimeClass> = Api::all(client.clone());
    classes
        .create(&PostParams::default(), &rc)
        .await
        .expect("create class");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "stray", "namespace": ns.name},
        "spec": {"runtimeClassName": class, "nodeName": c,
            "tolerations": [{"key": "berth.dev/matrix", "operator": "Exists"}],
            "containers": [{"name": "app", "image": "registry.invalid/app:1"}]},
    }))
    .expect("pod");
    Api::<Pod>::namespaced(client.clone(), &ns.name)
        .create(&PostParams::default(), &pod)
        .await
        .expect("create pod");

    let check = |doc: &serde_json::Value| -> Option<()> {
        let ga = group_of(doc, &a)?;
        let gc = group_of(doc, &c)?;
        let same = ga["nodes"].as_array()?.iter().any(|n| n == b.as_str());
        let apart = !ga["nodes"].as_array()?.iter().any(|n| n == c.as_str());
        let ca = cell(ga, &class)?;
        let cc = cell(gc, &class)?;
        (same
            && apart
            && ca["scheduling"] == "allowed"
            && ca["handler"]["state"] == "present"
            && ca["handler"]["features"]["recursiveReadOnlyMounts"] == true
            && ca["pods"] == 0
            && cc["scheduling"] == "allowed"
            && cc["handler"]["state"] == "absent"
            && cc["pods"] == 1)
            .then_some(())
    };
    // Wait until the matrix shows it (no timing asserted: a generous
    // deadline for a busy machine).
    let deadline = std::time::Instant::now() + WAIT;
    let doc = loop {
        let last = matrix_json(&ns.name).await;
        if let Some(doc) = last.as_ref().filter(|d| check(d).is_some()) {
            break doc.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the matrix never grouped a+b apart from c: {last:#?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(doc["kind"], "HandlerMatrix");
    assert!(
        doc["classes"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["class"] == class))
    );

    // Another field manager rewrites a's list in yet another order (a
    // runtime restarting): still one group with b.
    let mut reordered = runtime_handlers(&["runsc".into(), "kata".into(), "runc".into()]);
    reordered.rotate_left(1);
    Api::<Node>::all(client.clone())
        .patch_status(
            &a,
            &PatchParams::apply("intruder").force(),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Node", "status": {"runtimeHandlers": reordered}})),
        )
        .await
        .expect("reorder a's handlers");
    let nodes: Api<Node> = Api::all(client.clone());
    let a2 = a.clone();
    wait_for("a's new order visible", WAIT, || {
        let (nodes, a2) = (nodes.clone(), a2.clone());
        async move {
            nodes.get(&a2).await.is_ok_and(|n| {
                n.status
                    .and_then(|s| s.runtime_handlers)
                    .and_then(|hs| hs.first().and_then(|h| h.name.clone()))
                    .as_deref()
                    == Some("kata")
            })
        }
    })
    .await;
    let again = matrix_json(&ns.name).await.expect("matrix");
    assert!(check(&again).is_some(), "{again:#}");

    for n in [&a, &b, &c] {
        let _ = nodes.delete(n, &DeleteParams::default()).await;
    }
    let _ = classes.delete(&class, &DeleteParams::default()).await;
}

/// From a grant to its class, its Runtime, the Runtime's Deployment, its
/// pods and their nodes, over exactly the scoped watches the relations
/// screen asks for; from one of those pods back to the grant. A copy that
/// names the same alias under another identity (blocked by the agent) is
/// not listed under the grant.
#[tokio::test]
async fn relations_lead_from_a_grant_to_its_pods_and_back() {
    let (ns, class) = setup("console-rel").await;
    let alias = format!("{}-bw", ns.name);
    let grants = write_grants(&[binding(&alias, &class, "bounded-runc")]);
    let opts = AgentOpts::new(&ns.name, Some(&grants));
    let lease = (ns.name.clone(), opts.lease_name.clone());
    let _agent = Agent::start(opts).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": alias})).await;
    create_runtime(
        &ns,
        "copy",
        json!({"runtimeProfile": alias, "service": "other", "replicas": 1}),
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    wait_condition(&ns, "copy", "Blocked", "True", None).await;

    let grant: RuntimeGrant = wait_for_value("the published grant", WAIT, || {
        let api: Api<RuntimeGrant> = Api::all(ns.client.clone());
        let alias = alias.clone();
        async move { api.get_opt(&alias).await.ok().flatten() }
    })
    .await;
    let anchor = Anchor::Grant {
        name: alias.clone(),
        class: class.clone(),
        selector: identity_selector(&grant),
    };
    let scope = Scope::Namespace(ns.name.clone());
    let keys = Screen::Relations(ClusterId::new("test"), anchor.clone()).watches(&scope);
    assert!(
        keys.iter()
            .all(|k| !k.is_all() || matches!(k.kind, Kind::Runtime | Kind::RuntimeGrant)),
        "{keys:?}"
    );
    let mut live = Live::start_watches(ns.client.clone(), scope.clone(), lease.clone(), &keys);
    let pods = live
        .until(
            "the grant's class, Runtime, Deployment, two pods and their nodes",
            WAIT,
            |app| {
                let lines = relations(&app.clusters[0].data.store, &anchor);
                let named = |rel: &str| -> Vec<String> {
                    lines
                        .iter()
                        .filter(|l| l.relation == rel && l.target.is_some())
                        .map(|l| l.name())
                        .collect()
                };
                let class_ok = lines
                    .iter()
                    .any(|l| l.relation == "class" && l.state == "handler bounded-runc");
                let pods = named("pod");
                (class_ok
                    && named("runtime") == [format!("{}/web", ns.name)]
                    && named("workload") == [format!("{}/web", ns.name)]
                    && pods.len() == 2
                    && !named("node").is_empty())
                .then_some(pods)
            },
        )
        .await;
    // Nothing of the copy: its pods do not carry the grant's identity.
    let store = &live.app.clusters[0].data.store;
    assert!(
        !store.pods.keys().any(|k| k.1.starts_with("copy")),
        "the scoped watch selected the copy's pods"
    );

    // Back from a pod to the grant.
    let (pns, pname) = pods[0].split_once('/').expect("ns/name");
    let pod = Anchor::Pod((pns.to_string(), pname.to_string()));
    let keys = Screen::Relations(ClusterId::new("test"), pod.clone()).watches(&scope);
    let mut live = Live::start_watches(ns.client.clone(), scope, lease, &keys);
    live.until("the pod's grant", WAIT, |app| {
        relations(&app.clusters[0].data.store, &pod)
            .iter()
            .any(|l| {
                l.relation == "grant"
                    && l.target == Some((Kind::RuntimeGrant, (String::new(), alias.clone())))
            })
            .then_some(())
    })
    .await;
}
