//! Findings (`:findings`, `berth check`) from the console's store: the
//! store's objects handed to `berth_shared::findings`, and the rows.

use std::collections::BTreeMap;

use berth_shared::findings::{
    self, CertExpiry, ClusterFacts, Finding, Inputs, Leader, RuntimeGrantState, Severity,
    Thresholds,
};
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::handlers::{attestations, bindings, node_infos, observed_classes, workloads};
use super::store_kind;
use super::table::{Cell, Row, RowRef, RowTone};
use crate::store::{ANALYSIS_KINDS, ClusterId, Kind, ObjKey, Store};

/// Why the console reports the webhook certificate as not checked.
pub const CERT_NOT_READ: &str = "the console cannot read the webhook's serving certificate (the agent keeps a self-signed one in memory and rotates it; a supplied one is in a Secret); check cert-manager for a supplied certificate";

/// The kinds the findings read.
pub fn kinds() -> Vec<Kind> {
    let mut v = vec![
        Kind::Namespace,
        Kind::Runtime,
        Kind::Lease,
        Kind::PendingGrantsFile,
    ];
    v.extend_from_slice(ANALYSIS_KINDS);
    v
}

/// The agent's leadership from its Lease in `store` (`refused`: the Lease
/// could not be read).
pub fn leader(store: &Store, lease: &ObjKey, now: Timestamp, refused: bool) -> Leader {
    if refused {
        return Leader::Unknown;
    }
    let Some(spec) = store.leases.get(lease).and_then(|l| l.spec.as_ref()) else {
        return Leader::Missing(format!("no Lease {}/{}", lease.0, lease.1));
    };
    let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
    let expires = spec
        .renew_time
        .as_ref()
        .map(|t| t.0.as_second() + i64::from(spec.lease_duration_seconds.unwrap_or(0)));
    match (holder, expires) {
        (Some(h), Some(e)) if e > now.as_second() => Leader::Live(h),
        (Some(h), _) => Leader::Missing(format!(
            "Lease {}/{} expired (last held by {h})",
            lease.0, lease.1
        )),
        (None, _) => Leader::Missing(format!("Lease {}/{} is not held", lease.0, lease.1)),
    }
}

/// Every finding from `store`. `refused` are the kinds the operator may
/// not list, with the apiserver's message.
pub fn findings_of(
    store: &Store,
    lease: &ObjKey,
    now: Timestamp,
    refused: &[(Kind, String)],
) -> Vec<Finding> {
    let namespace_labels: BTreeMap<String, BTreeMap<String, String>> = store
        .namespaces
        .values()
        .map(|n| {
            (
                n.metadata.name.clone().unwrap_or_default(),
                n.metadata.labels.clone().unwrap_or_default(),
            )
        })
        .collect();
    let runtimes: Vec<_> = store
        .runtimes
        .values()
        .map(|r| r.as_ref().clone())
        .collect();
    let bindings = bindings(store);
    let classes = observed_classes(store);
    let nodes = node_infos(store);
    let workloads = workloads(store);
    let pending = store
        .pending_files
        .get(&(String::new(), lease.1.clone()))
        .map(|p| p.spec.clone());
    let lease_refused = refused.iter().any(|(k, _)| *k == Kind::Lease);
    let leader = leader(store, lease, now, lease_refused);
    let cert = CertExpiry::NotRead(CERT_NOT_READ.into());
    let unreadable: Vec<(String, String)> = refused
        .iter()
        .map(|(k, e)| (k.label().to_string(), e.clone()))
        .collect();
    findings::findings(&Inputs {
        now,
        runtimes: &runtimes,
        namespace_labels: &namespace_labels,
        bindings: &bindings,
        classes: &classes,
        nodes: &nodes,
        workloads: &workloads,
        pending: pending.as_ref(),
        leader: &leader,
        cert: &cert,
        unreadable: &unreadable,
        attestations: &attestations(store),
        thresholds: Thresholds::default(),
    })
}

/// One cluster's part of the findings: its store and the kinds it refused.
#[derive(Clone, Debug)]
pub struct ClusterInputs<'a> {
    pub cluster: ClusterId,
    pub store: &'a Store,
    pub refused: &'a [(Kind, String)],
}

/// Every cluster's findings, each with its cluster, and the findings
/// across clusters (`berth_shared::findings::fleet_findings`), each with
/// the clusters it names; worst first (then by kind, clusters and
/// objects). `unread`: clusters that could not be read at all, each with
/// why (a `cluster-unreachable` finding each).
pub fn fleet_findings(
    inputs: &[ClusterInputs<'_>],
    unread: &[(ClusterId, String)],
    lease: &ObjKey,
    now: Timestamp,
    same_grants: &[Vec<ClusterId>],
) -> Vec<(Vec<ClusterId>, Finding)> {
    let mut out: Vec<(Vec<ClusterId>, Finding)> = inputs
        .iter()
        .flat_map(|i| {
            findings_of(i.store, lease, now, i.refused)
                .into_iter()
                .map(|f| (vec![i.cluster.clone()], f))
        })
        .collect();
    for (cluster, why) in unread {
        out.push((
            vec![cluster.clone()],
            findings::unreachable(&cluster.shown(), why),
        ));
    }
    if inputs.len() + unread.len() > 1 {
        let mut facts: Vec<ClusterFacts> = inputs.iter().map(|i| facts_of(i, &lease.1)).collect();
        facts.extend(unread.iter().map(|(c, _)| ClusterFacts {
            cluster: c.shown(),
            ..Default::default()
        }));
        let groups: Vec<Vec<String>> = same_grants
            .iter()
            .map(|g| g.iter().map(ClusterId::shown).collect())
            .collect();
        let by_name = |name: &str| {
            inputs
                .iter()
                .map(|i| &i.cluster)
                .chain(unread.iter().map(|(c, _)| c))
                .find(|c| c.shown() == name)
                .cloned()
        };
        for (names, f) in findings::fleet_findings(&facts, &groups) {
            out.push((names.iter().filter_map(|n| by_name(n)).collect(), f));
        }
    }
    out.sort_by(|(ca, a), (cb, b)| {
        b.severity
            .cmp(&a.severity)
            .then(a.kind.cmp(&b.kind))
            .then(ca.cmp(cb))
            .then(a.objects.cmp(&b.objects))
    });
    out
}

/// What the findings across clusters read of one cluster's store: the
/// grants the agent whose Lease is named `publisher` published (a
/// cluster's own agent, even where several agents share one cluster).
pub fn facts_of(i: &ClusterInputs<'_>, publisher: &str) -> ClusterFacts {
    let store = i.store;
    let digests = super::grants::grants_file_digests(store, publisher);
    let handlers = super::grants::published_by(store, publisher)
        .map(|g| {
            (
                g.metadata.name.clone().unwrap_or_default(),
                findings::handler_evidence(g.status.as_ref()),
            )
        })
        .collect();
    ClusterFacts {
        cluster: i.cluster.shown(),
        read: true,
        grants: super::plan::loaded_bindings(store, publisher),
        // While the agent republishes its grants two digests are seen: they
        // differ from any one file, as the cluster does for that moment.
        grants_digest: (!digests.is_empty())
            .then(|| digests.into_iter().collect::<Vec<_>>().join("+")),
        handlers,
        runtimes: store
            .runtimes
            .values()
            .filter_map(|rt| runtime_state(store, rt))
            .collect(),
    }
}

/// A Runtime that asked for a grant: its identity (from its status, or
/// from its Namespace's labels and its spec) and whether it got it.
fn runtime_state(store: &Store, rt: &berth_shared::api::Runtime) -> Option<RuntimeGrantState> {
    rt.spec.runtime_profile.as_ref()?;
    let status = rt.status.as_ref()?;
    let state = status.profile.as_ref()?.state;
    let ns = rt.metadata.namespace.clone().unwrap_or_default();
    let from_status = status.identity.as_ref().and_then(|i| {
        Some(berth_shared::binding::Identity {
            project: i.project.clone()?,
            environment: i.environment.clone()?,
            application: i.application.clone()?,
            service: i.service.clone()?,
        })
    });
    let identity = from_status.or_else(|| {
        let namespace = store.namespaces.get(&(String::new(), ns.clone()))?;
        berth_shared::decide::identity(namespace, rt).ok()
    })?;
    Some(RuntimeGrantState {
        object: format!(
            "Runtime/{ns}/{}",
            rt.metadata.name.clone().unwrap_or_default()
        ),
        identity,
        granted: state == berth_shared::api::ProfileState::Granted,
        blocked: super::state_blocks(state),
    })
}

/// One finding as a row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingRow {
    pub severity: String,
    pub kind: String,
    pub objects: Vec<String>,
    pub message: String,
    pub fix: String,
}

impl FindingRow {
    /// The row of a finding.
    pub fn of(f: &Finding) -> Self {
        FindingRow {
            severity: f.severity.word().to_string(),
            kind: f.kind.id().to_string(),
            objects: f.objects.clone(),
            message: f.message.clone(),
            fix: f.fix.clone(),
        }
    }
}

/// Rows of the Findings view.
pub fn finding_rows(
    store: &Store,
    lease: &ObjKey,
    now: Timestamp,
    refused: &[(Kind, String)],
) -> Vec<FindingRow> {
    findings_of(store, lease, now, refused)
        .iter()
        .map(FindingRow::of)
        .collect()
}

/// Column headers.
pub const HEADERS: &[&str] = &["SEVERITY", "KIND", "OBJECTS", "MESSAGE", "FIX"];

impl Row for FindingRow {
    fn headers() -> &'static [&'static str] {
        HEADERS
    }

    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::text(&self.severity),
            Cell::text(&self.kind),
            Cell::text(self.objects.join(", ")),
            Cell::text(&self.message),
            Cell::text(&self.fix),
        ]
    }

    fn tone(&self) -> RowTone {
        match self.severity.as_str() {
            "error" => RowTone::Problem,
            "warning" => RowTone::Warn,
            _ => RowTone::Normal,
        }
    }

    /// Two findings may name the same object (a Runtime both stuck and
    /// short of a handler): the kind keeps them apart.
    fn id(&self) -> String {
        format!("{}:{}", self.kind, self.objects.join(","))
    }

    /// The first object the finding names, so that Enter, `x` and the
    /// details open it.
    fn target(&self) -> RowRef {
        let first = self.objects.first().map(String::as_str).unwrap_or_default();
        let parts: Vec<&str> = first.split('/').collect();
        match parts.as_slice() {
            ["Runtime", ns, name] => RowRef::Runtime(((*ns).into(), (*name).into())),
            ["RuntimeGrant", name] => RowRef::Grant((*name).into()),
            ["RuntimeClass", name] => RowRef::Class((*name).into()),
            [kind, ns, name] => RowRef::Workload(
                store_kind(kind).unwrap_or(Kind::Pod),
                ((*ns).into(), (*name).into()),
            ),
            // Findings about no object (the leader, the certificate) are
            // told apart by their kind.
            _ => RowRef::Class(format!("finding:{}:{}", self.kind, first)),
        }
    }
}

/// The severity a `--fail-on` word names.
pub fn severity_named(s: &str) -> Option<Severity> {
    Some(match s {
        "info" => Severity::Info,
        "warning" => Severity::Warning,
        "error" => Severity::Error,
        _ => return None,
    })
}
