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
    match app.selected_ref(v)?.row {
        RowRef::Runtime((_, n)) | RowRef::Grant(n) | RowRef::Class(n) | RowRef::Namespace(n) => {
            Some(n)
        }
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
    assert!(
        matches!(eff.as_slice(), [Effect::Watch(_, k)] if k.iter().any(|w| w.kind == Kind::RuntimeGrant))
    );
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.screen(), &Screen::List(ListView::Handlers));
    press(&mut app, KeyCode::BackTab);
    press(&mut app, KeyCode::BackTab);
    assert_eq!(app.screen(), &Screen::List(ListView::Runtimes));
    typed(&mut app, ":retained");
    let eff = press(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), &Screen::List(ListView::Retained));
    assert!(
        matches!(eff.as_slice(), [Effect::Watch(_, k)] if k.iter().any(|w| w.kind == Kind::Pod))
    );
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
        &Screen::Rollout(crate::fixtures::cluster(), ("demo".into(), "web".into()))
    );
    assert!(
        matches!(eff.as_slice(), [Effect::Watch(_, k)] if k.iter().any(|w| w.kind == Kind::ReplicaSet) && k.iter().any(|w| w.kind == Kind::Event))
    );
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.screen(),
        &Screen::Details(
            crate::fixtures::cluster(),
            Kind::Runtime,
            ("demo".into(), "web".into())
        )
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
        &Screen::Details(
            crate::fixtures::cluster(),
            Kind::RuntimeClass,
            (String::new(), "bounded-runc".into())
        )
    );
}

#[test]
fn sort_by_selected_column_toggles_direction() {
    let mut app = fixtures::app();
    // Column 4 is GRANT: NotRequested, Granted, Revoked.
    typed(&mut app, "llll");
    assert_eq!(app.list(ListView::Runtimes).column, 4);
    let order = |app: &App| -> Vec<String> {
        let t = app.table(ListView::Runtimes);
        (0..t.len()).map(|p| t.cell(p, 1)).collect()
    };
    typed(&mut app, "s");
    assert_eq!(app.list(ListView::Runtimes).sort, Some((4, false)));
    assert_eq!(order(&app), ["web", "api", "worker"]);
    // The cursor stayed on api, wherever it moved.
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("api")
    );
    assert_eq!(app.list(ListView::Runtimes).selected, 1);
    typed(&mut app, "s");
    assert_eq!(app.list(ListView::Runtimes).sort, Some((4, true)));
    assert_eq!(order(&app), ["worker", "api", "web"]);
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("api")
    );
    typed(&mut app, "hhhhhhhhh");
    assert_eq!(app.list(ListView::Runtimes).column, 0);
}

#[test]
fn filter_narrows_rows_and_esc_clears_it() {
    let mut app = fixtures::app();
    typed(&mut app, "/rev");
    assert_eq!(app.ui.mode, Mode::Filter);
    assert_eq!(app.table(ListView::Runtimes).len(), 1);
    press(&mut app, KeyCode::Backspace);
    press(&mut app, KeyCode::Backspace);
    assert_eq!(app.list(ListView::Runtimes).filter, "r");
    typed(&mut app, "evoked");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.ui.mode, Mode::Normal);
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("worker")
    );
    press(&mut app, KeyCode::Esc);
    assert!(app.list(ListView::Runtimes).filter.is_empty());
    assert_eq!(app.table(ListView::Runtimes).len(), 3);
}

#[test]
fn command_completion_cycles_candidates() {
    let mut app = fixtures::app();
    typed(&mut app, ":r");
    press(&mut app, KeyCode::Tab);
    let Mode::Command { input, completion } = &app.ui.mode else {
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
    assert!(matches!(&app.ui.mode, Mode::Command { input, .. } if input == "rollout "));
    typed(&mut app, "w");
    press(&mut app, KeyCode::Tab);
    assert!(matches!(&app.ui.mode, Mode::Command { input, .. } if input == "rollout web"));
    press(&mut app, KeyCode::Tab);
    assert!(matches!(&app.ui.mode, Mode::Command { input, .. } if input == "rollout worker"));
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.screen(),
        &Screen::Rollout(crate::fixtures::cluster(), ("demo".into(), "worker".into()))
    );
}

#[test]
fn ns_switches_scope_with_the_same_connection() {
    let mut app = fixtures::app();
    typed(&mut app, ":ns demo");
    let eff = press(&mut app, KeyCode::Enter);
    assert_eq!(app.session.scope, Scope::Namespace("demo".into()));
    assert!(
        matches!(eff.first(), Some(Effect::Rescope { scope: Scope::Namespace(n), .. }) if n == "demo")
    );
    assert_eq!(
        app.clusters[0].data.store.count(Kind::Runtime),
        0,
        "data is dropped on switch"
    );
    typed(&mut app, ":ns all");
    let eff = press(&mut app, KeyCode::Enter);
    assert!(matches!(
        eff.first(),
        Some(Effect::Rescope {
            scope: Scope::All,
            ..
        })
    ));
}

#[test]
fn ns_alone_lists_namespaces_from_the_namespace_list_and_enter_picks() {
    let mut app = fixtures::app();
    typed(&mut app, ":ns");
    let eff = press(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), &Screen::List(ListView::Namespaces));
    assert!(
        matches!(eff.as_slice(), [Effect::Watch(_, k)] if k.iter().any(|w| w.kind == Kind::Namespace))
    );
    // `empty` holds no object the console watches: it comes from the list.
    let t = app.table(ListView::Namespaces);
    let names: Vec<String> = (0..t.len()).map(|p| t.cell(p, 0)).collect();
    assert_eq!(names, ["default", "demo", "empty", "legacy"]);
    typed(&mut app, "jj");
    let eff = press(&mut app, KeyCode::Enter);
    assert_eq!(app.session.scope, Scope::Namespace("empty".into()));
    assert!(
        matches!(eff.first(), Some(Effect::Rescope { scope: Scope::Namespace(n), .. }) if n == "empty")
    );
    assert_eq!(app.screen(), &Screen::List(ListView::Runtimes));
    // Completion knows them too.
    let mut app = fixtures::app();
    assert!(keys::complete(&app, "ns e").contains(&"ns empty".to_string()));
    // Esc leaves the picker for the view it was opened from.
    typed(&mut app, "2:ns");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), &Screen::List(ListView::Namespaces));
    assert!(press(&mut app, KeyCode::Esc).is_empty());
    assert_eq!(app.screen(), &Screen::List(ListView::Grants));
    assert_eq!(app.session.scope, Scope::All, "nothing picked");
}

#[test]
fn a_failed_ctx_switch_keeps_the_old_context_usable() {
    let mut app = fixtures::app();
    app.session.contexts = vec!["kwok-test".into(), "broken".into(), "prod".into()];
    typed(&mut app, ":ctx nope");
    let eff = press(&mut app, KeyCode::Enter);
    assert!(eff.is_empty());
    assert!(
        app.ui
            .flash
            .as_deref()
            .is_some_and(|f| f.contains("no context"))
    );

    typed(&mut app, ":ctx b");
    press(&mut app, KeyCode::Tab);
    let eff = press(&mut app, KeyCode::Enter);
    assert_eq!(
        eff,
        vec![Effect::Connect {
            contexts: vec!["broken".into()]
        }]
    );
    // Nothing is dropped while the new context is tried.
    assert_eq!(app.contexts_label(), "kwok-test");
    assert_eq!(app.session.switching, Some(vec!["broken".to_string()]));
    assert_eq!(app.clusters[0].data.store.count(Kind::Runtime), 3);
    let generation = app.session.generation;
    update(
        &mut app,
        Msg::SwitchFailed {
            asked: vec!["broken".into()],
            error: "connection refused\u{1b}[2J".into(),
        },
    );
    assert_eq!(app.contexts_label(), "kwok-test");
    assert_eq!(app.session.switching, None);
    assert_eq!(app.session.generation, generation);
    assert_eq!(app.clusters[0].data.store.count(Kind::Runtime), 3);
    let flash = app.ui.flash.clone().unwrap_or_default();
    assert_eq!(
        flash,
        "cannot switch to broken: connection refused; still on kwok-test"
    );
    // Still usable: keys work on the old data.
    typed(&mut app, "j");
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("web")
    );

    // The switch that answers is in switch_tests.
}

#[test]
fn unknown_command_flashes_and_esc_cancels() {
    let mut app = fixtures::app();
    typed(&mut app, ":bogus\u{1b}[31m");
    press(&mut app, KeyCode::Enter);
    assert!(app.ui.flash.as_deref().is_some_and(
        |f| f.starts_with("unknown command: bogus") && berth_shared::sanitize::is_clean(f)
    ));
    typed(&mut app, ":gr");
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.ui.mode, Mode::Normal);
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
    assert!(app.ui.quit);
}

#[test]
fn help_scrolls_with_motion_keys_and_other_keys_close_it() {
    let mut app = fixtures::app();
    typed(&mut app, "?");
    assert!(app.ui.show_help);
    app.ui.viewport.help_scroll_max = 10;
    typed(&mut app, "jjj");
    assert!(app.ui.show_help);
    assert_eq!(app.ui.help_scroll, 3);
    typed(&mut app, "k");
    assert_eq!(app.ui.help_scroll, 2);
    typed(&mut app, "G");
    assert_eq!(app.ui.help_scroll, 10);
    typed(&mut app, "j");
    assert_eq!(app.ui.help_scroll, 10, "stops at the end");
    typed(&mut app, "x");
    assert!(!app.ui.show_help);
    assert_eq!(
        app.list(ListView::Runtimes).selected,
        0,
        "help keys do not move the list"
    );
    // Reopened, it starts at the top; `q` still quits.
    typed(&mut app, "?");
    assert_eq!(app.ui.help_scroll, 0);
    assert_eq!(typed(&mut app, "q"), vec![Effect::Quit]);
}

#[test]
fn the_cursor_stays_on_its_object_across_updates_filters_and_sorts() {
    let mut app = fixtures::app();
    typed(&mut app, "j");
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("web")
    );
    // Sort by NAME descending: worker, web, api — the cursor follows web.
    typed(&mut app, "lss");
    assert_eq!(app.list(ListView::Runtimes).sort, Some((1, true)));
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("web")
    );
    assert_eq!(app.list(ListView::Runtimes).selected, 1);
    // A live update inserts a row before it: still on web.
    let mut zed = app.clusters[0]
        .data
        .store
        .get(Kind::Runtime, &("demo".into(), "worker".into()))
        .expect("worker");
    if let Object::Runtime(rt) = &mut zed {
        rt.metadata.name = Some("zed".into());
        rt.metadata.uid = Some("uid-zed".into());
    }
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::Apply(zed)));
    app.refresh();
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("web")
    );
    assert_eq!(app.list(ListView::Runtimes).selected, 2);
    // A filter that keeps it: still on web.
    typed(&mut app, "/w");
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("web")
    );
    press(&mut app, KeyCode::Esc);
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("web")
    );
    // A relist (reconnect) rebuilds everything: still on web.
    let all: Vec<Object> = app.clusters[0]
        .data
        .store
        .runtimes
        .values()
        .cloned()
        .map(Object::Runtime)
        .collect();
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::Init));
    for o in all.into_iter().rev() {
        update(
            &mut app,
            Msg::Watch(Kind::Runtime, WatchEvent::InitApply(o)),
        );
    }
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::InitDone));
    app.refresh();
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("web")
    );
    // Deleted: the cursor stays at the same height, on a neighbour.
    let web = app.clusters[0]
        .data
        .store
        .get(Kind::Runtime, &("demo".into(), "web".into()))
        .expect("web");
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::Delete(web)));
    app.refresh();
    assert_eq!(app.list(ListView::Runtimes).selected, 2);
    assert_eq!(
        selected_name(&app, ListView::Runtimes).as_deref(),
        Some("api")
    );
}

#[test]
fn age_sorts_by_duration() {
    let mut app = fixtures::app();
    // Three Runtimes created 5m, 2d and 30s ago: as text "2d" < "30s" < "5m".
    let base = app.clusters[0]
        .data
        .store
        .get(Kind::Runtime, &("demo".into(), "web".into()))
        .expect("web");
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::Init));
    for (name, created) in [
        ("five-min", "2026-11-29T11:55:00Z"),
        ("two-days", "2026-11-27T12:00:00Z"),
        ("half-min", "2026-11-29T11:59:30Z"),
    ] {
        let mut o = base.clone();
        if let Object::Runtime(rt) = &mut o {
            rt.metadata.name = Some(name.into());
            rt.metadata.uid = Some(name.into());
            rt.metadata.creation_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    created.parse().expect("time"),
                ));
        }
        update(
            &mut app,
            Msg::Watch(Kind::Runtime, WatchEvent::InitApply(o)),
        );
    }
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::InitDone));
    app.refresh();
    // AGE is column 8.
    typed(&mut app, "llllllll");
    typed(&mut app, "s");
    let t = app.table(ListView::Runtimes);
    let ages: Vec<String> = (0..t.len()).map(|p| t.cell(p, 8)).collect();
    assert_eq!(ages, ["30s", "5m", "2d"]);
}

#[test]
fn paste_goes_into_the_command_line_filter_and_typed_confirmation() {
    let mut app = fixtures::app();
    // Ignored in normal mode.
    assert!(update(&mut app, Msg::Paste("q".into())).is_empty());
    assert!(!app.ui.quit);
    typed(&mut app, ":");
    update(&mut app, Msg::Paste("rollout wor\u{1b}[31mker\n".into()));
    assert!(matches!(&app.ui.mode, Mode::Command { input, .. } if input == "rollout worker"));
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.screen(),
        &Screen::Rollout(crate::fixtures::cluster(), ("demo".into(), "worker".into()))
    );

    let mut app = fixtures::app();
    typed(&mut app, "/");
    update(&mut app, Msg::Paste("revo\r\nsecond line".into()));
    app.refresh();
    assert_eq!(app.list(ListView::Runtimes).filter, "revo");
    assert_eq!(app.table(ListView::Runtimes).len(), 1);

    let mut app = fixtures::app();
    typed(&mut app, ":ns ");
    update(&mut app, Msg::Paste("  demo  ".into()));
    let eff = press(&mut app, KeyCode::Enter);
    assert!(
        matches!(eff.first(), Some(Effect::Rescope { scope: Scope::Namespace(n), .. }) if n == "demo")
    );
}

#[test]
fn watch_events_update_rows_and_relist_replaces() {
    let mut app = fixtures::app();
    let web = app.clusters[0]
        .data
        .store
        .get(Kind::Runtime, &("demo".into(), "web".into()))
        .expect("web");
    update(
        &mut app,
        Msg::Watch(Kind::Runtime, WatchEvent::Delete(web.clone())),
    );
    app.refresh();
    assert_eq!(app.table(ListView::Runtimes).total(), 2);
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::Init));
    update(
        &mut app,
        Msg::Watch(Kind::Runtime, WatchEvent::InitApply(web)),
    );
    // Until InitDone the old state stays.
    app.refresh();
    assert_eq!(app.table(ListView::Runtimes).total(), 2);
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::InitDone));
    app.refresh();
    assert_eq!(app.table(ListView::Runtimes).total(), 1);
    assert!(app.ui.dirty);
}

#[test]
fn rollout_and_details_scroll() {
    let mut app = fixtures::app();
    typed(&mut app, "jd");
    typed(&mut app, "jjj");
    assert_eq!(app.ui.scroll, 3);
    typed(&mut app, "g");
    assert_eq!(app.ui.scroll, 0);
    typed(&mut app, "k");
    assert_eq!(app.ui.scroll, 0);
}

#[test]
fn events_of_an_old_connection_are_dropped_after_a_switch() {
    let mut app = fixtures::app();
    let web = app.clusters[0]
        .data
        .store
        .get(Kind::Runtime, &("demo".into(), "web".into()))
        .expect("web");
    let old = fixtures::origin(&app);
    typed(&mut app, ":ns other");
    press(&mut app, KeyCode::Enter);
    assert_ne!(app.session.generation, old.generation);
    update(
        &mut app,
        Msg::Watched(
            old,
            WatchKey::all(Kind::Runtime),
            WatchEvent::Apply(web.clone()),
        ),
    );
    assert_eq!(
        app.clusters[0].data.store.count(Kind::Runtime),
        0,
        "stale event ignored"
    );
    let current = fixtures::origin(&app);
    update(
        &mut app,
        Msg::Watched(
            current,
            WatchKey::all(Kind::Runtime),
            WatchEvent::Apply(web),
        ),
    );
    assert_eq!(app.clusters[0].data.store.count(Kind::Runtime), 1);
}

#[test]
fn a_resumed_watch_keeps_its_data_and_is_synced_again() {
    let mut app = fixtures::app();
    let before = app.clusters[0].data.store.runtimes.len();
    assert!(before > 0);
    update(
        &mut app,
        Msg::Watch(Kind::Runtime, WatchEvent::Error("refused".into())),
    );
    assert!(app.clusters[0].data.reconnecting(ListView::Runtimes));
    assert!(matches!(
        app.clusters[0].data.connection(),
        Some((Kind::Runtime, WatchState::Reconnecting(_)))
    ));
    // The last data stays while reconnecting …
    assert_eq!(app.clusters[0].data.store.runtimes.len(), before);
    // … and a resume (no Init/InitDone) makes it current again.
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::Resumed));
    assert!(!app.clusters[0].data.reconnecting(ListView::Runtimes));
    assert_eq!(app.clusters[0].data.connection(), None);
    assert_eq!(app.clusters[0].data.store.runtimes.len(), before);

    // A watch still in its first list is not made Synced by a resume: only
    // its InitDone says the data is complete.
    update(&mut app, Msg::Watch(Kind::Node, WatchEvent::Init));
    update(
        &mut app,
        Msg::Watch(Kind::Node, WatchEvent::Error("refused".into())),
    );
    update(&mut app, Msg::Watch(Kind::Node, WatchEvent::Init));
    update(&mut app, Msg::Watch(Kind::Node, WatchEvent::Resumed));
    assert!(matches!(
        app.clusters[0].data.connection(),
        Some((Kind::Node, WatchState::Reconnecting(_)))
    ));
    update(&mut app, Msg::Watch(Kind::Node, WatchEvent::InitDone));
    assert_eq!(app.clusters[0].data.connection(), None);

    // A watch refused after its list, then allowed: running again.
    update(
        &mut app,
        Msg::Watch(Kind::Node, WatchEvent::Denied("forbidden".into())),
    );
    assert_eq!(app.clusters[0].data.denied().len(), 1);
    update(&mut app, Msg::Watch(Kind::Node, WatchEvent::Resumed));
    assert!(app.clusters[0].data.denied().is_empty());
}

/// A pod of the fixture's, as a watch event would bring it again.
fn a_pod(app: &App) -> Object {
    let key = app.clusters[0]
        .data
        .store
        .pods
        .keys()
        .next()
        .cloned()
        .expect("a pod");
    app.clusters[0]
        .data
        .store
        .get(Kind::Pod, &key)
        .expect("pod")
}

#[test]
fn only_live_views_whose_inputs_changed_are_rebuilt() {
    let mut app = fixtures::app();
    assert_eq!(app.current_list(), Some(ListView::Runtimes));
    assert!(ListView::ALL.iter().all(|v| !app.stale(0, *v)));
    let handlers = app.clusters[0].rows.built[ListView::Handlers.index()];

    // A pod changes while Runtimes is shown: nothing on screen reads pods.
    let pod = a_pod(&app);
    update(&mut app, Msg::Watch(Kind::Pod, WatchEvent::Apply(pod)));
    assert!(app.ui.dirty);
    assert!(!app.stale(0, ListView::Runtimes) && !app.stale(0, ListView::Grants));
    assert!(app.stale(0, ListView::Handlers) && app.stale(0, ListView::Retained));
    app.refresh();
    // Handlers is not on screen: rebuilt once for its tab count (issue 31),
    // then not again within COUNT_REFRESH_SECONDS.
    assert_ne!(
        app.clusters[0].rows.built[ListView::Handlers.index()],
        handlers
    );
    let handlers = app.clusters[0].rows.built[ListView::Handlers.index()];
    let pod = a_pod(&app);
    update(&mut app, Msg::Watch(Kind::Pod, WatchEvent::Apply(pod)));
    app.refresh();
    assert_eq!(
        app.clusters[0].rows.built[ListView::Handlers.index()],
        handlers
    );
    assert!(app.stale(0, ListView::Handlers));

    // Shown, it is rebuilt; Retained (not shown) stays stale.
    press(&mut app, KeyCode::Char('3'));
    assert_eq!(app.current_list(), Some(ListView::Handlers));
    assert!(!app.stale(0, ListView::Handlers));
    assert_ne!(
        app.clusters[0].rows.built[ListView::Handlers.index()],
        handlers
    );
    assert!(app.stale(0, ListView::Retained));

    // Grants are live on any screen (the status bar reads them).
    let g = app.clusters[0]
        .data
        .store
        .grants
        .keys()
        .next()
        .cloned()
        .expect("a grant");
    let g = app.clusters[0]
        .data
        .store
        .get(Kind::RuntimeGrant, &g)
        .expect("grant");
    update(
        &mut app,
        Msg::Watch(Kind::RuntimeGrant, WatchEvent::Apply(g)),
    );
    app.refresh();
    assert!(!app.stale(0, ListView::Grants));
}

#[test]
fn time_passing_rebuilds_nothing_but_redraws() {
    let mut app = fixtures::app();
    let built = app.clusters[0].rows.built;
    let version = app.clusters[0].data.store.version;
    app.ui.dirty = false;
    let later = fixtures::now() + k8s_openapi::jiff::SignedDuration::from_secs(3600);
    update(&mut app, Msg::Tick(later));
    assert!(app.ui.dirty, "ages on screen change: a frame is drawn");
    app.refresh();
    assert_eq!(app.clusters[0].rows.built, built);
    assert_eq!(app.clusters[0].data.store.version, version);
}

#[test]
fn details_of_a_reduced_kind_fetch_the_whole_object() {
    let mut app = fixtures::app();
    let pod = a_pod(&app);
    let key = pod.key();
    let eff = app.open(Screen::Details(
        crate::fixtures::cluster(),
        Kind::Pod,
        key.clone(),
    ));
    assert!(
        eff.contains(&Effect::Fetch(
            fixtures::origin(&app),
            Kind::Pod,
            key.clone()
        )),
        "{eff:?}"
    );
    // A Runtime is kept whole: nothing to fetch.
    let rt = app.clusters[0]
        .data
        .store
        .runtimes
        .keys()
        .next()
        .cloned()
        .expect("runtime");
    let eff = app.open(Screen::Details(
        crate::fixtures::cluster(),
        Kind::Runtime,
        rt,
    ));
    assert!(
        !eff.iter().any(|e| matches!(e, Effect::Fetch(..))),
        "{eff:?}"
    );
    app.ui.screens.pop();

    // The answer is kept for that screen only, and for this connection.
    let g = fixtures::origin(&app);
    let older = Origin {
        generation: g.generation + 1,
        ..g.clone()
    };
    let elsewhere = Origin {
        cluster: ClusterId::new("another"),
        ..g.clone()
    };
    for origin in [older, elsewhere] {
        update(
            &mut app,
            Msg::Fetched(origin, Kind::Pod, key.clone(), Ok(Some(pod.clone()))),
        );
        assert!(app.ui.details.is_none(), "another connection's answer");
    }
    update(
        &mut app,
        Msg::Fetched(g.clone(), Kind::Pod, key.clone(), Ok(Some(pod.clone()))),
    );
    assert!(matches!(&app.ui.details, Some((_, Kind::Pod, k, Ok(Some(_)))) if *k == key));

    // The pod changes: read again.
    let eff = update(
        &mut app,
        Msg::Watched(
            g.clone(),
            WatchKey::all(Kind::Pod),
            WatchEvent::Apply(pod.clone()),
        ),
    );
    assert_eq!(
        eff,
        vec![Effect::Fetch(fixtures::origin(&app), Kind::Pod, key)]
    );
    // Another pod's change fetches nothing.
    let mut other = pod;
    if let Object::Pod(p) = &mut other {
        p.metadata.name = Some("someone-else".into());
    }
    let eff = update(
        &mut app,
        Msg::Watched(g, WatchKey::all(Kind::Pod), WatchEvent::Apply(other)),
    );
    assert!(eff.is_empty(), "{eff:?}");
}
