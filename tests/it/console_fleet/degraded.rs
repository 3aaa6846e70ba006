//! b's apiserver stopped and started again under a console's model on
//! both clusters: b's rows are kept and dimmed with the age of its data,
//! a stays live, and after b's restart nothing of a was listed again.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use berth_console::model::{
    App, ClusterId, Effect, Kind, ListView, Msg, Origin, Scope, WatchEvent, update,
};
use berth_console::run::perform::{Effects, Outbox};
use berth_console::watch::{ConnectOptions, connect};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use tokio::sync::mpsc::{Receiver, UnboundedReceiver, channel, unbounded_channel};

use super::{SERIAL, WAIT, World, cluster_b, world};
use crate::agent_support::create_runtime;

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

/// A watch of the Runtimes view is failing in `cluster` (what dims its
/// rows).
fn stale(app: &App, cluster: &str) -> bool {
    app.clusters
        .iter()
        .find(|c| c.id.context() == cluster)
        .is_some_and(|c| c.data.reconnecting(ListView::Runtimes))
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
    // Each of b's watches notices on its own (the grants' watch of the
    // header may fail before the Runtimes view's do): the rows are dimmed
    // once a watch they come from is failing.
    live.until(
        "b unreachable, its Runtimes' watches failing, its rows kept",
        |app| {
            failing(app, "fleet-b")
                && stale(app, "fleet-b")
                && !failing(app, "fleet-a")
                && !stale(app, "fleet-a")
                && both(app)
        },
    )
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
