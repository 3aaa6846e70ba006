//! Key handling through the pure update function.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::fixtures;

fn press(app: &mut App, code: KeyCode) -> Vec<Effect> {
    let e = update(app, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    app.refresh();
    e
}

fn ctrl(app: &mut App, c: char) -> Vec<Effect> {
    update(
        app,
        Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)),
    )
}

fn typed(app: &mut App, s: &str) -> Vec<Effect> {
    let mut all = Vec::new();
    for c in s.chars() {
        all.extend(press(app, KeyCode::Char(c)));
    }
    all
}

fn selected_name(app: &App, v: ListView) -> Option<String> {
    match app.selected_ref(v)? {
        RowRef::Runtime((_, n)) | RowRef::Grant(n) | RowRef::Class(n) => Some(n),
        RowRef::Workload(_, (_, n)) => Some(n),
    }
}

#[test]
fn vim_motions_move_the_selection_within_bounds() {
    let mut app = fixtures::app();
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("api")
    );
    typed(&mut app, "j");
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("web")
    );
    typed(&mut app, "G");
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("worker")
    );
    typed(&mut app, "jjj");
    assert_eq!(app.list(ListView::Runtimes).selected, 2);
    typed(&mut app, "g");
    assert_eq!(app.list(ListView::Runtimes).selected, 0);
    typed(&mut app, "k");
    assert_eq!(app.list(ListView::Runtimes).selected, 0);
    press(&mut app, KeyCode::End);
    assert_eq!(app.list(ListView::Runtimes).selected, 2);
    ctrl(&mut app, 'u');
    assert_eq!(app.list(ListView::Runtimes).selected, 0);
}

#[test]
fn views_switch_with_numbers_tab_and_commands() {
    let mut app = fixtures::app();
    let eff = typed(&mut app, "2");
    assert_eq!(app.screen(), &Screen::List(ListView::Grants));
    assert!(matches!(eff.as_slice(), [Effect::Watch(k)] if k.contains(&Kind::RuntimeGrant)));
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.screen(), &Screen::List(ListView::Handlers));
    press(&mut app, KeyCode::BackTab);
    press(&mut app, KeyCode::BackTab);
    assert_eq!(app.screen(), &Screen::List(ListView::Runtimes));
    typed(&mut app, ":retained");
    let eff = press(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), &Screen::List(ListView::Retained));
    assert!(matches!(eff.as_slice(), [Effect::Watch(k)] if k.contains(&Kind::Pod)));
    typed(&mut app, ":rc");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), &Screen::List(ListView::Handlers));
}

#[test]
fn enter_drills_down_and_esc_goes_back() {
    let mut app = fixtures::app();
    typed(&mut app, "j");
    let eff = press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.screen(),
        &Screen::Rollout(("demo".into(), "web".into()))
    );
    assert!(
        matches!(eff.as_slice(), [Effect::Watch(k)] if k.contains(&Kind::ReplicaSet) && k.contains(&Kind::Event))
    );
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.screen(),
        &Screen::Details(Kind::Runtime, ("demo".into(), "web".into()))
    );
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.screen(), &Screen::List(ListView::Runtimes));
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.screen(), &Screen::List(ListView::Runtimes));
    typed(&mut app, "3");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.screen(),
        &Screen::Details(Kind::RuntimeClass, (String::new(), "bounded-runc".into()))
    );
}

#[test]
fn sort_by_selected_column_toggles_direction() {
    let mut app = fixtures::app();
    // Column 4 is GRANT: NotRequested, Granted, Revoked.
    typed(&mut app, "llll");
    assert_eq!(app.list(ListView::Runtimes).column, 4);
    typed(&mut app, "s");
    assert_eq!(app.list(ListView::Runtimes).sort, Some((4, false)));
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("web")
    );
    typed(&mut app, "s");
    assert_eq!(app.list(ListView::Runtimes).sort, Some((4, true)));
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("worker")
    );
    typed(&mut app, "hhhhhhhhh");
    assert_eq!(app.list(ListView::Runtimes).column, 0);
}

#[test]
fn filter_narrows_rows_and_esc_clears_it() {
    let mut app = fixtures::app();
    typed(&mut app, "/rev");
    assert_eq!(app.mode, Mode::Filter);
    assert_eq!(app.table(ListView::Runtimes).visible.len(), 1);
    press(&mut app, KeyCode::Backspace);
    press(&mut app, KeyCode::Backspace);
    assert_eq!(app.list(ListView::Runtimes).filter, "r");
    typed(&mut app, "evoked");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("worker")
    );
    press(&mut app, KeyCode::Esc);
    assert!(app.list(ListView::Runtimes).filter.is_empty());
    assert_eq!(app.table(ListView::Runtimes).visible.len(), 3);
}

#[test]
fn command_completion_cycles_candidates() {
    let mut app = fixtures::app();
    typed(&mut app, ":r");
    press(&mut app, KeyCode::Tab);
    let Mode::Command { input, completion } = &app.mode else {
        panic!("command mode");
    };
    assert_eq!(input, "runtimes");
    assert_eq!(
        completion.as_ref().map(|c| c.0.clone()),
        Some(vec![
            "runtimes".to_string(),
            "retained".to_string(),
            "rollout ".to_string()
        ])
    );
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Tab);
    assert!(matches!(&app.mode, Mode::Command { input, .. } if input == "rollout "));
    typed(&mut app, "w");
    press(&mut app, KeyCode::Tab);
    assert!(matches!(&app.mode, Mode::Command { input, .. } if input == "rollout web"));
    press(&mut app, KeyCode::Tab);
    assert!(matches!(&app.mode, Mode::Command { input, .. } if input == "rollout worker"));
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.screen(),
        &Screen::Rollout(("demo".into(), "worker".into()))
    );
}

#[test]
fn ns_and_ctx_commands_reconnect() {
    let mut app = fixtures::app();
    app.contexts = vec!["kwok-test".into(), "prod".into()];
    typed(&mut app, ":ns demo");
    let eff = press(&mut app, KeyCode::Enter);
    assert_eq!(app.scope, Scope::Namespace("demo".into()));
    assert!(
        matches!(eff.first(), Some(Effect::Reconnect { scope: Scope::Namespace(n), .. }) if n == "demo")
    );
    assert_eq!(
        app.store.count(Kind::Runtime),
        0,
        "data is dropped on switch"
    );
    typed(&mut app, ":ctx nope");
    let eff = press(&mut app, KeyCode::Enter);
    assert!(eff.is_empty());
    assert!(
        app.flash
            .as_deref()
            .is_some_and(|f| f.contains("no context"))
    );
    typed(&mut app, ":ctx p");
    press(&mut app, KeyCode::Tab);
    let eff = press(&mut app, KeyCode::Enter);
    assert!(
        matches!(eff.first(), Some(Effect::Reconnect { context, scope: Scope::Namespace(_) }) if context == "prod")
    );
    typed(&mut app, ":ns all");
    let eff = press(&mut app, KeyCode::Enter);
    assert!(matches!(
        eff.first(),
        Some(Effect::Reconnect {
            scope: Scope::All,
            ..
        })
    ));
}

#[test]
fn unknown_command_flashes_and_esc_cancels() {
    let mut app = fixtures::app();
    typed(&mut app, ":bogus\u{1b}[31m");
    press(&mut app, KeyCode::Enter);
    assert!(app.flash.as_deref().is_some_and(
        |f| f.starts_with("unknown command: bogus") && berth_shared::sanitize::is_clean(f)
    ));
    typed(&mut app, ":gr");
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.screen(), &Screen::List(ListView::Runtimes));
}

#[test]
fn quit_keys() {
    let mut app = fixtures::app();
    assert_eq!(typed(&mut app, "q"), vec![Effect::Quit]);
    let mut app = fixtures::app();
    assert_eq!(ctrl(&mut app, 'c'), vec![Effect::Quit]);
    let mut app = fixtures::app();
    typed(&mut app, ":q");
    assert_eq!(press(&mut app, KeyCode::Enter), vec![Effect::Quit]);
    assert!(app.quit);
}

#[test]
fn help_opens_and_any_key_closes() {
    let mut app = fixtures::app();
    typed(&mut app, "?");
    assert!(app.show_help);
    typed(&mut app, "j");
    assert!(!app.show_help);
    assert_eq!(
        app.list(ListView::Runtimes).selected,
        0,
        "closing key is swallowed"
    );
}

#[test]
fn watch_events_update_rows_and_relist_replaces() {
    let mut app = fixtures::app();
    let web = app
        .store
        .get(Kind::Runtime, &("demo".into(), "web".into()))
        .expect("web");
    update(
        &mut app,
        Msg::Watch(Kind::Runtime, WatchEvent::Delete(web.clone())),
    );
    app.refresh();
    assert_eq!(app.table(ListView::Runtimes).cells.len(), 2);
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::Init));
    update(
        &mut app,
        Msg::Watch(Kind::Runtime, WatchEvent::InitApply(web)),
    );
    // Until InitDone the old state stays.
    app.refresh();
    assert_eq!(app.table(ListView::Runtimes).cells.len(), 2);
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::InitDone));
    app.refresh();
    assert_eq!(app.table(ListView::Runtimes).cells.len(), 1);
    assert!(app.dirty);
}

#[test]
fn rollout_and_details_scroll() {
    let mut app = fixtures::app();
    typed(&mut app, "jd");
    typed(&mut app, "jjj");
    assert_eq!(app.scroll, 3);
    typed(&mut app, "g");
    assert_eq!(app.scroll, 0);
    typed(&mut app, "k");
    assert_eq!(app.scroll, 0);
}

#[test]
fn events_of_an_old_connection_are_dropped_after_a_switch() {
    let mut app = fixtures::app();
    let web = app
        .store
        .get(Kind::Runtime, &("demo".into(), "web".into()))
        .expect("web");
    let old = app.generation;
    typed(&mut app, ":ns other");
    press(&mut app, KeyCode::Enter);
    assert_ne!(app.generation, old);
    update(
        &mut app,
        Msg::Watched(old, Kind::Runtime, WatchEvent::Apply(web.clone())),
    );
    assert_eq!(app.store.count(Kind::Runtime), 0, "stale event ignored");
    let current = app.generation;
    update(
        &mut app,
        Msg::Watched(current, Kind::Runtime, WatchEvent::Apply(web)),
    );
    assert_eq!(app.store.count(Kind::Runtime), 1);
}
