//! A `:ctx` switch as messages: the connection made off the UI task comes
//! back as [`Msg::Connected`], and only [`update`] decides whether it is
//! adopted ([`Effect::Adopt`], with the generation the new watchers must
//! tag their events with).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::fixtures;

fn command(app: &mut App, line: &str) -> Vec<Effect> {
    let mut all = Vec::new();
    for c in format!(":{line}").chars() {
        all.extend(update(
            app,
            Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)),
        ));
    }
    all.extend(update(
        app,
        Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
    ));
    all
}

fn connected(asked: &[&str], conns: &[(&str, &Handover)]) -> Msg {
    Msg::Connected {
        asked: asked.iter().map(|c| c.to_string()).collect(),
        contexts: vec!["kwok-test".into(), "prod".into(), "staging".into()],
        conns: conns
            .iter()
            .map(|(c, h)| (ClusterId::new(c), (*h).clone()))
            .collect(),
        problems: Vec::new(),
    }
}

fn ids(app: &App) -> Vec<String> {
    app.clusters
        .iter()
        .map(|c| c.id.context().to_string())
        .collect()
}

#[test]
fn a_connection_that_answers_is_adopted_through_update() {
    let mut app = fixtures::app();
    app.session.contexts = vec!["kwok-test".into(), "prod".into()];
    let old = fixtures::origin(&app);
    assert_eq!(
        command(&mut app, "ctx prod"),
        vec![Effect::Connect {
            contexts: vec!["prod".into()]
        }]
    );
    // Nothing changed yet: the old context is still in use.
    assert_eq!(ids(&app), ["kwok-test"]);
    assert_eq!(app.clusters[0].data.store.count(Kind::Runtime), 3);

    // Any value stands for the connection: the model never looks inside.
    let conn = Handover::new("a connection to prod");
    let eff = update(&mut app, connected(&["prod"], &[("prod", &conn)]));
    assert_eq!(ids(&app), ["prod"]);
    assert_eq!(app.session.switching, None);
    assert_ne!(app.session.generation, old.generation);
    assert_eq!(
        app.clusters[0].data.store.count(Kind::Runtime),
        0,
        "data starts over"
    );
    assert!(app.ui.dirty);
    assert_eq!(app.ui.flash.as_deref(), Some("switched to prod"));
    // First the connection (the new watchers' generation and the scope
    // kept from before), then the watches to run on it.
    match eff.as_slice() {
        [
            Effect::Adopt {
                conns: adopted,
                scope,
                generation: g,
            },
            Effect::Watch(cluster, keys),
        ] => {
            assert_eq!(adopted.len(), 1);
            assert_eq!(adopted[0].0, ClusterId::new("prod"));
            assert_eq!(adopted[0].1, conn);
            assert_eq!(adopted[0].1.get::<&str>(), Some(&"a connection to prod"));
            assert_eq!(scope, &Scope::All);
            assert_eq!(*g, app.session.generation);
            assert_eq!(cluster, &ClusterId::new("prod"));
            assert!(keys.iter().any(|w| w.kind == Kind::Runtime));
        }
        other => panic!("unexpected effects {other:?}"),
    }
    // Events of the old connection's watchers are dropped from now on,
    // and so are the new generation's tagged with a cluster not shown.
    let rt = fixtures::objects()
        .into_iter()
        .find(|o| o.kind() == Kind::Runtime)
        .expect("a Runtime");
    for origin in [
        old,
        Origin {
            cluster: ClusterId::new("kwok-test"),
            generation: app.session.generation,
        },
    ] {
        update(
            &mut app,
            Msg::Watched(
                origin,
                WatchKey::all(Kind::Runtime),
                WatchEvent::Apply(rt.clone()),
            ),
        );
    }
    assert_eq!(app.clusters[0].data.store.count(Kind::Runtime), 0);
}

#[test]
fn a_superseded_connection_is_not_adopted() {
    let mut app = fixtures::app();
    app.session.contexts = vec!["kwok-test".into(), "prod".into(), "staging".into()];
    command(&mut app, "ctx prod");
    command(&mut app, "ctx staging");
    let generation = app.session.generation;
    // The answer for prod comes late: it changes nothing, and nothing is
    // adopted (the I/O side drops the connection with the message).
    let eff = update(
        &mut app,
        connected(&["prod"], &[("prod", &Handover::new(1u8))]),
    );
    assert!(eff.is_empty());
    assert_eq!(ids(&app), ["kwok-test"]);
    assert_eq!(app.session.switching, Some(vec!["staging".to_string()]));
    assert_eq!(app.session.generation, generation);
    assert_eq!(app.clusters[0].data.store.count(Kind::Runtime), 3);
    // Nor is one nobody asked for.
    let mut idle = fixtures::app();
    assert!(
        update(
            &mut idle,
            connected(&["prod"], &[("prod", &Handover::new(2u8))])
        )
        .is_empty()
    );
    assert_eq!(ids(&idle), ["kwok-test"]);
}

#[test]
fn ctx_with_a_list_makes_a_fleet_and_back() {
    let mut app = fixtures::app();
    app.session.contexts = vec!["kwok-test".into(), "prod".into(), "staging".into()];
    // Sorted by the third column (a single cluster's).
    app.ui.lists[0].column = 2;
    app.ui.lists[0].sort = Some((2, true));
    assert_eq!(
        command(&mut app, "ctx prod, staging,prod"),
        vec![Effect::Connect {
            contexts: vec!["prod".into(), "staging".into()]
        }]
    );
    let (p, s) = (Handover::new(1u8), Handover::new(2u8));
    let eff = update(
        &mut app,
        connected(&["prod", "staging"], &[("prod", &p), ("staging", &s)]),
    );
    assert_eq!(ids(&app), ["prod", "staging"]);
    assert!(app.fleet());
    // One Adopt with both, then each cluster's watches.
    let clusters: Vec<&ClusterId> = eff
        .iter()
        .filter_map(|e| match e {
            Effect::Watch(c, _) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(
        clusters,
        [&ClusterId::new("prod"), &ClusterId::new("staging")]
    );
    assert!(matches!(&eff[0], Effect::Adopt { conns, .. } if conns.len() == 2));
    // The CLUSTER column came first: the sort stays on its column.
    assert_eq!(app.table(ListView::Runtimes).headers()[0], "CLUSTER");
    assert_eq!(app.list(ListView::Runtimes).sort, Some((3, true)));
    assert_eq!(app.list(ListView::Runtimes).column, 3);
    // An unknown context is refused before anything is asked.
    assert!(command(&mut app, "ctx prod,nope").is_empty());
    assert_eq!(app.ui.flash.as_deref(), Some("no context nope"));
    // Back to one.
    command(&mut app, "ctx staging");
    update(
        &mut app,
        connected(&["staging"], &[("staging", &Handover::new(3u8))]),
    );
    assert!(!app.fleet());
    assert_eq!(app.list(ListView::Runtimes).sort, Some((2, true)));
}

#[test]
fn a_switch_closes_the_screens_and_the_review_of_the_clusters_left() {
    let mut app = fixtures::app();
    app.session.contexts = vec!["kwok-test".into(), "prod".into()];
    app.open(Screen::Rollout(
        fixtures::cluster(),
        ("demo".into(), "web".into()),
    ));
    command(&mut app, "ctx prod");
    update(
        &mut app,
        connected(&["prod"], &[("prod", &Handover::new(1u8))]),
    );
    // The Rollout of kwok-test's demo/web is not prod's demo/web.
    assert_eq!(app.screen(), &Screen::List(ListView::Runtimes));
    assert!(app.ui.review.is_none());
}

#[test]
fn a_scope_switch_tells_the_new_generation() {
    let mut app = fixtures::app();
    let eff = command(&mut app, "ns demo");
    assert!(matches!(
        eff.first(),
        Some(Effect::Rescope { scope: Scope::Namespace(n), generation })
            if n == "demo" && *generation == app.session.generation
    ));
    assert!(matches!(eff.get(1), Some(Effect::Watch(..))));
}

#[test]
fn drawn_layout_reaches_the_model_as_a_message() {
    let mut app = fixtures::app();
    app.ui.dirty = false;
    let fit = Viewport {
        page: 7,
        scroll_max: 3,
        help_scroll_max: 9,
        offsets: [1, 0, 0, 0, 0],
    };
    assert!(update(&mut app, Msg::Drawn(fit.clone())).is_empty());
    assert_eq!(app.ui.viewport, fit);
    // Layout alone is no reason to draw again.
    assert!(!app.ui.dirty);
    // Paging uses what was drawn: Ctrl-f moves by the page of 7 (the
    // fixtures have 3 Runtimes: to the last).
    update(
        &mut app,
        Msg::Key(KeyEvent::new(KeyCode::Char('f'), KeyModifiers::CONTROL)),
    );
    assert_eq!(app.list(ListView::Runtimes).selected, 2);
}
