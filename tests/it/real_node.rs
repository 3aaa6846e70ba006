//! berth on a real node (`berth-localcluster --real-nodes 1`): a kubelet and
//! containerd on this machine run the pods berth renders, under the handlers
//! containerd really has (`runc`, `bounded-runc`, `extra-runc`, `runsc` when
//! gVisor built). The application is the project's test app
//! (tests/k8s/testapp), pinned by digest and imported, never pulled.
//!
//! These tests share one cluster with one real node, separate from the
//! kwok cluster of the other tests. Where the machine cannot run a kubelet
//! (not root, no cgroup filesystem, …) each test prints why and passes
//! without running: `harness::real_node_cluster` decides, and any other
//! start-up failure fails the test.

mod kubelet;

use std::path::PathBuf;
use std::time::Duration;

use berth_tests::harness::{self, SharedCluster, TestNamespace, wait_for_value};
use berth_tests::localcluster::health::client_from_kubeconfig;
use berth_tests::localcluster::realnode::config::{handler_end_marker, handler_marker};
use berth_tests::localcluster::realnode::{LABEL_KEY, RealNodesInfo, TAINT_KEY};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::ListParams;
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, ENVIRONMENT, PROJECT, binding_for_service, create_class, create_runtime,
    wait_condition, write_grants,
};

/// Pods on a real node start in seconds; generous for a loaded machine.
pub(crate) const WAIT: Duration = Duration::from_secs(240);

/// The tests run in parallel on one node; the one that restarts containerd
/// takes this exclusively, so that no other test's pod is being created
/// (or probed through containerd) while containerd is away.
pub(crate) static NODE: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// The shared real-node cluster and what it reports, or `None` (skip).
pub(crate) async fn real() -> Option<(&'static SharedCluster, RealNodesInfo)> {
    let cluster = tokio::task::spawn_blocking(harness::real_node_cluster)
        .await
        .expect("start")?;
    let info = RealNodesInfo::read(&cluster.dir).expect("real-nodes.json");
    Some((cluster, info))
}

/// [`real`], when the node has gVisor's `runsc` handler; `None` (skip,
/// saying why) when it has not (gVisor did not build here).
pub(crate) async fn with_runsc() -> Option<(&'static SharedCluster, RealNodesInfo)> {
    let (cluster, info) = real().await?;
    if !info.nodes[0].handlers.iter().any(|h| h == "runsc") {
        eprintln!(
            "SKIPPED: no runsc handler: {}",
            info.runsc_missing.as_deref().unwrap_or("unknown")
        );
        return None;
    }
    Some((cluster, info))
}

/// A namespace on the real-node cluster, with berth's identity labels, the
/// CRDs, and a RuntimeClass `<ns>-<handler>` per handler asked for.
pub(crate) async fn namespace(cluster: &SharedCluster, prefix: &str) -> TestNamespace {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let client = client_from_kubeconfig(&cluster.kubeconfig)
        .await
        .expect("client");
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let ns = TestNamespace::create(
        client,
        format!("{prefix}-{}-{n}", std::process::id()),
        &[
            ("berth.dev/project", PROJECT),
            ("berth.dev/environment", ENVIRONMENT),
        ],
    )
    .await;
    harness::install_crds(&ns.client).await;
    ns
}

/// The Runtime spec fields that put the test app on the real node: the
/// image by digest, the toleration of the node's taint and its label.
pub(crate) fn on_real_node(
    info: &RealNodesInfo,
    service: &str,
    extra: serde_json::Value,
) -> serde_json::Value {
    let (repository, digest) = info
        .testapp_image
        .split_once('@')
        .expect("testapp image by digest");
    let mut spec = json!({
        "service": service,
        "image": {"repository": repository, "digest": digest},
        "replicas": 1,
        "shutdownDrainTimeoutSeconds": 0,
        "scheduling": {
            "nodeSelector": {LABEL_KEY: "true"},
            "tolerations": [{"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        },
    });
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            s.insert(k.clone(), v.clone());
        }
    }
    spec
}

/// An agent for the namespace, against the real-node cluster; its canary
/// Jobs run the agent's own image, imported into the node (canaries off
/// when it could not be built).
async fn agent(cluster: &SharedCluster, ns: &TestNamespace, grants: &std::path::Path) -> Agent {
    Agent::start(agent_opts(cluster, ns, grants)).await
}

/// [`agent`]'s options.
pub(crate) fn agent_opts<'a>(
    cluster: &SharedCluster,
    ns: &'a TestNamespace,
    grants: &'a std::path::Path,
) -> AgentOpts<'a> {
    let info = RealNodesInfo::read(&cluster.dir).expect("real-nodes.json");
    let mut opts = AgentOpts::new(&ns.name, Some(grants));
    opts.kubeconfig = Some(cluster.kubeconfig.clone());
    opts.canary_image = info.agent_image;
    opts
}

/// A grant of `handler` to `service` (class `<ns>-<handler>`), its
/// RuntimeClass, and the grants file; returns (alias, grants file).
async fn grant(ns: &TestNamespace, service: &str, handler: &str) -> (String, PathBuf) {
    let class = format!("{}-{handler}", ns.name);
    create_class(&ns.client, &class, handler).await;
    let alias = format!("{}-{service}", ns.name);
    let file = write_grants(&[binding_for_service(&alias, &class, handler, service)]);
    (alias, file)
}

/// The one pod of Runtime `name`, once it exists on a node.
async fn the_pod(ns: &TestNamespace, name: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let selector = berth_shared::render::labels::selector(name)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    wait_for_value(&format!("the pod of {name}"), WAIT, || {
        let (pods, selector) = (pods.clone(), selector.clone());
        async move {
            let list = pods
                .list(&ListParams::default().labels(&selector))
                .await
                .ok()?;
            list.items.into_iter().find(|p| {
                p.metadata.deletion_timestamp.is_none()
                    && p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
            })
        }
    })
    .await
}

/// What the test app reports about its sandbox (GET /report through the
/// apiserver's pod proxy, which dials the pod's IP on the node's bridge).
async fn report(ns: &TestNamespace, pod: &str) -> serde_json::Value {
    let path = format!(
        "/api/v1/namespaces/{}/pods/{pod}:9000/proxy/report",
        ns.name
    );
    wait_for_value(&format!("GET {path}"), WAIT, || {
        let (client, path) = (ns.client.clone(), path.clone());
        async move {
            let req = http::Request::get(&path).body(Vec::new()).ok()?;
            let text = client.request_text(req).await.ok()?;
            serde_json::from_str(&text).ok()
        }
    })
    .await
}

/// The contract, as the kernel enforces it inside the pod.
fn assert_contract(r: &serde_json::Value) {
    assert_eq!(r["UID"], 10001, "runs as uid 10001: {r}");
    assert_eq!(r["TokenMounted"], false, "no ServiceAccount token: {r}");
    // runc answers EROFS; gVisor checks permissions first (EACCES): the
    // mount options say read-only either way.
    let write = r["RootWrite"].as_str().unwrap_or_default();
    assert!(!write.is_empty(), "writing to / fails: {r}");
    let mount = r["RootMount"].as_str().unwrap_or_default();
    assert!(
        mount.split(',').any(|o| o == "ro"),
        "the root filesystem is mounted read-only: {r}"
    );
    assert_eq!(r["Status"]["NoNewPrivs"], "1", "{r}");
}

pub(crate) fn node_handlers(node: &Node) -> Vec<String> {
    node.status
        .as_ref()
        .and_then(|s| s.runtime_handlers.as_ref())
        .map(|hs| hs.iter().filter_map(|h| h.name.clone()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn real_node_reports_its_handlers_through_the_cri() {
    let Some((cluster, info)) = real().await else {
        return;
    };
    let _shared = NODE.read().await;
    let client = client_from_kubeconfig(&cluster.kubeconfig)
        .await
        .expect("client");
    let node = Api::<Node>::all(client)
        .get(&info.nodes[0].name)
        .await
        .expect("node");
    let handlers = node_handlers(&node);
    for h in ["runc", "bounded-runc"] {
        assert!(handlers.contains(&h.to_string()), "{h} in {handlers:?}");
    }
    // The features come from containerd, not from a test's patch.
    let status = node.status.expect("status");
    let features = status
        .runtime_handlers
        .unwrap_or_default()
        .into_iter()
        .find(|h| h.name.as_deref() == Some("bounded-runc"))
        .and_then(|h| h.features)
        .expect("bounded-runc features");
    assert_eq!(
        features.recursive_read_only_mounts,
        Some(true),
        "{features:?}"
    );
    let taints = node.spec.and_then(|s| s.taints).unwrap_or_default();
    assert!(taints.iter().any(|t| t.key == TAINT_KEY), "{taints:?}");
    if let Some(why) = &info.runsc_missing {
        eprintln!("NOTE: no runsc handler on this node: {why}");
    }
}

#[tokio::test]
async fn real_node_bounded_runc_pod_passes_real_probes_under_the_contract() {
    let Some((cluster, info)) = real().await else {
        return;
    };
    let _shared = NODE.read().await;
    let ns = namespace(cluster, "real-bounded").await;
    let (alias, grants) = grant(&ns, "api", "bounded-runc").await;
    let _agent = agent(cluster, &ns, &grants).await;
    create_runtime(
        &ns,
        "api",
        on_real_node(&info, "api", json!({"runtimeProfile": alias})),
    )
    .await;
    wait_condition(&ns, "api", "Ready", "True", None).await;
    let pod = the_pod(&ns, "api").await;
    let spec = pod.spec.clone().expect("spec");
    assert_eq!(spec.node_name.as_deref(), Some(info.nodes[0].name.as_str()));
    assert_eq!(
        spec.runtime_class_name.as_deref(),
        Some(format!("{}-bounded-runc", ns.name).as_str())
    );
    let r = report(&ns, pod.metadata.name.as_deref().expect("name")).await;
    assert_contract(&r);
    assert!(
        r["RootWrite"]
            .as_str()
            .unwrap_or_default()
            .contains("read-only file system"),
        "{r}"
    );
    assert_eq!(r["Status"]["CapEff"], "0000000000000000", "drop ALL: {r}");
    assert_eq!(
        r["Status"]["Seccomp"], "2",
        "seccomp filter (RuntimeDefault): {r}"
    );
    // bounded-runc's own base spec: visibly tighter than runc's.
    assert_eq!(r["OpenFilesLimit"], "256", "bounded-runc's limit: {r}");
}

#[tokio::test]
async fn real_node_gvisor_pod_runs_on_gvisors_kernel() {
    let Some((cluster, info)) = with_runsc().await else {
        return;
    };
    let _shared = NODE.read().await;
    let ns = namespace(cluster, "real-gvisor").await;
    let (alias, grants) = grant(&ns, "sandboxed", "runsc").await;
    let _agent = agent(cluster, &ns, &grants).await;
    create_runtime(
        &ns,
        "sandboxed",
        on_real_node(&info, "sandboxed", json!({"runtimeProfile": alias})),
    )
    .await;
    wait_condition(&ns, "sandboxed", "Ready", "True", None).await;
    let pod = the_pod(&ns, "sandboxed").await;
    let r = report(&ns, pod.metadata.name.as_deref().expect("name")).await;
    assert_contract(&r);
    let host = std::fs::read_to_string("/proc/version").unwrap_or_default();
    let kernel = r["Kernel"].as_str().unwrap_or_default();
    assert_ne!(
        kernel,
        host.trim(),
        "gVisor's own kernel, not the host's: {r}"
    );
}

#[tokio::test]
async fn real_node_failing_readiness_shows_in_status_and_rollout_view() {
    let Some((cluster, info)) = real().await else {
        return;
    };
    let _shared = NODE.read().await;
    let ns = namespace(cluster, "real-unready").await;
    let grants = write_grants(&[]);
    let _agent = agent(cluster, &ns, &grants).await;
    create_runtime(
        &ns,
        "flaky",
        on_real_node(
            &info,
            "flaky",
            json!({"config": {"env": {"TESTAPP_FAIL_READY": "1"}}}),
        ),
    )
    .await;
    // The container runs; the kubelet's real readiness probe gets a 503.
    let pod = the_pod(&ns, "flaky").await;
    let name = pod.metadata.name.clone().expect("name");
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    wait_for_value("the container running, not ready", WAIT, || {
        let (pods, name) = (pods.clone(), name.clone());
        async move {
            let p = pods.get(&name).await.ok()?;
            let cs = p.status?.container_statuses?.into_iter().next()?;
            (cs.state?.running.is_some() && !cs.ready).then_some(())
        }
    })
    .await;
    let rt = wait_condition(&ns, "flaky", "Available", "False", None).await;
    let status = rt.status.expect("status");
    let rollout = status.rollout.expect("rollout");
    assert_eq!(rollout.ready, 0, "{rollout:?}");
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    assert_eq!(ready.status, "False", "{ready:?}");

    // The console's Rollout view (`berth get rollouts`: the same rows)
    // shows it, with the kubelet's own probe failure among the events.
    let item = wait_for_value("the Rollout view with the probe failure", WAIT, || async {
        let doc = berth_get(cluster, &ns.name, "rollouts").await;
        let item = doc["items"]
            .as_array()?
            .iter()
            .find(|i| i["name"] == "flaky")?
            .clone();
        // The view follows the Deployment's status, which may still be
        // the one from before the ReplicaSet was scaled.
        (item.to_string().contains("Readiness probe failed") && item["desired"] == 1)
            .then_some(item)
    })
    .await;
    assert_eq!(item["ready"], 0, "{item}");
    assert_eq!(item["desired"], 1, "{item}");
    assert!(item.to_string().contains("503"), "the app's 503: {item}");
}

/// `berth -n NS get WHAT -o json` against the real-node cluster.
pub(crate) async fn berth_get(cluster: &SharedCluster, ns: &str, what: &str) -> serde_json::Value {
    let bin = tokio::task::spawn_blocking(crate::console::berth_binary)
        .await
        .expect("build");
    let out = tokio::process::Command::new(bin)
        .arg("--kubeconfig")
        .arg(&cluster.kubeconfig)
        .args(["-n", ns, "get", what, "-o", "json"])
        .output()
        .await
        .expect("run berth");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "berth get {what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("berth get {what}: {e}\n{stdout}"))
}

/// containerd's config without handler `h`'s tables.
pub(crate) fn without_handler(config: &str, h: &str) -> String {
    handler_replaced(config, h, "")
}

/// containerd's config with handler `h`'s tables (its markers included)
/// replaced by `tables`.
pub(crate) fn handler_replaced(config: &str, h: &str, tables: &str) -> String {
    let (start, end) = (handler_marker(h), handler_end_marker(h));
    let mut out = String::new();
    let mut skipping = false;
    for line in config.lines() {
        if line == start {
            skipping = true;
            out.push_str(tables);
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
        if line == end {
            skipping = false;
        }
    }
    out
}

#[tokio::test]
async fn real_node_handler_removed_from_containerd_follows_in_berth() {
    let Some((cluster, info)) = real().await else {
        return;
    };
    // extra-runc: a handler no other test uses, since this one takes it away.
    // Shared while it sets up: the tests that take the node alone (this
    // one's containerd restart, the canary tests) find no agent of it
    // rolling out while they hold it.
    let shared = NODE.read().await;
    let ns = namespace(cluster, "real-handler").await;
    let (alias, grants) = grant(&ns, "batch", "extra-runc").await;
    let agent = agent(cluster, &ns, &grants).await;
    create_runtime(
        &ns,
        "batch",
        on_real_node(&info, "batch", json!({"runtimeProfile": alias})),
    )
    .await;
    wait_condition(&ns, "batch", "HandlerReady", "True", None).await;
    wait_condition(&ns, "batch", "Ready", "True", None).await;

    drop(shared);
    let _exclusive = NODE.write().await;
    let node = &info.nodes[0];
    let config = std::fs::read_to_string(&node.containerd_config).expect("config");
    let removed = without_handler(&config, "extra-runc");
    assert_ne!(removed, config, "the handler's tables were found");
    std::fs::write(&node.containerd_config, &removed).expect("write config");
    let component = format!("containerd-{}", node.name);
    let restart = |c: &'static SharedCluster, component: String| async move {
        tokio::task::spawn_blocking(move || c.restart(&component, Duration::from_secs(120)))
            .await
            .expect("join")
            .expect("restart containerd");
    };
    restart(cluster, component.clone()).await;
    let nodes: Api<Node> = Api::all(ns.client.clone());
    wait_for_value("the node stops reporting extra-runc", WAIT, || {
        let (nodes, name) = (nodes.clone(), node.name.clone());
        async move {
            let n = nodes.get(&name).await.ok()?;
            let hs = node_handlers(&n);
            (hs.contains(&"runc".to_string()) && !hs.contains(&"extra-runc".to_string()))
                .then_some(())
        }
    })
    .await;
    let before = crate::agent_support::reconciles(&agent.metrics().await);
    let rt = wait_condition(&ns, "batch", "HandlerReady", "False", None).await;
    let after = crate::agent_support::reconciles(&agent.metrics().await);
    eprintln!("HandlerReady False after {} reconciles", after - before);
    let hr = rt
        .status
        .expect("status")
        .conditions
        .into_iter()
        .find(|c| c.type_ == "HandlerReady")
        .expect("HandlerReady");
    assert!(hr.message.contains("extra-runc"), "{hr:?}");
    // The Grants and Handlers views: no Ready node reports the class's handler.
    let class = format!("{}-extra-runc", ns.name);
    let row = |doc: serde_json::Value, class: String| {
        doc["items"]
            .as_array()
            .and_then(|items| items.iter().find(|i| i["class"] == class.as_str()).cloned())
    };
    let grant_row = wait_for_value("the Grants view: 0 nodes with extra-runc", WAIT, || async {
        let r = row(berth_get(cluster, &ns.name, "grants").await, class.clone())?;
        (r["nodes"].as_str()?.starts_with("0/")).then_some(r)
    })
    .await;
    let handler_row = wait_for_value(
        "the Handlers view: 0 nodes with extra-runc",
        WAIT,
        || async {
            let r = row(
                berth_get(cluster, &ns.name, "handlers").await,
                class.clone(),
            )?;
            (r["nodes"].as_str()?.starts_with("0/")).then_some(r)
        },
    )
    .await;

    // Put the handler back for whoever runs next, and see it return.
    std::fs::write(&node.containerd_config, &config).expect("restore config");
    restart(cluster, component).await;
    wait_for_value("the node reports extra-runc again", WAIT, || {
        let (nodes, name) = (nodes.clone(), node.name.clone());
        async move {
            let n = nodes.get(&name).await.ok()?;
            node_handlers(&n)
                .contains(&"extra-runc".to_string())
                .then_some(())
        }
    })
    .await;
    wait_condition(&ns, "batch", "HandlerReady", "True", None).await;
    eprintln!("while extra-runc was missing: grant {grant_row}\nhandler {handler_row}");
}

#[tokio::test]
async fn real_node_revoked_runtimes_pods_keep_running_on_their_handler() {
    let Some((cluster, info)) = real().await else {
        return;
    };
    let _shared = NODE.read().await;
    let ns = namespace(cluster, "real-revoked").await;
    let (alias, grants) = grant(&ns, "worker", "bounded-runc").await;
    let mut first = agent(cluster, &ns, &grants).await;
    create_runtime(
        &ns,
        "worker",
        on_real_node(&info, "worker", json!({"runtimeProfile": alias})),
    )
    .await;
    wait_condition(&ns, "worker", "Ready", "True", None).await;
    let pod = the_pod(&ns, "worker").await;
    let name = pod.metadata.name.clone().expect("name");
    let uid = pod.metadata.uid.clone();

    // The operator takes the grant away: a new agent with an empty file.
    first.kill();
    let empty = write_grants(&[]);
    let mut opts = agent_opts(cluster, &ns, &empty);
    opts.identity = format!("{}-b", ns.name);
    let second = Agent::start(opts).await;
    wait_condition(&ns, "worker", "Blocked", "True", Some("Revoked")).await;
    crate::agent_support::wait_reconciles(&second, 3.0).await;

    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let now = pods.get(&name).await.expect("the same pod");
    assert_eq!(now.metadata.uid, uid, "not replaced");
    assert_eq!(
        now.spec.and_then(|s| s.runtime_class_name),
        Some(format!("{}-bounded-runc", ns.name)),
        "still on its handler"
    );
    let cs = now
        .status
        .and_then(|s| s.container_statuses)
        .and_then(|c| c.into_iter().next())
        .expect("container status");
    assert!(cs.ready, "still Ready: {cs:?}");
    assert_eq!(cs.restart_count, 0, "never restarted: {cs:?}");
    // And it still answers, still bounded.
    let r = report(&ns, &name).await;
    assert_eq!(r["OpenFilesLimit"], "256", "{r}");
}
