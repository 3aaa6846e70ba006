//! Attestation on the real node (issue 53): the agent's canary Jobs prove
//! each granted handler, with the apiserver as witness.
//!
//! - every granted class on the real node becomes `verified`: the gVisor
//!   canary's pod saw gVisor's kernel, the runc ones the host's, the
//!   bounded one its declared open-files limit; the agent runs with
//!   exactly the shipped RBAC (no Pod permission: a SubjectAccessReview
//!   says so) and, between canary periods, the apiserver counts no write
//!   of it;
//! - runsc's binary and shim moved away: `failing` on the node
//!   (`SandboxNotCreated`), a Runtime placed there `HandlerReady=False`
//!   `HandlerFailing` and `Degraded`, `berth check` names it
//!   (`handler-failing`), the metric says so; restored, `verified` again;
//! - containerd's `runsc` handler pointed at plain runc (the typo that
//!   passes every presence check): "expected gVisor, saw the host kernel";
//! - a kwok node reporting the handler stays `unverified` (simulated),
//!   even with a canary Job for it that kwok "completes".
//!
//! Each within one canary period plus 60 s. The tests that break the node
//! or count writes hold it alone (`real_node::NODE`).

use std::path::PathBuf;
use std::time::Duration;

use berth_shared::api::{AttestationState, HandlerAttestation, NodeAttestation, RuntimeGrant};
use berth_tests::harness::{self, SharedCluster, TestNamespace, wait_for_value};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::Api;
use kube::api::{ListParams, LogParams, PostParams};
use serde_json::{Value, json};

use crate::agent_lifecycle::{agent_kubeconfig_in, delete_rbac, install_shipped_rbac};
use crate::agent_support::{Agent, binding_for_service, write_grants};
use crate::real_node::{NODE, agent_opts, namespace, real};

mod broken;
mod simulated;

/// `--canary-period-seconds` of the tests that break and mend a handler.
pub(super) const PERIOD: u64 = 30;
/// `--canary-deadline-seconds`: a sandbox not created within it fails the
/// canary.
const DEADLINE: u64 = 30;

/// One canary period plus 60 s: how long a verdict may take.
pub(super) fn within(period: u64) -> Duration {
    Duration::from_secs(period + 60)
}

/// A RuntimeClass `<ns>-<suffix>` for `handler`, with `annotations`.
pub(super) async fn class(
    ns: &TestNamespace,
    suffix: &str,
    handler: &str,
    annotations: Value,
) -> String {
    let name = format!("{}-{suffix}", ns.name);
    let rc: RuntimeClass = serde_json::from_value(json!({
        "metadata": {"name": name, "annotations": annotations},
        "handler": handler,
    }))
    .expect("class");
    Api::<RuntimeClass>::all(ns.client.clone())
        .create(&PostParams::default(), &rc)
        .await
        .expect("create class");
    name
}

/// Grants of `(service, class, handler)` (alias `<ns>-<service>`).
pub(super) fn grants(ns: &TestNamespace, of: &[(&str, &str, &str)]) -> PathBuf {
    let bindings: Vec<String> = of
        .iter()
        .map(|(service, class, handler)| {
            binding_for_service(&format!("{}-{service}", ns.name), class, handler, service)
        })
        .collect();
    write_grants(&bindings)
}

/// An agent with exactly the shipped RBAC (its ServiceAccount in the
/// namespace), canaries on with the agent's own image, every `period`.
pub(super) struct Canaried {
    pub(super) agent: Agent,
    /// The agent's replica identity: its User-Agent in the audit log.
    pub(super) identity: String,
    rbac: (Vec<String>, Vec<String>),
}

pub(super) async fn canary_agent(
    cluster: &SharedCluster,
    ns: &TestNamespace,
    grants: &std::path::Path,
    period: u64,
) -> Canaried {
    let rbac = install_shipped_rbac(&ns.client, &ns.name, |_| {}).await;
    let mut opts = agent_opts(cluster, ns, grants);
    assert!(
        opts.canary_image.is_some(),
        "real-nodes.json names the agent's image: {:?}",
        berth_tests::localcluster::realnode::RealNodesInfo::read(&cluster.dir)
            .ok()
            .and_then(|i| i.agent_image_missing)
    );
    opts.kubeconfig = Some(agent_kubeconfig_in(ns, grants, Some(cluster.kubeconfig.clone())).await);
    opts.extra_args = vec![
        format!("--canary-period-seconds={period}"),
        format!("--canary-deadline-seconds={DEADLINE}"),
    ];
    let identity = opts.identity.clone();
    Canaried {
        agent: Agent::start(opts).await,
        identity,
        rbac,
    }
}

impl Canaried {
    pub(super) async fn stop(self, ns: &TestNamespace) {
        drop(self.agent);
        delete_rbac(&ns.client, self.rbac.0, self.rbac.1).await;
    }
}

/// The grant's `status.attestation`.
pub(super) async fn attestation(ns: &TestNamespace, alias: &str) -> Option<HandlerAttestation> {
    Api::<RuntimeGrant>::all(ns.client.clone())
        .get_opt(alias)
        .await
        .ok()??
        .status?
        .attestation
}

/// Waits (at most `timeout`) until the grant says `state` (and `reason`)
/// for `node`.
pub(super) async fn node_state(
    ns: &TestNamespace,
    alias: &str,
    node: &str,
    state: AttestationState,
    reason: Option<&str>,
    timeout: Duration,
) -> NodeAttestation {
    wait_for_value(
        &format!("{alias} {} on {node}", state.word()),
        timeout,
        || async move {
            let a = attestation(ns, alias).await?;
            let n = a.node(node)?.clone();
            (n.state == state && reason.is_none_or(|r| n.reason == r)).then_some(n)
        },
    )
    .await
}

/// `berth_agent_handler_nodes{runtime_class=CLASS,…,state=STATE}`.
pub(super) fn handler_nodes(metrics: &str, class: &str, state: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| {
            l.starts_with("berth_agent_handler_nodes{")
                && l.contains(&format!("runtime_class=\"{class}\""))
                && l.contains(&format!("state=\"{state}\""))
        })
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// What the newest finished canary pod of `class` printed: the facts it
/// saw and its verdict (read with the test's admin rights; the agent has
/// no Pod permission and never reads this).
async fn canary_report(ns: &TestNamespace, class: &str) -> Value {
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let list = pods
        .list(&ListParams::default().labels("berth.dev/canary=true"))
        .await
        .expect("canary pods");
    let newest = list
        .items
        .iter()
        .filter(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.runtime_class_name.as_deref())
                == Some(class)
        })
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"))
        .max_by_key(|p| p.metadata.creation_timestamp.clone())
        .unwrap_or_else(|| panic!("no finished canary pod of {class}"));
    let name = newest.metadata.name.clone().expect("name");
    let log = pods.logs(&name, &LogParams::default()).await.expect("logs");
    serde_json::from_str(log.trim()).unwrap_or_else(|e| panic!("{name}: {e}: {log}"))
}

/// What a canary agent writes, as the apiserver counts it: Jobs created or
/// changed, RuntimeGrants (any subresource). Deletes are left out: a
/// finished test's namespace is being deleted in the background (the
/// namespace controller deletes its Jobs), and this agent deletes nothing.
async fn server_writes(client: &kube::Client) -> f64 {
    harness::apiserver_requests(client, |labels| {
        let has = |k: &str, v: &str| labels.contains(&format!("{k}=\"{v}\""));
        let write = ["POST", "PUT", "PATCH", "APPLY"]
            .iter()
            .any(|v| has("verb", v));
        let jobs = has("group", "batch") && has("resource", "jobs") && has("subresource", "");
        let grants = has("group", "berth.dev") && has("resource", "runtimegrants");
        write && (jobs || grants)
    })
    .await
}

/// `berth` (the console's CLI) against the real-node cluster: (exit code,
/// stdout).
pub(super) async fn berth(cluster: &SharedCluster, args: &[&str]) -> (i32, String) {
    let bin = tokio::task::spawn_blocking(crate::console::berth_binary)
        .await
        .expect("build");
    let out = tokio::process::Command::new(bin)
        .arg("--kubeconfig")
        .arg(&cluster.kubeconfig)
        .args(args)
        .output()
        .await
        .expect("run berth");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test]
async fn real_node_canary_verifies_every_granted_class_by_what_its_pod_saw() {
    let Some((cluster, info)) = real().await else {
        return;
    };
    // Alone on the node: the apiserver's counters below are its own.
    let _exclusive = NODE.write().await;
    let node = info.nodes[0].name.clone();
    let ns = namespace(cluster, "canary-ok").await;
    let runc = class(&ns, "runc", "runc", json!({})).await;
    let bounded = class(
        &ns,
        "bounded",
        "bounded-runc",
        json!({"berth.dev/nofile": "256"}),
    )
    .await;
    let mut of = vec![
        ("plain", runc.as_str(), "runc"),
        ("bounded", bounded.as_str(), "bounded-runc"),
    ];
    let runsc = info.nodes[0].handlers.contains(&"runsc".to_string());
    let gvisor = class(&ns, "gvisor", "runsc", json!({})).await;
    if runsc {
        of.push(("sandboxed", gvisor.as_str(), "runsc"));
    } else {
        eprintln!(
            "NOTE: no runsc handler: {}",
            info.runsc_missing.as_deref().unwrap_or("unknown")
        );
    }
    let file = grants(&ns, &of);
    // A long period: the first canaries run at once, the next not within
    // the quiet window below.
    let period = 240;
    let canaried = canary_agent(cluster, &ns, &file, period).await;

    // The shipped RBAC: Jobs yes (what canaries need), Pods never.
    let sar = |verb: &'static str, resource: &'static str, group: &'static str| {
        let ns = &ns;
        async move {
            let review: k8s_openapi::api::authorization::v1::SubjectAccessReview =
                serde_json::from_value(json!({"spec": {
                    "user": format!("system:serviceaccount:{}:berth-agent", ns.name),
                    "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{}", ns.name), "system:authenticated"],
                    "resourceAttributes": {"verb": verb, "group": group, "resource": resource, "namespace": ns.name},
                }}))
                .expect("review");
            Api::<k8s_openapi::api::authorization::v1::SubjectAccessReview>::all(ns.client.clone())
                .create(&PostParams::default(), &review)
                .await
                .expect("SubjectAccessReview")
                .status
                .is_some_and(|s| s.allowed)
        }
    };
    assert!(
        sar("create", "jobs", "batch").await,
        "the agent creates canary Jobs"
    );
    for verb in ["get", "list", "watch"] {
        assert!(!sar(verb, "pods", "").await, "the agent may {verb} pods");
    }

    for (service, class, _) in &of {
        let alias = format!("{}-{service}", ns.name);
        let n = node_state(
            &ns,
            &alias,
            &node,
            AttestationState::Verified,
            None,
            within(period),
        )
        .await;
        assert!(n.at.is_some() && n.job.is_some(), "{n:?}");
        let a = attestation(&ns, &alias).await.expect("attestation");
        assert!(a.canaries, "{a:?}");
        assert!(!a.checks.is_empty(), "what was checked: {a:?}");
        let metrics = canaried.agent.metrics().await;
        assert_eq!(handler_nodes(&metrics, class, "verified"), 1.0, "{class}");
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .expect("osrelease")
        .trim()
        .to_string();
    let report = canary_report(&ns, &runc).await;
    assert_eq!(
        (report["seen"].as_str(), report["kernel"].as_str()),
        (Some("host"), Some(host.as_str())),
        "{report}"
    );
    assert_eq!(report["uid"], 10001, "{report}");
    assert_eq!(report["tokenMounted"], false, "{report}");
    assert_eq!(report["capEff"], 0, "{report}");
    let report = canary_report(&ns, &bounded).await;
    assert_eq!(
        report["nofile"], 256,
        "bounded-runc's declared limit: {report}"
    );
    if runsc {
        let report = canary_report(&ns, &gvisor).await;
        assert_eq!(report["seen"], "gvisor", "{report}");
        assert_ne!(report["kernel"].as_str(), Some(host.as_str()), "{report}");
        assert!(
            report["procVersion"]
                .as_str()
                .is_some_and(|v| v.contains("#1 SMP Sun Jan 10 15:06:54 PST 2016")),
            "gVisor's own /proc/version: {report}"
        );
    }

    // Between canary periods the agent writes nothing (the evidence's
    // status written, the Jobs done), by the apiserver's own account. Its
    // request counter has no user label: a write of the control plane's
    // own to a Job or of another test's cleanup can fall in a window (seen
    // once under load, with nothing in this agent's log). So the counter
    // must show a window of zero such writes (a write loop of the agent's
    // shows in every window), and the apiserver's audit log, which names
    // the writer (the agent's User-Agent carries its replica identity),
    // must show no write by this agent over every window tried — to any
    // resource but its leader lease, not only Jobs and RuntimeGrants; the
    // agent's own count must agree.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let started = |m: &str| -> f64 {
        m.lines()
            .find_map(|l| {
                l.strip_prefix("berth_agent_canaries_started_total ")?
                    .parse()
                    .ok()
            })
            .unwrap_or(0.0)
    };
    let own = |m: &str| {
        crate::contract_adversary::agent_writes_to(m, "jobs")
            + crate::contract_adversary::agent_writes_to(m, "runtimegrants")
    };
    let audit_log = cluster.dir.join("logs/audit.log");
    let audited = || {
        berth_tests::audit::read(&audit_log)
            .into_iter()
            .filter(|e| e.agent_identity() == Some(canaried.identity.as_str()))
            // Its leader lease's renewals (every second in tests) are
            // how it stays the one writer, not work it does.
            .filter(|e| e.resource() != "leases")
            .map(|e| {
                let o = e.object_ref.clone().unwrap_or_default();
                format!(
                    "{} {}/{}/{} {} at {}",
                    e.verb,
                    o.resource,
                    o.subresource,
                    o.namespace,
                    o.name,
                    e.request_received_timestamp
                )
            })
            .collect::<Vec<_>>()
    };
    let audited_before = audited();
    assert!(
        !audited_before.is_empty(),
        "the audit log names the agent's writes (its canary Jobs at least): {}",
        audit_log.display()
    );
    let first = canaried.agent.metrics().await;
    let before = (started(&first), own(&first));
    let mut windows = Vec::new();
    for _ in 0..3 {
        let start = server_writes(&ns.client).await;
        tokio::time::sleep(Duration::from_secs(40)).await;
        let end = server_writes(&ns.client).await;
        windows.push(end - start);
        if end == start {
            break;
        }
    }
    let last = canaried.agent.metrics().await;
    let after = (started(&last), own(&last));
    let audited_after = audited();
    assert_eq!(
        audited_after
            .get(audited_before.len()..)
            .unwrap_or_default(),
        &[] as &[String],
        "the agent's writes at rest, by the apiserver's audit log (after {} before the windows)",
        audited_before.len()
    );
    assert!(
        windows.last() == Some(&0.0),
        "writes to Jobs and RuntimeGrants at rest in every 40 s window, by the apiserver's count: {windows:?}; agent log:\n{}",
        canaried.agent.log_text()
    );
    assert_eq!(
        after.1,
        before.1,
        "the agent's own writes at rest; agent log:\n{}",
        canaried.agent.log_text()
    );
    assert_eq!(after.0, before.0, "no canary started within the period");
    assert_eq!(
        before.0,
        of.len() as f64,
        "one canary per class on the one node"
    );
    canaried.stop(&ns).await;
}
