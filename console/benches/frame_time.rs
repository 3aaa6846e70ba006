//! Issue 14's console target without a cluster: on the benchmark's world
//! of scale S (`berth_console::testkit`), a watch event (a Runtime and a Pod
//! touched, as `berth-bench`'s `model_times` does) → rebuilt, redrawn
//! frame, against redrawing the same frame with nothing changed, for the
//! Runtimes, Handlers and Retained views. Prints ratios only (no timing
//! assertion); asserts that every view shows the rows the world implies,
//! so it cannot measure an empty screen. Run:
//! `cargo bench -p berth-console --bench frame_time`.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use berth_console::model::{App, Kind, ListView, Msg, update};
use berth_console::testkit::{Redraw, World, median, rss_kb};
use berth_world::Size;

/// Measured with the allocator that ships (console/src/main.rs): under
/// glibc's malloc, `berth-bench` measured the allocator more than the
/// console (issue 32).
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Frames measured per view.
const FRAMES: usize = 21;

fn main() {
    let world = World::S;
    let rss0 = rss_kb();
    let t = Instant::now();
    // Made as they are ingested, as a watch's pages arrive: the world made
    // whole first would put its own peak into the RSS measured.
    let mut app = berth_console::testkit::app_with(world.stream());
    let ingested = t.elapsed();
    let rss1 = rss_kb();
    println!(
        "world S: {} objects made and put into the store in {ingested:?}; \
         RSS {} MB → {} MB",
        [
            Kind::Runtime,
            Kind::Deployment,
            Kind::ReplicaSet,
            Kind::Pod,
            Kind::Node
        ]
        .iter()
        .map(|k| app.clusters[0].data.store.count(*k))
        .sum::<usize>(),
        rss0 / 1024,
        rss1 / 1024
    );
    print_store_sizes(&app.clusters[0].data.store);
    let mut redraw = Redraw::default();
    let views = [
        (ListView::Runtimes, '1', world.size.runtimes),
        (ListView::Handlers, '3', world.size.classes),
        (ListView::Retained, '4', world.retained_rows()),
    ];
    println!("view       event→frame   redraw floor   ratio");
    for (view, key, rows) in views {
        update(
            &mut app,
            Msg::Key(KeyEvent::new(KeyCode::Char(key), KeyModifiers::NONE)),
        );
        redraw.frame(&mut app);
        let text = redraw.screen();
        // What is measured is the full view, not a loading or empty screen.
        assert_eq!(app.table(view).len(), rows, "{view:?}");
        assert!(
            text.contains(&format!("{rows}/{rows}")),
            "{view:?} shows its {rows} rows:\n{text}"
        );
        if view == ListView::Handlers {
            // The classes' usage is the granted Runtimes' Deployment,
            // ReplicaSet and Pods: the analysis ran over them.
            let used: usize = app.clusters[0]
                .rows
                .handlers
                .iter()
                .map(|r| r.workloads.len())
                .sum();
            assert_eq!(used, world.size.granted * (2 + world.size.replicas));
        }
        let (mut events, mut floor) = (Vec::new(), Vec::new());
        for _ in 0..FRAMES {
            let t = Instant::now();
            app.clusters[0].data.store.touch(Kind::Runtime);
            app.clusters[0].data.store.touch(Kind::Pod);
            redraw.frame(&mut app);
            events.push(t.elapsed());
            assert!(!app.stale(0, view), "{view:?} was rebuilt");
            let t = Instant::now();
            redraw.frame(&mut app);
            floor.push(t.elapsed());
        }
        assert_eq!(app.table(view).len(), rows, "{view:?}");
        let (e, f) = (median(events), median(floor));
        println!(
            "{:<10} {e:>11.2?} {f:>14.2?} {:>7.1}",
            view.title(),
            e.as_secs_f64() / f.as_secs_f64().max(1e-9)
        );
    }
    for v in ListView::TABS {
        update(
            &mut app,
            Msg::Key(KeyEvent::new(
                KeyCode::Char(char::from(b'1' + v.index() as u8)),
                KeyModifiers::NONE,
            )),
        );
        redraw.frame(&mut app);
    }
    println!("RSS with every tab visited: {} MB", rss_kb() / 1024);
    // After the RSS figure, which the second world would disturb.
    let (e, f, pods) = rollout_event_to_frame(&mut app, &mut redraw);
    println!(
        "{:<10} {e:>11.2?} {f:>14.2?} {:>7.1}   (one Runtime's {pods} Pods; a Pod event)",
        "Rollout",
        e.as_secs_f64() / f.as_secs_f64().max(1e-9)
    );
    // The same at a twentieth of the Runtimes: a rollout frame costs what
    // its own rollout holds, not what the store holds.
    let small = World {
        size: Size {
            runtimes: world.size.runtimes / 20,
            granted: world.size.granted / 20,
            ..world.size
        },
        revoked: world.revoked / 20,
    };
    let mut small_app = berth_console::testkit::app_with(small.stream());
    let (es, _, _) = rollout_event_to_frame(&mut small_app, &mut Redraw::default());
    drop(small_app);
    println!(
        "Rollout event→frame at {} Runtimes {es:.2?}, at {} {e:.2?}: ratio {:.2}",
        small.size.runtimes,
        world.size.runtimes,
        e.as_secs_f64() / es.as_secs_f64().max(1e-9)
    );
}

/// Opens the Rollout of the middle Runtime and measures a watch event
/// about one of its Pods → the redrawn Rollout frame, against redrawing it
/// unchanged (medians). Asserts that the frame shows the whole rollout.
fn rollout_event_to_frame(app: &mut App, redraw: &mut Redraw) -> (Duration, Duration, usize) {
    let key = app.clusters[0]
        .data
        .store
        .runtimes
        .keys()
        .nth(app.clusters[0].data.store.runtimes.len() / 2)
        .cloned()
        .expect("a Runtime");
    app.open(berth_console::model::Screen::Rollout(
        app.clusters[0].id.clone(),
        key.clone(),
    ));
    let row = berth_console::rows::rollout(&app.clusters[0].data.store, &key, app.now)
        .expect("its rollout");
    let pods: Vec<String> = row
        .replica_sets
        .iter()
        .flat_map(|rs| rs.pods.iter().map(|p| p.name.clone()))
        .collect();
    assert!(!pods.is_empty(), "{key:?} has pods");
    let pod_key = (key.0.clone(), pods[0].clone());
    let pod =
        berth_console::model::Object::from(app.clusters[0].data.store.pods[&pod_key].to_pod());
    redraw.frame(app);
    let text = redraw.screen();
    assert!(
        !text.contains(berth_console::views::rollout::LOADING) && text.contains(&pods[0]),
        "the Rollout of {key:?} is shown whole:\n{text}"
    );
    let (mut events, mut floor) = (Vec::new(), Vec::new());
    for _ in 0..FRAMES {
        let t = Instant::now();
        update(
            app,
            Msg::Watch(
                Kind::Pod,
                berth_console::model::WatchEvent::Apply(pod.clone()),
            ),
        );
        redraw.frame(app);
        events.push(t.elapsed());
        let t = Instant::now();
        redraw.frame(app);
        floor.push(t.elapsed());
    }
    (median(events), median(floor), pods.len())
}

/// What the store holds per object of the big kinds: the inline size of
/// the typed object (every absent optional field of the k8s-openapi
/// structs still takes its room), what its data weighs as JSON, and the
/// resulting estimate for the kind. A guide to where the RSS goes, not an
/// exact count (allocator overhead and map nodes come on top).
fn print_store_sizes(store: &berth_console::store::Store) {
    use berth_console::store::kept::Kept;
    use berth_console::store::slim::SlimPod;
    use berth_console::store::slim_apps::{SlimDeployment, SlimReplicaSet, SlimTemplate};
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use std::mem::size_of;
    fn json_bytes(objs: impl Iterator<Item = impl serde::Serialize>) -> usize {
        objs.map(|o| serde_json::to_vec(&o).map_or(0, |v| v.len()))
            .sum()
    }
    let rows = [
        (
            // Kept slim, its first container inline; its data weighed as
            // the reduced Pod it stands for.
            "Pod",
            store.pods.len(),
            size_of::<SlimPod>(),
            json_bytes(store.pods.values().map(|p| p.to_pod())),
        ),
        (
            // Kept slim too, their data weighed as the reduced objects.
            "ReplicaSet",
            store.replicasets.len(),
            size_of::<SlimReplicaSet>() + size_of::<SlimTemplate>(),
            json_bytes(
                store
                    .replicasets
                    .values()
                    .map(|r| Kept::<ReplicaSet>::object(r.as_ref())),
            ),
        ),
        (
            "Deployment",
            store.deployments.len(),
            size_of::<SlimDeployment>(),
            json_bytes(
                store
                    .deployments
                    .values()
                    .map(|d| Kept::<Deployment>::object(d.as_ref())),
            ),
        ),
        (
            "Runtime",
            store.runtimes.len(),
            size_of::<berth_shared::api::Runtime>(),
            json_bytes(store.runtimes.values()),
        ),
        (
            "Node",
            store.nodes.len(),
            size_of::<k8s_openapi::api::core::v1::Node>(),
            json_bytes(store.nodes.values()),
        ),
    ];
    println!(
        "(a Pod is kept as a SlimPod of {} B inline, {} B of it its SlimMeta \
         (its label and annotation maps shared with its ReplicaSet's other Pods); \
         a k8s-openapi Pod is {} B)",
        size_of::<SlimPod>(),
        size_of::<berth_console::store::meta::SlimMeta>(),
        size_of::<k8s_openapi::api::core::v1::Pod>()
    );
    println!("kind         count  inline B/obj  JSON B/obj  ≈ MB (inline + 2×JSON)");
    for (kind, n, inline, json) in rows {
        let per = json / n.max(1);
        println!(
            "{kind:<11} {n:>6} {inline:>13} {per:>11} {:>8.1}",
            (n * (inline + 2 * per)) as f64 / 1e6
        );
    }
}
