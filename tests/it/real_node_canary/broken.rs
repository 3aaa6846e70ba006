//! Breaking a handler the way an operator does, and mending it: runsc's
//! binary and shim moved away; containerd's `runsc` pointed at plain runc.

use std::time::Duration;

use berth_shared::api::AttestationState;
use berth_tests::harness::{SharedCluster, TestNamespace, wait_for};
use berth_tests::localcluster::realnode::config::{handler_end_marker, handler_marker};
use berth_tests::localcluster::realnode::{RealNodesInfo, breakage};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use serde_json::{Value, json};

use super::{PERIOD, berth, canary_agent, class, grants, handler_nodes, node_state, within};
use crate::agent_support::{create_runtime, wait_condition};
use crate::real_node::{NODE, WAIT, handler_replaced, namespace, on_real_node, with_runsc};

/// A Runtime of `service` (granted `alias`) on the real node.
async fn placed(info: &RealNodesInfo, ns: &TestNamespace, service: &str, alias: &str) {
    create_runtime(
        ns,
        service,
        on_real_node(info, service, json!({"runtimeProfile": alias})),
    )
    .await;
}

/// `berth-localcluster VERB runsc --dir DIR` (break-handler or
/// restore-handler, the README's commands): its stdout.
async fn handler_command(cluster: &SharedCluster, verb: &str) -> String {
    let bin = berth_tests::harness::localcluster_binary().expect("berth-localcluster");
    let out = tokio::process::Command::new(bin)
        .args([verb, "runsc", "--dir"])
        .arg(&cluster.dir)
        .output()
        .await
        .expect("run berth-localcluster");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{verb}: {}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The paths the command says it `verb` (moved away, restored) on the
/// node: runsc and its shim, in the node's bin directory.
fn moved_paths(info: &RealNodesInfo, out: &str, verb: &str) -> Vec<std::path::PathBuf> {
    let node = &info.nodes[0];
    let bin = node
        .containerd_config
        .parent()
        .expect("node dir")
        .join("bin");
    let paths: Vec<std::path::PathBuf> = out
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{}: {verb} ", node.name)))
        .map(std::path::PathBuf::from)
        .collect();
    let expected: Vec<_> = breakage::handler_binaries("runsc")
        .expect("runsc")
        .iter()
        .map(|b| bin.join(b))
        .collect();
    assert_eq!(paths, expected, "runsc and its shim: {out}");
    paths
}

#[tokio::test]
async fn real_node_canary_fails_when_runsc_is_moved_away_and_recovers() {
    let Some((cluster, info)) = with_runsc().await else {
        return;
    };
    let _exclusive = NODE.write().await;
    let node = info.nodes[0].name.clone();
    let ns = namespace(cluster, "canary-moved").await;
    let gvisor = class(&ns, "gvisor", "runsc", json!({})).await;
    let file = grants(&ns, &[("sandboxed", gvisor.as_str(), "runsc")]);
    let alias = format!("{}-sandboxed", ns.name);
    let canaried = canary_agent(cluster, &ns, &file, PERIOD).await;
    placed(&info, &ns, "sandboxed", &alias).await;
    wait_condition(&ns, "sandboxed", "Ready", "True", None).await;
    node_state(
        &ns,
        &alias,
        &node,
        AttestationState::Verified,
        None,
        within(PERIOD),
    )
    .await;

    // The operator's mistake: runsc and its shim gone from the node, by
    // the README's command for the demo's real node.
    let out = handler_command(cluster, "break-handler").await;
    let moved = moved_paths(&info, &out, "moved away");
    assert!(moved.iter().all(|p| p.symlink_metadata().is_err()), "{out}");
    let since_move = std::time::Instant::now();
    let failing = node_state(
        &ns,
        &alias,
        &node,
        AttestationState::Failing,
        Some("SandboxNotCreated"),
        within(PERIOD),
    )
    .await;
    eprintln!(
        "failing {:?} after the move: {failing:?}",
        since_move.elapsed()
    );
    assert!(
        failing.message.starts_with("sandbox not created"),
        "{failing:?}"
    );
    let rt = wait_condition(
        &ns,
        "sandboxed",
        "HandlerReady",
        "False",
        Some("HandlerFailing"),
    )
    .await;
    let hr = rt
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "HandlerReady"))
        .expect("HandlerReady");
    assert!(
        hr.message.contains(&node) && hr.message.contains("sandbox not created"),
        "{hr:?}"
    );
    wait_condition(&ns, "sandboxed", "Degraded", "True", Some("HandlerFailing")).await;
    let metrics = canaried.agent.metrics().await;
    assert_eq!(
        handler_nodes(&metrics, &gvisor, "failing"),
        1.0,
        "{metrics}"
    );
    let lease = format!("{}/agent-{}", ns.name, ns.name);
    let (code, out) = berth(
        cluster,
        &[
            "-n",
            &ns.name,
            "--agent-lease",
            &lease,
            "check",
            "-o",
            "json",
        ],
    )
    .await;
    let doc: Value = serde_json::from_str(&out).expect("check -o json");
    let finding = doc["items"]
        .as_array()
        .and_then(|i| i.iter().find(|f| f["kind"] == "handler-failing"))
        .unwrap_or_else(|| panic!("no handler-failing finding: {doc:#}"))
        .clone();
    assert_eq!(code, 3, "an error finding: {doc:#}");
    assert_eq!(finding["severity"], "error");
    assert!(
        finding["objects"]
            .as_array()
            .is_some_and(|o| o.contains(&json!(format!("Node/{node}")))),
        "{finding}"
    );
    // The Handlers view's JSON says it too, with the canary's verdict.
    let handlers = crate::real_node::berth_get(cluster, &ns.name, "handlers").await;
    let row = handlers["items"]
        .as_array()
        .and_then(|i| i.iter().find(|r| r["class"] == gvisor.as_str()))
        .cloned()
        .unwrap_or_else(|| panic!("no row for {gvisor}: {handlers:#}"));
    assert_eq!(row["attestation"]["failing"], 1, "{row:#}");

    // Put it back, by the README's other command: verified again.
    let out = handler_command(cluster, "restore-handler").await;
    assert_eq!(moved_paths(&info, &out, "restored"), moved, "{out}");
    assert!(moved.iter().all(|p| p.symlink_metadata().is_ok()), "{out}");
    let since_restore = std::time::Instant::now();
    node_state(
        &ns,
        &alias,
        &node,
        AttestationState::Verified,
        None,
        within(PERIOD),
    )
    .await;
    eprintln!("verified {:?} after the restore", since_restore.elapsed());
    wait_condition(&ns, "sandboxed", "HandlerReady", "True", None).await;
    let metrics = canaried.agent.metrics().await;
    assert_eq!(handler_nodes(&metrics, &gvisor, "verified"), 1.0);
    canaried.stop(&ns).await;
}

/// containerd's config with handler `h`'s tables replaced by plain runc's
/// (the handler keeps its name: every presence check passes).
fn pointed_at_runc(config: &str, h: &str, runc: &str, root: &str) -> String {
    let (start, end) = (handler_marker(h), handler_end_marker(h));
    let table = format!(
        "{start}\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'{h}']\n  runtime_type = \"io.containerd.runc.v2\"\n  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'{h}'.options]\n    BinaryName = {runc:?}\n    Root = {root:?}\n{end}\n"
    );
    handler_replaced(config, h, &table)
}

#[tokio::test]
async fn real_node_canary_catches_gvisor_pointed_at_plain_runc() {
    let Some((cluster, info)) = with_runsc().await else {
        return;
    };
    let _exclusive = NODE.write().await;
    let n = &info.nodes[0];
    let ns = namespace(cluster, "canary-typo").await;
    let gvisor = class(&ns, "gvisor", "runsc", json!({})).await;
    let file = grants(&ns, &[("sandboxed", gvisor.as_str(), "runsc")]);
    let alias = format!("{}-sandboxed", ns.name);
    let canaried = canary_agent(cluster, &ns, &file, PERIOD).await;
    node_state(
        &ns,
        &alias,
        &n.name,
        AttestationState::Verified,
        None,
        within(PERIOD),
    )
    .await;

    let config = std::fs::read_to_string(&n.containerd_config).expect("config");
    let dir = n.containerd_config.parent().expect("node dir");
    let typo = pointed_at_runc(
        &config,
        "runsc",
        &dir.join("bin/runc").display().to_string(),
        &n.containerd_socket
            .parent()
            .and_then(|p| p.parent())
            .expect("state")
            .join("runc-typo")
            .display()
            .to_string(),
    );
    assert_ne!(typo, config, "the runsc tables were found");
    std::fs::write(&n.containerd_config, &typo).expect("write config");
    let restart = |c: &'static SharedCluster, component: String| async move {
        tokio::task::spawn_blocking(move || c.restart(&component, Duration::from_secs(120)))
            .await
            .expect("join")
            .expect("restart containerd");
    };
    let component = format!("containerd-{}", n.name);
    restart(cluster, component.clone()).await;
    let nodes: Api<Node> = Api::all(ns.client.clone());
    // Still reported: the presence check passes.
    wait_for("the node still reports runsc", WAIT, || {
        let (nodes, name) = (nodes.clone(), n.name.clone());
        async move {
            nodes.get(&name).await.ok().is_some_and(|node| {
                crate::real_node::node_handlers(&node).contains(&"runsc".to_string())
            })
        }
    })
    .await;
    let changed = std::time::Instant::now();
    let failing = node_state(
        &ns,
        &alias,
        &n.name,
        AttestationState::Failing,
        Some("KernelMismatch"),
        within(PERIOD),
    )
    .await;
    eprintln!(
        "failing {:?} after the restart: {failing:?}",
        changed.elapsed()
    );
    assert!(
        failing
            .message
            .starts_with("expected gVisor, saw the host kernel"),
        "{failing:?}"
    );

    std::fs::write(&n.containerd_config, &config).expect("restore config");
    restart(cluster, component).await;
    node_state(
        &ns,
        &alias,
        &n.name,
        AttestationState::Verified,
        None,
        within(PERIOD),
    )
    .await;
    canaried.stop(&ns).await;
}
