//! The console's side of the test kit: the benchmark's world of scale S
//! (`berth_world`, the one `berth-bench` creates in a
//! cluster) taken into an [`App`] as its watches would deliver it, for the
//! console's benchmarks (`console/benches/`) and the unit tests that need
//! a big world. Compiled only for tests and with the `testkit` feature
//! (which the benchmarks turn on), never into the shipped `berth`.
//!
//! One deviation from `berth-bench`'s cluster: the last [`World::revoked`]
//! granted Runtimes have lost their RuntimeGrant, so that the Retained
//! view has rows (their Deployment, ReplicaSet and Pods) and a benchmark
//! of it cannot measure an empty table.

use std::time::Duration;

use berth_shared::api::{Runtime, RuntimeGrant};
use berth_world::Size;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use crate::model::{App, Kind, Msg, Object, Scope, WatchEvent, update};
use crate::store::ingest::admit;

mod model_times;
pub use model_times::{ModelTimes, Redraw, model_times};

/// The world, and how many of its granted Runtimes lost their grant.
#[derive(Clone, Copy, Debug)]
pub struct World {
    pub size: Size,
    /// Of the granted, how many lost their RuntimeGrant (retained).
    pub revoked: usize,
}

impl World {
    /// Scale S of issue 14, eight of its grants gone.
    pub const S: World = World {
        size: Size::S,
        revoked: 8,
    };

    /// Runtimes referencing a class whose grant is gone.
    pub fn retained_runtimes(&self) -> usize {
        self.revoked.min(self.size.granted)
    }

    /// Rows the Retained view must show: each revoked Runtime's
    /// Deployment, ReplicaSet and Pods.
    pub fn retained_rows(&self) -> usize {
        self.retained_runtimes() * (2 + self.size.replicas)
    }

    /// Every object of the world, reduced and sanitized as the watches
    /// deliver them.
    pub fn objects(&self) -> Vec<Object> {
        self.stream().collect()
    }

    /// [`World::objects`], made one Runtime's objects at a time: a
    /// benchmark that ingests them as they come holds no more of them at
    /// once than a watch's page (the whole world made first would add a
    /// peak of every Pod as a whole `Pod`, which the console never holds).
    pub fn stream(&self) -> impl Iterator<Item = Object> + '_ {
        let size = &self.size;
        let cluster = size
            .class_values()
            .into_iter()
            .chain(size.node_values())
            .chain(size.namespace_values())
            .filter_map(admit_value);
        let runtimes = (0..size.runtimes).flat_map(move |i| {
            self.runtime_values(i)
                .into_iter()
                .filter_map(admit_value)
                .collect::<Vec<_>>()
        });
        cluster.chain(runtimes)
    }

    /// Every Pod of the world as the apiserver serves it, whole (JSON),
    /// one Runtime's at a time.
    pub fn pod_values(&self) -> impl Iterator<Item = Value> + '_ {
        (0..self.size.runtimes).flat_map(|i| {
            let mut values = self.runtime_values(i);
            values.retain(|v| v["kind"] == "Pod");
            values
        })
    }

    fn runtime_values(&self, i: usize) -> Vec<Value> {
        let published = i < self.size.granted - self.retained_runtimes();
        self.size.runtime_values(&self.size.planned(i), published)
    }
}

/// The fixed "now" of an app made here.
pub fn now() -> Timestamp {
    "2026-11-29T12:00:00Z"
        .parse()
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// An app fed with `objs` through the watch path, every kind synced: as
/// the console's concurrent watches deliver them, every kind's list is
/// open at once, the objects arrive interleaved as they come and each
/// kind's list completes at the end.
pub fn app_with(objs: impl IntoIterator<Item = Object>) -> App {
    let mut app = App::new("scale", Scope::All, now());
    for kind in Kind::ALL {
        update(&mut app, Msg::Watch(*kind, WatchEvent::Init));
    }
    for o in objs {
        update(&mut app, Msg::Watch(o.kind(), WatchEvent::InitApply(o)));
    }
    for kind in Kind::ALL {
        update(&mut app, Msg::Watch(*kind, WatchEvent::InitDone));
    }
    app
}

/// An object of the world as the watches deliver it.
fn admit_value(v: Value) -> Option<Object> {
    match v["kind"].as_str() {
        Some("Runtime") => admit::<Runtime>(from(v)),
        Some("RuntimeGrant") => admit::<RuntimeGrant>(from(v)),
        Some("Deployment") => admit::<Deployment>(from(v)),
        Some("ReplicaSet") => admit::<ReplicaSet>(from(v)),
        Some("Pod") => admit::<Pod>(from(v)),
        Some("Node") => admit::<Node>(from(v)),
        Some("Namespace") => admit::<Namespace>(from(v)),
        Some("RuntimeClass") => admit::<RuntimeClass>(from(v)),
        other => panic!("synthetic object of kind {other:?}"),
    }
}

fn from<K: serde::de::DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).unwrap_or_else(|e| panic!("synthetic object: {e}"))
}

/// The middle of a benchmark's samples (the upper middle of an even count;
/// zero for none).
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Resident set size of this process, kB (Linux; 0 elsewhere).
pub fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// What a drawn buffer shows, one line of text per row: the screen a test
/// or a benchmark reads back from a `TestBackend`.
pub fn screen_text(buf: &ratatui::buffer::Buffer) -> String {
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}
