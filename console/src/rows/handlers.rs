//! Handlers: every RuntimeClass, granted or not (and referenced classes that
//! no longer exist), its handler, flags, node coverage, the workloads that
//! reference it and the shared analysis's "safe to remove" verdict.

use std::collections::{BTreeMap, BTreeSet};

use berth_shared::analysis::{self, NodeInfo, RemovalVerdict, Workload, WorkloadSources};
use berth_shared::decide::{GrantBinding, ObservedClass};
use k8s_openapi::api::apps::v1::{DaemonSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use serde::Serialize;

use super::NONE;
use super::table::{Cell, Row, RowRef, RowTone};
use crate::store::slim::SlimPod;
use crate::store::slim_apps::{SlimDeployment, SlimReplicaSet};
use crate::store::{Kind, ObjKey, Store};

/// Every workload the store knows, as the shared analysis sees them.
pub fn workloads(store: &Store) -> Vec<Workload> {
    // References into the store: no copy of every workload per rebuild.
    Picked {
        deployments: store.deployments.values().map(Box::as_ref).collect(),
        replica_sets: store.replicasets.values().map(Box::as_ref).collect(),
        stateful_sets: store.statefulsets.values().map(Box::as_ref).collect(),
        daemon_sets: store.daemonsets.values().map(Box::as_ref).collect(),
        jobs: store.jobs.values().map(Box::as_ref).collect(),
        cron_jobs: store.cronjobs.values().map(Box::as_ref).collect(),
        pods: store.pods.values().map(Box::as_ref).collect(),
    }
    .workloads()
}

/// Workloads picked from the store for the shared analysis.
struct Picked<'a> {
    deployments: Vec<&'a SlimDeployment>,
    replica_sets: Vec<&'a SlimReplicaSet>,
    stateful_sets: Vec<&'a StatefulSet>,
    daemon_sets: Vec<&'a DaemonSet>,
    jobs: Vec<&'a Job>,
    cron_jobs: Vec<&'a CronJob>,
    pods: Vec<&'a SlimPod>,
}

impl Picked<'_> {
    /// As the analysis sees them, in the order of
    /// [`WorkloadSources::collect`] (Deployments, ReplicaSets, the other
    /// kinds, Pods). The kinds the store keeps slim are converted from
    /// what is kept, their labels shared with the store; ReplicaSets are
    /// judged against their owning Deployment's revision as `collect`
    /// judges them.
    fn workloads(&self) -> Vec<Workload> {
        let revisions: BTreeMap<(&str, &str), &str> = self
            .deployments
            .iter()
            .filter_map(|d| {
                let m = &d.metadata;
                Some((
                    (m.namespace.as_deref().unwrap_or_default(), m.name()),
                    m.revision()?,
                ))
            })
            .collect();
        let mut out: Vec<Workload> = self.deployments.iter().map(|d| d.workload()).collect();
        out.extend(self.replica_sets.iter().map(|rs| {
            let m = &rs.metadata;
            let owner_rev = m
                .owners
                .iter()
                .find(|r| r.controller && r.kind == "Deployment")
                .and_then(|r| {
                    revisions
                        .get(&(m.namespace.as_deref().unwrap_or_default(), r.name.as_str()))
                        .copied()
                });
            rs.workload(owner_rev)
        }));
        out.extend(
            WorkloadSources {
                stateful_sets: &self.stateful_sets,
                daemon_sets: &self.daemon_sets,
                jobs: &self.jobs,
                cron_jobs: &self.cron_jobs,
                // The console does not watch ControllerRevisions (the
                // agent does and publishes them as retained workloads of
                // their class).
                ..Default::default()
            }
            .collect(),
        );
        out.extend(self.pods.iter().map(|p| p.workload()));
        out
    }
}

/// The stored objects at `keys` (a key the map lacks is skipped).
fn lookup<'a, T>(
    keys: impl Iterator<Item = &'a ObjKey>,
    map: &'a BTreeMap<ObjKey, Box<T>>,
) -> Vec<&'a T> {
    keys.filter_map(|k| map.get(k).map(Box::as_ref)).collect()
}

/// The workloads that reference a RuntimeClass, as the shared analysis
/// sees them: exactly `workloads(store)` without those on the default
/// runtime, which no class's usage and no retained row reads. Found by the
/// store's [`crate::store::classed`] index instead of converting every
/// workload and Pod on each rebuild (issue 14).
pub fn classed_workloads(store: &Store) -> Vec<Workload> {
    let c = &store.classed;
    let of = |kind| c.keys(kind);
    // A ReplicaSet is judged against its Deployment's revision, and that
    // Deployment may be on the default runtime itself (the class was
    // removed from the template and an old revision still names it): it is
    // passed along for its revision, and dropped from the answer below.
    let mut deployment_keys: BTreeSet<&ObjKey> = of(Kind::Deployment).collect();
    let replica_sets: Vec<_> = lookup(of(Kind::ReplicaSet), &store.replicasets);
    let owners: Vec<ObjKey> = replica_sets
        .iter()
        .filter_map(|rs| {
            let m = &rs.metadata;
            let r = m
                .owners
                .iter()
                .find(|r| r.controller && r.kind == "Deployment")?;
            Some((m.namespace.clone().unwrap_or_default(), r.name.clone()))
        })
        .collect();
    deployment_keys.extend(owners.iter());
    let mut out = Picked {
        deployments: lookup(deployment_keys.into_iter(), &store.deployments),
        replica_sets,
        stateful_sets: lookup(of(Kind::StatefulSet), &store.statefulsets),
        daemon_sets: lookup(of(Kind::DaemonSet), &store.daemonsets),
        jobs: lookup(of(Kind::Job), &store.jobs),
        cron_jobs: lookup(of(Kind::CronJob), &store.cronjobs),
        pods: lookup(of(Kind::Pod), &store.pods),
    }
    .workloads();
    out.retain(|w| w.runtime_class.is_some());
    out
}

/// The bindings of the loaded grants file, from the RuntimeGrants the
/// agent publishes. A RuntimeGrant kept `Retired` (its binding left the
/// file; it only lists the workloads that still need its class) grants
/// nothing.
pub(crate) fn bindings(store: &Store) -> Vec<GrantBinding> {
    store
        .grants
        .values()
        .filter(|g| !is_retired(g))
        .map(|g| analysis::binding_from_grant(g))
        .collect()
}

/// Whether the agent marked this RuntimeGrant `Retired=True`.
pub(crate) fn is_retired(g: &berth_shared::api::RuntimeGrant) -> bool {
    g.status.as_ref().is_some_and(|s| {
        berth_shared::api::condition::is_true(
            &s.conditions,
            berth_shared::api::grant_condition_types::RETIRED,
        )
    })
}

/// One workload referencing a class, for the handler detail and JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadEntry {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub ready: i32,
    pub replicas: i32,
    pub managed_by_berth: bool,
    /// `rollback`, `suspended`, `bare pod`, `idle` or empty.
    pub note: String,
}

impl WorkloadEntry {
    pub(crate) fn from_workload(w: &Workload) -> Self {
        let note = if w.is_rollback_revision {
            "rollback revision"
        } else if w.suspended {
            "suspended"
        } else if w.is_bare_pod() {
            "bare pod"
        } else if !w.is_active() {
            "idle"
        } else {
            ""
        };
        Self {
            kind: w.kind.as_str().to_string(),
            namespace: w.namespace.clone(),
            name: w.name.clone(),
            ready: w.ready,
            replicas: w.replicas,
            managed_by_berth: w.managed_by_berth,
            note: note.to_string(),
        }
    }
}

/// One RuntimeClass (or a class name workloads reference that does not
/// exist).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HandlerRow {
    pub class: String,
    pub handler: String,
    /// The class object exists.
    pub present: bool,
    /// Grants naming the class.
    pub granted_by: Vec<String>,
    /// `overhead`, `scheduling`, `deleting`, `handler mismatch` flags.
    pub flags: String,
    /// Ready nodes reporting the handler, `n/m`.
    pub nodes: String,
    pub workloads: Vec<WorkloadEntry>,
    pub safe_to_remove: bool,
    /// The verdict in words.
    pub verdict: String,
    /// What the agent's canaries saw of the handler, node by node (a
    /// current grant's `status.attestation`; none for a class no grant
    /// names).
    pub attestation: Option<berth_shared::api::HandlerAttestation>,
}

impl HandlerRow {
    /// When the oldest listed evidence was produced (seconds since the
    /// epoch): the age the view shows.
    pub fn oldest_evidence(&self) -> Option<i64> {
        self.attestation
            .as_ref()?
            .nodes
            .iter()
            .filter_map(|n| n.at.as_ref().map(|t| t.0.as_second()))
            .min()
    }

    /// `2 verified, 1 failing`, `off`, or `-`.
    pub fn attested(&self) -> String {
        match &self.attestation {
            None => NONE.to_string(),
            Some(a) if !a.canaries => "off".to_string(),
            Some(a) => a.summary.clone(),
        }
    }

    /// Whether a canary fails on some node.
    pub fn failing(&self) -> bool {
        self.attestation.as_ref().is_some_and(|a| a.failing > 0)
    }
}

/// Rows of the Handlers view: every RuntimeClass, granted or not, plus
/// referenced classes that are missing.
pub fn handler_rows(store: &Store) -> Vec<HandlerRow> {
    handler_rows_of(store, &classed_workloads(store))
}

/// Every stored RuntimeClass, as the shared analysis sees it.
pub(crate) fn observed_classes(store: &Store) -> Vec<ObservedClass> {
    store
        .classes
        .values()
        .map(|c| ObservedClass::from_runtime_class(c))
        .collect()
}

/// Every stored Node, as the shared analysis sees it.
pub(crate) fn node_infos(store: &Store) -> Vec<NodeInfo> {
    store
        .nodes
        .values()
        .map(|n| NodeInfo::from_node(n))
        .collect()
}

/// [`handler_rows`] from the given workloads: any superset of those that
/// reference a class gives the same rows.
pub(crate) fn handler_rows_of(store: &Store, all: &[Workload]) -> Vec<HandlerRow> {
    let attested = attestations(store);
    let classes = observed_classes(store);
    let nodes = node_infos(store);
    let grants = bindings(store);
    let reports = analysis::handler_reports(&classes, &grants, &nodes, all);
    let mut rows: Vec<HandlerRow> = reports
        .iter()
        .map(|r| {
            let mut flags = Vec::new();
            if r.class.has_overhead {
                flags.push("overhead".to_string());
            }
            if r.class.has_scheduling {
                flags.push("scheduling".to_string());
            }
            if r.class.deleting {
                flags.push("deleting".to_string());
            }
            if !r.handler_mismatch.is_empty() {
                flags.push(format!("mismatch: {}", r.handler_mismatch.join(",")));
            }
            HandlerRow {
                class: r.class.name.clone(),
                handler: r.class.handler.clone(),
                present: true,
                granted_by: r.granted_by.clone(),
                flags: flags.join(" "),
                nodes: r.nodes.summary(),
                workloads: r
                    .workloads
                    .iter()
                    .map(WorkloadEntry::from_workload)
                    .collect(),
                safe_to_remove: r.verdict.is_safe(),
                verdict: verdict_text(&r.verdict),
                attestation: attested.get(&r.class.name).cloned(),
            }
        })
        .collect();
    // Classes referenced by workloads or grants that do not exist.
    let usage = analysis::class_usage(all);
    let mut missing: BTreeMap<String, Vec<&Workload>> = BTreeMap::new();
    for (class, ws) in usage {
        if !store.classes.contains_key(&(String::new(), class.clone())) {
            missing.insert(class, ws);
        }
    }
    for g in &grants {
        if !store
            .classes
            .contains_key(&(String::new(), g.runtime_class.clone()))
        {
            missing.entry(g.runtime_class.clone()).or_default();
        }
    }
    for (class, ws) in missing {
        let granted_by: Vec<String> = grants
            .iter()
            .filter(|g| g.runtime_class == class)
            .map(|g| g.name.clone())
            .collect();
        let verdict = analysis::removal_verdict(&ws, granted_by.len());
        let handler = grants
            .iter()
            .find(|g| g.runtime_class == class)
            .map(|g| g.handler.clone())
            .unwrap_or_else(|| NONE.into());
        rows.push(HandlerRow {
            nodes: analysis::coverage(&nodes, &handler).summary(),
            class,
            handler,
            present: false,
            granted_by,
            flags: "class missing".into(),
            workloads: ws.iter().map(|w| WorkloadEntry::from_workload(w)).collect(),
            safe_to_remove: false,
            verdict: format!("already removed; {}", verdict_text(&verdict)),
            attestation: None,
        });
    }
    rows.sort_by(|a, b| a.class.cmp(&b.class));
    rows
}

fn verdict_text(v: &RemovalVerdict) -> String {
    match v {
        RemovalVerdict::Safe => "safe to remove".into(),
        RemovalVerdict::Unsafe { why, .. } => format!("in use: {why}"),
    }
}

/// Column headers.
pub const HEADERS: &[&str] = &[
    "CLASS",
    "HANDLER",
    "GRANTED BY",
    "FLAGS",
    "NODES",
    "ATTESTED",
    "EVIDENCE",
    "WORKLOADS",
    "REMOVE",
    "VERDICT",
];

impl Row for HandlerRow {
    fn headers() -> &'static [&'static str] {
        HEADERS
    }

    fn cells(&self) -> Vec<Cell> {
        let granted = if self.granted_by.is_empty() {
            NONE.to_string()
        } else {
            self.granted_by.join(",")
        };
        vec![
            Cell::text(&self.class),
            Cell::text(&self.handler),
            Cell::text(granted),
            Cell::text(&self.flags),
            Cell::ratio_text(&self.nodes),
            Cell::text(self.attested()),
            {
                let at = self.oldest_evidence();
                Cell::age(
                    at.map_or_else(
                        || NONE.to_string(),
                        |t| {
                            super::human_duration(
                                k8s_openapi::jiff::Timestamp::now().as_second() - t,
                            )
                        },
                    ),
                    at,
                )
            },
            Cell::count(i64::try_from(self.workloads.len()).unwrap_or(i64::MAX)),
            Cell::text(if self.safe_to_remove {
                "safe"
            } else {
                "unsafe"
            }),
            Cell::text(&self.verdict),
        ]
    }

    fn tone(&self) -> RowTone {
        if !self.present || self.failing() {
            RowTone::Problem
        } else if self.safe_to_remove {
            RowTone::Good
        } else if !self.flags.is_empty() {
            RowTone::Warn
        } else {
            RowTone::Normal
        }
    }

    fn target(&self) -> RowRef {
        RowRef::Class(self.class.clone())
    }
}

/// What the agent's canaries saw, by class: the first current (not
/// Retired) grant of each class that carries an attestation.
pub fn attestations(store: &Store) -> BTreeMap<String, berth_shared::api::HandlerAttestation> {
    let mut out = BTreeMap::new();
    for g in store.grants.values().filter(|g| !is_retired(g)) {
        if let Some(a) = g.status.as_ref().and_then(|s| s.attestation.as_ref()) {
            out.entry(g.spec.runtime_class.clone())
                .or_insert_with(|| a.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn missing_classes_are_problems_and_unused_ones_safe() {
        let app = fixtures::app();
        let rows = handler_rows(&app.clusters[0].data.store);
        let gvisor = rows.iter().find(|r| r.class == "gvisor").expect("gvisor");
        assert_eq!(gvisor.tone(), RowTone::Good);
        assert!(
            rows.iter()
                .any(|r| !r.present && r.tone() == RowTone::Problem)
        );
        for r in &rows {
            assert_eq!(r.cells().len(), HEADERS.len());
        }
    }
}
