//! The console against the real local control plane: its watchers and model
//! run in-process and must show real states (a rollout reaching Complete, a
//! grant removed, a RuntimeClass deleted, pods using an ungranted class)
//! within a bounded wait; `berth get -o json` prints them; a watch whose
//! apiserver goes away shows "reconnecting…" and recovers; and the real
//! binary runs in tmux, switches views, quits and restores the terminal;
//! in tmux, paste reaches the filter, `NO_COLOR` removes every colour, the
//! mouse is captured only with `--mouse`, and a `:ctx` to a context that
//! does not answer leaves the console on the old one; `:ns` lists the
//! cluster's namespaces; top-level errors are printed sanitized.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use berth_console::model::{
    App, ClusterId, Kind, ListView, Msg, ObjKey, Scope, Screen, WatchEvent, WatchKey, WatchState,
    update,
};
use berth_console::rows;
use berth_console::watch::{
    ConnectError, ConnectOptions, WatchStarts, Watchers, client_from_config, connect_checked,
};
use berth_tests::harness::{self, TestNamespace};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use serde_json::json;
use tokio::sync::mpsc::{Receiver, channel};

use crate::agent_support::{
    Agent, AgentOpts, binding, create_class, create_runtime, setup, write_grants,
};

const WAIT: Duration = Duration::from_secs(120);

/// The console's model fed by its own watchers, pumped by the test task
/// (the one owner of the state, as in the app).
pub(crate) struct Live {
    pub(crate) app: App,
    rx: Receiver<Msg>,
    _watchers: Watchers,
    /// (Re)lists started (`WatchEvent::Init`) per kind.
    lists: std::collections::BTreeMap<Kind, usize>,
}

impl Live {
    fn start(client: Client, scope: Scope, lease: ObjKey, kinds: &[Kind]) -> Live {
        Live::start_with(client, WatchStarts::default(), scope, lease, kinds)
    }

    /// With the watch starts of a client made by `client_from_config`.
    fn start_with(
        client: Client,
        starts: WatchStarts,
        scope: Scope,
        lease: ObjKey,
        kinds: &[Kind],
    ) -> Live {
        let (tx, rx) = channel(1024);
        let mut app = App::new("test", scope.clone(), Timestamp::now());
        app.session.agent_lease = lease.clone();
        let mut watchers = Watchers::new(client, starts, scope, lease, app.origin_of(0), tx);
        watchers.ensure(kinds);
        Live {
            app,
            rx,
            _watchers: watchers,
            lists: Default::default(),
        }
    }

    /// Runs exactly these (scoped) watches, as the app asks for a screen.
    pub(crate) fn start_watches(
        client: Client,
        scope: Scope,
        lease: ObjKey,
        keys: &[WatchKey],
    ) -> Live {
        let (tx, rx) = channel(1024);
        let mut app = App::new("test", scope.clone(), Timestamp::now());
        app.session.agent_lease = lease.clone();
        let mut watchers = Watchers::new(
            client,
            WatchStarts::default(),
            scope,
            lease,
            app.origin_of(0),
            tx,
        );
        watchers.sync(keys);
        Live {
            app,
            rx,
            _watchers: watchers,
            lists: Default::default(),
        }
    }

    fn apply(&mut self, m: Msg) {
        if let Msg::Watched(_, key, WatchEvent::Init) = &m {
            *self.lists.entry(key.kind).or_default() += 1;
        }
        update(&mut self.app, m);
    }

    /// Applies messages until `check` yields a value; panics after `timeout`
    /// with `what` and the last state.
    pub(crate) async fn until<T>(
        &mut self,
        what: &str,
        timeout: Duration,
        check: impl Fn(&App) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + timeout;
        loop {
            self.app.now = Timestamp::now();
            // The checks read every view, shown or not.
            self.app.refresh_all();
            if let Some(v) = check(&self.app) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {}s waiting for the console to show {what}; runtimes: {:?}; watches: {:?}",
                timeout.as_secs(),
                self.app.clusters[0].rows.runtimes,
                self.app.clusters[0].data.watches
            );
            if let Ok(Some(m)) =
                tokio::time::timeout(Duration::from_millis(250), self.rx.recv()).await
            {
                self.apply(m);
                while let Ok(m) = self.rx.try_recv() {
                    self.apply(m);
                }
            }
        }
    }
}

/// The `berth` binary: `BERTH_BIN`, or built once with cargo.
pub(crate) use crate::support::berth::binary as berth_binary;

async fn berth(args: &[&str]) -> (bool, String, String) {
    let (code, out, err) = crate::support::berth::run(None, args).await;
    (code == 0, out, err)
}

async fn berth_get_json(ns: &str, what: &str) -> serde_json::Value {
    let (ok, out, err) = berth(&["-n", ns, "get", what, "-o", "json"]).await;
    assert!(ok, "berth get {what} failed: {err}");
    assert!(
        !out.bytes().any(|b| b < 0x20 && b != b'\n'),
        "control byte in berth get output"
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("berth get {what} -o json: {e}\n{out}"))
}

fn runtime_row<'a>(app: &'a App, name: &str) -> Option<&'a rows::RuntimeRow> {
    app.clusters[0]
        .rows
        .runtimes
        .iter()
        .find(|r| r.name == name)
}

#[tokio::test]
async fn console_model_and_get_follow_the_cluster() {
    let (ns, class) = setup("console").await;
    let alias = format!("{}-bw", ns.name);
    let grants = write_grants(&[binding(&alias, &class, "bounded-runc")]);
    let opts = AgentOpts::new(&ns.name, Some(&grants));
    let lease = (ns.name.clone(), opts.lease_name.clone());
    let identity = opts.identity.clone();
    let mut agent = Agent::start(opts).await;
    let mut live = Live::start(
        ns.client.clone(),
        Scope::Namespace(ns.name.clone()),
        lease.clone(),
        Kind::ALL,
    );

    // A granted Runtime rolls out to Complete.
    create_runtime(&ns, "web", json!({"runtimeProfile": alias})).await;
    live.until("web granted and Complete 2/2", WAIT, |app| {
        runtime_row(app, "web")
            .filter(|r| {
                r.grant == "Granted"
                    && r.phase == "Complete"
                    && r.ready == 2
                    && r.desired == 2
                    && !r.blocked
            })
            .map(|_| ())
    })
    .await;
    live.until("the agent's leader from its Lease", WAIT, |app| {
        (app.leader().as_deref() == Some(identity.as_str())).then_some(())
    })
    .await;
    let key = (ns.name.clone(), "web".to_string());
    live.until("the rollout's ReplicaSet with ready pods", WAIT, |app| {
        let r = rows::rollout(&app.clusters[0].data.store, &key, app.now)?;
        let rs = r.replica_sets.iter().find(|rs| rs.current)?;
        (rs.pods.len() == 2 && rs.pods.iter().all(|p| p.ready)).then_some(())
    })
    .await;

    // A new image: a second revision, progressing to Complete.
    Api::<berth_shared::api::Runtime>::namespaced(ns.client.clone(), &ns.name)
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": {"tag": "2"}}})),
        )
        .await
        .expect("patch image");
    live.until(
        "revision 2 Complete with an old and a new ReplicaSet",
        WAIT,
        |app| {
            let r = rows::rollout(&app.clusters[0].data.store, &key, app.now)?;
            let new = r.replica_sets.iter().find(|rs| rs.current)?;
            (r.phase == "Complete"
                && new.revision == "2"
                && new.image.ends_with(":2")
                && new.ready == 2
                && r.replica_sets
                    .iter()
                    .any(|rs| !rs.current && rs.revision == "1"))
            .then_some(())
        },
    )
    .await;

    // The Rollout and a pod's Details watch only their objects, by the
    // selectors the app uses (the apiserver accepts them, the agent's
    // labels match them): the same rows from far fewer objects.
    let full =
        rows::rollout(&live.app.clusters[0].data.store, &key, live.app.now).expect("rollout");
    let pod = full
        .replica_sets
        .iter()
        .find(|rs| rs.current)
        .and_then(|rs| rs.pods.first())
        .map(|p| (ns.name.clone(), p.name.clone()))
        .expect("a pod of the new ReplicaSet");
    let mut keys = Screen::Rollout(ClusterId::new("test"), key.clone()).watches(&Scope::All);
    keys.extend(
        Screen::Details(ClusterId::new("test"), Kind::Pod, pod.clone()).watches(&Scope::All),
    );
    assert!(keys.iter().any(|k| k.kind == Kind::Pod && !k.is_all()));
    let mut scoped = Live::start_watches(ns.client.clone(), Scope::All, lease.clone(), &keys);
    let shape = |r: &rows::RolloutRow| (r.revision.clone(), r.replica_sets.clone());
    let want = shape(&full);
    scoped
        .until("the rollout's rows from the scoped watches", WAIT, |app| {
            let ok = keys.iter().all(|k| app.clusters[0].data.synced.contains(k))
                && rows::rollout(&app.clusters[0].data.store, &key, app.now).map(|r| shape(&r))
                    == Some(want.clone())
                && app.clusters[0].data.store.pods.contains_key(&pod);
            ok.then_some(())
        })
        .await;
    // Only the Runtime's server pods, only in its namespace.
    assert!(
        scoped.app.clusters[0].data.store.pods.iter().all(
            |((n, _), p)| *n == ns.name && p.metadata.label("berth.dev/runtime") == Some("web")
        ),
        "{:?}",
        scoped.app.clusters[0]
            .data
            .store
            .pods
            .keys()
            .collect::<Vec<_>>()
    );
    assert!(
        scoped.app.clusters[0]
            .data
            .store
            .events
            .keys()
            .all(|(n, _)| *n == ns.name)
    );
    drop(scoped);

    // The grant with its checks and coverage.
    live.until("the grant ok with full node coverage", WAIT, |app| {
        app.clusters[0]
            .rows
            .grants
            .iter()
            .find(|g| g.name == alias)
            .filter(|g| {
                g.check == "ok"
                    && g.runtimes == 1
                    && g.nodes
                        .split_once('/')
                        .is_some_and(|(a, b)| a == b && a != "0")
            })
            .map(|_| ())
    })
    .await;

    // A bare pod using an ungranted class: retained, the class unsafe to remove.
    let ungranted = format!("{}-ungranted", ns.name);
    create_class(&ns.client, &ungranted, "runc").await;
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "bare"},
        "spec": {"runtimeClassName": ungranted, "containers": [{"name": "a", "image": "registry.invalid/x:1"}]}
    }))
    .expect("pod");
    Api::<Pod>::namespaced(ns.client.clone(), &ns.name)
        .create(&PostParams::default(), &pod)
        .await
        .expect("create bare pod");
    live.until("the bare pod retained, its class unsafe", WAIT, |app| {
        let retained = app.clusters[0]
            .rows
            .retained
            .iter()
            .any(|r| r.kind == "Pod" && r.name == "bare" && r.reason == "outside berth");
        let handler = app.clusters[0]
            .rows
            .handlers
            .iter()
            .find(|h| h.class == ungranted)?;
        (retained
            && handler.present
            && !handler.safe_to_remove
            && handler.workloads.iter().any(|w| w.name == "bare"))
        .then_some(())
    })
    .await;
    // The granted class is in use too, by berth's own workloads.
    assert!(
        live.app.clusters[0]
            .rows
            .handlers
            .iter()
            .any(|h| h.class == class && !h.safe_to_remove && h.granted_by.contains(&alias))
    );

    // The class is deleted: still referenced, shown as missing.
    Api::<RuntimeClass>::all(ns.client.clone())
        .delete(&ungranted, &DeleteParams::default())
        .await
        .expect("delete class");
    live.until("the deleted class shown as missing", WAIT, |app| {
        app.clusters[0]
            .rows
            .handlers
            .iter()
            .find(|h| h.class == ungranted && !h.present && h.flags.contains("class missing"))
            .map(|_| ())
    })
    .await;

    // berth get -o json shows the same.
    let v = berth_get_json(&ns.name, "runtimes").await;
    let web = v["items"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["name"] == "web"))
        .unwrap_or_else(|| panic!("web in {v}"));
    assert_eq!(web["grant"], "Granted");
    assert_eq!(web["phase"], "Complete");
    let v = berth_get_json(&ns.name, "handlers").await;
    assert!(
        v["items"].as_array().is_some_and(|a| a
            .iter()
            .any(|h| h["class"] == ungranted.as_str() && h["present"] == false)),
        "{v}"
    );
    let v = berth_get_json(&ns.name, "rollouts").await;
    assert!(
        v["items"]
            .as_array()
            .is_some_and(|a| a.iter().any(|r| r["name"] == "web" && r["revision"] == "2")),
        "{v}"
    );
    let (ok, table, err) = berth(&["-n", &ns.name, "get", "retained"]).await;
    assert!(
        ok && table.starts_with("KIND") && table.contains("bare"),
        "{table}{err}"
    );

    // A Runtime asking for a profile nobody granted: blocked, NotGranted.
    create_runtime(&ns, "orphan", json!({"runtimeProfile": "nope"})).await;
    live.until("orphan blocked with NotGranted", WAIT, |app| {
        runtime_row(app, "orphan")
            .filter(|r| r.blocked && r.grant == "NotGranted")
            .map(|_| ())
    })
    .await;

    // The grant is removed (agent restarted without it): blocked, and the
    // Deployment is retained with "grant gone".
    agent.kill();
    let empty = write_grants(&[]);
    let mut opts = AgentOpts::new(&ns.name, Some(&empty));
    opts.identity = format!("{}-b", ns.name);
    let _agent2 = Agent::start(opts).await;
    live.until("web blocked with grant Revoked", WAIT, |app| {
        runtime_row(app, "web")
            .filter(|r| r.blocked && r.grant == "Revoked")
            .map(|_| ())
    })
    .await;
    live.until("the Deployment retained with grant gone", WAIT, |app| {
        app.clusters[0]
            .rows
            .retained
            .iter()
            .find(|r| {
                r.kind == "Deployment" && r.name == "web" && r.reason.starts_with("grant gone")
            })
            .map(|_| ())
    })
    .await;
    let v = berth_get_json(&ns.name, "runtimes").await;
    assert!(
        v["items"]
            .as_array()
            .is_some_and(|a| a.iter().any(|r| r["name"] == "web" && r["blocked"] == true)),
        "{v}"
    );
}

/// A TCP pass-through to the apiserver that can be taken down and brought
/// back on the same port.
struct Proxy {
    port: u16,
    upstream: String,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("free port");
        let mut p = Proxy {
            port,
            upstream,
            tasks: Vec::new(),
        };
        p.up().await;
        p
    }

    async fn up(&mut self) {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_reuseaddr(true).expect("reuseaddr");
        socket
            .bind(([127, 0, 0, 1], self.port).into())
            .expect("bind proxy port");
        let listener = socket.listen(64).expect("listen");
        let upstream = self.upstream.clone();
        let conns = std::sync::Arc::new(std::sync::Mutex::new(
            Vec::<tokio::task::JoinHandle<()>>::new(),
        ));
        let conns2 = conns.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                let upstream = upstream.clone();
                let h = tokio::spawn(async move {
                    if let Ok(mut out) = tokio::net::TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                    }
                });
                conns2.lock().expect("lock").push(h);
            }
        });
        // One task owns the accept loop and, when aborted, every connection.
        self.tasks.push(tokio::spawn(async move {
            struct AbortAll(
                std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
                tokio::task::JoinHandle<()>,
            );
            impl Drop for AbortAll {
                fn drop(&mut self) {
                    self.1.abort();
                    if let Ok(v) = self.0.lock() {
                        for h in v.iter() {
                            h.abort();
                        }
                    }
                }
            }
            let _guard = AbortAll(conns, accept);
            std::future::pending::<()>().await;
        }));
    }

    fn down(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
    }
}

#[tokio::test]
async fn console_shows_reconnecting_and_recovers() {
    let kubeconfig = tokio::task::spawn_blocking(|| harness::cluster().kubeconfig.clone())
        .await
        .expect("cluster");
    let kc = Kubeconfig::read_from(&kubeconfig).expect("kubeconfig");
    let mut config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    let upstream = format!(
        "{}:{}",
        config.cluster_url.host().expect("host"),
        config.cluster_url.port_u16().unwrap_or(443)
    );
    let mut proxy = Proxy::start(upstream).await;
    config.cluster_url = format!("https://127.0.0.1:{}", proxy.port)
        .parse()
        .expect("url");
    let (client, starts) = client_from_config(config).expect("client");
    let mut live = Live::start_with(
        client,
        starts,
        Scope::Namespace("default".into()),
        ("default".into(), "none".into()),
        // RuntimeClasses: a kind nothing changes meanwhile, so only the
        // watch start can tell that it runs again.
        &[Kind::Node, Kind::Pod, Kind::RuntimeClass],
    );
    live.until("synced nodes", WAIT, |app| {
        (app.clusters[0].data.connection().is_none()
            && !app.clusters[0].data.store.nodes.is_empty())
        .then_some(())
    })
    .await;
    let lists_before = live.lists.clone();

    proxy.down();
    let text = live
        .until("reconnecting…", WAIT, |app| {
            let (text, _) = berth_console::views::statusbar::connection_text(app);
            text.starts_with("reconnecting…").then_some(text)
        })
        .await;
    assert!(
        text.len() > "reconnecting… Node: ".len(),
        "names the error: {text}"
    );
    assert!(matches!(
        live.app.clusters[0].data.connection(),
        Some((_, WatchState::Reconnecting(_)))
    ));

    proxy.up().await;
    live.until("connected again", WAIT, |app| {
        let (text, _) = berth_console::views::statusbar::connection_text(app);
        (text == "connected" && !app.clusters[0].data.store.nodes.is_empty()).then_some(())
    })
    .await;
    // Resumed from the last resourceVersion: no watcher listed again.
    assert_eq!(live.lists, lists_before, "a watch relisted after the cut");
    proxy.down();
}

pub(crate) fn tmux(socket: &str, args: &[&str]) -> String {
    berth_tests::tmux::Server::named(socket).run(args)
}

fn wait_pane(socket: &str, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
    berth_tests::tmux::Server::named(socket)
        .wait_for(what, timeout, Duration::from_millis(200), pred)
        .0
}

/// Runs the real `berth` in a tmux session (its own server socket), lets
/// `drive` press keys, then returns the pane after the program ended
/// (followed by `stty -a` and `DONE`) and tmux's terminal-mode flags.
async fn in_tmux(
    name: &str,
    env: &[(&str, &str)],
    drive: impl FnOnce(&str) + Send + 'static,
) -> (String, String) {
    in_tmux_with(name, env, &[], None, drive).await
}

/// [`in_tmux`] with extra arguments for `berth` and another kubeconfig.
async fn in_tmux_with(
    name: &str,
    env: &[(&str, &str)],
    args: &[&str],
    kubeconfig: Option<PathBuf>,
    drive: impl FnOnce(&str) + Send + 'static,
) -> (String, String) {
    let ns = TestNamespace::new("console-tmux").await;
    harness::install_crds(&ns.client).await;
    let bin = tokio::task::spawn_blocking(berth_binary)
        .await
        .expect("build");
    let kubeconfig = match kubeconfig {
        Some(k) => k,
        None => tokio::task::spawn_blocking(|| harness::cluster().kubeconfig.clone())
            .await
            .expect("cluster"),
    };
    let dir = berth_tests::harness::profile_dir()
        .parent()
        .expect("target")
        .join("berth-it")
        .join(format!("tmux-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let script = dir.join(format!("{name}.sh"));
    let (bin, kubeconfig) = (bin.display().to_string(), kubeconfig.display().to_string());
    let mut argv = vec![bin.as_str(), "--kubeconfig", &kubeconfig, "-n", &ns.name];
    argv.extend_from_slice(args);
    let text = berth_tests::tmux::script(
        env,
        &argv,
        &dir.join(format!("{name}.stderr")),
        "stty -a | tr '\\n' ' '\necho\necho DONE\nsleep 300\n",
    );
    let socket = format!("berth-it-{name}-{}", std::process::id());
    let result = tokio::task::spawn_blocking({
        let socket = socket.clone();
        move || {
            berth_tests::tmux::Server::named(&socket).new_script_session(160, 40, &script, &text);
            drive(&socket);
            let pane = wait_pane(&socket, "berth exited", Duration::from_secs(60), |p| {
                p.contains("DONE")
            });
            let flags = tmux(
                &socket,
                &[
                    "display-message",
                    "-p",
                    "-t",
                    "berth",
                    "#{alternate_on} #{cursor_flag} #{mouse_any_flag} #{mouse_standard_flag} #{mouse_button_flag}",
                ],
            );
            (pane, flags)
        }
    })
    .await;
    tmux(&socket, &["kill-server"]);
    match result {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// The terminal is back to normal: main screen, cursor shown, no mouse
/// reporting, canonical mode with echo.
fn assert_restored(pane: &str, flags: &str) {
    assert!(!pane.contains("┌ "), "alternate screen left: {pane}");
    assert!(
        pane.contains(" icanon") && !pane.contains("-icanon"),
        "{pane}"
    );
    assert!(
        pane.contains(" echo ") && !pane.contains(" -echo "),
        "{pane}"
    );
    assert_eq!(
        flags.trim(),
        "0 1 0 0 0",
        "alternate screen, cursor, mouse modes"
    );
}

#[tokio::test]
async fn berth_binary_in_tmux_switches_views_and_restores_the_terminal() {
    let (pane, flags) = in_tmux("keys", &[], |socket| {
        let t = Duration::from_secs(60);
        wait_pane(socket, "the Runtimes view, connected", t, |p| {
            p.contains("Runtimes [") && p.contains("connected")
        });
        // The console runs without transparent huge pages (console/src/main.rs).
        assert_eq!(thp_enabled(&berth_pid(socket)), "0");
        let keys: &[(&[&str], &str)] = &[
            (&["2"], "Grants ["),
            (&["3"], "Handlers ["),
            (&["4"], "Retained ["),
            (&[":", "r", "u", "n", "Tab", "Enter"], "Runtimes ["),
            (&["Tab"], "Grants ["),
            (&["?"], "Help: j/k scroll"),
        ];
        for (ks, expect) in keys {
            for k in *ks {
                tmux(socket, &["send-keys", "-t", "berth", k]);
            }
            wait_pane(socket, expect, t, |p| p.contains(expect));
        }
        tmux(socket, &["send-keys", "-t", "berth", "x"]);
        wait_pane(socket, "help closed", t, |p| !p.contains("Help: j/k"));
        // With colours by default (so the NO_COLOR test below can fail).
        let styled = tmux(socket, &["capture-pane", "-p", "-e", "-t", "berth"]);
        assert!(has_colour(&styled), "no colour drawn: {styled:?}");
        tmux(socket, &["send-keys", "-t", "berth", "q"]);
    })
    .await;
    assert!(pane.contains("BERTH-EXIT=0"), "{pane}");
    assert_restored(&pane, &flags);
}

/// The pid of `berth`, the child of the pane's script shell.
fn berth_pid(socket: &str) -> String {
    let shell = tmux(
        socket,
        &["display-message", "-p", "-t", "berth", "#{pane_pid}"],
    );
    let shell = shell.trim();
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
        .expect("the pane shell's children");
    children
        .split_whitespace()
        .next()
        .unwrap_or_else(|| panic!("the pane shell {shell} runs no berth"))
        .to_string()
}

/// The kernel's `THP_enabled` of a process.
fn thp_enabled(pid: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("THP_enabled:"))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| panic!("no THP_enabled in {status}"))
}

/// Whether captured pane text (`capture-pane -e`) sets a foreground or
/// background colour: SGR parameters 30–37, 38, 40–47, 48, 90–97, 100–107.
fn has_colour(pane: &str) -> bool {
    pane.split("\u{1b}[").skip(1).any(|seq| {
        let params = seq.split('m').next().unwrap_or_default();
        params.split(';').any(|p| {
            matches!(
                p.parse::<u16>(),
                Ok(30..=38 | 40..=48 | 90..=97 | 100..=107)
            )
        })
    })
}

fn mouse_flags(socket: &str) -> String {
    tmux(
        socket,
        &[
            "display-message",
            "-p",
            "-t",
            "berth",
            "#{mouse_any_flag}#{mouse_standard_flag}#{mouse_button_flag}",
        ],
    )
    .trim()
    .to_string()
}

/// Bracketed paste reaches the `/` filter; `NO_COLOR` draws no colour at
/// all; without `--mouse` the mouse is not captured.
#[tokio::test]
async fn berth_binary_in_tmux_pastes_and_honours_no_color() {
    let (pane, flags) = in_tmux("paste", &[("NO_COLOR", "1")], |socket| {
        let t = Duration::from_secs(60);
        wait_pane(socket, "the Runtimes view, connected", t, |p| {
            p.contains("Runtimes [") && p.contains("connected")
        });
        assert_eq!(mouse_flags(socket), "000", "mouse captured without --mouse");
        tmux(socket, &["send-keys", "-t", "berth", "/"]);
        wait_pane(socket, "the filter line", t, |p| {
            p.lines().any(|l| l.starts_with('/'))
        });
        tmux(socket, &["set-buffer", "-b", "berth-it", "pasted-name\n"]);
        // -p: as a bracketed paste, since the program asked for them.
        tmux(
            socket,
            &["paste-buffer", "-p", "-b", "berth-it", "-t", "berth"],
        );
        wait_pane(socket, "the pasted filter", t, |p| {
            p.contains("filter: /pasted-name/")
        });
        let styled = tmux(socket, &["capture-pane", "-p", "-e", "-t", "berth"]);
        assert!(
            !has_colour(&styled),
            "colour drawn with NO_COLOR: {styled:?}"
        );
        // Emphasis is still there (the selected column header, bold).
        assert!(
            styled.contains("\u{1b}["),
            "no attributes at all: {styled:?}"
        );
        tmux(socket, &["send-keys", "-t", "berth", "Escape"]);
        // An ESC followed at once by `q` in one read is Alt-q to the
        // terminal parser (crossterm), which the filter takes as a `q`
        // (seen in a cold CI run): send `q` only once the filter line is
        // gone.
        wait_pane(socket, "the filter left", t, |p| {
            !p.lines().any(|l| l.starts_with('/'))
        });
        tmux(socket, &["send-keys", "-t", "berth", "q"]);
    })
    .await;
    assert!(pane.contains("BERTH-EXIT=0"), "{pane}");
    assert_restored(&pane, &flags);
}

/// `--mouse` captures the mouse (and it is released on exit).
#[tokio::test]
async fn berth_binary_captures_the_mouse_only_with_the_flag() {
    let (pane, flags) = in_tmux_with("mouse", &[], &["--mouse", "--no-color"], None, |socket| {
        let t = Duration::from_secs(60);
        wait_pane(socket, "the Runtimes view", t, |p| p.contains("Runtimes ["));
        assert_ne!(
            mouse_flags(socket),
            "000",
            "--mouse did not capture the mouse"
        );
        let styled = tmux(socket, &["capture-pane", "-p", "-e", "-t", "berth"]);
        assert!(
            !has_colour(&styled),
            "colour drawn with --no-color: {styled:?}"
        );
        tmux(socket, &["send-keys", "-t", "berth", "q"]);
    })
    .await;
    assert!(pane.contains("BERTH-EXIT=0"), "{pane}");
    assert_restored(&pane, &flags);
}

/// A kubeconfig with the test cluster's context plus one context per
/// `(name, server)`, using the same credentials.
fn kubeconfig_with_contexts(dir: &std::path::Path, extra: &[(&str, String)]) -> (PathBuf, String) {
    let mut kc = Kubeconfig::read_from(&harness::cluster().kubeconfig).expect("kubeconfig");
    let good = kc.current_context.clone().expect("current context");
    let base_cluster = kc.clusters.first().cloned().expect("a cluster");
    let base_context = kc
        .contexts
        .iter()
        .find(|c| c.name == good)
        .cloned()
        .expect("context");
    for (name, server) in extra {
        let mut cluster = base_cluster.clone();
        cluster.name = (*name).into();
        if let Some(c) = cluster.cluster.as_mut() {
            c.server = Some(server.clone());
        }
        let mut context = base_context.clone();
        context.name = (*name).into();
        if let Some(c) = context.context.as_mut() {
            c.cluster = (*name).into();
        }
        kc.clusters.push(cluster);
        kc.contexts.push(context);
    }
    std::fs::create_dir_all(dir).expect("mkdir");
    let path = dir.join(format!("kubeconfig-contexts-{}", std::process::id()));
    std::fs::write(&path, yaml_serde::to_string(&kc).expect("yaml")).expect("write kubeconfig");
    (path, good)
}

/// A server that accepts connections and never answers (a hung apiserver
/// or a slow exec plugin look the same to the console).
async fn silent_server() -> (u16, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            held.push(sock);
        }
    });
    (port, task)
}

/// `:ctx` to a context that does not answer: while it is tried the console
/// stays usable (the connection runs off the UI task); when it fails the
/// console says why and stays on the old context, still connected.
#[tokio::test]
async fn a_failed_ctx_switch_leaves_the_console_on_the_old_context() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let (port, silent) = silent_server().await;
    let (kubeconfig, good) = tokio::task::spawn_blocking(move || {
        kubeconfig_with_contexts(
            &dir,
            &[
                // Port 1 on loopback: refused at once.
                ("broken", "https://127.0.0.1:1".to_string()),
                ("hanging", format!("https://127.0.0.1:{port}")),
            ],
        )
    })
    .await
    .expect("kubeconfig");
    // The connection check itself, without a terminal.
    let opts = |context: &str| ConnectOptions {
        kubeconfig: Some(kubeconfig.clone()),
        context: Some(context.to_string()),
    };
    match connect_checked(&opts("broken")).await {
        Err(ConnectError::Unreachable { context, .. }) => assert_eq!(context, "broken"),
        Err(e) => panic!("broken context: unexpected error {e}"),
        Ok(_) => panic!("a context on port 1 answered"),
    }
    assert!(connect_checked(&opts(&good)).await.is_ok());

    let good2 = good.clone();
    let (pane, flags) = in_tmux_with("ctx", &[], &[], Some(kubeconfig.clone()), move |socket| {
        let t = Duration::from_secs(60);
        let send = |keys: &str| {
            for k in keys.chars() {
                tmux(socket, &["send-keys", "-t", "berth", "-l", &k.to_string()]);
            }
            tmux(socket, &["send-keys", "-t", "berth", "Enter"]);
        };
        wait_pane(socket, "the Runtimes view, connected", t, |p| {
            p.contains("Runtimes [") && p.contains("connected")
        });
        // A context that hangs: keys still work while it is tried.
        send(":ctx hanging");
        wait_pane(socket, "the switch in flight", t, |p| {
            p.contains("switching to hanging")
        });
        tmux(socket, &["send-keys", "-t", "berth", "2"]);
        let p = wait_pane(socket, "the Grants view during the switch", t, |p| {
            p.contains("Grants [")
        });
        assert!(
            p.contains("switching to hanging") || p.contains("cannot switch to hanging"),
            "{p}"
        );
        let p = wait_pane(socket, "the hung switch given up", t, |p| {
            p.contains("cannot switch to hanging")
        });
        assert!(p.contains(&format!("ctx {good2}")), "{p}");
        tmux(socket, &["send-keys", "-t", "berth", "1"]);
        // A context that refuses.
        send(":ctx broken");
        let p = wait_pane(socket, "the failed switch explained", t, |p| {
            p.contains("cannot switch to broken")
        });
        assert!(p.contains(&format!("still on {good2}")), "{p}");
        assert!(p.contains(&format!("ctx {good2}")), "{p}");
        assert!(p.contains("connected") && !p.contains("switching"), "{p}");
        // Still usable on the old context.
        tmux(socket, &["send-keys", "-t", "berth", "2"]);
        wait_pane(socket, "the Grants view", t, |p| p.contains("Grants ["));
        tmux(socket, &["send-keys", "-t", "berth", "q"]);
    })
    .await;
    silent.abort();
    assert!(pane.contains("BERTH-EXIT=0"), "{pane}");
    assert_restored(&pane, &flags);
}

/// A kubeconfig whose extra context `plugged` authenticates through an exec
/// credential plugin that asks for a password on the terminal once, then
/// hands out the test cluster's admin certificate.
fn kubeconfig_with_a_prompting_plugin(dir: &std::path::Path) -> PathBuf {
    let cluster = harness::cluster().kubeconfig.clone();
    let mut kc: yaml_serde::Value =
        yaml_serde::from_str(&std::fs::read_to_string(&cluster).expect("read kubeconfig"))
            .expect("kubeconfig yaml");
    let admin = &kc["users"][0]["user"];
    let read = |key: &str| {
        let path = admin[key]
            .as_str()
            .unwrap_or_else(|| panic!("{key} is a path"));
        std::fs::read_to_string(path).expect("read pki")
    };
    let cred = json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"clientCertificateData": read("client-certificate"), "clientKeyData": read("client-key")},
    });
    let dir = dir.join(format!("plugin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("cred.json"), cred.to_string()).expect("cred");
    let _ = std::fs::remove_file(dir.join("answered"));
    let script = dir.join("plugin.sh");
    // kube runs the plugin more than once while building a client; like
    // real plugins it asks once and caches. It prompts on /dev/tty (the
    // test redirects berth's stderr to a file).
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ ! -f '{d}/answered' ]; then\n  printf 'berth-it password: ' >/dev/tty\n  read pw\n  [ \"$pw\" = s3cret ] || {{ echo 'wrong password' >&2; exit 1; }}\n  touch '{d}/answered'\nfi\ncat '{d}/cred.json'\n",
            d = dir.display()
        ),
    )
    .expect("script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let cluster_name = kc["contexts"][0]["context"]["cluster"].clone();
    let user: yaml_serde::Value = yaml_serde::to_value(json!({
        "name": "plugged-user",
        "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": script.display().to_string(),
            "interactiveMode": "IfAvailable",
        }},
    }))
    .expect("user");
    let context: yaml_serde::Value = yaml_serde::to_value(json!({
        "name": "plugged",
        "context": {"cluster": cluster_name, "user": "plugged-user"},
    }))
    .expect("context");
    if let Some(users) = kc["users"].as_sequence_mut() {
        users.push(user);
    }
    if let Some(contexts) = kc["contexts"].as_sequence_mut() {
        contexts.push(context);
    }
    let path = dir.join("kubeconfig");
    std::fs::write(&path, yaml_serde::to_string(&kc).expect("yaml")).expect("write kubeconfig");
    path
}

/// `:ctx` to a context whose credential plugin prompts: the TUI steps
/// aside, the plugin reads its answer from the terminal, the TUI comes back
/// on the new context.
#[tokio::test]
async fn ctx_switch_suspends_the_tui_for_a_prompting_credential_plugin() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let kubeconfig = tokio::task::spawn_blocking(move || kubeconfig_with_a_prompting_plugin(&dir))
        .await
        .expect("kubeconfig");
    let (pane, flags) = in_tmux_with("plugin", &[], &[], Some(kubeconfig), |socket| {
        let t = Duration::from_secs(60);
        wait_pane(socket, "the Runtimes view, connected", t, |p| {
            p.contains("Runtimes [") && p.contains("connected")
        });
        for k in ":ctx plugged".chars() {
            tmux(socket, &["send-keys", "-t", "berth", "-l", &k.to_string()]);
        }
        tmux(socket, &["send-keys", "-t", "berth", "Enter"]);
        let p = wait_pane(
            socket,
            "the plugin's prompt on the plain terminal",
            t,
            |p| p.contains("berth-it password:"),
        );
        assert!(p.contains("its credential plugin may ask for input"), "{p}");
        assert!(!p.contains("Runtimes ["), "the TUI is still drawn: {p}");
        tmux(socket, &["send-keys", "-t", "berth", "-l", "s3cret"]);
        tmux(socket, &["send-keys", "-t", "berth", "Enter"]);
        let p = wait_pane(socket, "the TUI back on the new context", t, |p| {
            p.contains("ctx plugged") && p.contains("connected") && p.contains("Runtimes [")
        });
        assert!(!p.contains("berth-it password"), "{p}");
        tmux(socket, &["send-keys", "-t", "berth", "q"]);
    })
    .await;
    assert!(pane.contains("BERTH-EXIT=0"), "{pane}");
    assert_restored(&pane, &flags);
}

/// `:ns` lists namespaces from the cluster's Namespace list.
#[tokio::test]
async fn namespace_picker_lists_the_clusters_namespaces() {
    let ns = TestNamespace::new("console-ns").await;
    let mut live = Live::start(
        ns.client.clone(),
        Scope::Namespace("default".into()),
        ("default".into(), "none".into()),
        &[Kind::Namespace],
    );
    live.until("the test namespace and kube-system listed", WAIT, |app| {
        let t = app.table(ListView::Namespaces);
        let names: Vec<String> = (0..t.len()).map(|p| t.cell(p, 0)).collect();
        (names.contains(&ns.name) && names.iter().any(|n| n == "kube-system")).then_some(())
    })
    .await;
}

/// An error printed at the top level carries no escape sequence, even when
/// its text came from outside (here: the context name is echoed back).
#[tokio::test]
async fn top_level_errors_are_printed_sanitized() {
    let (ok, _, err) = berth(&[
        "--context",
        "evil\u{1b}]0;pwned\u{7}\u{1b}[2J",
        "get",
        "runtimes",
    ])
    .await;
    assert!(!ok);
    assert!(err.contains("evil"), "{err}");
    let raw = err.replace("\u{1b}[0m", "");
    // color-eyre's own styling aside, no cluster/user escape survives.
    assert!(
        !raw.contains("\u{1b}]") && !raw.contains('\u{7}') && !raw.contains("\u{1b}[2J"),
        "{err:?}"
    );
}

#[tokio::test]
async fn berth_binary_panic_restores_the_terminal() {
    let (pane, flags) = in_tmux("panic", &[(berth_console::run::PANIC_ENV, "1")], |_| {}).await;
    assert!(pane.contains("BERTH-EXIT=101"), "{pane}");
    assert_restored(&pane, &flags);
}

#[tokio::test]
async fn console_without_rights_says_so_instead_of_reconnecting() {
    let client = harness::restricted_client().await;
    let mut live = Live::start(
        client,
        Scope::Namespace("default".into()),
        ("default".into(), "none".into()),
        &[Kind::Pod, Kind::Node],
    );
    live.until("both watches denied", WAIT, |app| {
        (app.clusters[0].data.denied().len() == 2 && app.clusters[0].data.connection().is_none())
            .then_some(())
    })
    .await;
    let (text, _) = berth_console::views::statusbar::connection_text(&live.app);
    assert_eq!(text, "connected");
}

/// Packaging: installed as `kubectl-berth` on the PATH, the console runs as
/// `kubectl berth`; completions and the man page come from the same clap
/// definition; `--version` answers.
#[tokio::test]
async fn kubectl_plugin_completions_and_man_page() {
    let bin = tokio::task::spawn_blocking(berth_binary)
        .await
        .expect("build");
    let log_dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let kubectl = berth_tests::localcluster::binaries::Binaries::resolve(log_dir)
        .expect("control plane binaries")
        .path("kubectl")
        .expect("kubectl")
        .to_path_buf();
    let plugin_dir = log_dir.join(format!("kubectl-plugins-{}", std::process::id()));
    std::fs::create_dir_all(&plugin_dir).expect("plugin dir");
    std::fs::copy(&bin, plugin_dir.join("kubectl-berth")).expect("install kubectl-berth");
    let path = format!(
        "{}:{}",
        plugin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(&kubectl)
        .args(["berth", "--version"])
        .env("PATH", &path)
        .output()
        .expect("kubectl berth --version");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `berth 0.1.0 (commit …)`: tests/it/version.rs checks the commit.
    let version = String::from_utf8_lossy(&out.stdout);
    assert!(
        version
            .trim()
            .starts_with(&format!("berth {}", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );

    for (args, needle) in [
        (&["completions", "bash"][..], "_berth()"),
        (&["completions", "zsh"][..], "#compdef berth"),
        (&["man"][..], ".TH berth 1"),
    ] {
        let out = Command::new(&bin).args(args).output().expect("run berth");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains(needle),
            "berth {args:?}: {text:.200}"
        );
        // The generated docs know every subcommand.
        if args[0] != "man" {
            for sub in ["get", "retire", "prune-revisions"] {
                assert!(text.contains(sub), "berth {args:?} lacks {sub}");
            }
        }
    }
}
