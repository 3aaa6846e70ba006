//! Snapshot tests of every view on a TestBackend, from fixture data. The
//! snapshot holds the text and every styled run (fg, bg, modifiers), so
//! highlighting is checked too. `BERTH_UPDATE_GOLDEN=1` rewrites them.

use std::fmt::Write as _;
use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier, Style};

use crate::fixtures;
use crate::model::{App, Kind, Msg, WatchEvent, update};

pub(crate) fn render(app: &mut App, w: u16, h: u16) -> Buffer {
    app.refresh();
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    let mut fit = None;
    term.draw(|f| fit = Some(super::draw(f, app)))
        .expect("draw");
    // What fitted reaches the model as it does in the app.
    if let Some(fit) = fit {
        update(app, Msg::Drawn(fit));
    }
    term.backend().buffer().clone()
}

fn style_of(c: &ratatui::buffer::Cell) -> Style {
    Style::new().fg(c.fg).bg(c.bg).add_modifier(c.modifier)
}

/// Text lines, then runs of non-default style per row.
pub(crate) fn snapshot(buf: &Buffer) -> String {
    let area = buf.area;
    let mut text = String::new();
    let mut styles = String::new();
    for y in 0..area.height {
        let mut line = String::new();
        let mut runs: Vec<(u16, u16, Style)> = Vec::new();
        for x in 0..area.width {
            let cell = &buf[(x, y)];
            line.push_str(cell.symbol());
            let st = style_of(cell);
            let plain = cell.fg == Color::Reset
                && cell.bg == Color::Reset
                && cell.modifier == Modifier::empty();
            if plain {
                continue;
            }
            match runs.last_mut() {
                Some((_, end, s)) if *end + 1 == x && *s == st => *end = x,
                _ => runs.push((x, x, st)),
            }
        }
        let _ = writeln!(text, "{}", line.trim_end());
        for (a, b, s) in runs {
            let _ = writeln!(
                styles,
                "{y:>2}:{a:>3}-{b:<3} fg={:?} bg={:?} mod={:?}",
                s.fg.unwrap_or(Color::Reset),
                s.bg.unwrap_or(Color::Reset),
                s.add_modifier
            );
        }
    }
    format!("{text}--- styles\n{styles}")
}

pub(crate) fn check_snapshot(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("src/views/snapshots")
        .join(format!("{name}.snap"));
    if std::env::var_os("BERTH_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        std::fs::write(&path, actual).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing snapshot {}; run with BERTH_UPDATE_GOLDEN=1",
            path.display()
        )
    });
    if expected != actual {
        panic!(
            "snapshot {name} differs (BERTH_UPDATE_GOLDEN=1 to accept)\n--- expected\n{expected}\n--- actual\n{actual}"
        );
    }
}

fn key(app: &mut App, code: KeyCode) {
    update(app, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

fn keys(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

pub(crate) fn snap(name: &str, app: &mut App) {
    let buf = render(app, 140, 24);
    check_snapshot(name, &snapshot(&buf));
}

/// The same screen at 80×24, the smallest common terminal.
fn snap80(name: &str, app: &mut App) {
    let buf = render(app, 80, 24);
    check_snapshot(&format!("{name}-80x24"), &snapshot(&buf));
}

pub(crate) fn text_of(buf: &Buffer) -> String {
    snapshot(buf)
        .split("--- styles")
        .next()
        .unwrap_or_default()
        .to_string()
}

pub(crate) fn line_with(buf: &Buffer, needle: &str) -> Option<String> {
    text_of(buf)
        .lines()
        .find(|l| l.contains(needle))
        .map(str::to_string)
}

#[test]
fn runtimes_view() {
    let mut app = fixtures::app();
    snap("runtimes", &mut app);
    snap80("runtimes", &mut app);
}

#[test]
fn ages_are_drawn_from_the_time_of_the_frame() {
    let mut app = fixtures::app();
    let text = text_of(&render(&mut app, 140, 24));
    let web = |t: &str| {
        t.lines()
            .find(|l| l.contains("shop/web"))
            .map(str::to_string)
            .unwrap_or_default()
    };
    assert!(web(&text).contains("Complete    24h"), "{text}");
    let built = app.clusters[0].rows.built;
    // Two days later: the rows are not rebuilt, the age drawn moves on.
    update(
        &mut app,
        Msg::Tick("2026-12-01T12:00:00Z".parse().expect("time")),
    );
    let text = text_of(&render(&mut app, 140, 24));
    assert_eq!(app.clusters[0].rows.built, built);
    assert!(web(&text).contains("Complete    3d"), "{text}");
}

#[test]
fn every_list_view_at_80x24() {
    for (key, name) in [('2', "grants"), ('3', "handlers"), ('4', "retained")] {
        let mut app = fixtures::app();
        update(
            &mut app,
            Msg::Key(KeyEvent::new(KeyCode::Char(key), KeyModifiers::NONE)),
        );
        snap80(name, &mut app);
    }
}

#[test]
fn runtimes_blocked_row_is_red() {
    let mut app = fixtures::app();
    let buf = render(&mut app, 140, 24);
    let row = (0..24)
        .find(|&y| {
            (0..140)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                .contains("worker")
        })
        .expect("worker row drawn");
    let x = (0..140)
        .find(|&x| buf[(x, row)].symbol() == "R" && buf[(x + 1, row)].symbol() == "e")
        .expect("Revoked cell");
    assert_eq!(buf[(x, row)].fg, Color::Red);
    assert!(buf[(x, row)].modifier.contains(Modifier::BOLD));
}

#[test]
fn grants_view() {
    let mut app = fixtures::app();
    key(&mut app, KeyCode::Char('2'));
    snap("grants", &mut app);
}

#[test]
fn grants_view_warns_about_a_shared_project_environment_pair() {
    let mut objs = fixtures::objects();
    objs.extend(fixtures::namespaces_sharing_demo_production());
    let mut app = fixtures::app_with(objs);
    key(&mut app, KeyCode::Char('2'));
    snap("grants-shared-scope", &mut app);
}

#[test]
fn handlers_view() {
    let mut app = fixtures::app();
    key(&mut app, KeyCode::Char('3'));
    snap("handlers", &mut app);
}

#[test]
fn retained_view() {
    let mut app = fixtures::app();
    key(&mut app, KeyCode::Char('4'));
    snap("retained", &mut app);
}

/// A workload that predates the workload RuntimeClass policy and names a
/// granted class: marked `out` in BERTH and `outside berth, bypasses grant
/// …` in REASON, in red; both still readable at 80 columns.
#[test]
fn retained_view_marks_workloads_outside_berth() {
    use k8s_openapi::api::apps::v1::Deployment;
    let mut app = fixtures::app();
    let legacy: Deployment = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "old-importer", "namespace": "legacy"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "old-importer"}},
            "template": {"metadata": {"labels": {"app": "old-importer"}},
                "spec": {"runtimeClassName": "bounded-runc",
                    "containers": [{"name": "importer", "image": "x"}]}}},
        "status": {"replicas": 1, "readyReplicas": 1}
    }))
    .expect("deployment");
    let legacy = crate::store::ingest::prepare(legacy).expect("ingest");
    update(
        &mut app,
        Msg::Watch(
            Kind::Deployment,
            WatchEvent::Apply(crate::model::Object::from(legacy)),
        ),
    );
    key(&mut app, KeyCode::Char('4'));
    snap("retained-outside", &mut app);
    snap80("retained-outside", &mut app);
    let buf = render(&mut app, 140, 24);
    let row = line_with(&buf, "old-importer").expect("legacy row");
    assert!(
        row.contains("outside berth, bypasses grant bounded-web"),
        "{row}"
    );
    let buf = render(&mut app, 80, 24);
    let row = line_with(&buf, "old-import").expect("legacy row at 80");
    assert!(row.contains("outside be") && row.contains(" out "), "{row}");
}

#[test]
fn rollout_view() {
    let mut app = fixtures::app();
    // web is the second row of the Runtimes table (api, web, worker).
    key(&mut app, KeyCode::Char('j'));
    key(&mut app, KeyCode::Enter);
    snap("rollout", &mut app);
}

#[test]
fn details_view() {
    let mut app = fixtures::app();
    keys(&mut app, "jjd");
    snap("details", &mut app);
}

#[test]
fn pod_details_show_the_fetched_whole_object() {
    let mut app = fixtures::app();
    let key = app.clusters[0]
        .data
        .store
        .pods
        .keys()
        .next()
        .cloned()
        .expect("a pod");
    app.open(crate::model::Screen::Details(
        crate::fixtures::cluster(),
        Kind::Pod,
        key.clone(),
    ));
    let text = text_of(&render(&mut app, 140, 40));
    assert!(text.contains("summary; reading the whole object"), "{text}");
    let mut full = Box::new(
        app.clusters[0]
            .data
            .store
            .pods
            .get(&key)
            .expect("pod")
            .to_pod(),
    );
    full.metadata.annotations = Some([("note".to_string(), "FULL-MARKER".to_string())].into());
    let g = crate::fixtures::origin(&app);
    update(
        &mut app,
        Msg::Fetched(
            g.clone(),
            Kind::Pod,
            key.clone(),
            Ok(Some(crate::store::Object::Pod(full))),
        ),
    );
    let text = text_of(&render(&mut app, 140, 40));
    assert!(text.contains("FULL-MARKER"), "{text}");
    assert!(!text.contains("summary"), "{text}");
    update(
        &mut app,
        Msg::Fetched(g, Kind::Pod, key, Err("forbidden \u{1b}[2J".into())),
    );
    let text = text_of(&render(&mut app, 140, 40));
    assert!(text.contains("cannot read the whole object"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text}");
}

#[test]
fn handler_details_lists_workloads() {
    let mut app = fixtures::app();
    keys(&mut app, "3");
    key(&mut app, KeyCode::Enter);
    let buf = render(&mut app, 140, 60);
    let text = snapshot(&buf);
    assert!(text.contains("Workloads using bounded-runc"), "{text}");
    assert!(text.contains("rollback revision"), "{text}");
}

#[test]
fn help_view() {
    let mut app = fixtures::app();
    key(&mut app, KeyCode::Char('?'));
    let buf = render(&mut app, 140, 40);
    check_snapshot("help", &snapshot(&buf));
}

#[test]
fn help_scrolls_to_everything_at_80x24() {
    let mut app = fixtures::app();
    app.session.read_only = true;
    key(&mut app, KeyCode::Char('?'));
    let buf = render(&mut app, 80, 24);
    check_snapshot("help-80x24", &snapshot(&buf));
    let top = text_of(&buf);
    assert!(top.contains("↓ more"), "{top}");
    // Scroll to the end: quit, the commands and the read-only note.
    key(&mut app, KeyCode::Char('G'));
    let buf = render(&mut app, 80, 24);
    check_snapshot("help-80x24-end", &snapshot(&buf));
    let end = text_of(&buf);
    for needle in ["q / Ctrl-c", ":ctx", ":q ", "read-only (--read-only)"] {
        assert!(end.contains(needle), "{needle} missing:\n{end}");
    }
    // Every line is reachable line by line from the top, and whole: it
    // fits inside the 80-column border.
    key(&mut app, KeyCode::Char('g'));
    let mut seen = text_of(&render(&mut app, 80, 24));
    for _ in 0..100 {
        key(&mut app, KeyCode::Char('j'));
        seen.push_str(&text_of(&render(&mut app, 80, 24)));
    }
    assert!(app.ui.show_help);
    for l in &super::help::lines(&app) {
        let l: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
        assert!(l.chars().count() <= 78, "cut at 80 columns: {l}");
        assert!(seen.contains(l.trim()), "never shown: {l}");
    }
}

#[test]
fn status_bar_keeps_safety_states_first_at_80_columns() {
    let mut app = fixtures::app();
    app.session.read_only = true;
    app.clusters[0].id = crate::model::ClusterId::new(format!(
        "arn:aws:eks:eu-west-1:123456789012:cluster/{}",
        "very-long-name-".repeat(4)
    ));
    app.derived = crate::model::Derived::for_clusters(&app.cluster_ids());
    app.clusters[0].rows = Default::default();
    app.refresh_all();
    update(
        &mut app,
        Msg::Watch(Kind::Node, WatchEvent::Denied("nodes is forbidden".into())),
    );
    check_snapshot("statusbar", &snapshot(&render(&mut app, 140, 24)));
    let buf = render(&mut app, 80, 24);
    check_snapshot("statusbar-80x24", &snapshot(&buf));
    let status = line_with(&buf, "read-only").expect("read-only shown");
    assert!(status.trim_start().starts_with("read-only"), "{status}");
    assert!(status.contains("no access: Node"), "{status}");
    assert!(status.contains("connected"), "{status}");
}

#[test]
fn an_expired_lease_means_no_leader_and_stale_status() {
    let mut app = fixtures::app();
    // The fixture's lease was renewed at 11:59:50 for 15s.
    let text = text_of(&render(&mut app, 140, 24));
    assert!(text.contains("leader berth-agent-7f9c"), "{text}");
    assert!(!text.contains("stale"), "{text}");
    update(
        &mut app,
        Msg::Tick("2026-11-29T12:00:06Z".parse().expect("time")),
    );
    assert_eq!(app.leader(), None);
    assert_eq!(
        app.clusters[0].leader_state(&app.session.agent_lease, app.now),
        crate::model::LeaderState::Expired(Some("berth-agent-7f9c".into()))
    );
    let buf = render(&mut app, 140, 24);
    snap("no-leader", &mut app);
    let text = text_of(&buf);
    assert!(text.contains("no leader: status may be stale"), "{text}");
    assert!(text.contains("leader none"), "{text}");
    assert!(
        line_with(&buf, "Runtimes [all]").is_some_and(|l| l.contains("status may be stale")),
        "{text}"
    );
    // The rollout shows the agent's status too.
    keys(&mut app, "j");
    key(&mut app, KeyCode::Enter);
    let buf = render(&mut app, 140, 24);
    assert!(
        line_with(&buf, "Rollout demo/web").is_some_and(|l| l.contains("status may be stale")),
        "{}",
        text_of(&buf)
    );
    key(&mut app, KeyCode::Esc);
    // Handlers are computed from the cluster itself: no warning there.
    key(&mut app, KeyCode::Char('3'));
    let buf = render(&mut app, 140, 24);
    assert!(
        line_with(&buf, "Handlers [all]").is_some_and(|l| !l.contains("stale")),
        "{}",
        text_of(&buf)
    );
}

#[test]
fn no_color_draws_no_colour_but_keeps_emphasis() {
    let mut app = fixtures::app();
    app.ui.no_color = true;
    let buf = render(&mut app, 140, 24);
    check_snapshot("no-color", &snapshot(&buf));
    for cell in buf.content() {
        assert_eq!((cell.fg, cell.bg), (Color::Reset, Color::Reset));
    }
    // The selection and the blocked row are still told apart.
    assert!(
        buf.content()
            .iter()
            .any(|c| c.modifier.contains(Modifier::REVERSED))
    );
    assert!(
        buf.content()
            .iter()
            .any(|c| c.modifier.contains(Modifier::BOLD))
    );
    // Without the option there is colour (the test can fail).
    app.ui.no_color = false;
    let buf = render(&mut app, 140, 24);
    assert!(buf.content().iter().any(|c| c.fg == Color::Red));
}

#[test]
fn namespace_picker_at_80x24() {
    let mut app = fixtures::app();
    keys(&mut app, ":ns");
    key(&mut app, KeyCode::Enter);
    snap80("namespaces", &mut app);
    snap("namespaces", &mut app);
}

#[test]
fn command_mode_with_completion() {
    let mut app = fixtures::app();
    keys(&mut app, ":r");
    key(&mut app, KeyCode::Tab);
    snap("command", &mut app);
}

#[test]
fn filter_and_sort_shown() {
    let mut app = fixtures::app();
    keys(&mut app, "/wor");
    key(&mut app, KeyCode::Enter);
    keys(&mut app, "lls");
    snap("filter-sort", &mut app);
}

#[test]
fn statusbar_shows_reconnecting_with_the_error() {
    let mut app = fixtures::app();
    update(
        &mut app,
        Msg::Watch(
            Kind::Runtime,
            WatchEvent::Error("connection refused\u{1b}[2J".into()),
        ),
    );
    let buf = render(&mut app, 140, 24);
    let text = snapshot(&buf);
    assert!(
        text.contains("reconnecting… Runtime: connection refused"),
        "{text}"
    );
    check_snapshot("reconnecting", &text);
    // Recovers after the relist.
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::Init));
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::InitDone));
    let text = snapshot(&render(&mut app, 140, 24));
    assert!(text.contains("connected"), "{text}");
}

/// The row of the table whose text contains `needle`: its y and whether
/// every cell of its text is dimmed.
pub(crate) fn row_dimmed(buf: &Buffer, needle: &str) -> Option<bool> {
    let area = buf.area;
    (0..area.height).find_map(|y| {
        let line: String = (0..area.width).map(|x| buf[(x, y)].symbol()).collect();
        line.contains(needle).then(|| {
            // Inside the borders, on the cells that carry text.
            (1..area.width - 1)
                .filter(|&x| !buf[(x, y)].symbol().trim().is_empty())
                .all(|x| buf[(x, y)].modifier.contains(Modifier::DIM))
        })
    })
}

#[test]
fn rows_are_dimmed_while_their_watch_reconnects_and_not_after_a_resume() {
    for no_color in [false, true] {
        let mut app = fixtures::app();
        app.ui.no_color = no_color;
        let buf = render(&mut app, 140, 24);
        assert_eq!(row_dimmed(&buf, "shop/web"), Some(false));
        assert!(!text_of(&buf).contains("last known data"));

        // A watch another view needs does not dim this one's rows.
        update(
            &mut app,
            Msg::Watch(Kind::RuntimeClass, WatchEvent::Error("refused".into())),
        );
        let buf = render(&mut app, 140, 24);
        assert_eq!(row_dimmed(&buf, "shop/web"), Some(false));
        update(
            &mut app,
            Msg::Watch(Kind::RuntimeClass, WatchEvent::Resumed),
        );

        update(
            &mut app,
            Msg::Watch(
                Kind::Runtime,
                WatchEvent::Error("connection refused".into()),
            ),
        );
        let buf = render(&mut app, 140, 24);
        let text = text_of(&buf);
        // Every row, the selected one too, still shown but dimmed (a
        // style attribute, so it survives --no-color), and said in words.
        for row in ["shop/api", "shop/web", "shop/worker"] {
            assert_eq!(row_dimmed(&buf, row), Some(true), "{row}\n{text}");
        }
        assert!(
            text.contains("3/3 · last known data, reconnecting…"),
            "{text}"
        );
        // A resumed watch (no relist) is current again: normal style.
        update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::Resumed));
        let buf = render(&mut app, 140, 24);
        let text = text_of(&buf);
        assert_eq!(row_dimmed(&buf, "shop/web"), Some(false), "{text}");
        assert!(!text.contains("last known data"), "{text}");
        assert!(!text.contains("reconnecting"), "{text}");
    }
}

#[test]
fn empty_and_loading_states() {
    let mut app = App::new(
        "ctx",
        crate::model::Scope::Namespace("x".into()),
        fixtures::now(),
    );
    let text = snapshot(&render(&mut app, 80, 10));
    assert!(text.contains("loading…"), "{text}");
    assert!(text.contains("connecting…"), "{text}");
    // Counts are unknown, not zero, until each view's first list is done.
    assert!(
        text.contains("1:Runtimes (…)") && text.contains("2:Grants (…)"),
        "{text}"
    );
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::Init));
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::InitDone));
    let text = text_of(&render(&mut app, 80, 10));
    assert!(text.contains("1:Runtimes (0)"), "{text}");
    assert!(text.contains("2:Grants (…)"), "{text}");
    assert!(text.contains("nothing here"), "{text}");
    // A view whose list is still running says so, even when another is done.
    key(&mut app, KeyCode::Char('2'));
    let text = text_of(&render(&mut app, 80, 10));
    assert!(
        text.contains("loading…") && !text.contains("nothing here"),
        "{text}"
    );
    // Still unknown after a watch error, known again once listed.
    update(
        &mut app,
        Msg::Watch(Kind::RuntimeGrant, WatchEvent::Error("refused".into())),
    );
    assert!(text_of(&render(&mut app, 80, 10)).contains("2:Grants (…)"));
    update(&mut app, Msg::Watch(Kind::RuntimeGrant, WatchEvent::Init));
    update(
        &mut app,
        Msg::Watch(Kind::RuntimeGrant, WatchEvent::InitDone),
    );
    let text = text_of(&render(&mut app, 80, 10));
    assert!(
        text.contains("2:Grants (0)") && text.contains("nothing here"),
        "{text}"
    );
}

fn app_with_runtimes(n: usize) -> App {
    let mut app = fixtures::app();
    for i in 0..n {
        let mut rt = berth_shared::api::Runtime::new(
            &format!("rt-{i:06}"),
            berth_shared::api::RuntimeSpec {
                application: "bulk".into(),
                service: format!("svc-{i}"),
                ..Default::default()
            },
        );
        rt.metadata.namespace = Some(format!("ns-{}", i % 50));
        app.clusters[0]
            .data
            .store
            .apply(crate::model::Object::from(rt));
    }
    app.refresh();
    app
}

/// Frame time at 50,000 rows against 100 rows (run with `--ignored
/// --nocapture`). Prints ratios only; with a virtualized table they stay
/// near 1. The floor is an empty-frame draw measured in the same run.
#[test]
#[ignore = "benchmark: prints frame-time ratios"]
fn frame_time_ratio_50k_vs_100() {
    use std::time::Instant;
    const FRAMES: u32 = 200;
    let mut term = Terminal::new(TestBackend::new(160, 50)).expect("terminal");
    let mut time = |app: &mut App| {
        // Scroll to the middle so the window is not the first page.
        let mid = app.table(crate::model::ListView::Runtimes).len() / 2;
        app.ui.lists[0].selected = mid;
        term.draw(|f| {
            super::draw(f, app);
        })
        .expect("warm-up");
        let start = Instant::now();
        for i in 0..FRAMES {
            app.ui.lists[0].selected = mid + (i as usize % 3);
            term.draw(|f| {
                super::draw(f, app);
            })
            .expect("draw");
        }
        start.elapsed() / FRAMES
    };
    let mut floor_app = App::new("ctx", crate::model::Scope::All, fixtures::now());
    let floor = time(&mut floor_app);
    let mut small = app_with_runtimes(100);
    let t100 = time(&mut small);
    let mut big = app_with_runtimes(50_000);
    let t50k = time(&mut big);
    let ratio = t50k.as_secs_f64() / t100.as_secs_f64();
    println!(
        "frame: empty {floor:?}, 100 rows {t100:?}, 50000 rows {t50k:?}; \
         ratio 50k/100 = {ratio:.2}, 100/empty = {:.2}, 50k/empty = {:.2}",
        t100.as_secs_f64() / floor.as_secs_f64(),
        t50k.as_secs_f64() / floor.as_secs_f64()
    );
}

#[test]
fn only_visible_rows_are_drawn_for_large_tables() {
    let mut app = app_with_runtimes(5_000);
    app.ui.lists[0].selected = 4_000;
    let buf = render(&mut app, 140, 24);
    let text = snapshot(&buf);
    // The selected row is scrolled into view; the first rows are not drawn.
    let name = |i: usize| {
        let t = app.table(crate::model::ListView::Runtimes);
        t.cell(i, 1)
    };
    assert!(text.contains(&name(4_000)), "{text}");
    assert!(!text.contains(&name(0)), "{text}");
    assert!(text.contains("5003/5003"), "{text}");
}

#[test]
fn denied_watches_are_not_reconnecting() {
    let mut app = App::new(
        "ctx",
        crate::model::Scope::Namespace("x".into()),
        fixtures::now(),
    );
    update(&mut app, Msg::Watch(Kind::Runtime, WatchEvent::Init));
    update(
        &mut app,
        Msg::Watch(
            Kind::Runtime,
            WatchEvent::Denied("runtimes.berth.dev is forbidden".into()),
        ),
    );
    let text = snapshot(&render(&mut app, 120, 10));
    assert!(
        text.contains("cannot read Runtime: runtimes.berth.dev is forbidden"),
        "{text}"
    );
    assert!(text.contains("no access: Runtime"), "{text}");
    assert!(!text.contains("reconnecting"), "{text}");
}

#[test]
fn blocked_rollout_is_flagged_in_red() {
    let mut app = fixtures::app();
    keys(&mut app, "G");
    key(&mut app, KeyCode::Enter);
    let buf = render(&mut app, 140, 30);
    let y = (0..30)
        .find(|&y| {
            (0..140)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                .contains("BLOCKED")
        })
        .expect("BLOCKED line");
    let x = (0..140).find(|&x| buf[(x, y)].symbol() == "B").expect("B");
    assert_eq!(buf[(x, y)].fg, Color::Red);
}

#[test]
fn details_scroll_stops_at_the_end() {
    let mut app = fixtures::app();
    keys(&mut app, "jd");
    render(&mut app, 140, 24);
    keys(&mut app, "G");
    let end = app.ui.scroll;
    assert!(end > 0 && end < 1000, "{end}");
    keys(&mut app, "k");
    assert_eq!(app.ui.scroll, end - 1);
}

#[test]
fn plan_view_shows_the_pending_file_revocations_first_and_is_reachable() {
    let mut objs = crate::rows::plan::tests::objects();
    objs.push(crate::rows::plan::tests::pending());
    let mut app = fixtures::app_with(objs);
    // `:plan` opens it.
    key(&mut app, KeyCode::Char(':'));
    keys(&mut app, "plan");
    key(&mut app, KeyCode::Enter);
    assert!(matches!(app.screen(), crate::model::Screen::Plan(_)));
    let buf = render(&mut app, 140, 24);
    let text = text_of(&buf);
    let revoke = text.find("REVOKE").expect("revocation shown");
    let roll = text.find("ROLL").expect("roll shown");
    assert!(revoke < roll, "{text}");
    snap("plan", &mut app);
    // Back, then from the RestartRequired indication: the status bar names
    // it and Enter on a grant whose file changed opens the plan.
    key(&mut app, KeyCode::Esc);
    key(&mut app, KeyCode::Char('2'));
    let buf = render(&mut app, 140, 24);
    assert!(
        line_with(&buf, "restart required: :plan").is_some(),
        "{}",
        text_of(&buf)
    );
    key(&mut app, KeyCode::Enter);
    assert!(matches!(app.screen(), crate::model::Screen::Plan(_)));
}

#[test]
fn plan_view_without_a_pending_file_says_so() {
    let mut app = fixtures::app_with(crate::rows::plan::tests::objects());
    key(&mut app, KeyCode::Char(':'));
    keys(&mut app, "plan");
    key(&mut app, KeyCode::Enter);
    let buf = render(&mut app, 140, 24);
    assert!(
        line_with(&buf, "No pending grants file").is_some(),
        "{}",
        text_of(&buf)
    );
}
