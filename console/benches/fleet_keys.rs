//! Issue 56's model figure without a cluster: key press → redrawn frame and
//! watch event → rebuilt frame on N clusters' stores merged, against the
//! same on one cluster's store (the floor), each cluster the benchmark's
//! world at S/4, driven by `testkit::model_times`, the loop `berth-bench
//! --fleet` runs on its clusters' stores.
//! Prints ratios only. Run:
//! `cargo bench -p berth-console --bench fleet_keys`.

use std::time::Duration;

use berth_console::model::{App, ListView, Scope};
use berth_console::store::ClusterId;
use berth_console::testkit::{ModelTimes, World, model_times};
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

/// The model's times on `app` (`testkit::model_times`, the loop
/// `berth-bench --fleet` runs), once every cluster's rows are checked to
/// be what was measured, not a loading screen.
fn times(mut app: App) -> ModelTimes {
    let times = model_times(&mut app, presses());
    let clusters = app.clusters.len();
    for (view, rows) in [
        (ListView::Runtimes, quarter().size.runtimes),
        (ListView::Retained, quarter().retained_rows()),
    ] {
        assert_eq!(app.table(view).total(), clusters * rows, "{view:?}");
    }
    times
}

fn main() {
    let one = times(fleet(1));
    let many = times(fleet(CLUSTERS));
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    println!("figure            one cluster   {CLUSTERS} clusters   ratio");
    for (name, a, b) in [
        ("key → frame", one.key_to_frame, many.key_to_frame),
        ("  view switch", one.switch_to_frame, many.switch_to_frame),
        ("  row down", one.move_to_frame, many.move_to_frame),
        ("event → frame", one.event_to_frame, many.event_to_frame),
    ] {
        println!("{name:<16} {a:>12.2?} {b:>11.2?} {:>7.2}", ratio(b, a));
    }
}
