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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use berth_console::model::{
    App, ClusterId, Effect, Kind, ListView, Msg, Origin, Scope, WatchEvent, update,
};
use berth_console::run::perform::{Effects, Outbox};
use berth_console::watch::{ConnectOptions, connect};
use berth_shared::api::{Runtime, RuntimeGrant};
use berth_tests::harness::{self, SharedCluster, TestNamespace, wait_for_value};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::ListParams;
use serde_json::json;
use tokio::sync::mpsc::{Receiver, UnboundedReceiver, channel, unbounded_channel};

use crate::agent_support::{
    APPLICATION, Agent, AgentOpts, ENVIRONMENT, PROJECT, create_class, create_runtime,
    wait_condition, write_grants,
};
use berth_tests::grants_file::TestBinding;

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
    TestBinding {
        name,
        project: PROJECT,
        environment: ENVIRONMENT,
        application: APPLICATION,
        service,
        runtime_class: class,
        handler,
    }
    .toml()
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
        typed("/cluster=fleet-b web");
        key("Enter");
        wait("b's web alone", &|p| {
            p.lines().filter(|l| l.contains(" web ")).count() == 1
                && p.lines()
                    .any(|l| l.contains("fleet-b") && l.contains(" web "))
        });
        // Suspend: the cluster's name confirms it, not yes, not a's name.
        typed("S");
        wait("the review of b's web", &|p| {
            p.contains("Review in cluster fleet-b: suspend")
                && p.contains("cluster fleet-b — suspend — Runtime")
                && p.contains("Type fleet-b to confirm in cluster fleet-b")
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
        typed("fleet-b");
        key("Enter");
        wait("suspended", &|p| p.contains("done: suspend"));
        // Delete: CLUSTER/NAME confirms it.
        typed("D");
        wait("the delete review", &|p| {
            p.contains("Type fleet-b/web to confirm in cluster fleet-b")
        });
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
        typed("fleet-b/web");
        key("Enter");
        let p = wait("deleted", &|p| p.contains("done: delete the Runtime"));
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

/// The console's model, the real effect interpreter and watchers of both
/// clusters, pumped as the app's loop does.
struct FleetLive {
    app: App,
    effects: Effects,
    answers: UnboundedReceiver<Msg>,
    events: Receiver<Msg>,
    /// (Re)lists started per cluster and kind.
    lists: BTreeMap<(ClusterId, Kind), usize>,
}

impl FleetLive {
    async fn start(w: &World, contexts: &[&str]) -> FleetLive {
        let base = ConnectOptions {
            kubeconfig: Some(w.kubeconfig.clone()),
            context: None,
        };
        let mut conns = Vec::new();
        for c in contexts {
            conns.push(connect(&base.for_context(c)).await.expect("connect"));
        }
        let ids = conns.iter().map(|c| c.cluster()).collect();
        let scope = Scope::Namespace(w.a.name.clone());
        let mut app = App::of_fleet(ids, scope.clone(), Timestamp::now());
        let (ns, name) = w.lease.split_once('/').expect("lease");
        app.session.agent_lease = (ns.to_string(), name.to_string());
        let (atx, answers) = unbounded_channel();
        let (etx, events) = channel(1024);
        let effects = Effects::new(
            conns,
            scope,
            app.session.generation,
            app.session.agent_lease.clone(),
            base,
            Outbox {
                answers: atx,
                events: etx,
            },
        );
        let mut live = FleetLive {
            app,
            effects,
            answers,
            events,
            lists: BTreeMap::new(),
        };
        let first = live.app.watch_effects();
        live.perform(first).await;
        live
    }

    async fn perform(&mut self, effects: Vec<Effect>) {
        for e in effects {
            self.effects.perform(e, &mut ()).await.expect("perform");
        }
    }

    async fn apply(&mut self, m: Msg) {
        if let Msg::Watched(Origin { cluster, .. }, key, WatchEvent::Init) = &m {
            *self.lists.entry((cluster.clone(), key.kind)).or_default() += 1;
        }
        let effects = update(&mut self.app, m);
        self.perform(effects).await;
    }

    /// Applies messages until `check` holds; panics after [`WAIT`].
    async fn until(&mut self, what: &str, check: impl Fn(&App) -> bool) {
        let deadline = Instant::now() + WAIT;
        loop {
            let now = Timestamp::now();
            self.apply(Msg::Tick(now)).await;
            self.app.refresh();
            if check(&self.app) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; watches: {:?}",
                self.app
                    .clusters
                    .iter()
                    .map(|c| (&c.id, &c.data.watches))
                    .collect::<Vec<_>>()
            );
            let m = tokio::select! {
                m = self.answers.recv() => m,
                m = self.events.recv() => m,
                () = tokio::time::sleep(Duration::from_millis(250)) => None,
            };
            if let Some(m) = m {
                self.apply(m).await;
                while let Ok(m) = self.events.try_recv() {
                    self.apply(m).await;
                }
            }
        }
    }

    fn inits_of(&self, cluster: &str) -> BTreeMap<Kind, usize> {
        self.lists
            .iter()
            .filter(|((c, _), _)| c.context() == cluster)
            .map(|((_, k), n)| (*k, *n))
            .collect()
    }
}

/// The Runtimes view's `(cluster, name)` rows.
fn rows(app: &App) -> Vec<(String, String)> {
    let t = app.table(ListView::Runtimes);
    (0..t.len()).map(|p| (t.cell(p, 0), t.cell(p, 2))).collect()
}

fn failing(app: &App, cluster: &str) -> bool {
    app.clusters
        .iter()
        .find(|c| c.id.context() == cluster)
        .is_some_and(|c| berth_console::views::fleet_header::connection_words(app, c).1)
}

#[tokio::test]
async fn a_stopped_apiserver_degrades_its_cluster_alone_and_it_resumes() {
    let _one = SERIAL.lock().await;
    let w = world("fleet-drop").await;
    let mut live = FleetLive::start(&w, &["fleet-a", "fleet-b"]).await;
    let both = |app: &App| {
        let r = rows(app);
        ["fleet-a", "fleet-b"].iter().all(|c| {
            ["web", "api"]
                .iter()
                .all(|n| r.contains(&((*c).to_string(), (*n).to_string())))
        })
    };
    live.until("both clusters' Runtimes, merged", |app| {
        app.loaded(ListView::Runtimes) && both(app)
    })
    .await;
    let a_lists = live.inits_of("fleet-a");

    let b = cluster_b();
    tokio::task::spawn_blocking(move || b.stop("kube-apiserver", Duration::from_secs(60)))
        .await
        .expect("thread")
        .expect("stop b's apiserver");
    live.until("b unreachable, its rows kept", |app| {
        failing(app, "fleet-b") && !failing(app, "fleet-a") && both(app)
    })
    .await;
    // a is live meanwhile: a new Runtime there shows.
    create_runtime(&w.a, "late", json!({"service": "late"})).await;
    live.until("a's new Runtime", |app| {
        rows(app).contains(&("fleet-a".to_string(), "late".to_string()))
    })
    .await;
    // Drawn: b's header line says unreachable with the age of its data,
    // b's rows are dimmed, a's are not; the keys still work.
    live.apply(Msg::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('1'),
        crossterm::event::KeyModifiers::NONE,
    )))
    .await;
    live.app.refresh();
    let mut term =
        ratatui::Terminal::new(ratatui::backend::TestBackend::new(200, 40)).expect("terminal");
    term.draw(|f| {
        berth_console::views::draw(f, &live.app);
    })
    .expect("draw");
    let buf = term.backend().buffer().clone();
    let line = |y: u16| -> String { (0..200).map(|x| buf[(x, y)].symbol()).collect() };
    let text: Vec<String> = (0..40).map(line).collect();
    assert!(
        text.iter()
            .any(|l| l.contains(" fleet-b │ unreachable (last data ")),
        "{text:#?}"
    );
    let dimmed = |cluster: &str| {
        (0..40).any(|y| {
            let l = line(y);
            l.contains(&format!("│{cluster} "))
                && l.contains(" web ")
                && (1..199)
                    .filter(|&x| !buf[(x, y)].symbol().trim().is_empty())
                    .all(|x| buf[(x, y)].modifier.contains(ratatui::style::Modifier::DIM))
        })
    };
    assert!(dimmed("fleet-b"), "{text:#?}");
    assert!(!dimmed("fleet-a"), "{text:#?}");

    tokio::task::spawn_blocking(move || b.start("kube-apiserver", Duration::from_secs(180)))
        .await
        .expect("thread")
        .expect("start b's apiserver");
    live.until("b connected again", |app| {
        !failing(app, "fleet-b") && app.clusters.iter().all(|c| c.data.connection().is_none())
    })
    .await;
    // And current: a Runtime made in b after its restart shows.
    create_runtime(&w.b, "after", json!({"service": "after"})).await;
    live.until("b's new Runtime", |app| {
        rows(app).contains(&("fleet-b".to_string(), "after".to_string()))
    })
    .await;
    assert_eq!(
        live.inits_of("fleet-a"),
        a_lists,
        "a listed nothing again while b dropped and came back"
    );
    eprintln!(
        "fleet-b's lists before and after its apiserver's restart: {:?}",
        live.inits_of("fleet-b")
    );
}

#[tokio::test]
async fn the_cli_reads_each_cluster_and_finds_what_differs() {
    let _one = SERIAL.lock().await;
    let w = world("fleet-cli").await;
    let (n, ab) = (w.a.name.clone(), "fleet-a,fleet-b");

    // get: every item names its cluster.
    let (code, out, err) = berth(&w, &["--context", ab, "get", "runtimes", "-o", "json"]).await;
    assert_eq!(code, 0, "{err}");
    let items: Vec<(String, String)> = json_of(&out)["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            (
                i["cluster"].as_str().unwrap_or_default().to_string(),
                i["name"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    for c in ["fleet-a", "fleet-b"] {
        for name in ["web", "api"] {
            assert!(items.contains(&(c.into(), name.into())), "{items:?}");
        }
    }
    let (code, out, _) = berth(&w, &["--context", ab, "get", "runtimes"]).await;
    assert_eq!(code, 0);
    assert!(out.starts_with("CLUSTER"), "{out}");

    // check: the fleet findings, each naming both clusters.
    let fleet_kinds = |out: &str| -> BTreeMap<String, (String, String)> {
        json_of(out)["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter(|i| i["kind"].as_str().is_some_and(|k| k.starts_with("fleet-")))
            .map(|i| {
                (
                    i["kind"].as_str().unwrap_or_default().to_string(),
                    (
                        i["severity"].as_str().unwrap_or_default().to_string(),
                        i["cluster"].as_str().unwrap_or_default().to_string(),
                    ),
                )
            })
            .collect()
    };
    let (_, out, err) = berth(
        &w,
        &["--context", ab, "check", "-o", "json", "--fail-on", "never"],
    )
    .await;
    let found = fleet_kinds(&out);
    let both = "fleet-a,fleet-b".to_string();
    assert_eq!(
        found,
        BTreeMap::from([
            (
                "fleet-grant-differs".to_string(),
                ("warning".to_string(), both.clone())
            ),
            (
                "fleet-handler-uneven".to_string(),
                ("warning".to_string(), both.clone())
            ),
            (
                "fleet-identity-split".to_string(),
                ("warning".to_string(), both.clone())
            ),
        ]),
        "{out}\n{err}"
    );
    // Declared to run one grants file: the digests differ, an error.
    let (code, out, _) = berth(
        &w,
        &[
            "--context",
            ab,
            "--fleet-grants-same",
            ab,
            "check",
            "-o",
            "json",
        ],
    )
    .await;
    let found = fleet_kinds(&out);
    assert_eq!(found["fleet-grants-file-differs"].0, "error", "{out}");
    assert_eq!(found["fleet-grant-differs"].0, "error", "{out}");
    assert_eq!(code, 3);
    // A consistent fleet (one cluster through two contexts): none.
    let (_, out, _) = berth(
        &w,
        &[
            "--context",
            "fleet-a=same,fleet-a2=same",
            "check",
            "-o",
            "json",
            "--fail-on",
            "never",
        ],
    )
    .await;
    assert!(fleet_kinds(&out).is_empty(), "{out}");

    // plan-grants: a's file is what a runs, and changes b.
    let file = w.grants_a.display().to_string();
    let (code, out, err) = berth(&w, &["--context", ab, "plan-grants", &file]).await;
    let (in_a, in_b) = out
        .split_once("=== cluster fleet-b ===")
        .expect("b's section");
    assert!(
        in_a.contains("=== cluster fleet-a ===") && in_a.contains(": NoChange (exit 0)"),
        "{out}"
    );
    assert!(in_b.contains(&format!("+ {n}-api")), "{out}");
    assert!(in_b.contains(&format!("~ {n}-batch")), "{out}");
    assert!(matches!(code, 2 | 3), "{code}: {err}");
}

#[tokio::test]
async fn a_cluster_that_cannot_be_reached_is_reported_and_fatal_only_alone() {
    let _one = SERIAL.lock().await;
    let w = world("fleet-down").await;
    // Two contexts on a closed port, beside a.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let kubeconfig = w.dir.join("kubeconfig-down");
    add_down_contexts(&w.kubeconfig, &kubeconfig, closed);
    let run = |args: Vec<String>| {
        let (kubeconfig, lease, n) = (kubeconfig.clone(), w.lease.clone(), w.a.name.clone());
        async move {
            let mut all = vec!["-n".to_string(), n, "--agent-lease".into(), lease];
            all.extend(args);
            let refs: Vec<&str> = all.iter().map(String::as_str).collect();
            crate::support::berth::run(Some(&kubeconfig), &refs).await
        }
    };
    let args = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
    let (code, out, err) = run(args("--context fleet-a,fleet-down get runtimes -o json")).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning: cluster fleet-down:"), "{err}");
    let items = json_of(&out)["items"].as_array().cloned().expect("items");
    assert!(
        !items.is_empty() && items.iter().all(|i| i["cluster"] == "fleet-a"),
        "{out}"
    );
    let (code, _, err) = run(args("--context fleet-down,fleet-down2 get runtimes")).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no cluster could be read"), "{err}");
    let (code, out, _) = run(args("--context fleet-a,fleet-down check -o json")).await;
    assert_eq!(code, 3);
    assert!(
        json_of(&out)["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|i| i["kind"] == "cluster-unreachable" && i["cluster"] == "fleet-down"),
        "{out}"
    );
}

/// `from` plus `fleet-down` and `fleet-down2`: a's credentials, a server
/// on a closed port.
fn add_down_contexts(from: &Path, to: &Path, port: u16) {
    let mut kc = kube::config::Kubeconfig::read_from(from).expect("kubeconfig");
    let base = kc
        .contexts
        .iter()
        .find(|c| c.name == "fleet-a")
        .cloned()
        .expect("fleet-a");
    let cluster = kc
        .clusters
        .iter()
        .find(|c| c.name == "fleet-a")
        .cloned()
        .expect("cluster");
    for name in ["fleet-down", "fleet-down2"] {
        let mut c = cluster.clone();
        c.name = name.into();
        if let Some(inner) = c.cluster.as_mut() {
            inner.server = Some(format!("https://127.0.0.1:{port}"));
        }
        let mut ctx = base.clone();
        ctx.name = name.into();
        if let Some(inner) = ctx.context.as_mut() {
            inner.cluster = name.into();
        }
        kc.clusters.push(c);
        kc.contexts.push(ctx);
    }
    std::fs::write(to, yaml_serde::to_string(&kc).expect("yaml")).expect("write");
}
