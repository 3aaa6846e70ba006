//! Snapshot tests of the Explain and Findings screens at 140 columns and
//! at 80×24, and how they are reached: `x` on a row, `:explain`,
//! `:findings`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::tests::{check_snapshot, render, snapshot};
use crate::fixtures;
use crate::model::{App, Kind, Msg, Screen, update};

fn key(app: &mut App, code: KeyCode) {
    update(app, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

fn keys(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

fn command(app: &mut App, line: &str) {
    key(app, KeyCode::Char(':'));
    keys(app, line);
    key(app, KeyCode::Enter);
}

fn both(name: &str, app: &mut App) -> String {
    let wide = snapshot(&render(app, 140, 24));
    check_snapshot(name, &wide);
    check_snapshot(&format!("{name}-80x24"), &snapshot(&render(app, 80, 24)));
    wide
}

#[test]
fn x_on_a_runtime_explains_it() {
    let mut app = fixtures::app();
    // The Runtimes view, sorted by namespace/name: select demo/worker.
    let worker = app
        .table(crate::model::ListView::Runtimes)
        .visible
        .iter()
        .position(|at| {
            app.table(crate::model::ListView::Runtimes).parts[0]
                .table
                .cells[at.row as usize]
                .iter()
                .any(|c| c == "worker")
        })
        .expect("worker row");
    for _ in 0..worker {
        key(&mut app, KeyCode::Char('j'));
    }
    key(&mut app, KeyCode::Char('x'));
    assert_eq!(
        app.screen(),
        &Screen::Explain(
            crate::fixtures::cluster(),
            Kind::Runtime,
            ("demo".into(), "worker".into())
        )
    );
    let text = both("explain-runtime", &mut app);
    assert!(text.contains("Revoked"), "{text}");
    assert!(text.contains("FAIL    binding"), "{text}");
    assert!(text.contains("berth explain KIND/NS/NAME"), "{text}");
    // Esc goes back to the list.
    key(&mut app, KeyCode::Esc);
    assert!(matches!(app.screen(), Screen::List(_)));
}

#[test]
fn explain_command_opens_a_pod() {
    let mut app = fixtures::app();
    command(&mut app, "explain pod/legacy/legacy-batch");
    assert_eq!(
        app.screen(),
        &Screen::Explain(
            crate::fixtures::cluster(),
            Kind::Pod,
            ("legacy".into(), "legacy-batch".into())
        )
    );
    let text = both("explain-pod", &mut app);
    assert!(text.contains("Retained"), "{text}");
}

#[test]
fn x_without_an_explainable_row_says_what_it_reads() {
    let mut app = fixtures::app();
    key(&mut app, KeyCode::Char('2'));
    key(&mut app, KeyCode::Char('x'));
    assert!(matches!(app.screen(), Screen::List(_)));
    assert!(
        app.ui
            .flash
            .as_deref()
            .is_some_and(|f| f.contains("x explains")),
        "{:?}",
        app.ui.flash
    );
}

#[test]
fn findings_view() {
    let mut app = fixtures::app();
    command(&mut app, "findings");
    assert_eq!(app.screen(), &Screen::Findings);
    let text = both("findings", &mut app);
    assert!(text.contains("retained-after-revocation"), "{text}");
    // Worst first: the first finding line is an error.
    let first = text
        .lines()
        .find(|l| l.contains("error ") || l.contains("warning ") || l.contains("info "))
        .unwrap_or_default();
    assert!(first.contains("error"), "{text}");
}
