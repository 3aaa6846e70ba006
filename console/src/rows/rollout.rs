//! Rollout: one Runtime live — revision, image from → to, counts against
//! desired, old and new ReplicaSets with their pods, the progress deadline
//! and recent events; a table of every rollout for `berth get rollouts`.

use std::collections::BTreeSet;

use berth_shared::api::RolloutPhase;
use berth_shared::sanitize;
// As the store keeps them (slim): the names below are the kinds'.
use crate::store::meta::SlimMeta;
use crate::store::slim_apps::{SlimDeployment as Deployment, SlimReplicaSet as ReplicaSet};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::table::{Cell, Row, RowRef, RowTone};
use super::{NONE, human_duration, state_blocks};
use crate::store::{Kind, ObjKey, Store};

/// A ReplicaSet of a rollout with its pods.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSetEntry {
    pub name: String,
    pub revision: String,
    pub current: bool,
    pub desired: i32,
    pub ready: i32,
    pub image: String,
    pub pods: Vec<PodEntry>,
}

/// One pod of a rollout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodEntry {
    pub name: String,
    pub phase: String,
    pub ready: bool,
    pub node: String,
}

/// One event line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventEntry {
    pub age: String,
    #[serde(rename = "type")]
    pub type_: String,
    pub reason: String,
    pub object: String,
    pub message: String,
}

/// The live rollout of one Runtime.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutRow {
    pub namespace: String,
    pub name: String,
    pub revision: String,
    pub phase: String,
    pub desired: i32,
    pub updated: i32,
    pub ready: i32,
    pub available: i32,
    pub unavailable: i32,
    pub image_from: String,
    pub image_to: String,
    pub last_successful_image: String,
    /// `in 9m`, `exceeded`, or `-`.
    pub deadline: String,
    pub blocked: bool,
    pub replica_sets: Vec<ReplicaSetEntry>,
    pub events: Vec<EventEntry>,
}

/// Rollouts of every Runtime (for `berth get rollouts`).
pub fn rollout_rows(store: &Store, now: Timestamp) -> Vec<RolloutRow> {
    store
        .runtimes
        .keys()
        .filter_map(|k| rollout(store, k, now))
        .collect()
}

fn revision_of(meta: &SlimMeta) -> Option<String> {
    meta.revision().map(String::from)
}

fn first_image(t: Option<&crate::store::slim_apps::SlimTemplate>) -> String {
    t.and_then(|t| t.image())
        .map_or_else(|| NONE.into(), String::from)
}

/// The Deployment managed for a Runtime: owned by it (the first by name),
/// or named like it. A lookup in the store's owner index.
pub fn deployment_of<'a>(store: &'a Store, key: &ObjKey) -> Option<&'a Deployment> {
    store
        .links
        .of(Kind::Deployment, &key.0, "Runtime", &key.1)
        .find_map(|name| store.deployments.get(&(key.0.clone(), name.clone())))
        .or_else(|| store.deployments.get(key))
        .map(Box::as_ref)
}

/// Objects of `kind` in `namespace` that name `owner_kind`/`owner` among
/// their owners, in name order (the owner index).
fn owned<'a, T>(
    store: &'a Store,
    map: &'a std::collections::BTreeMap<ObjKey, Box<T>>,
    kind: Kind,
    namespace: &str,
    owner_kind: &str,
    owner: &str,
) -> Vec<&'a T> {
    store
        .links
        .of(kind, namespace, owner_kind, owner)
        .filter_map(|name| map.get(&(namespace.to_string(), name.clone())))
        .map(Box::as_ref)
        .collect()
}

/// The rollout of one Runtime, if it is known.
pub fn rollout(store: &Store, key: &ObjKey, now: Timestamp) -> Option<RolloutRow> {
    let rt = store.runtimes.get(key)?;
    let status = rt.status.clone().unwrap_or_default();
    let ro = status.rollout.clone().unwrap_or_default();
    let up = status.upgrade.clone().unwrap_or_default();
    let deployment = deployment_of(store, key);
    let dep_name = deployment
        .and_then(|d| d.metadata.name.clone())
        .unwrap_or_default();
    let dep_rev = deployment.and_then(|d| revision_of(&d.metadata));
    let mut rss: Vec<&ReplicaSet> = owned(
        store,
        &store.replicasets,
        Kind::ReplicaSet,
        &key.0,
        "Deployment",
        &dep_name,
    );
    rss.sort_by_key(|rs| {
        std::cmp::Reverse(
            revision_of(&rs.metadata)
                .and_then(|r| r.parse::<i64>().ok())
                .unwrap_or(0),
        )
    });
    let replica_sets: Vec<ReplicaSetEntry> = rss
        .iter()
        .map(|rs| {
            let name = rs.metadata.name.clone().unwrap_or_default();
            let revision = revision_of(&rs.metadata).unwrap_or_else(|| NONE.into());
            let pods = owned(store, &store.pods, Kind::Pod, &key.0, "ReplicaSet", &name)
                .into_iter()
                .map(|p| PodEntry {
                    name: p.metadata.name.clone().unwrap_or_default(),
                    phase: p.phase().unwrap_or(NONE).to_string(),
                    ready: p.ready(),
                    node: p.node_name().unwrap_or(NONE).to_string(),
                })
                .collect();
            ReplicaSetEntry {
                current: dep_rev.as_deref() == Some(revision.as_str()),
                revision,
                desired: rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0),
                ready: rs
                    .status
                    .as_ref()
                    .and_then(|s| s.ready_replicas)
                    .unwrap_or(0),
                image: first_image(rs.spec.as_ref().and_then(|s| s.template.as_ref())),
                name,
                pods,
            }
        })
        .collect();
    let deadline = deployment
        .map(|d| deadline_text(d, ro.phase, now))
        .unwrap_or_else(|| NONE.into());
    let mut names: Vec<(String, String)> = vec![("Runtime".into(), key.1.clone())];
    if !dep_name.is_empty() {
        names.push(("Deployment".into(), dep_name.clone()));
    }
    for rs in &replica_sets {
        names.push(("ReplicaSet".into(), rs.name.clone()));
        for p in &rs.pods {
            names.push(("Pod".into(), p.name.clone()));
        }
    }
    let events = events_for(store, &key.0, &names, now, 10);
    let state_blocked = status
        .profile
        .as_ref()
        .is_some_and(|p| state_blocks(p.state));
    Some(RolloutRow {
        namespace: key.0.clone(),
        name: key.1.clone(),
        revision: ro
            .revision
            .map(|r| r.to_string())
            .or(dep_rev)
            .unwrap_or_else(|| NONE.into()),
        phase: ro.phase.as_str().to_string(),
        desired: ro.desired,
        updated: ro.updated,
        ready: ro.ready,
        available: ro.available,
        unavailable: ro.unavailable,
        image_from: up.current_image.unwrap_or_else(|| NONE.into()),
        image_to: up.desired_image.unwrap_or_else(|| NONE.into()),
        last_successful_image: up.last_successful_image.unwrap_or_else(|| NONE.into()),
        deadline,
        blocked: state_blocked || ro.phase == RolloutPhase::Blocked,
        replica_sets,
        events,
    })
}

fn deadline_text(d: &Deployment, phase: RolloutPhase, now: Timestamp) -> String {
    let conds = d
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let progressing = conds.iter().find(|c| c.type_ == "Progressing");
    if progressing.is_some_and(|c| c.reason.as_deref() == Some("ProgressDeadlineExceeded")) {
        return "exceeded".into();
    }
    if phase == RolloutPhase::Complete
        || progressing.is_some_and(|c| c.reason.as_deref() == Some("NewReplicaSetAvailable"))
    {
        return "met".into();
    }
    let secs = d
        .spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .unwrap_or(600);
    let Some(since) = progressing.and_then(|c| c.last_update_time.as_ref()) else {
        return format!("{secs}s");
    };
    let left = i64::from(secs) - (now.as_second() - since.0.as_second());
    if left <= 0 {
        "exceeded".into()
    } else {
        format!("in {}", human_duration(left))
    }
}

fn event_time(e: &Event) -> Option<i64> {
    e.last_timestamp
        .as_ref()
        .or(e.first_timestamp.as_ref())
        .map(|t| t.0.as_second())
        .or_else(|| e.event_time.as_ref().map(|t| t.0.as_second()))
        .or_else(|| {
            e.metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.as_second())
        })
}

/// Recent events (newest first) about any of `objects` (`(kind, name)`) in
/// `namespace`.
pub fn events_for(
    store: &Store,
    namespace: &str,
    objects: &[(String, String)],
    now: Timestamp,
    limit: usize,
) -> Vec<EventEntry> {
    // Event names from the index, in key order (as a scan would find
    // them) so that the stable sort below breaks ties the same way.
    let names: BTreeSet<&String> = objects
        .iter()
        .flat_map(|(k, n)| store.links.of(Kind::Event, namespace, k, n))
        .collect();
    let mut evs: Vec<&Event> = names
        .into_iter()
        .filter_map(|name| store.events.get(&(namespace.to_string(), name.clone())))
        .map(Box::as_ref)
        .collect();
    evs.sort_by_key(|e| std::cmp::Reverse(event_time(e).unwrap_or(0)));
    evs.into_iter()
        .take(limit)
        .map(|e| EventEntry {
            age: event_time(e)
                .map(|t| human_duration(now.as_second() - t))
                .unwrap_or_else(|| NONE.into()),
            type_: e.type_.clone().unwrap_or_default(),
            reason: e.reason.clone().unwrap_or_default(),
            object: format!(
                "{}/{}",
                e.involved_object.kind.clone().unwrap_or_default(),
                e.involved_object.name.clone().unwrap_or_default()
            ),
            message: sanitize::value(e.message.as_deref().unwrap_or_default()),
        })
        .collect()
}

/// Events about one object of the store.
pub fn events_of(store: &Store, kind: Kind, key: &ObjKey, now: Timestamp) -> Vec<EventEntry> {
    events_for(
        store,
        &key.0,
        &[(kind.label().to_string(), key.1.clone())],
        now,
        50,
    )
}

/// Column headers of the rollouts table (`berth get rollouts`).
pub const HEADERS: &[&str] = &[
    "NAMESPACE",
    "NAME",
    "REVISION",
    "PHASE",
    "UPDATED",
    "READY",
    "AVAILABLE",
    "DESIRED",
    "IMAGE",
    "DEADLINE",
];

impl Row for RolloutRow {
    fn headers() -> &'static [&'static str] {
        HEADERS
    }

    fn cells(&self) -> Vec<Cell> {
        let image = if self.image_from == self.image_to || self.image_from == NONE {
            self.image_to.clone()
        } else {
            format!("{} -> {}", self.image_from, self.image_to)
        };
        let revision = match self.revision.parse::<i64>() {
            Ok(n) => Cell::count(n),
            Err(_) => Cell::text(&self.revision),
        };
        vec![
            Cell::text(&self.namespace),
            Cell::text(&self.name),
            revision,
            Cell::text(&self.phase),
            Cell::count(self.updated.into()),
            Cell::count(self.ready.into()),
            Cell::count(self.available.into()),
            Cell::count(self.desired.into()),
            Cell::text(image),
            Cell::text(&self.deadline),
        ]
    }

    fn tone(&self) -> RowTone {
        if self.blocked {
            RowTone::Problem
        } else {
            RowTone::Normal
        }
    }

    fn target(&self) -> RowRef {
        RowRef::Runtime((self.namespace.clone(), self.name.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::store::Object;
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::{ObjectReference, Pod};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::api::ObjectMeta;

    #[test]
    fn image_change_shows_from_and_to() {
        let app = fixtures::app();
        let rows = rollout_rows(&app.clusters[0].data.store, fixtures::now());
        let web = rows.iter().find(|r| r.name == "web").expect("web");
        let cells = web.cells();
        assert_eq!(cells.len(), HEADERS.len());
        assert!(cells[8].text.contains(" -> "), "{:?}", cells[8]);
        let worker = rows.iter().find(|r| r.name == "worker").expect("worker");
        assert_eq!(worker.tone(), RowTone::Problem);
    }

    fn owned_by(ns: &str, name: &str, owner_kind: &str, owner: &str) -> ObjectMeta {
        ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            owner_references: Some(vec![OwnerReference {
                kind: owner_kind.into(),
                name: owner.into(),
                ..Default::default()
            }]),
            ..Default::default()
        }
    }

    /// Two namespaces with the same names in each, ReplicaSets and pods
    /// of several Runtimes interleaved, decoys owned by namesakes of other
    /// kinds, and events about each: what a scan with `has_owner` picks is
    /// what the index picks.
    fn world() -> Store {
        let mut store = Store::default();
        for ns in ["a", "b"] {
            for r in 0..6 {
                let rt = format!("rt{r}");
                store.apply(Object::from(berth_shared::api::Runtime {
                    metadata: ObjectMeta {
                        namespace: Some(ns.into()),
                        name: Some(rt.clone()),
                        ..Default::default()
                    },
                    spec: Default::default(),
                    status: None,
                }));
                // rt5 has no Deployment: the rollout has no ReplicaSets.
                if r == 5 {
                    continue;
                }
                let dep = format!("{rt}-dep");
                store.apply(Object::from(Deployment {
                    metadata: owned_by(ns, &dep, "Runtime", &rt),
                    ..Default::default()
                }));
                for v in 0..3 {
                    let rs = format!("{dep}-{v}");
                    store.apply(Object::from(ReplicaSet {
                        metadata: owned_by(ns, &rs, "Deployment", &dep),
                        ..Default::default()
                    }));
                    for p in 0..(r + v) % 4 {
                        store.apply(Object::from(Pod {
                            metadata: owned_by(ns, &format!("{rs}-p{p}"), "ReplicaSet", &rs),
                            ..Default::default()
                        }));
                    }
                    // Owned by a Deployment, not a ReplicaSet, of that name.
                    store.apply(Object::from(Pod {
                        metadata: owned_by(ns, &format!("{rs}-decoy"), "Deployment", &rs),
                        ..Default::default()
                    }));
                    store.apply(Object::from(Event {
                        metadata: ObjectMeta {
                            namespace: Some(ns.into()),
                            name: Some(format!("{rs}.ev")),
                            ..Default::default()
                        },
                        involved_object: ObjectReference {
                            kind: Some("ReplicaSet".into()),
                            name: Some(rs.clone()),
                            ..Default::default()
                        },
                        message: Some(format!("scaled {rs}")),
                        ..Default::default()
                    }));
                }
            }
        }
        store
    }

    #[test]
    fn indexed_rows_pick_what_a_scan_picks() {
        let store = world();
        let rows = rollout_rows(&store, fixtures::now());
        assert_eq!(rows.len(), 12);
        for row in &rows {
            let ns = row.namespace.as_str();
            let dep = store
                .deployments
                .iter()
                .find(|((n, _), d)| n == ns && d.metadata.has_owner("Runtime", &row.name))
                .map(|(k, _)| k.1.clone())
                .unwrap_or_default();
            let want_rss: BTreeSet<String> = store
                .replicasets
                .iter()
                .filter(|((n, _), rs)| n == ns && rs.metadata.has_owner("Deployment", &dep))
                .map(|(k, _)| k.1.clone())
                .collect();
            let got_rss: BTreeSet<String> =
                row.replica_sets.iter().map(|r| r.name.clone()).collect();
            assert_eq!(got_rss, want_rss, "{ns}/{}", row.name);
            for rs in &row.replica_sets {
                let want: Vec<String> = store
                    .pods
                    .iter()
                    .filter(|((n, _), p)| n == ns && p.metadata.has_owner("ReplicaSet", &rs.name))
                    .map(|(k, _)| k.1.clone())
                    .collect();
                let got: Vec<String> = rs.pods.iter().map(|p| p.name.clone()).collect();
                assert_eq!(got, want, "{ns}/{}", rs.name);
            }
            let got_events: BTreeSet<String> =
                row.events.iter().map(|e| e.message.clone()).collect();
            let want_events: BTreeSet<String> =
                want_rss.iter().map(|rs| format!("scaled {rs}")).collect();
            assert_eq!(got_events, want_events, "{ns}/{}", row.name);
        }
        // Something was found at all (the comparison is not vacuous).
        assert!(
            rows.iter()
                .any(|r| r.replica_sets.iter().any(|s| !s.pods.is_empty()))
        );
    }
}
