//! Which watches the screens ask for, stopping them after the grace period,
//! and the store staying consistent when scoped and whole-kind watches of
//! one kind overlap.

use std::collections::BTreeMap;

use berth_shared::render::labels;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Event, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::Timestamp;
use kube::api::ObjectMeta;

use super::watches::GRACE_SECONDS;
use super::*;
use crate::fixtures;
use crate::rows;
use crate::store::ANALYSIS_KINDS;

fn later(app: &App, secs: i64) -> Timestamp {
    Timestamp::from_second(app.now.as_second() + secs).unwrap_or(app.now)
}

fn tick(app: &mut App, secs: i64) -> Vec<Effect> {
    let t = later(app, secs);
    update(app, Msg::Tick(t))
}

fn kinds_of(eff: &[Effect]) -> Vec<WatchKey> {
    match eff {
        [Effect::Watch(_, k)] => k.clone(),
        other => panic!("expected one Watch effect, got {other:?}"),
    }
}

fn pod(ns: &str, name: &str) -> Object {
    Object::from(Pod {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn watched(app: &mut App, key: &WatchKey, ev: WatchEvent) {
    let g = crate::fixtures::origin(app);
    update(app, Msg::Watched(g, key.clone(), ev));
}

fn list(app: &mut App, key: &WatchKey, objs: &[Object]) {
    watched(app, key, WatchEvent::Init);
    for o in objs {
        watched(app, key, WatchEvent::InitApply(o.clone()));
    }
    watched(app, key, WatchEvent::InitDone);
}

fn pod_names(app: &App) -> Vec<String> {
    app.clusters[0]
        .data
        .store
        .pods
        .keys()
        .map(|k| k.1.clone())
        .collect()
}

#[test]
fn an_unneeded_kind_stops_after_the_grace_period_and_its_data_goes() {
    let mut app = fixtures::app();
    let eff = app.open(Screen::List(ListView::Handlers));
    assert!(kinds_of(&eff).contains(&WatchKey::all(Kind::Pod)));
    assert!(app.clusters[0].data.loaded(ListView::Handlers));
    // Unneeded from now on.
    app.open(Screen::List(ListView::Runtimes));
    // Within the grace period: still watched, data kept.
    assert!(tick(&mut app, 1).is_empty());
    assert!(tick(&mut app, GRACE_SECONDS - 2).is_empty());
    assert!(app.clusters[0].data.store.count(Kind::Pod) > 0);
    // After it: stopped, its data dropped, not synced.
    let running = kinds_of(&tick(&mut app, 1));
    assert!(!running.contains(&WatchKey::all(Kind::Pod)));
    assert!(running.contains(&WatchKey::all(Kind::Runtime)));
    assert_eq!(app.clusters[0].data.store.count(Kind::Pod), 0);
    assert_eq!(app.clusters[0].data.store.count(Kind::ReplicaSet), 0);
    assert!(!app.clusters[0].data.loaded(ListView::Handlers));
    // Its rows went too: coming back shows loading, not old rows.
    assert!(app.table(ListView::Handlers).total() == 0);
    assert!(app.clusters[0].rows.built[ListView::Handlers.index()].is_none());
    // The always-live views keep theirs.
    assert!(app.clusters[0].data.store.count(Kind::Runtime) > 0);
    assert!(app.clusters[0].data.loaded(ListView::Runtimes));
    // Late events of the stopped watch are ignored.
    watched(
        &mut app,
        &WatchKey::all(Kind::Pod),
        WatchEvent::Apply(pod("x", "late")),
    );
    assert_eq!(app.clusters[0].data.store.count(Kind::Pod), 0);
    // Back: started again, loading until its list completes.
    let eff = app.open(Screen::List(ListView::Handlers));
    assert!(kinds_of(&eff).contains(&WatchKey::all(Kind::Pod)));
    assert!(!app.clusters[0].data.loaded(ListView::Handlers));
    for kind in ANALYSIS_KINDS {
        list(&mut app, &WatchKey::all(*kind), &[pod("x", "fresh")]);
    }
    assert!(app.clusters[0].data.loaded(ListView::Handlers));
    assert_eq!(pod_names(&app), ["fresh"]);
}

#[test]
fn a_view_is_built_only_once_every_kind_it_needs_has_listed() {
    let mut app = App::new("kwok-test", Scope::All, fixtures::now());
    app.open(Screen::List(ListView::Handlers));
    let objs = fixtures::objects();
    let (last, first) = ANALYSIS_KINDS.split_last().expect("kinds");
    for kind in first {
        let of: Vec<Object> = objs.iter().filter(|o| o.kind() == *kind).cloned().collect();
        list(&mut app, &WatchKey::all(*kind), &of);
        app.refresh();
        assert!(
            app.clusters[0].rows.built[ListView::Handlers.index()].is_none(),
            "{kind:?}"
        );
    }
    list(&mut app, &WatchKey::all(*last), &[]);
    assert_eq!(app.current_loaded(), Some(true));
    app.refresh();
    assert!(app.clusters[0].rows.built[ListView::Handlers.index()].is_some());
    assert!(app.table(ListView::Handlers).total() != 0);
}

#[test]
fn pinned_kinds_outlive_the_grace_period() {
    let mut app = fixtures::app();
    app.open(Screen::List(ListView::Grants));
    app.open(Screen::List(ListView::Runtimes));
    tick(&mut app, 1);
    tick(&mut app, 10 * GRACE_SECONDS);
    let running = app.clusters[0].data.watch_set.running();
    for k in [Kind::Runtime, Kind::RuntimeGrant, Kind::Lease] {
        assert!(running.contains(&WatchKey::all(k)), "{k:?}");
    }
    assert!(app.clusters[0].data.loaded(ListView::Grants));
}

#[test]
fn rollout_and_details_watch_only_their_object() {
    let app = fixtures::app();
    let key: ObjKey = ("demo".into(), "web".into());
    let w = Screen::Rollout(crate::fixtures::cluster(), key.clone()).watches(&Scope::All);
    let sel = "app.kubernetes.io/component=server,berth.dev/runtime=web";
    assert_eq!(
        w,
        vec![
            WatchKey::all(Kind::Runtime),
            WatchKey::select(Kind::Deployment, "demo", sel, ""),
            WatchKey::select(Kind::ReplicaSet, "demo", sel, ""),
            WatchKey::select(Kind::Pod, "demo", sel, ""),
            WatchKey::select(Kind::Event, "demo", "", ""),
        ]
    );
    // Watching only that namespace anyway: the whole Event watch.
    let w =
        Screen::Rollout(crate::fixtures::cluster(), key).watches(&Scope::Namespace("demo".into()));
    assert!(w.contains(&WatchKey::all(Kind::Event)));

    let pod_key: ObjKey = ("demo".into(), "web-rev2-0".into());
    let w = Screen::Details(crate::fixtures::cluster(), Kind::Pod, pod_key.clone())
        .watches(&Scope::All);
    assert_eq!(
        w,
        vec![
            WatchKey::select(Kind::Pod, "demo", "", "metadata.name=web-rev2-0"),
            WatchKey::select(
                Kind::Event,
                "demo",
                "",
                "involvedObject.kind=Pod,involvedObject.name=web-rev2-0"
            ),
        ]
    );
    // Over the Handlers list, which watches every Pod: that watch serves.
    let mut over = App::new("kwok-test", Scope::All, app.now);
    over.ui.screens = vec![
        Screen::List(ListView::Handlers),
        Screen::Details(crate::fixtures::cluster(), Kind::Pod, pod_key),
    ];
    let needed = over.needed_watches(0);
    assert!(needed.contains(&WatchKey::all(Kind::Pod)));
    assert!(!needed.iter().any(|k| k.kind == Kind::Pod && !k.is_all()));
    assert!(needed.iter().any(|k| k.kind == Kind::Event && !k.is_all()));
}

#[test]
fn overlapping_watches_of_a_kind_keep_the_store_consistent() {
    let mut app = App::new("kwok-test", Scope::All, fixtures::now());
    let all = WatchKey::all(Kind::Pod);
    let s1 = WatchKey::select(Kind::Pod, "a", "x=1", "");
    let s2 = WatchKey::select(Kind::Pod, "a", "", "metadata.name=p1");
    // The scoped watches list first.
    list(&mut app, &s1, &[pod("a", "p1"), pod("a", "p2")]);
    list(&mut app, &s2, &[pod("a", "p1")]);
    assert_eq!(pod_names(&app), ["p1", "p2"]);
    // s1 relists without p1: s2 still holds it.
    list(&mut app, &s1, &[pod("a", "p2")]);
    assert_eq!(pod_names(&app), ["p1", "p2"]);
    // p2 left s1's selector: nobody holds it.
    watched(&mut app, &s1, WatchEvent::Delete(pod("a", "p2")));
    assert_eq!(pod_names(&app), ["p1"]);
    // The whole kind lists: what the scoped watches hold stays.
    list(&mut app, &all, &[pod("a", "p3")]);
    assert_eq!(pod_names(&app), ["p1", "p3"]);
    // While the kind is watched whole, a scoped delete leaves it to that
    // watch.
    watched(&mut app, &s1, WatchEvent::Apply(pod("a", "p3")));
    watched(&mut app, &s1, WatchEvent::Delete(pod("a", "p3")));
    assert_eq!(pod_names(&app), ["p1", "p3"]);
    // The whole watch's delete is authoritative.
    watched(&mut app, &all, WatchEvent::Delete(pod("a", "p1")));
    assert_eq!(pod_names(&app), ["p3"]);
    watched(&mut app, &s2, WatchEvent::Apply(pod("a", "p1")));
    // Stopping the whole watch keeps only what scoped watches hold.
    app.drop_watch(0, &all);
    assert_eq!(pod_names(&app), ["p1"]);
    // Stopping the last scoped holder drops it.
    app.drop_watch(0, &s2);
    assert_eq!(pod_names(&app), Vec::<String>::new());
    assert!(app.clusters[0].data.store.links == crate::store::Store::default().links);
}

/// A world of two Runtimes in two namespaces as the agent renders them:
/// server pods labelled with its selector, Job pods too, and events.
fn rollout_world() -> Vec<Object> {
    let mut out = Vec::new();
    for ns in ["a", "b"] {
        for rt in ["web", "api"] {
            let mut sel: BTreeMap<String, String> = labels::selector(rt);
            out.push(Object::from(berth_shared::api::Runtime {
                metadata: ObjectMeta {
                    namespace: Some(ns.into()),
                    name: Some(rt.into()),
                    ..Default::default()
                },
                spec: Default::default(),
                status: None,
            }));
            let meta = |name: &str, owner_kind: &str, owner: &str, l: &BTreeMap<String, String>| {
                ObjectMeta {
                    namespace: Some(ns.into()),
                    name: Some(name.into()),
                    labels: Some(l.clone()),
                    owner_references: Some(vec![OwnerReference {
                        kind: owner_kind.into(),
                        name: owner.into(),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }
            };
            out.push(Object::from(Deployment {
                metadata: meta(rt, "Runtime", rt, &sel),
                ..Default::default()
            }));
            for rev in ["1", "2"] {
                let rs = format!("{rt}-{rev}");
                sel.insert("pod-template-hash".into(), rev.into());
                out.push(Object::from(ReplicaSet {
                    metadata: meta(&rs, "Deployment", rt, &sel),
                    ..Default::default()
                }));
                for p in 0..2 {
                    let name = format!("{rs}-{p}");
                    out.push(Object::from(Pod {
                        metadata: meta(&name, "ReplicaSet", &rs, &sel),
                        ..Default::default()
                    }));
                    out.push(event(ns, "Pod", &name));
                }
                out.push(event(ns, "ReplicaSet", &rs));
            }
            // A Job pod of the Runtime: not the server selector's.
            let mut job = labels::selector(rt);
            job.insert(
                "app.kubernetes.io/component".into(),
                labels::Component::Job.as_str().into(),
            );
            out.push(Object::from(Pod {
                metadata: meta(&format!("{rt}-job"), "Job", "j", &job),
                ..Default::default()
            }));
            out.push(event(ns, "Runtime", rt));
            out.push(event(ns, "Deployment", rt));
        }
    }
    out
}

fn event(ns: &str, kind: &str, name: &str) -> Object {
    Object::from(Event {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(format!("{name}.{kind}")),
            ..Default::default()
        },
        involved_object: ObjectReference {
            kind: Some(kind.into()),
            name: Some(name.into()),
            namespace: Some(ns.into()),
            ..Default::default()
        },
        message: Some(format!("about {kind}/{name}")),
        ..Default::default()
    })
}

/// What the apiserver sends a watch: equality label selectors and the
/// field selectors the screens use.
fn selects(key: &WatchKey, o: &Object) -> bool {
    let Filter::Select {
        namespace,
        labels,
        fields,
    } = &key.filter
    else {
        return true;
    };
    let (ns, name) = o.key();
    if !namespace.is_empty() && ns != *namespace {
        return false;
    }
    let (obj_labels, involved) = match o {
        Object::Pod(p) => (p.metadata.labels.clone(), None),
        Object::ReplicaSet(r) => (r.metadata.labels.clone(), None),
        Object::Deployment(d) => (d.metadata.labels.clone(), None),
        Object::Event(e) => (None, Some(e.involved_object.clone())),
        _ => (None, None),
    };
    let obj_labels = obj_labels.unwrap_or_default();
    let labels_ok = labels.split(',').filter(|s| !s.is_empty()).all(|kv| {
        kv.split_once('=')
            .is_some_and(|(k, v)| obj_labels.get(k).map(String::as_str) == Some(v))
    });
    let fields_ok = fields.split(',').filter(|s| !s.is_empty()).all(|kv| {
        let Some((k, v)) = kv.split_once('=') else {
            return false;
        };
        let io = involved.as_ref();
        match k {
            "metadata.name" => name == v,
            "involvedObject.kind" => io.and_then(|i| i.kind.as_deref()) == Some(v),
            "involvedObject.name" => io.and_then(|i| i.name.as_deref()) == Some(v),
            _ => false,
        }
    });
    labels_ok && fields_ok
}

/// The store a set of watches would fill: every object some watch of its
/// kind selects.
fn scoped_store(objs: &[Object], keys: &[WatchKey]) -> Store {
    let mut store = Store::default();
    for o in objs {
        if keys.iter().any(|k| k.kind == o.kind() && selects(k, o)) {
            store.apply(o.clone());
        }
    }
    store
}

#[test]
fn rollout_and_details_rows_are_the_same_from_a_scoped_store() {
    let objs = rollout_world();
    let mut full = Store::default();
    for o in &objs {
        full.apply(o.clone());
    }
    let now = fixtures::now();
    for ns in ["a", "b"] {
        for rt in ["web", "api"] {
            let key: ObjKey = (ns.into(), rt.into());
            let keys =
                Screen::Rollout(crate::fixtures::cluster(), key.clone()).watches(&Scope::All);
            let scoped = scoped_store(&objs, &keys);
            assert!(scoped.count(Kind::Pod) < full.count(Kind::Pod));
            let want = rows::rollout(&full, &key, now).expect("rollout");
            assert_eq!(rows::rollout(&scoped, &key, now), Some(want.clone()));
            assert_eq!(want.replica_sets.len(), 2);
            assert!(want.events.len() >= 6, "{:?}", want.events);

            let pod_key: ObjKey = (ns.into(), format!("{rt}-2-1"));
            let keys = Screen::Details(crate::fixtures::cluster(), Kind::Pod, pod_key.clone())
                .watches(&Scope::All);
            let scoped = scoped_store(&objs, &keys);
            assert_eq!(scoped.count(Kind::Pod), 1);
            assert_eq!(scoped.count(Kind::Event), 1);
            let want = rows::events_of(&full, Kind::Pod, &pod_key, now);
            assert_eq!(want.len(), 1);
            assert_eq!(rows::events_of(&scoped, Kind::Pod, &pod_key, now), want);
        }
    }
}

/// Feeds every running watch that has not listed yet the objects of
/// `objs` it selects, as the apiserver would.
fn list_running(app: &mut App, objs: &[Object]) {
    for key in app.clusters[0].data.watch_set.running() {
        if app.clusters[0].data.synced.contains(&key) {
            continue;
        }
        let of: Vec<Object> = objs
            .iter()
            .filter(|o| o.kind() == key.kind && selects(&key, o))
            .cloned()
            .collect();
        list(app, &key, &of);
    }
}

#[test]
fn leaving_a_rollout_stops_its_scoped_watches_after_the_grace_period() {
    let objs = rollout_world();
    let key: ObjKey = ("a".into(), "web".into());
    let rollout = Screen::Rollout(crate::fixtures::cluster(), key.clone());
    let scoped: Vec<WatchKey> = rollout
        .watches(&Scope::All)
        .into_iter()
        .filter(|k| !k.is_all())
        .collect();
    let mut app = App::new("kwok-test", Scope::All, fixtures::now());
    app.open(Screen::List(ListView::Runtimes));
    list_running(&mut app, &objs);
    let running = kinds_of(&app.open(rollout.clone()));
    assert!(scoped.iter().all(|k| running.contains(k)), "{running:?}");
    assert!(!running.iter().any(|k| k.is_all() && k.kind == Kind::Pod));
    // Not listed yet: the screen says loading, not "no ReplicaSets".
    assert!(!app.screen_listed(&rollout));
    list_running(&mut app, &objs);
    assert!(app.screen_listed(&rollout));
    let want = rows::rollout(&app.clusters[0].data.store, &key, app.now).expect("rollout");
    assert_eq!(want.replica_sets.len(), 2);
    // Only that Runtime's server pods (2 ReplicaSets × 2), not b's, not
    // api's, not its Job pod.
    assert_eq!(app.clusters[0].data.store.count(Kind::Pod), 4);

    // Back to the list, and to the Rollout within the grace period: the
    // watches kept running, nothing relists, the rows are whole at once.
    app.open(Screen::List(ListView::Runtimes));
    assert!(tick(&mut app, 1).is_empty());
    assert!(tick(&mut app, GRACE_SECONDS - 2).is_empty());
    let synced_before = app.clusters[0].data.synced.clone();
    let running = kinds_of(&app.open(rollout.clone()));
    assert!(scoped.iter().all(|k| running.contains(k)));
    assert_eq!(
        app.clusters[0].data.synced, synced_before,
        "nothing restarted"
    );
    assert!(app.screen_listed(&rollout));
    assert_eq!(
        rows::rollout(&app.clusters[0].data.store, &key, app.now),
        Some(want.clone())
    );

    // Leave again; the grace counts from this leaving, not the first.
    app.open(Screen::List(ListView::Runtimes));
    assert!(tick(&mut app, 1).is_empty());
    assert!(tick(&mut app, GRACE_SECONDS - 2).is_empty());
    assert_eq!(app.clusters[0].data.store.count(Kind::Pod), 4);
    let running = kinds_of(&tick(&mut app, 1));
    assert!(!running.iter().any(|k| scoped.contains(k)), "{running:?}");
    assert!(running.contains(&WatchKey::all(Kind::Runtime)));
    // Their objects are freed; the Runtimes (pinned) stay.
    for kind in [Kind::Deployment, Kind::ReplicaSet, Kind::Pod, Kind::Event] {
        assert_eq!(app.clusters[0].data.store.count(kind), 0, "{kind:?}");
    }
    assert!(app.clusters[0].data.store.count(Kind::Runtime) > 0);
    assert!(app.clusters[0].data.held.is_empty());

    // Back after the grace period: started again, loading until they
    // relist, then the same rows.
    let running = kinds_of(&app.open(rollout.clone()));
    assert!(scoped.iter().all(|k| running.contains(k)));
    assert!(!app.screen_listed(&rollout));
    list_running(&mut app, &objs);
    assert!(app.screen_listed(&rollout));
    assert_eq!(
        rows::rollout(&app.clusters[0].data.store, &key, app.now),
        Some(want)
    );
}

#[test]
fn a_scoped_watch_counts_as_listed_through_the_whole_kind_that_replaces_it() {
    let objs = rollout_world();
    let key: ObjKey = ("a".into(), "web".into());
    let rollout = Screen::Rollout(crate::fixtures::cluster(), key);
    let mut app = App::new("kwok-test", Scope::All, fixtures::now());
    // Handlers watches every Pod, ReplicaSet and Deployment.
    app.open(Screen::List(ListView::Handlers));
    list_running(&mut app, &objs);
    let running = kinds_of(&app.open(rollout.clone()));
    assert!(!running.iter().any(|k| k.kind == Kind::Pod && !k.is_all()));
    // Only the namespace's Events remain to list.
    assert!(!app.screen_listed(&rollout));
    list_running(&mut app, &objs);
    assert!(app.screen_listed(&rollout));
}

#[test]
fn the_frame_that_ends_the_last_sync_completes_the_screen() {
    let mut app = App::new("kwok-test", Scope::All, fixtures::now());
    let keys = kinds_of(&app.open(Screen::List(ListView::Grants)));
    let own = WatchKey::all(Kind::RuntimeGrant);
    let rest: Vec<WatchKey> = keys.iter().filter(|k| **k != own).cloned().collect();
    assert!(
        !rest.is_empty(),
        "Grants watches more than its own kind: {keys:?}"
    );
    // Every watch started: each says so before its list comes in.
    for key in &keys {
        watched(&mut app, key, WatchEvent::Init);
    }
    let before = app.completion();
    list(&mut app, &own, &[]);
    assert!(
        before.completed_by(app.completion()),
        "the view's own list completes it"
    );
    // Each other watch syncing: only the last one's list completes the
    // screen (the status bar's "syncing …" goes with it).
    for (i, key) in rest.iter().enumerate() {
        let before = app.completion();
        list(&mut app, key, &[]);
        assert_eq!(
            before.completed_by(app.completion()),
            i + 1 == rest.len(),
            "{key:?}"
        );
    }
    assert_eq!(app.clusters[0].data.connection().map(|(k, _)| k), None);
    // Nothing changed: nothing completed.
    assert!(!app.completion().completed_by(app.completion()));
}
