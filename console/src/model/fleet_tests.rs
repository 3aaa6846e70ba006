//! Fleet mode in the model (issue 56): two clusters holding objects of the
//! same namespaces, names and uids; every row, screen and retirement
//! keeps to the cluster it came from, and each cluster degrades alone.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::fixtures;
use crate::retire::plan::plan_runtime;
use crate::retire::{Review, Verdict};
use crate::rows::RowRef;

fn press(app: &mut App, code: KeyCode) -> Vec<Effect> {
    update(app, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn typed(app: &mut App, s: &str) -> Vec<Effect> {
    let mut all = Vec::new();
    for c in s.chars() {
        all.extend(press(app, KeyCode::Char(c)));
    }
    all
}

fn eu() -> ClusterId {
    ClusterId::new("prod-eu")
}

fn us() -> ClusterId {
    ClusterId::new("prod-us")
}

/// Filters the Runtimes view down to one row (`/TEXT`, Enter).
fn select(app: &mut App, filter: &str) {
    typed(app, "/");
    typed(app, filter);
    press(app, KeyCode::Enter);
    app.refresh();
    assert_eq!(app.table(ListView::Runtimes).len(), 1, "{filter}");
}

/// A review of `action` on `demo/worker` as the I/O side of `cluster`
/// would answer it.
fn reviewed(cluster: ClusterId, action: crate::retire::Action) -> Review {
    let rt = match fixtures::objects()
        .into_iter()
        .find(|o| o.key() == ("demo".to_string(), "worker".to_string()))
    {
        Some(Object::Runtime(rt)) => *rt,
        _ => unreachable!("the fixtures hold demo/worker"),
    };
    let plan = plan_runtime(&action, &rt, &Default::default(), "alice", "t").expect("plan");
    Review {
        cluster,
        plan,
        user: "alice".into(),
        verdict: Verdict::Accepted,
    }
}

/// Asks to delete the selected row (`D`) and answers the review as
/// prod-us's connection would: the review is ready to confirm.
fn delete_reviewed_by_prod_us(app: &mut App) {
    let eff = press(app, KeyCode::Char('D'));
    let Some(Effect::Review { id, .. }) = eff.first() else {
        panic!("{eff:?}")
    };
    update(
        app,
        Msg::Reviewed {
            id: *id,
            result: Box::new(Ok(reviewed(us(), crate::retire::Action::Delete))),
        },
    );
    assert!(matches!(app.ui.review, Some(ReviewState::Ready { .. })));
}

#[test]
fn merged_views_name_each_rows_cluster() {
    let app = fixtures::fleet();
    let t = app.table(ListView::Runtimes);
    assert!(app.fleet());
    assert_eq!(t.headers()[0], "CLUSTER");
    assert_eq!(t.total(), 6);
    for pos in 0..t.len() {
        let l = t.located_at(pos).expect("row");
        assert_eq!(
            t.cell(pos, 0),
            l.cluster.shown(),
            "the CLUSTER cell is the row's cluster"
        );
    }
    // The same object (same uid) in both: two rows, two identities.
    let ids: std::collections::BTreeSet<RowId> = (0..t.len()).filter_map(|p| t.id_at(p)).collect();
    assert_eq!(ids.len(), 6);
    // Every tab counts both clusters.
    assert_eq!(app.table(ListView::Grants).total(), 4);
}

#[test]
fn a_retirement_in_one_cluster_is_reviewed_and_confirmed_there_only() {
    let mut app = fixtures::fleet();
    select(&mut app, "cluster=prod-us worker");
    let eff = press(&mut app, KeyCode::Char('D'));
    let id = match eff.as_slice() {
        [
            Effect::Review {
                id,
                cluster,
                namespace,
                name,
                ..
            },
        ] => {
            assert_eq!(cluster, &us());
            assert_eq!((namespace.as_str(), name.as_str()), ("demo", "worker"));
            *id
        }
        other => panic!("{other:?}"),
    };
    // An answer from another cluster's connection is refused outright.
    update(
        &mut app,
        Msg::Reviewed {
            id,
            result: Box::new(Ok(reviewed(eu(), crate::retire::Action::Delete))),
        },
    );
    match &app.ui.review {
        Some(ReviewState::Failed { error, .. }) => {
            assert!(
                error.contains("from cluster prod-eu, not prod-us"),
                "{error}"
            )
        }
        other => panic!("{other:?}"),
    }

    // Again, answered by prod-us.
    press(&mut app, KeyCode::Esc);
    delete_reviewed_by_prod_us(&mut app);
    // The name alone, or the other cluster's, confirms nothing.
    for wrong in ["worker", "prod-eu/worker", "prod-us", "yes"] {
        typed(&mut app, wrong);
        assert!(press(&mut app, KeyCode::Enter).is_empty(), "{wrong}");
        assert_eq!(
            app.ui.flash.as_deref(),
            Some("not confirmed: type prod-us/worker and press Enter")
        );
        for _ in wrong.chars() {
            press(&mut app, KeyCode::Backspace);
        }
    }
    typed(&mut app, "prod-us/worker");
    let eff = press(&mut app, KeyCode::Enter);
    match eff.as_slice() {
        [Effect::Execute { generation, review }] => {
            assert_eq!(review.cluster, us());
            assert_eq!(*generation, app.session.generation);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_change_that_is_not_destructive_is_confirmed_with_the_cluster_name() {
    let mut app = fixtures::fleet();
    select(&mut app, "cluster=prod-eu worker");
    let eff = press(&mut app, KeyCode::Char('S'));
    let Some(Effect::Review { id, cluster, .. }) = eff.first() else {
        panic!("{eff:?}")
    };
    assert_eq!(cluster, &eu());
    update(
        &mut app,
        Msg::Reviewed {
            id: *id,
            result: Box::new(Ok(reviewed(eu(), crate::retire::Action::Suspend))),
        },
    );
    typed(&mut app, "yes");
    assert!(press(&mut app, KeyCode::Enter).is_empty());
    for _ in 0..3 {
        press(&mut app, KeyCode::Backspace);
    }
    typed(&mut app, "prod-eu");
    assert!(matches!(
        press(&mut app, KeyCode::Enter).as_slice(),
        [Effect::Execute { review, .. }] if review.cluster == eu()
    ));
}

#[test]
fn a_prune_target_is_read_from_the_rows_cluster() {
    // prod-us's worker ran another class than prod-eu's.
    let mut us_objects = fixtures::objects();
    for o in &mut us_objects {
        if let Object::Runtime(rt) = o
            && rt.metadata.name.as_deref() == Some("worker")
            && let Some(p) = rt.status.as_mut().and_then(|s| s.profile.as_mut())
        {
            p.class = Some("gvisor".into());
        }
    }
    let mut app = fixtures::fleet_with(vec![
        ("prod-eu", fixtures::objects()),
        ("prod-us", us_objects),
    ]);
    for (cluster, class) in [(us(), "gvisor"), (eu(), "bounded-runc")] {
        typed(&mut app, "/");
        press(&mut app, KeyCode::Esc);
        select(&mut app, &format!("cluster={cluster} worker"));
        let eff = press(&mut app, KeyCode::Char('P'));
        assert!(
            matches!(eff.as_slice(), [Effect::Review { cluster: c, action: crate::retire::Action::Prune { class: k }, .. }] if *c == cluster && k == class),
            "{eff:?}"
        );
        press(&mut app, KeyCode::Esc);
    }
}

#[test]
fn drill_down_and_screens_stay_in_the_rows_cluster() {
    let mut app = fixtures::fleet();
    select(&mut app, "cluster=prod-us web");
    let eff = press(&mut app, KeyCode::Enter);
    let key = ("demo".to_string(), "web".to_string());
    assert_eq!(app.screen(), &Screen::Rollout(us(), key.clone()));
    // The Rollout's scoped watches run in prod-us only.
    let scoped = |c: &ClusterId| {
        eff.iter().any(|e| {
            matches!(e, Effect::Watch(wc, keys) if wc == c
                && keys.iter().any(|k| k.kind == Kind::Deployment && !k.is_all()))
        })
    };
    assert!(scoped(&us()) && !scoped(&eu()), "{eff:?}");
    // Details and explain of what the rollout shows: prod-us's.
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.screen(),
        &Screen::Details(us(), Kind::Runtime, key.clone())
    );
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('x'));
    assert_eq!(app.screen(), &Screen::Explain(us(), Kind::Runtime, key));
}

#[test]
fn commands_that_name_an_object_need_its_cluster_when_several_hold_it() {
    let mut app = fixtures::fleet();
    typed(&mut app, ":rollout demo/web");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), &Screen::List(ListView::Runtimes));
    assert_eq!(
        app.ui.flash.as_deref(),
        Some("no Runtime demo/web: in clusters prod-eu, prod-us: add @CLUSTER")
    );
    typed(&mut app, ":rollout demo/web@prod-us");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.screen(),
        &Screen::Rollout(us(), ("demo".into(), "web".into()))
    );
    typed(&mut app, ":plan prod-eu");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), &Screen::Plan(eu()));
    typed(&mut app, ":explain demo/web@nowhere");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.ui.flash.as_deref(),
        Some("explain demo/web@nowhere: no cluster nowhere is shown")
    );
}

#[test]
fn one_clusters_events_rebuild_only_its_part() {
    let mut app = fixtures::fleet();
    let (eu_built, us_built) = (app.clusters[0].rows.built, app.clusters[1].rows.built);
    let web = app.clusters[1]
        .data
        .store
        .get(Kind::Runtime, &("demo".into(), "web".into()))
        .expect("web");
    let o = app.origin_of(1);
    update(
        &mut app,
        Msg::Watched(o, WatchKey::all(Kind::Runtime), WatchEvent::Delete(web)),
    );
    app.refresh();
    assert_eq!(app.clusters[0].rows.built, eu_built, "prod-eu not rebuilt");
    assert_ne!(app.clusters[1].rows.built, us_built);
    assert_eq!(app.table(ListView::Runtimes).total(), 5);
}

#[test]
fn every_clusters_stale_part_is_rebuilt_and_the_selection_kept() {
    // Both clusters' Runtimes change while Runtimes is on screen: both
    // parts are rebuilt at once (each on a thread of its own), each from
    // its own store, and the selection stays on its object.
    let mut app = fixtures::fleet();
    app.refresh();
    let web = RowRef::Runtime(("demo".into(), "web".into()));
    let t = app.table(ListView::Runtimes);
    let total = t.total();
    let kept = (0..t.len())
        .rev()
        .find(|&p| {
            t.located_at(p)
                .is_some_and(|l| l.cluster == us() && l.row != web)
        })
        .expect("a row of prod-us other than web");
    app.list_mut(ListView::Runtimes).selected = kept;
    let before = app.selected_id(ListView::Runtimes);
    for i in 0..2 {
        let obj = app.clusters[i]
            .data
            .store
            .get(Kind::Runtime, &("demo".into(), "web".into()))
            .expect("web");
        let o = app.origin_of(i);
        update(
            &mut app,
            Msg::Watched(o, WatchKey::all(Kind::Runtime), WatchEvent::Delete(obj)),
        );
    }
    assert!(app.stale(0, ListView::Runtimes) && app.stale(1, ListView::Runtimes));
    app.refresh();
    assert!(!app.stale(0, ListView::Runtimes) && !app.stale(1, ListView::Runtimes));
    let t = app.table(ListView::Runtimes);
    assert_eq!(t.total(), total - 2, "web gone from both clusters only");
    for p in 0..t.len() {
        assert_ne!(t.located_at(p).map(|l| l.row), Some(web.clone()));
    }
    assert_eq!(
        app.selected_id(ListView::Runtimes),
        before,
        "selection kept"
    );
}

#[test]
fn a_cluster_that_never_answers_does_not_hold_back_the_others() {
    // prod-us: a cluster whose watches only ever fail.
    let mut app = App::of_fleet(vec![eu(), us()], Scope::All, fixtures::now());
    let eu_origin = app.origin_of(0);
    for kind in Kind::ALL {
        let key = WatchKey::all(*kind);
        update(
            &mut app,
            Msg::Watched(eu_origin.clone(), key.clone(), WatchEvent::Init),
        );
        for o in fixtures::objects()
            .into_iter()
            .filter(|o| o.kind() == *kind)
        {
            update(
                &mut app,
                Msg::Watched(eu_origin.clone(), key.clone(), WatchEvent::InitApply(o)),
            );
        }
        update(
            &mut app,
            Msg::Watched(eu_origin.clone(), key.clone(), WatchEvent::InitDone),
        );
    }
    // Not answered yet: the view waits (it may be slow, not down).
    app.refresh();
    assert!(!app.loaded(ListView::Runtimes));
    let o = app.origin_of(1);
    update(
        &mut app,
        Msg::Watched(
            o,
            WatchKey::all(Kind::Runtime),
            WatchEvent::Error("connection refused".into()),
        ),
    );
    app.refresh();
    assert!(
        app.loaded(ListView::Runtimes),
        "a failing cluster settles the view"
    );
    assert_eq!(app.table(ListView::Runtimes).total(), 3);
    assert!(app.counted(ListView::Runtimes));
}

#[test]
fn a_dropped_cluster_keeps_its_rows_and_resumes_without_the_others_relisting() {
    let mut app = fixtures::fleet();
    let rt = WatchKey::all(Kind::Runtime);
    let (o_eu, o_us) = (app.origin_of(0), app.origin_of(1));
    update(
        &mut app,
        Msg::Watched(
            o_us.clone(),
            rt.clone(),
            WatchEvent::Error("refused".into()),
        ),
    );
    app.refresh();
    assert!(app.clusters[1].data.reconnecting(ListView::Runtimes));
    assert!(!app.clusters[0].data.reconnecting(ListView::Runtimes));
    assert_eq!(app.table(ListView::Runtimes).total(), 6, "its rows stay");
    // prod-eu goes on: a change there shows at once.
    let web = app.clusters[0]
        .data
        .store
        .get(Kind::Runtime, &("demo".into(), "web".into()))
        .expect("web");
    update(
        &mut app,
        Msg::Watched(o_eu, rt.clone(), WatchEvent::Delete(web)),
    );
    app.refresh();
    assert_eq!(app.table(ListView::Runtimes).total(), 5);
    // prod-us resumes from where it was: synced again, nothing relisted.
    update(
        &mut app,
        Msg::Watched(o_us, rt.clone(), WatchEvent::Resumed),
    );
    assert!(!app.clusters[1].data.reconnecting(ListView::Runtimes));
    assert!(app.clusters.iter().all(|c| c.data.pending.is_empty()));
}

#[test]
fn a_fleet_watches_every_clusters_grants_for_its_header() {
    let mut app = fixtures::fleet();
    for e in app.open(Screen::List(ListView::Runtimes)) {
        if let Effect::Watch(_, keys) = e {
            assert!(
                keys.contains(&WatchKey::all(Kind::RuntimeGrant)),
                "{keys:?}"
            );
        }
    }
    // One cluster: only when a view needs them, as before.
    let mut one = App::new("kwok-test", Scope::All, fixtures::now());
    assert!(
        !one.needed_watches(0)
            .contains(&WatchKey::all(Kind::RuntimeGrant))
    );
    one.open(Screen::List(ListView::Grants));
    assert!(
        one.needed_watches(0)
            .contains(&WatchKey::all(Kind::RuntimeGrant))
    );
}

#[test]
fn watches_of_a_list_run_in_every_cluster() {
    let mut app = fixtures::fleet();
    let eff = app.open(Screen::List(ListView::Handlers));
    let clusters: Vec<&ClusterId> = eff
        .iter()
        .filter_map(|e| match e {
            Effect::Watch(c, keys) if keys.iter().any(|k| k.kind == Kind::Pod) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(clusters, [&eu(), &us()]);
}

#[test]
fn a_review_open_across_a_ctx_switch_never_executes_in_another_cluster() {
    // The race: `:ctx` is asked (its connections are made off the UI
    // task), a review of prod-us's worker opens and is answered meanwhile,
    // then the new connections arrive: the same two clusters in the other
    // order (prod-eu now where prod-us was), or prod-eu alone. The typed
    // confirmation that follows executes nothing, in either.
    for asked in [&["prod-us", "prod-eu"][..], &["prod-eu"][..]] {
        let mut app = fixtures::fleet();
        app.session.contexts = vec!["prod-eu".into(), "prod-us".into()];
        typed(&mut app, &format!(":ctx {}", asked.join(",")));
        let eff = press(&mut app, KeyCode::Enter);
        assert!(
            matches!(eff.as_slice(), [Effect::Connect { .. }]),
            "{asked:?}: {eff:?}"
        );
        select(&mut app, "cluster=prod-us worker");
        delete_reviewed_by_prod_us(&mut app);
        let before = app.session.generation;
        update(
            &mut app,
            Msg::Connected {
                asked: asked.iter().map(|c| c.to_string()).collect(),
                contexts: vec!["prod-eu".into(), "prod-us".into()],
                conns: asked
                    .iter()
                    .map(|c| (ClusterId::new(c), crate::model::Handover::new(*c)))
                    .collect(),
                problems: Vec::new(),
            },
        );
        assert_ne!(app.session.generation, before, "{asked:?}: switched");
        // The switch closes the review, even where prod-us stays: it was
        // made on connections that are gone.
        assert!(app.ui.review.is_none(), "{asked:?}: {:?}", app.ui.review);
        typed(&mut app, "prod-us/worker");
        let eff = press(&mut app, KeyCode::Enter);
        assert!(
            !eff.iter().any(|e| matches!(e, Effect::Execute { .. })),
            "{asked:?}: {eff:?}"
        );
    }
}
