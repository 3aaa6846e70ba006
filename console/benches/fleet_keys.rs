//! Issue 56's model figure without a cluster: key press → redrawn frame and
//! watch event → rebuilt frame on N clusters' stores merged, against the
//! same on one cluster's store (the floor), each cluster the benchmark's
//! world at S/4, driven as `berth-bench --fleet`'s `model_times` drives it.
//! Prints ratios only. Run:
//! `cargo bench -p berth-console --bench fleet_keys`.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use berth_console::model::{App, Kind, ListView, Msg, Scope, update};
use berth_console::store::ClusterId;
use berth_console::testkit::{World, median};
use berth_world::Size;

#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Presses per figure (`BERTH_PRESSES` to profile the loop itself).
fn presses() -> usize {
    std::env::var("BERTH_PRESSES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30)
}
const CLUSTERS: usize = 3;

fn quarter() -> World {
    World {
        size: Size {
            runtimes: Size::S.runtimes / 4,
            nodes: Size::S.nodes / 4,
            ..Size::S
        },
        revoked: World::S.revoked,
    }
}

fn fleet(n: usize) -> App {
    let ids: Vec<ClusterId> = (0..n)
        .map(|i| ClusterId::new(format!("fleet-{i}")))
        .collect();
    let mut app = App::of_fleet(ids, Scope::All, berth_console::testkit::now());
    for i in 0..n {
        let one = berth_console::testkit::app_with(quarter().stream());
        let c = one.clusters.into_iter().next().expect("one cluster");
        app.clusters[i].data = c.data;
    }
    app
}

struct Times {
    keys: Duration,
    switch: Duration,
    down: Duration,
    events: Duration,
}

fn times(mut app: App) -> Times {
    let mut term = Terminal::new(TestBackend::new(160, 50)).expect("test terminal");
    let mut draw = |app: &mut App| {
        app.refresh();
        term.draw(|f| {
            berth_console::views::draw(f, app);
        })
        .expect("draw");
    };
    draw(&mut app);
    let views = ['1', '3', '4'];
    let (mut keys, mut switch, mut down, mut events) = (vec![], vec![], vec![], vec![]);
    for i in 0..presses() {
        let t = Instant::now();
        update(
            &mut app,
            Msg::Key(KeyEvent::new(
                KeyCode::Char(views[i % 3]),
                KeyModifiers::NONE,
            )),
        );
        draw(&mut app);
        keys.push(t.elapsed());
        switch.push(t.elapsed());
        let t = Instant::now();
        update(
            &mut app,
            Msg::Key(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::NONE)),
        );
        draw(&mut app);
        keys.push(t.elapsed());
        down.push(t.elapsed());
        let t = Instant::now();
        let c = i % app.clusters.len();
        app.clusters[c].data.store.touch(Kind::Runtime);
        app.clusters[c].data.store.touch(Kind::Pod);
        draw(&mut app);
        events.push(t.elapsed());
    }
    // What was measured is every cluster's rows, not a loading screen.
    let clusters = app.clusters.len();
    for (view, rows) in [
        (ListView::Runtimes, quarter().size.runtimes),
        (ListView::Retained, quarter().retained_rows()),
    ] {
        assert_eq!(app.table(view).total(), clusters * rows, "{view:?}");
    }
    Times {
        keys: median(keys),
        switch: median(switch),
        down: median(down),
        events: median(events),
    }
}

fn main() {
    let one = times(fleet(1));
    let many = times(fleet(CLUSTERS));
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    println!("figure            one cluster   {CLUSTERS} clusters   ratio");
    for (name, a, b) in [
        ("key → frame", one.keys, many.keys),
        ("  view switch", one.switch, many.switch),
        ("  row down", one.down, many.down),
        ("event → frame", one.events, many.events),
    ] {
        println!("{name:<16} {a:>12.2?} {b:>11.2?} {:>7.2}", ratio(b, a));
    }
}
