//! The console's Rollout screen on the real control plane watches only its
//! Runtime's objects. The console runs with `-A` (every namespace), and a
//! second namespace holds a namesake Runtime whose Deployment, ReplicaSet
//! and Pods carry exactly the same labels, plus an Event; the Runtime's own
//! namespace holds a Pod without them. A watch that were cluster-wide (or
//! label-blind) would put those decoys into the console's store. Leaving
//! the screen stops those watches once the grace period has passed (the
//! model's clock, not a sleep) and frees their objects; coming back
//! relists (a Pod made meanwhile is there) and the screen says loading
//! until then.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use berth_console::model::{
    App, ClusterId, Effect, Kind, ListView, Msg, ObjKey, Scope, Screen, WatchKey, update, watches,
};
use berth_console::rows;
use berth_console::watch::{WatchStarts, Watchers};
use berth_shared::api::Runtime;
use berth_tests::harness::{self, TestNamespace};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::{Api, Resource};
use serde_json::json;
use tokio::sync::mpsc::{Receiver, channel};

use crate::agent_support::create_runtime;

const WAIT: Duration = Duration::from_secs(120);

/// The app and its watchers, driven like the console's run loop: every
/// `Effect::Watch` the model returns makes the watchers run exactly those.
struct Console {
    app: App,
    watchers: Watchers,
    rx: Receiver<Msg>,
}

impl Console {
    fn start(client: kube::Client) -> Console {
        let (tx, rx) = channel(1024);
        let lease: ObjKey = ("none".into(), "none".into());
        let mut app = App::new("test", Scope::All, Timestamp::now());
        app.session.agent_lease = lease.clone();
        let watchers = Watchers::new(
            client,
            WatchStarts::default(),
            Scope::All,
            lease,
            app.origin_of(0),
            tx,
        );
        Console { app, watchers, rx }
    }

    fn perform(&mut self, effects: Vec<Effect>) {
        for e in effects {
            if let Effect::Watch(_, keys) = e {
                self.watchers.sync(&keys);
            }
        }
    }

    fn open(&mut self, s: Screen) {
        let eff = self.app.open(s);
        self.perform(eff);
    }

    /// The model's clock moved `secs` on (what the run loop's ticks do).
    fn tick(&mut self, secs: i64) {
        let t = Timestamp::from_second(self.app.now.as_second() + secs).expect("time");
        let eff = update(&mut self.app, Msg::Tick(t));
        self.perform(eff);
    }

    /// Applies watch messages until `check` holds.
    async fn until(&mut self, what: &str, check: impl Fn(&App) -> bool) {
        let deadline = Instant::now() + WAIT;
        while !check(&self.app) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; watches: {:?}",
                self.app.clusters[0].data.watches
            );
            if let Ok(Some(m)) =
                tokio::time::timeout(Duration::from_millis(250), self.rx.recv()).await
            {
                // Watch messages only: the model's clock is the test's.
                update(&mut self.app, m);
                while let Ok(m) = self.rx.try_recv() {
                    update(&mut self.app, m);
                }
            }
        }
    }
}

/// A Runtime `web` with a Deployment it owns, labelled and selecting like
/// the agent's (the controller-manager makes its ReplicaSet and Pod).
async fn runtime_with_deployment(ns: &TestNamespace) {
    let rt = create_runtime(ns, "web", json!({})).await;
    let labels = berth_shared::render::labels::selector("web");
    let dep: Deployment = serde_json::from_value(json!({
        "metadata": {
            "name": "web",
            "labels": labels,
            "ownerReferences": [{
                "apiVersion": Runtime::api_version(&()),
                "kind": "Runtime",
                "name": "web",
                "uid": rt.metadata.uid.clone().expect("uid"),
            }],
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.invalid/berth/app:1"}]},
            },
        },
    }))
    .expect("deployment");
    Api::<Deployment>::namespaced(ns.client.clone(), &ns.name)
        .create(&PostParams::default(), &dep)
        .await
        .expect("create deployment");
}

async fn pod(ns: &TestNamespace, name: &str, labels: &BTreeMap<String, String>) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "registry.invalid/berth/app:1"}]},
    }))
    .expect("pod");
    Api::<Pod>::namespaced(ns.client.clone(), &ns.name)
        .create(&PostParams::default(), &pod)
        .await
        .expect("create pod");
}

async fn event(ns: &TestNamespace, name: &str, about: &str) {
    let ev: Event = serde_json::from_value(json!({
        "metadata": {"name": name},
        "involvedObject": {"kind": "Pod", "name": about, "namespace": ns.name},
        "reason": "Planted",
        "message": "a decoy",
        "type": "Normal",
    }))
    .expect("event");
    Api::<Event>::namespaced(ns.client.clone(), &ns.name)
        .create(&PostParams::default(), &ev)
        .await
        .expect("create event");
}

/// Names (namespace/name) of the store's objects of the rollout's kinds
/// outside `ns`, or in it without the server selector.
fn strays(app: &App, ns: &str) -> Vec<String> {
    let s = &app.clusters[0].data.store;
    let server = |l: &BTreeMap<String, String>| {
        let sel = berth_shared::render::labels::selector("web");
        sel.iter().all(|(k, v)| l.get(k) == Some(v))
    };
    let mut out = Vec::new();
    for ((n, name), p) in &s.pods {
        if n != ns || !server(&p.metadata.labels) {
            out.push(format!("Pod {n}/{name}"));
        }
    }
    for ((n, name), r) in &s.replicasets {
        if n != ns || !server(&r.metadata.labels) {
            out.push(format!("ReplicaSet {n}/{name}"));
        }
    }
    for (n, name) in s.deployments.keys() {
        if n != ns {
            out.push(format!("Deployment {n}/{name}"));
        }
    }
    for (n, name) in s.events.keys() {
        if n != ns {
            out.push(format!("Event {n}/{name}"));
        }
    }
    out
}

/// The rollout of `key` with its one ReplicaSet and that one's Pod.
fn whole_rollout(app: &App, key: &ObjKey) -> bool {
    app.screen_listed(&Screen::Rollout(ClusterId::new("test"), key.clone()))
        && rows::rollout(&app.clusters[0].data.store, key, app.now).is_some_and(|r| {
            r.replica_sets.len() == 1 && r.replica_sets.iter().all(|rs| rs.pods.len() == 1)
        })
}

#[tokio::test]
async fn rollout_watches_only_its_runtime_and_stops_after_the_grace_period() {
    let mine = TestNamespace::new("con-scope").await;
    harness::install_crds(&mine.client).await;
    let other = TestNamespace::new("con-scope-decoy").await;
    let server = berth_shared::render::labels::selector("web");
    // The decoys: a namesake Runtime elsewhere with the same labels on
    // everything, an Event there, and an unlabelled Pod next door.
    runtime_with_deployment(&other).await;
    pod(&other, "web-bare", &server).await;
    event(&other, "decoy.1", "web-bare").await;
    pod(
        &mine,
        "unrelated",
        &BTreeMap::from([("app".into(), "x".into())]),
    )
    .await;
    runtime_with_deployment(&mine).await;
    event(&mine, "mine.1", "web").await;

    let key: ObjKey = (mine.name.clone(), "web".into());
    let mut c = Console::start(mine.client.clone());
    c.open(Screen::List(ListView::Runtimes));
    c.open(Screen::Rollout(ClusterId::new("test"), key.clone()));
    let running = c.app.clusters[0].data.watch_set.running();
    for kind in [Kind::Deployment, Kind::ReplicaSet, Kind::Pod, Kind::Event] {
        assert!(
            !running.contains(&WatchKey::all(kind)),
            "{kind:?} watched cluster-wide: {running:?}"
        );
    }
    c.until("the rollout of web with its ReplicaSet and Pod", |app| {
        whole_rollout(app, &key)
    })
    .await;
    // The decoys' own objects exist (the comparison is not vacuous): the
    // controller-manager made the other namespace's ReplicaSet and Pod.
    let decoys = Api::<Pod>::namespaced(other.client.clone(), &other.name);
    harness::wait_for_value("the decoy Deployment's Pod", WAIT, || {
        let decoys = decoys.clone();
        async move {
            let n = decoys.list(&Default::default()).await.ok()?.items.len();
            (n >= 2).then_some(())
        }
    })
    .await;
    assert_eq!(strays(&c.app, &mine.name), Vec::<String>::new());
    assert!(
        c.app.clusters[0]
            .data
            .store
            .events
            .contains_key(&(mine.name.clone(), "mine.1".into()))
    );

    // Leave; within the grace period the watches keep running.
    c.open(Screen::List(ListView::Runtimes));
    c.tick(watches::GRACE_SECONDS - 1);
    assert_eq!(c.app.clusters[0].data.store.pods.len(), 1);
    // After it: stopped, their objects freed.
    c.tick(1);
    let running = c.app.clusters[0].data.watch_set.running();
    assert!(
        running
            .iter()
            .all(|k| k.is_all() && matches!(k.kind, Kind::Runtime | Kind::Lease)),
        "{running:?}"
    );
    assert!(c.app.clusters[0].data.store.pods.is_empty());
    assert!(c.app.clusters[0].data.store.replicasets.is_empty());
    assert!(c.app.clusters[0].data.store.events.is_empty());

    // A second server Pod made while nobody watched: only a relist sees it.
    pod(&mine, "web-extra", &server).await;
    c.open(Screen::Rollout(ClusterId::new("test"), key.clone()));
    assert!(
        !c.app
            .screen_listed(&Screen::Rollout(ClusterId::new("test"), key.clone()))
    );
    c.until("the rollout relisted with the new Pod", |app| {
        app.screen_listed(&Screen::Rollout(ClusterId::new("test"), key.clone()))
            && app.clusters[0]
                .data
                .store
                .pods
                .contains_key(&(mine.name.clone(), "web-extra".into()))
    })
    .await;
    c.until("the rollout whole again", |app| whole_rollout(app, &key))
        .await;
    assert_eq!(strays(&c.app, &mine.name), Vec::<String>::new());
    assert_eq!(c.app.clusters[0].data.store.pods.len(), 2);
}
