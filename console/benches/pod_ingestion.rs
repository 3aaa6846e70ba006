//! Issue 32's first Handlers and Retained frames without a cluster, the
//! part that is berth's own: the 20,000 Pods of scale S
//! (`berth_console::testkit`) as LIST pages of JSON text, parsed into typed
//! `Pod`s as `berth-bench`'s LIST floor does, against parsed and taken
//! into the store as the console does (read as [`super::wire::WirePod`]s,
//! then [`super::ingest::admit`] and [`super::Store::apply`]), and as it
//! did before it read Pods off the wire (typed `Pod`s, then the same).
//! Prints the ratios (no timing assertion); asserts every Pod is stored.
//! Run:
//! `cargo bench -p berth-console --bench pod_ingestion`.

use std::hint::black_box;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kube::core::ObjectList;
use serde_json::json;

use berth_console::store::wire::WirePod;
use berth_console::store::{Kind, Object, Store, compact, ingest};
use berth_console::testkit::{World, median};

#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Objects per LIST page (the console's page size).
const PAGE: usize = 500;
const ROUNDS: usize = 5;

fn parse<K: serde::de::DeserializeOwned + Clone>(page: &str) -> ObjectList<K> {
    serde_json::from_str(page).expect("a PodList page")
}

fn main() {
    let world = World::S;
    let pods: Vec<_> = world.pod_values().collect();
    let pages: Vec<String> = pods
        .chunks(PAGE)
        .map(|items| {
            json!({"apiVersion": "v1", "kind": "PodList",
                   "metadata": {"resourceVersion": "1"}, "items": items})
            .to_string()
        })
        .collect();
    // The share of Pods that take the fast path (nothing to clean).
    let clean = pods
        .iter()
        .filter(|v| {
            let pod: Pod = serde_json::from_value((*v).clone()).expect("a Pod");
            match compact::compact(pod.into()) {
                Object::Pod(mut p) => {
                    ingest::strip(p.as_mut());
                    berth_shared::sanitize::is_clean_serialized(&p)
                }
                _ => false,
            }
        })
        .count();
    println!("{clean} of {} Pods have nothing to clean", pods.len());
    drop(pods);
    let bytes: usize = pages.iter().map(String::len).sum();
    let (mut floor, mut typed, mut console) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let t = Instant::now();
        for page in &pages {
            black_box(parse::<Pod>(page).items.len());
        }
        floor.push(t.elapsed());

        let t = Instant::now();
        let mut store = Store::default();
        for page in &pages {
            for pod in parse::<Pod>(page).items {
                if let Some(obj) = ingest::admit(pod) {
                    store.apply(obj);
                }
            }
        }
        typed.push(t.elapsed());
        assert_eq!(
            store.count(Kind::Pod),
            world.size.runtimes * world.size.replicas
        );
        drop(store);

        let t = Instant::now();
        let mut store = Store::default();
        for page in &pages {
            for pod in parse::<WirePod>(page).items {
                if let Some(obj) = ingest::admit(Pod::from(pod)) {
                    store.apply(obj);
                }
            }
        }
        console.push(t.elapsed());
        assert_eq!(
            store.count(Kind::Pod),
            world.size.runtimes * world.size.replicas
        );
    }
    let (f, t, c) = (median(floor), median(typed), median(console));
    let ratio = |d: std::time::Duration| d.as_secs_f64() / f.as_secs_f64();
    println!(
        "{} Pods in {} pages ({} MB of JSON), median of {ROUNDS}: parsed as Pods {f:.2?}; \
         read as WirePods and stored {c:.2?} ({:.2}×); parsed as Pods and stored {t:.2?} ({:.2}×)",
        world.size.runtimes * world.size.replicas,
        pages.len(),
        bytes / 1_000_000,
        ratio(c),
        ratio(t),
    );
}
