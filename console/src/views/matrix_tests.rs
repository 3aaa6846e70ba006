//! Snapshot tests of the handler matrix, the relations screen and the tab
//! counts (issue 31), at 140 columns and at 80×24, in the pattern of
//! [`super::tests`]. `BERTH_UPDATE_GOLDEN=1` rewrites them.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;

use super::tests::{check_snapshot, render, snapshot};
use crate::fixtures;
use crate::model::{App, Kind, Msg, Object, Screen, WatchEvent, update};
use crate::rows::relations::Anchor;

fn key(app: &mut App, code: KeyCode) {
    update(app, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

fn keys(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

fn text(app: &mut App, w: u16, h: u16) -> String {
    snapshot(&render(app, w, h))
        .split("--- styles")
        .next()
        .unwrap_or_default()
        .to_string()
}

fn both(name: &str, app: &mut App) {
    check_snapshot(name, &snapshot(&render(app, 140, 24)));
    check_snapshot(&format!("{name}-80x24"), &snapshot(&render(app, 80, 24)));
}

#[test]
fn matrix_view() {
    let mut app = fixtures::app();
    keys(&mut app, "m");
    assert_eq!(app.screen(), &Screen::Matrix);
    both("matrix", &mut app);
    let t = text(&mut app, 140, 24);
    // kwok-node-2 lacks bounded-runc while the class allows it.
    assert!(t.contains("kwok-node-2"), "{t}");
    assert!(t.contains("✓-"), "{t}");
}

/// The fixture plus 200 nodes of three kinds (one reports its handlers in
/// another order) and an escape sequence in a node name.
fn two_hundred_nodes() -> App {
    let mut objs = fixtures::objects();
    for i in 0..200 {
        let handlers = match i % 3 {
            0 => json!([{"name": "runc", "features": {"recursiveReadOnlyMounts": true}},
                        {"name": "runsc", "features": {"userNamespaces": true}}]),
            1 => json!([{"name": "runsc", "features": {"userNamespaces": true}},
                        {"name": "runc", "features": {"recursiveReadOnlyMounts": true}}]),
            _ => json!([{"name": "runc"}]),
        };
        let name = if i == 199 {
            "pool-b-\u{1b}[31mevil".to_string()
        } else {
            format!("pool-{}-{i:03}", if i % 3 == 2 { "b" } else { "a" })
        };
        let node: k8s_openapi::api::core::v1::Node = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "runtimeHandlers": handlers},
        }))
        .expect("node");
        objs.push(Object::from(node));
    }
    fixtures::app_with(objs)
}

#[test]
fn matrix_view_at_200_nodes() {
    let mut app = two_hundred_nodes();
    keys(&mut app, "m");
    both("matrix-200", &mut app);
    let t = text(&mut app, 140, 24);
    // Two kinds of pool node whatever the handler order, plus the fixture's.
    assert!(t.contains("(134)"), "pool a is one group of 134 nodes: {t}");
    assert!(t.contains("pool-b-"), "{t}");
    assert!(!t.contains('\u{1b}'), "{t}");
}

#[test]
fn relations_from_a_grant_to_pods_and_back_from_a_pod() {
    let mut app = fixtures::app();
    keys(&mut app, "2/bounded-web");
    key(&mut app, KeyCode::Enter);
    keys(&mut app, "r");
    assert!(
        matches!(app.screen(), Screen::Relations(_, Anchor::Grant { name, .. }) if name == "bounded-web"),
        "{:?}",
        app.screen()
    );
    both("relations-grant", &mut app);
    // Down to the first pod: grant, class, runtime, workload, pod.
    keys(&mut app, "jjjj");
    key(&mut app, KeyCode::Enter);
    assert_eq!(
        app.screen(),
        &Screen::Relations(
            crate::fixtures::cluster(),
            Anchor::Pod(("demo".into(), "web-rev2-0".into()))
        )
    );
    both("relations-pod", &mut app);
    let t = text(&mut app, 140, 24);
    assert!(t.contains("covers this pod"), "{t}");
    // Esc goes back to the grant's relations.
    key(&mut app, KeyCode::Esc);
    assert!(matches!(
        app.screen(),
        Screen::Relations(_, Anchor::Grant { .. })
    ));
}

#[test]
fn relation_screens_watch_scoped_never_whole_kinds_of_workloads() {
    let mut app = fixtures::app();
    let anchor = Anchor::grant(&app.clusters[0].data.store, "bounded-web").expect("grant");
    let screen = Screen::Relations(crate::fixtures::cluster(), anchor);
    for w in screen.watches(&app.session.scope) {
        assert!(
            !w.is_all() || matches!(w.kind, Kind::Runtime | Kind::RuntimeGrant),
            "{w:?}"
        );
    }
    app.open(screen);
    let pod = Screen::Relations(
        crate::fixtures::cluster(),
        Anchor::Pod(("demo".into(), "web-rev2-0".into())),
    );
    for w in pod.watches(&app.session.scope) {
        assert!(
            !w.is_all() || matches!(w.kind, Kind::Runtime | Kind::RuntimeGrant),
            "{w:?}"
        );
    }
}

/// Every kind listed, but no view built yet (what the loop sees before the
/// first frame): the off-screen tabs get their counts too.
fn fresh_app(kinds: &[Kind]) -> App {
    let mut app = App::new("kwok-test", crate::model::Scope::All, fixtures::now());
    let objs = fixtures::objects();
    for kind in kinds {
        update(&mut app, Msg::Watch(*kind, WatchEvent::Init));
        for o in objs.iter().filter(|o| o.kind() == *kind) {
            update(
                &mut app,
                Msg::Watch(*kind, WatchEvent::InitApply(o.clone())),
            );
        }
        update(&mut app, Msg::Watch(*kind, WatchEvent::InitDone));
    }
    app
}

#[test]
fn every_tab_counts_once_its_inputs_are_loaded() {
    let mut app = fresh_app(Kind::ALL);
    let t = text(&mut app, 140, 24);
    assert!(t.contains("3:Handlers (4)"), "{t}");
    assert!(t.contains("4:Retained ("), "{t}");
    assert!(!t.contains("(…)"), "{t}");
    both("tabs-counted", &mut app);
    // Only what the first screen watches: no count is invented, and no
    // watch of workloads or Pods is asked for to get one.
    let mut app = fresh_app(&[Kind::Runtime, Kind::RuntimeGrant, Kind::Lease]);
    let t = text(&mut app, 140, 24);
    assert!(
        t.contains("3:Handlers (…)") && t.contains("4:Retained (…)"),
        "{t}"
    );
    assert!(!app.needed_watches(0).iter().any(|w| w.kind == Kind::Pod));
}

/// Issue 53: the canary's verdict in the Handlers view and the matrix (a
/// failing cell), and Enter on that cell: the verdict and the events of
/// the node's failing sandboxes of the class.
#[test]
fn a_failing_canary_in_the_handlers_view_the_matrix_and_its_cell() {
    let mut app = fixtures::app_with(fixtures::failing_canary());
    keys(&mut app, "3");
    both("handlers-failing-canary", &mut app);
    let t = text(&mut app, 140, 24);
    assert!(t.contains("1 failing, 1 verified"), "{t}");
    keys(&mut app, "m");
    both("matrix-failing-canary", &mut app);
    let t = text(&mut app, 140, 24);
    assert!(t.contains("✓H ✘3m"), "{t}");
    assert!(t.contains("✓H ✔5m"), "{t}");
    // kwok-node-0 is its own group (failing): the first column. The first
    // class is bounded-runc.
    key(&mut app, KeyCode::Enter);
    assert_eq!(
        app.screen(),
        &Screen::Attestation(
            app.clusters[0].id.clone(),
            "bounded-runc".into(),
            "kwok-node-0".into()
        )
    );
    both("attestation-failing", &mut app);
    let t = text(&mut app, 140, 24);
    assert!(
        t.contains("Verdict: failing (SandboxNotCreated, 3m ago)"),
        "{t}"
    );
    assert!(
        t.contains("berth-system/berth-canary-0123456789-t1-abcde  Failed"),
        "{t}"
    );
    assert!(t.contains("demo/web-rev2-9  Pending"), "{t}");
    assert!(t.contains("FailedCreatePodSandBox"), "{t}");
    // Back, and to the verified group: its cell opens a verified verdict.
    key(&mut app, KeyCode::Esc);
    keys(&mut app, "l");
    key(&mut app, KeyCode::Enter);
    let t = text(&mut app, 140, 24);
    assert!(t.contains("Verdict: verified"), "{t}");
}
