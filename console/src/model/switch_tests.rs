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

fn connected(context: &str, conn: &Handover) -> Msg {
    Msg::Connected {
        context: context.into(),
        contexts: vec!["kwok-test".into(), "prod".into()],
        conn: conn.clone(),
    }
}

#[test]
fn a_connection_that_answers_is_adopted_through_update() {
    let mut app = fixtures::app();
    app.session.contexts = vec!["kwok-test".into(), "prod".into()];
    let generation = app.session.generation;
    assert_eq!(
        command(&mut app, "ctx prod"),
        vec![Effect::Connect {
            context: "prod".into()
        }]
    );
    // Nothing changed yet: the old context is still in use.
    assert_eq!(app.session.context, "kwok-test");
    assert_eq!(app.data.store.count(Kind::Runtime), 3);

    // Any value stands for the connection: the model never looks inside.
    let conn = Handover::new("a connection to prod");
    let eff = update(&mut app, connected("prod", &conn));
    assert_eq!(app.session.context, "prod");
    assert_eq!(app.session.switching, None);
    assert_ne!(app.session.generation, generation);
    assert_eq!(app.data.store.count(Kind::Runtime), 0, "data starts over");
    assert!(app.ui.dirty);
    assert_eq!(app.ui.flash.as_deref(), Some("switched to prod"));
    // First the connection (the new watchers' generation and the scope
    // kept from before), then the watches to run on it.
    match eff.as_slice() {
        [
            Effect::Adopt {
                conn: adopted,
                scope,
                generation: g,
            },
            Effect::Watch(keys),
        ] => {
            assert_eq!(adopted, &conn);
            assert_eq!(adopted.get::<&str>(), Some(&"a connection to prod"));
            assert_eq!(scope, &Scope::All);
            assert_eq!(*g, app.session.generation);
            assert!(keys.iter().any(|w| w.kind == Kind::Runtime));
        }
        other => panic!("unexpected effects {other:?}"),
    }
    // Events of the old connection's watchers are dropped from now on.
    let rt = fixtures::objects()
        .into_iter()
        .find(|o| o.kind() == Kind::Runtime)
        .expect("a Runtime");
    update(
        &mut app,
        Msg::Watched(
            generation,
            WatchKey::all(Kind::Runtime),
            WatchEvent::Apply(rt),
        ),
    );
    assert_eq!(app.data.store.count(Kind::Runtime), 0);
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
    let eff = update(&mut app, connected("prod", &Handover::new(1u8)));
    assert!(eff.is_empty());
    assert_eq!(app.session.context, "kwok-test");
    assert_eq!(app.session.switching.as_deref(), Some("staging"));
    assert_eq!(app.session.generation, generation);
    assert_eq!(app.data.store.count(Kind::Runtime), 3);
    // Nor is one nobody asked for.
    let mut idle = fixtures::app();
    assert!(update(&mut idle, connected("prod", &Handover::new(2u8))).is_empty());
    assert_eq!(idle.session.context, "kwok-test");
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
    assert!(matches!(eff.get(1), Some(Effect::Watch(_))));
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
