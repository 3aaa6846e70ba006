//! Retirement on the real local control plane (issue 8), through the real
//! `berth` binary: `berth retire … --to-default|--suspend|--delete` and
//! `berth prune-revisions`, with an agent running (and its admission
//! webhook on, confined to this test's namespace by a label) so the review's
//! server-side dry-run goes through admission for real.
//!
//! For each action: the state before and after, the pods that roll or
//! stop, the Event naming the user; `--dry-run` changes nothing;
//! `--read-only` refuses; no terminal and no `--yes` refuses; the
//! restricted identity (no RBAC) gets a clear refusal and nothing changes.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use berth_shared::api::Runtime;
use berth_tests::bench::process::free_port;
use berth_tests::harness::{self, TestNamespace, wait_for_value};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client};

use crate::agent_support::{self, server_pods};
use crate::support::berth as berth_cli;

const WAIT: Duration = Duration::from_secs(120);
const WEBHOOK_LABEL: &str = "berth.dev/it-webhook";

/// Runs `berth` with a kubeconfig, stdin not a terminal: (exit code, stdout, stderr).
async fn berth(kubeconfig: &Path, args: &[&str]) -> (i32, String, String) {
    let (code, o, e) = berth_cli::run(Some(kubeconfig), args).await;
    assert!(
        !o.bytes().chain(e.bytes()).any(|b| b == 0x1b),
        "escape byte in berth output"
    );
    (code, o, e)
}

async fn admin_kubeconfig() -> PathBuf {
    tokio::task::spawn_blocking(|| harness::cluster().kubeconfig.clone())
        .await
        .expect("cluster")
}

async fn restricted_kubeconfig() -> PathBuf {
    tokio::task::spawn_blocking(|| harness::cluster().restricted_kubeconfig.clone())
        .await
        .expect("cluster")
}

/// `berth-agent run` for one namespace with the admission webhook on,
/// reviewing only namespaces labelled `berth.dev/it-webhook=<selector>`.
struct AgentWithWebhook {
    child: tokio::process::Child,
    log: PathBuf,
    config_name: String,
}

impl AgentWithWebhook {
    async fn start(ns: &str, grants: &Path, selector: &str) -> Self {
        let bin = tokio::task::spawn_blocking(|| {
            harness::workspace_binary("berth-agent", "berth-agent", "BERTH_AGENT_BIN")
        })
        .await
        .expect("build");
        let kubeconfig = admin_kubeconfig().await;
        let (http, hook) = (free_port(), free_port());
        let config_name = format!("berth-it-{selector}");
        let log = harness::cluster()
            .dir
            .join(format!("retire-agent-{selector}-{http}.log"));
        let file = std::fs::File::create(&log).expect("log");
        let child = tokio::process::Command::new(bin)
            .arg("run")
            .args(["--http-addr", &format!("127.0.0.1:{http}")])
            .args(["--namespace", ns])
            .args(["--lease-namespace", ns])
            .args(["--lease-name", &format!("agent-{ns}")])
            .args(["--identity", &format!("{ns}-{http}")])
            .args(["--lease-duration-seconds", "4"])
            .args(["--lease-renew-seconds", "1"])
            .args(["--resync-seconds", "2"])
            .args(["--grants-interval-seconds", "1"])
            .arg("--grants-file")
            .arg(grants)
            .args(["--webhook-listen", &format!("127.0.0.1:{hook}")])
            .args(["--self-signed", "--webhook-url"])
            .arg(format!("https://127.0.0.1:{hook}"))
            .args(["--webhook-config-name", &config_name])
            .args([
                "--webhook-namespace-label",
                &format!("{WEBHOOK_LABEL}={selector}"),
            ])
            .env("KUBECONFIG", &kubeconfig)
            .env_remove("BERTH_GRANTS_FILE")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("log"))
            .stderr(file)
            .kill_on_drop(true)
            .spawn()
            .expect("spawn berth-agent");
        let agent = Self {
            child,
            log,
            config_name,
        };
        wait_for_value("agent with webhook leading and ready", WAIT, || async {
            leader_ok(http).await.then_some(())
        })
        .await;
        agent
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL: the webhook configuration stays (fail closed).
    async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// `GET /health/leader` answers 200.
async fn leader_ok(port: u16) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let req = "GET /health/leader HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if s.write_all(req.as_bytes()).await.is_err() {
        return false;
    }
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf)).await;
    String::from_utf8_lossy(&buf).starts_with("HTTP/1.1 200")
}

async fn whoami(client: &Client) -> String {
    Api::<SelfSubjectReview>::all(client.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .expect("SelfSubjectReview")
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .expect("username")
}

fn class_of(p: &Pod) -> Option<String> {
    p.spec.as_ref().and_then(|s| s.runtime_class_name.clone())
}

fn live(pods: &[Pod]) -> Vec<&Pod> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

/// Waits until the Runtime has not changed for longer than the agent's
/// status pacing (5 s): a reviewed change is refused (optimistic
/// concurrency, "review again") when the agent's status write lands
/// between the review and the apply, which is right for an operator and
/// a flake for a test (seen in CI after a revision prune).
async fn settled(ns: &TestNamespace, name: &str) {
    let quiet = Duration::from_secs(6);
    let deadline = std::time::Instant::now() + WAIT;
    let mut last = None;
    let mut since = std::time::Instant::now();
    loop {
        let rv = runtime(ns, name)
            .await
            .and_then(|r| r.metadata.resource_version);
        if rv != last {
            last = rv;
            since = std::time::Instant::now();
        } else if since.elapsed() >= quiet {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Runtime {name} kept changing for {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn runtime(ns: &TestNamespace, name: &str) -> Option<Runtime> {
    Api::<Runtime>::namespaced(ns.client.clone(), &ns.name)
        .get_opt(name)
        .await
        .expect("get Runtime")
}

/// Events with `reason` about `kind/name`.
async fn events(ns: &TestNamespace, kind: &str, name: &str, reason: &str) -> Vec<Event> {
    Api::<Event>::namespaced(ns.client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| {
            e.involved_object.kind.as_deref() == Some(kind)
                && e.involved_object.name.as_deref() == Some(name)
                && e.reason.as_deref() == Some(reason)
        })
        .collect()
}

/// Old ReplicaSets of `deployment` whose template uses `class`.
async fn replica_sets_with_class(ns: &TestNamespace, deployment: &str, class: &str) -> Vec<String> {
    Api::<ReplicaSet>::namespaced(ns.client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .expect("replicasets")
        .items
        .into_iter()
        .filter(|rs| {
            rs.metadata
                .owner_references
                .as_ref()
                .is_some_and(|o| o.iter().any(|r| r.name == deployment))
                && rs
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.as_ref())
                    .and_then(|t| t.spec.as_ref())
                    .and_then(|s| s.runtime_class_name.as_deref())
                    == Some(class)
        })
        .filter_map(|rs| rs.metadata.name)
        .collect()
}

/// What a retirement would change: the spec (and so the generation),
/// labels and annotations. Not the resourceVersion: the agent's paced
/// status writes move it at any time, and they are not a retirement.
fn retirable(rt: &Runtime) -> String {
    serde_json::json!({
        "generation": rt.metadata.generation,
        "spec": rt.spec,
        "labels": rt.metadata.labels,
        "annotations": rt.metadata.annotations,
    })
    .to_string()
}

#[tokio::test]
async fn retire_prune_suspend_delete_through_the_berth_binary() {
    let selector = format!("retire-{}", std::process::id());
    let ns = TestNamespace::with_labels(
        "retire",
        &[
            ("berth.dev/project", agent_support::PROJECT),
            ("berth.dev/environment", agent_support::ENVIRONMENT),
            (WEBHOOK_LABEL, &selector),
        ],
    )
    .await;
    harness::install_crds(&ns.client).await;
    let class = format!("{}-bounded", ns.name);
    agent_support::create_class(&ns.client, &class, "bounded-runc").await;
    let admin = admin_kubeconfig().await;
    let restricted = restricted_kubeconfig().await;
    let user = whoami(&ns.client).await;
    let target = format!("{}/worker", ns.name);

    // Granted: the Runtime runs 2 pods with the class.
    let granted = agent_support::write_grants(&[agent_support::binding(
        "bounded-worker",
        &class,
        "bounded-runc",
    )]);
    let mut agent = AgentWithWebhook::start(&ns.name, &granted, &selector).await;
    agent_support::create_runtime(
        &ns,
        "worker",
        serde_json::json!({"runtimeProfile": "bounded-worker"}),
    )
    .await;
    // Another service: one Runtime per identity.
    agent_support::create_runtime(
        &ns,
        "other",
        serde_json::json!({"service": "other", "replicas": 1}),
    )
    .await;
    let other = format!("{}/other", ns.name);
    agent_support::wait_condition(&ns, "worker", "ProfileGranted", "True", None).await;
    wait_for_value("2 pods with the class", WAIT, || async {
        let pods = server_pods(&ns, "worker").await;
        let live = live(&pods);
        (live.len() == 2
            && live
                .iter()
                .all(|p| class_of(p).as_deref() == Some(class.as_str())))
        .then_some(())
    })
    .await;

    // The grant is removed (agent restarted with an empty file): blocked.
    agent.kill().await;
    let empty = agent_support::write_grants(&[]);
    let mut agent = AgentWithWebhook::start(&ns.name, &empty, &selector).await;
    agent_support::wait_condition(&ns, "worker", "Blocked", "True", None).await;
    let before = runtime(&ns, "worker").await.expect("runtime");

    // --dry-run: the review, accepted by admission, nothing changes.
    let (code, out, err) = berth(&admin, &["retire", &target, "--to-default", "--dry-run"]).await;
    assert_eq!(code, 0, "{out}\n{err}\n{}", agent.log_text());
    assert!(
        out.contains("retire to the default runtime — Runtime"),
        "{out}"
    );
    assert!(out.contains("- runtimeProfile: bounded-worker"), "{out}");
    assert!(
        out.contains(&format!(
            "runtimeClassName {class} → (default), 2 pod(s) will roll"
        )),
        "{out}"
    );
    assert!(out.contains(&format!("as user: {user}")), "{out}");
    assert!(out.contains("Dry-run: accepted by the API server"), "{out}");
    assert!(out.contains("dry-run: nothing was changed"), "{out}");
    assert_eq!(
        retirable(&runtime(&ns, "worker").await.expect("rt")),
        retirable(&before)
    );

    // --read-only refuses before connecting.
    let (code, _, err) = berth(
        &admin,
        &["--read-only", "retire", &target, "--to-default", "--yes"],
    )
    .await;
    assert_eq!(code, 1);
    assert!(
        err.contains("read-only: retirement actions are disabled"),
        "{err}"
    );

    // No terminal and no --yes: refused after the review.
    let (code, out, err) = berth(&admin, &["retire", &target, "--to-default"]).await;
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("no terminal to confirm on"), "{err}");

    // The restricted identity without RBAC: a clear refusal.
    for how in ["--to-default", "--suspend", "--delete"] {
        let (code, out, err) = berth(&restricted, &["retire", &target, how, "--yes"]).await;
        assert_eq!(code, 1, "{out}");
        assert!(
            err.contains("not allowed: berth-restricted cannot"),
            "{how}: {err}"
        );
        assert!(err.contains("nothing was changed"), "{err}");
    }
    let (code, _, err) = berth(
        &restricted,
        &["prune-revisions", &target, "--class", &class, "--yes"],
    )
    .await;
    assert_eq!(code, 1);
    assert!(err.contains("cannot delete replicasets.apps"), "{err}");
    let still = runtime(&ns, "worker").await.expect("rt");
    assert_eq!(retirable(&still), retirable(&before), "nothing changed");
    assert_eq!(
        still.spec.runtime_profile.as_deref(),
        Some("bounded-worker")
    );

    // Retire to the default runtime, for real.
    let (code, out, err) = berth(&admin, &["retire", &target, "--to-default", "--yes"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("done: retire to the default runtime"), "{out}");
    assert!(out.contains("recorded: Event RetiredToDefault"), "{out}");
    let after = runtime(&ns, "worker").await.expect("rt");
    assert_eq!(after.spec.runtime_profile, None);
    let ann = after.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(ann.get("berth.dev/retired-by"), Some(&user));
    assert!(ann.contains_key("berth.dev/retired-at"));
    let evs = events(&ns, "Runtime", "worker", "RetiredToDefault").await;
    assert_eq!(evs.len(), 1, "{evs:?}");
    assert!(
        evs[0]
            .message
            .as_deref()
            .is_some_and(|m| m.contains(&format!("by {user}"))),
        "{evs:?}"
    );
    // The pods roll onto the default runtime.
    wait_for_value("2 pods on the default runtime", WAIT, || async {
        let pods = server_pods(&ns, "worker").await;
        let live = live(&pods);
        (live.len() == 2 && live.iter().all(|p| class_of(p).is_none())).then_some(())
    })
    .await;
    // The old revision still names the class: rollback keeps needing it.
    let old = wait_for_value("old ReplicaSet scaled to 0", WAIT, || async {
        let names = replica_sets_with_class(&ns, "worker", &class).await;
        let rs = Api::<ReplicaSet>::namespaced(ns.client.clone(), &ns.name);
        for n in &names {
            let r = rs.get(n).await.ok()?;
            if r.spec.as_ref().and_then(|s| s.replicas) != Some(0) {
                return None;
            }
        }
        (!names.is_empty()).then_some(names)
    })
    .await;

    // Prune: dry-run changes nothing, then for real.
    let (code, out, err) = berth(
        &admin,
        &["prune-revisions", &target, "--class", &class, "--dry-run"],
    )
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    for n in &old {
        assert!(
            out.contains(&format!("- ReplicaSet {n} (revision")),
            "{out}"
        );
    }
    assert!(out.contains("kept, current revision"), "{out}");
    assert_eq!(replica_sets_with_class(&ns, "worker", &class).await, old);
    let (code, out, err) = berth(
        &admin,
        &["prune-revisions", &target, "--class", &class, "--yes"],
    )
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("recorded: Event RevisionsPruned on Runtime"),
        "{out}"
    );
    wait_for_value("rollback ReplicaSets gone", WAIT, || async {
        replica_sets_with_class(&ns, "worker", &class)
            .await
            .is_empty()
            .then_some(())
    })
    .await;
    let evs = events(&ns, "Runtime", "worker", "RevisionsPruned").await;
    assert_eq!(evs.len(), 1);
    assert!(
        evs[0]
            .message
            .as_deref()
            .is_some_and(|m| m.contains(&old[0]))
    );
    // Nothing left to prune: says so, exit 0, no change.
    let (code, out, _) = berth(
        &admin,
        &["prune-revisions", &target, "--class", &class, "--yes"],
    )
    .await;
    assert_eq!(code, 0);
    assert!(out.contains("nothing to do"), "{out}");

    // Suspend: dry-run, then for real — the pods stop.
    settled(&ns, "worker").await;
    let before = runtime(&ns, "worker").await.expect("rt");
    let (code, out, _) = berth(&admin, &["retire", &target, "--suspend", "--dry-run"]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("+ suspend: true"), "{out}");
    assert!(out.contains("replicas 2 → 0, 2 pod(s) will stop"), "{out}");
    assert_eq!(
        retirable(&runtime(&ns, "worker").await.expect("rt")),
        retirable(&before)
    );
    let (code, out, err) = berth(&admin, &["retire", &target, "--suspend", "--yes"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(runtime(&ns, "worker").await.expect("rt").spec.suspend);
    wait_for_value("Deployment at 0 and no pods", WAIT, || async {
        let d = Api::<Deployment>::namespaced(ns.client.clone(), &ns.name)
            .get("worker")
            .await
            .ok()?;
        let zero = d.spec.as_ref().and_then(|s| s.replicas) == Some(0);
        (zero && live(&server_pods(&ns, "worker").await).is_empty()).then_some(())
    })
    .await;
    assert_eq!(
        events(&ns, "Runtime", "worker", "RetiredBySuspend")
            .await
            .len(),
        1
    );

    // With the agent (and its webhook) down, admission fails closed: the
    // dry-run verdict is a refusal and --yes sends nothing.
    agent.kill().await;
    let before = runtime(&ns, "other").await.expect("other");
    let (code, out, err) = berth(&admin, &["retire", &other, "--suspend", "--dry-run"]).await;
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("Dry-run: REFUSED"), "{out}");
    assert!(out.contains("failed calling webhook"), "{out}");
    let (code, out, err) = berth(&admin, &["retire", &other, "--suspend", "--yes"]).await;
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains("dry-run was refused; nothing was changed"),
        "{err}"
    );
    assert_eq!(
        retirable(&runtime(&ns, "other").await.expect("other")),
        retirable(&before)
    );
    assert!(
        events(&ns, "Runtime", "other", "RetiredBySuspend")
            .await
            .is_empty()
    );

    // Delete: dry-run keeps it, typed-name confirmation needs a terminal,
    // --yes deletes; garbage collection removes the Deployment.
    let (code, out, _) = berth(&admin, &["retire", &target, "--delete", "--dry-run"]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("- application: analytics"), "{out}");
    assert!(out.contains("Deployment worker"), "{out}");
    assert!(runtime(&ns, "worker").await.is_some());
    let (code, out, err) = berth(&admin, &["retire", &target, "--delete", "--yes"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(
        events(&ns, "Runtime", "worker", "RetiredByDelete")
            .await
            .len(),
        1
    );
    wait_for_value("Runtime and Deployment gone", WAIT, || async {
        let d = Api::<Deployment>::namespaced(ns.client.clone(), &ns.name)
            .get_opt("worker")
            .await
            .ok()?;
        (runtime(&ns, "worker").await.is_none() && d.is_none()).then_some(())
    })
    .await;

    let webhooks: Api<ValidatingWebhookConfiguration> = Api::all(ns.client.clone());
    let _ = webhooks
        .delete(&agent.config_name, &DeleteParams::default())
        .await;
}
