//! Fleet mode against two real control planes (issue 56): the shared
//! local cluster (context `fleet-a`) and a private one (`fleet-b`, whose
//! nodes report `runc` only), each with its own agent and grants file,
//! both holding a namespace of the same name with Runtimes of the same
//! names. The grants differ on purpose: `bw` is granted in both (its
//! handler reported in a only), `api` only in a (so `api` is Blocked in
//! b), `batch` binds another class in b.
//!
//! Shown: the merged views name every row's cluster; a retirement
//! confirmed in b (through the real binary, in tmux) changes nothing in a;
//! b's apiserver stopped leaves a live and b's rows kept and dimmed, and
//! after b's restart nothing of a was listed again; every fleet finding
//! fires, and none on a consistent fleet; `get`, `check` and
//! `plan-grants` over both name each cluster; a cluster that cannot be
//! reached is reported and fatal only when every cluster is.

mod cli;
mod degraded;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use berth_shared::api::{Runtime, RuntimeGrant};
use berth_tests::harness::{self, SharedCluster, TestNamespace, wait_for_value};
use k8s_openapi::api::core::v1::Event;
use kube::Api;
use kube::api::ListParams;
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, ENVIRONMENT, PROJECT, create_class, create_runtime, wait_condition,
    write_grants,
};

const WAIT: Duration = Duration::from_secs(180);

/// The private cluster b: started once, for every test of this module.
fn cluster_b() -> &'static SharedCluster {
    static B: OnceLock<SharedCluster> = OnceLock::new();
    B.get_or_init(|| {
        harness::private_cluster_with("fleet-b", &["--name", "fleet-b", "--handlers", "runc"])
    })
}

/// One test at a time uses b (one of them stops its apiserver).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Both clusters' namespace, agents and Runtimes, and a kubeconfig with
/// the contexts `fleet-a`, `fleet-b` and `fleet-a2` (a again).
struct World {
    a: TestNamespace,
    b: TestNamespace,
    kubeconfig: PathBuf,
    /// `NS/NAME` of both agents' Lease.
    lease: String,
    dir: PathBuf,
    /// The grants file of a's agent.
    grants_a: PathBuf,
    _agents: (Agent, Agent),
}

fn binding(name: &str, service: &str, class: &str, handler: &str) -> String {
    crate::agent_support::binding_for_service(name, class, handler, service)
}

async fn world(prefix: &str) -> World {
    let b_cluster = tokio::task::spawn_blocking(cluster_b)
        .await
        .expect("cluster b");
    let labels = [
        ("berth.dev/project", PROJECT),
        ("berth.dev/environment", ENVIRONMENT),
    ];
    let a = TestNamespace::with_labels(prefix, &labels).await;
    harness::install_crds(&a.client).await;
    let b_client = b_cluster.admin_client().await;
    harness::install_crds(&b_client).await;
    let b = TestNamespace::create(b_client, a.name.clone(), &labels).await;
    let n = &a.name;
    let (bounded, plain) = (format!("{n}-bounded"), format!("{n}-plain"));
    create_class(&a.client, &bounded, "bounded-runc").await;
    create_class(&b.client, &bounded, "bounded-runc").await;
    create_class(&b.client, &plain, "runc").await;
    let (bw, api, batch) = (format!("{n}-bw"), format!("{n}-api"), format!("{n}-batch"));
    let grants_a = write_grants(&[
        binding(&bw, "web", &bounded, "bounded-runc"),
        binding(&api, "api", &bounded, "bounded-runc"),
        binding(&batch, "batch", &bounded, "bounded-runc"),
    ]);
    let grants_b = write_grants(&[
        binding(&bw, "web", &bounded, "bounded-runc"),
        binding(&batch, "batch", &plain, "runc"),
    ]);
    let agent_a = Agent::start(AgentOpts::new(n, Some(&grants_a))).await;
    let agent_b = Agent::start(AgentOpts {
        kubeconfig: Some(b_cluster.kubeconfig.clone()),
        ..AgentOpts::new(n, Some(&grants_b))
    })
    .await;
    for ns in [&a, &b] {
        create_runtime(ns, "web", json!({"service": "web", "runtimeProfile": bw})).await;
        create_runtime(ns, "api", json!({"service": "api", "runtimeProfile": api})).await;
    }
    for name in ["web", "api"] {
        wait_condition(&a, name, "ProfileGranted", "True", None).await;
    }
    wait_condition(&b, "api", "ProfileGranted", "False", None).await;
    wait_condition(&b, "web", "ProfileGranted", "True", None).await;
    // Each agent has counted the nodes that report bw's handler (what the
    // handler finding compares).
    for ns in [&a, &b] {
        let grants: Api<RuntimeGrant> = Api::all(ns.client.clone());
        wait_for_value("bw's node coverage", WAIT, || {
            let grants = grants.clone();
            let bw = bw.clone();
            async move {
                let g = grants.get_opt(&bw).await.ok().flatten()?;
                let total = g.status?.nodes?.total;
                (total > 0).then_some(())
            }
        })
        .await;
    }

    let dir = harness::profile_dir()
        .parent()
        .expect("target")
        .join("berth-it")
        .join(format!("fleet-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let kubeconfig = dir.join("kubeconfig");
    let a_kubeconfig = tokio::task::spawn_blocking(|| harness::cluster().kubeconfig.clone())
        .await
        .expect("cluster a");
    harness::merge_kubeconfigs(
        &kubeconfig,
        &[
            ("fleet-a", &a_kubeconfig),
            ("fleet-b", &b_cluster.kubeconfig),
            ("fleet-a2", &a_kubeconfig),
        ],
    )
    .expect("merged kubeconfig");
    World {
        lease: format!("{n}/agent-{n}"),
        a,
        b,
        kubeconfig,
        dir,
        grants_a,
        _agents: (agent_a, agent_b),
    }
}

/// `berth --kubeconfig K -n NS --agent-lease L ARGS`: (code, stdout, stderr).
async fn berth(w: &World, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["-n", &w.a.name, "--agent-lease", &w.lease];
    all.extend_from_slice(args);
    crate::support::berth::run(Some(&w.kubeconfig), &all).await
}

fn json_of(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[tokio::test]
async fn a_retirement_confirmed_in_one_cluster_changes_nothing_in_the_other() {
    let _one = SERIAL.lock().await;
    let w = world("fleet-retire").await;
    let runtimes_a: Api<Runtime> = Api::namespaced(w.a.client.clone(), &w.a.name);
    let runtimes_b: Api<Runtime> = Api::namespaced(w.b.client.clone(), &w.b.name);
    let web_a = runtimes_a.get("web").await.expect("a's web");
    let bin = tokio::task::spawn_blocking(crate::support::berth::binary)
        .await
        .expect("build");
    let socket = w.dir.join("tmux.sock");
    let tmux = berth_tests::tmux::Server::at(&socket);
    let text = berth_tests::tmux::script(
        &[],
        &[
            &bin.display().to_string(),
            "--kubeconfig",
            &w.kubeconfig.display().to_string(),
            "--context",
            "fleet-a,fleet-b",
            "-n",
            &w.a.name,
            "--agent-lease",
            &w.lease,
        ],
        &w.dir.join("berth.stderr"),
        "sleep 300\n",
    );
    let (tmux2, script) = (tmux.clone(), w.dir.join("retire.sh"));
    let pane = tokio::task::spawn_blocking(move || {
        let tmux = tmux2;
        tmux.new_script_session(200, 50, &script, &text);
        let t = WAIT;
        let poll = Duration::from_millis(200);
        let wait = |what: &str, pred: &dyn Fn(&str) -> bool| tmux.wait_for(what, t, poll, pred).0;
        // Each cluster's line names its agent and its grants file, which
        // differ.
        let header = |p: &str, c: &str| {
            p.lines()
                .find(|l| l.starts_with(&format!(" {c} │ connected │ leader ")))
                .and_then(|l| l.split("│ grants ").nth(1))
                .map(|d| d.trim().to_string())
                .filter(|d| d.len() == 12)
        };
        let p = wait("both clusters connected, both webs shown", &|p| {
            header(p, "fleet-a").is_some()
                && header(p, "fleet-b").is_some()
                && p.lines().filter(|l| l.contains(" web ")).count() == 2
        });
        assert_ne!(header(&p, "fleet-a"), header(&p, "fleet-b"), "{p}");
        let typed = |s: &str| tmux.send(&["-l", s]);
        let key = |k: &str| tmux.send(&[k]);
        // A change is preconditioned on the reviewed resourceVersion: when
        // the agent writes the Runtime's status between the review and
        // the confirmation (the suspension settling, a Degraded Runtime's
        // paced progress), the console refuses the review as stale
        // ("conflict: …; review again (nothing was changed)"), as it must,
        // and the operator reviews again, in the same cluster. A cold CI
        // (7 Dec 2026) met it on the suspension; the deletion had met it
        // before. `confirm` types the confirmation into the open review
        // and, while it is refused as stale, reviews again (at most five
        // reviews in all).
        let confirm = |action: &str, prompt: &str, word: &str, done: &str| -> String {
            let stale = |p: &str| p.lines().any(|l| l.starts_with("conflict: "));
            for attempt in 1..=5 {
                if attempt > 1 {
                    // The key clears the refusal and opens a new review.
                    typed(action);
                    wait("the review, again", &|p| p.contains(prompt) && !stale(p));
                }
                typed(word);
                key("Enter");
                let p = wait(done, &|p| p.contains(done) || stale(p));
                if p.contains(done) {
                    return p;
                }
            }
            panic!("five reviews of {action} in fleet-b were each refused as stale");
        };
        typed("/cluster=fleet-b web");
        key("Enter");
        wait("b's web alone", &|p| {
            p.lines().filter(|l| l.contains(" web ")).count() == 1
                && p.lines()
                    .any(|l| l.contains("fleet-b") && l.contains(" web "))
        });
        // Suspend: the cluster's name confirms it, not yes, not a's name.
        typed("S");
        let suspend_prompt = "Type fleet-b to confirm in cluster fleet-b";
        wait("the review of b's web", &|p| {
            p.contains("Review in cluster fleet-b: suspend")
                && p.contains("cluster fleet-b — suspend — Runtime")
                && p.contains(suspend_prompt)
        });
        for wrong in ["yes", "fleet-a"] {
            typed(wrong);
            key("Enter");
            wait("not confirmed", &|p| {
                p.contains("not confirmed: type fleet-b and press Enter")
            });
            for _ in wrong.chars() {
                key("BSpace");
            }
        }
        confirm("S", suspend_prompt, "fleet-b", "done: suspend");
        // Delete: CLUSTER/NAME confirms it.
        typed("D");
        let delete_prompt = "Type fleet-b/web to confirm in cluster fleet-b";
        wait("the delete review", &|p| p.contains(delete_prompt));
        for wrong in ["web", "fleet-a/web"] {
            typed(wrong);
            key("Enter");
            wait("not confirmed", &|p| {
                p.contains("not confirmed: type fleet-b/web and press Enter")
            });
            for _ in wrong.chars() {
                key("BSpace");
            }
        }
        let p = confirm(
            "D",
            delete_prompt,
            "fleet-b/web",
            "done: delete the Runtime",
        );
        key("q");
        p
    })
    .await;
    tmux.kill();
    let pane = pane.expect("the tmux session");
    // b's web went, through suspension; a's is as it was.
    wait_for_value("b's web deleted", WAIT, || async {
        runtimes_b
            .get_opt("web")
            .await
            .ok()
            .and_then(|o| o.is_none().then_some(()))
    })
    .await;
    let after = runtimes_a.get("web").await.expect("a's web is still there");
    assert_eq!(after.metadata.uid, web_a.metadata.uid);
    assert_eq!(
        after.metadata.generation, web_a.metadata.generation,
        "a's spec"
    );
    assert!(!after.spec.suspend, "a's web not suspended");
    assert!(after.metadata.deletion_timestamp.is_none());
    let console_events = |client: kube::Client, ns: String| async move {
        Api::<Event>::namespaced(client, &ns)
            .list(&ListParams::default())
            .await
            .expect("events")
            .items
            .into_iter()
            .filter(|e| e.reporting_component.as_deref() == Some("berth-console"))
            .map(|e| e.reason.unwrap_or_default())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        console_events(w.a.client.clone(), w.a.name.clone()).await,
        Vec::<String>::new(),
        "no retirement recorded in a"
    );
    let in_b = console_events(w.b.client.clone(), w.b.name.clone()).await;
    assert!(
        in_b.contains(&"RetiredBySuspend".to_string())
            && in_b.contains(&"RetiredByDelete".to_string()),
        "{in_b:?}; pane:\n{pane}"
    );
}
