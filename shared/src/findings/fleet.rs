//! Findings across clusters (issue 56): what no single cluster's findings
//! can say, because each cluster alone is consistent. The console hands in
//! one [`ClusterFacts`] per cluster (its published grants, the digest of
//! the grants file its agent loaded, each grant's handler evidence, its
//! Runtimes' grant states) and the groups of clusters the operator
//! declared to run one grants file; [`fleet_findings`] decides, each
//! finding naming its clusters.

use std::collections::{BTreeMap, BTreeSet};

use crate::api::RuntimeGrantStatus;
use crate::binding::{Binding, Identity};

use super::{Finding, FindingKind, Severity};

/// What one cluster's grant tells about its handler there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandlerEvidence {
    /// Nodes report the handler (`status.runtimeHandlers`): `nodes` of
    /// `of`.
    Reported { nodes: i32, of: i32 },
    /// No node reports it, though nodes were counted.
    Missing { of: i32 },
    /// The handler is reported but does not work on some nodes (handler
    /// attestation, issue 53), with why.
    Failing { nodes: i32, why: String },
    /// Nothing is known (no node coverage in the status yet).
    Unknown,
}

impl HandlerEvidence {
    /// Whether the handler is there and working as far as is known.
    pub fn present(&self) -> bool {
        matches!(self, HandlerEvidence::Reported { .. })
    }

    /// Whether it is known to be absent or broken.
    pub fn absent(&self) -> bool {
        matches!(
            self,
            HandlerEvidence::Missing { .. } | HandlerEvidence::Failing { .. }
        )
    }

    /// In words, for a message.
    pub fn words(&self) -> String {
        match self {
            HandlerEvidence::Reported { nodes, of } => format!("reported on {nodes}/{of} nodes"),
            HandlerEvidence::Missing { of } => format!("reported on none of {of} nodes"),
            HandlerEvidence::Failing { nodes, why } => format!("failing on {nodes} node(s): {why}"),
            HandlerEvidence::Unknown => "unknown".into(),
        }
    }
}

/// A grant's handler evidence from its RuntimeGrant status. The one place
/// that reads it: handler attestation (issue 53: verified / failing /
/// unverified per node in the status) is to be read here once the status
/// carries it, a failing node making [`HandlerEvidence::Failing`].
pub fn handler_evidence(status: Option<&RuntimeGrantStatus>) -> HandlerEvidence {
    let Some(nodes) = status.and_then(|s| s.nodes.as_ref()) else {
        return HandlerEvidence::Unknown;
    };
    match (nodes.with_handler, nodes.total) {
        (0, 0) => HandlerEvidence::Unknown,
        (0, of) => HandlerEvidence::Missing { of },
        (n, of) => HandlerEvidence::Reported { nodes: n, of },
    }
}

/// A Runtime that asked for a grant, and whether it got it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeGrantState {
    /// `Runtime/NS/NAME`.
    pub object: String,
    pub identity: Identity,
    /// Granted (running with its class).
    pub granted: bool,
    /// Blocked (revoked, class missing, …: the agent changes nothing).
    pub blocked: bool,
}

/// What the fleet findings read of one cluster.
#[derive(Clone, Debug, Default)]
pub struct ClusterFacts {
    /// The cluster's name (its context).
    pub cluster: String,
    /// Whether it could be read at all (an unreadable cluster is compared
    /// with nothing).
    pub read: bool,
    /// Its published grants.
    pub grants: Vec<Binding>,
    /// The sha256 of the grants file its agent loaded, when known.
    pub grants_digest: Option<String>,
    /// Per grant name: its handler evidence there.
    pub handlers: BTreeMap<String, HandlerEvidence>,
    /// Its Runtimes that asked for a grant.
    pub runtimes: Vec<RuntimeGrantState>,
}

/// One finding across clusters: the clusters it names, and the finding.
pub type FleetFinding = (Vec<String>, Finding);

/// Every finding across `clusters`, worst first. `same_grants`: groups of
/// cluster names declared to run one grants file.
pub fn fleet_findings(clusters: &[ClusterFacts], same_grants: &[Vec<String>]) -> Vec<FleetFinding> {
    let read: Vec<&ClusterFacts> = clusters.iter().filter(|c| c.read).collect();
    let mut out = Vec::new();
    out.extend(grant_differs(&read, same_grants));
    out.extend(digest_differs(&read, same_grants));
    out.extend(handler_uneven(&read));
    out.extend(identity_split(&read));
    out.sort_by(|(ca, a), (cb, b)| {
        b.severity
            .cmp(&a.severity)
            .then(a.kind.cmp(&b.kind))
            .then(a.objects.cmp(&b.objects))
            .then(ca.cmp(cb))
    });
    out
}

/// Whether `a` and `b` are declared to run one grants file.
fn declared_same(same_grants: &[Vec<String>], a: &str, b: &str) -> bool {
    same_grants
        .iter()
        .any(|g| g.iter().any(|c| c == a) && g.iter().any(|c| c == b))
}

/// `cluster: what` for each variant, grouped: `a, b: x; c: y`.
fn by_variant<T: Ord + Clone>(seen: &[(&str, T)], show: impl Fn(&T) -> String) -> String {
    let mut groups: BTreeMap<T, Vec<&str>> = BTreeMap::new();
    for (c, v) in seen {
        groups.entry(v.clone()).or_default().push(c);
    }
    groups
        .iter()
        .map(|(v, cs)| format!("{}: {}", cs.join(", "), show(v)))
        .collect::<Vec<_>>()
        .join("; ")
}

fn names(seen: &[(&str, impl Sized)]) -> Vec<String> {
    let set: BTreeSet<String> = seen.iter().map(|(c, _)| (*c).to_string()).collect();
    set.into_iter().collect()
}

/// What a grant binds: identity, class, handler.
type Bound = (Identity, String, String);

/// The same grant (name) binds another identity, class or handler in
/// another cluster: an error where those clusters were declared the same.
fn grant_differs(clusters: &[&ClusterFacts], same_grants: &[Vec<String>]) -> Vec<FleetFinding> {
    let mut by_name: BTreeMap<&str, Vec<(&str, Bound)>> = BTreeMap::new();
    for c in clusters {
        for g in &c.grants {
            by_name.entry(&g.name).or_default().push((
                &c.cluster,
                (
                    g.identity.clone(),
                    g.runtime_class.clone(),
                    g.handler.clone(),
                ),
            ));
        }
    }
    by_name
        .into_iter()
        .filter(|(_, seen)| seen.iter().any(|(_, v)| *v != seen[0].1))
        .map(|(name, seen)| {
            let declared = seen.iter().any(|(a, va)| {
                seen.iter()
                    .any(|(b, vb)| va != vb && declared_same(same_grants, a, b))
            });
            let show = |(i, class, handler): &Bound| {
                format!(
                    "{}/{}/{}/{} on {class} ({handler})",
                    i.project, i.environment, i.application, i.service
                )
            };
            let mut f = Finding::new(
                FindingKind::FleetGrantDiffers,
                vec![format!("RuntimeGrant/{name}")],
                format!(
                    "grant {name} binds differently across clusters: {}",
                    by_variant(&seen, show)
                ),
            );
            if declared {
                f = f.at(Severity::Error);
            }
            (names(&seen), f)
        })
        .collect()
}

/// Clusters declared to run one grants file whose agents loaded different
/// ones.
fn digest_differs(clusters: &[&ClusterFacts], same_grants: &[Vec<String>]) -> Vec<FleetFinding> {
    same_grants
        .iter()
        .filter_map(|group| {
            let seen: Vec<(&str, String)> = clusters
                .iter()
                .filter(|c| group.contains(&c.cluster))
                .map(|c| {
                    (
                        c.cluster.as_str(),
                        c.grants_digest.clone().unwrap_or_else(|| "none".into()),
                    )
                })
                .collect();
            let differs = seen.iter().any(|(_, d)| *d != seen[0].1);
            differs.then(|| {
                let short = |d: &String| d.chars().take(12).collect::<String>();
                (
                    names(&seen),
                    Finding::new(
                        FindingKind::FleetGrantsFileDiffers,
                        Vec::new(),
                        format!(
                            "clusters {} are declared to run one grants file, but their agents loaded different ones (sha256 {})",
                            group.join(", "),
                            by_variant(&seen, short)
                        ),
                    ),
                )
            })
        })
        .collect()
}

/// A grant whose handler is there in some clusters and missing or failing
/// in others.
fn handler_uneven(clusters: &[&ClusterFacts]) -> Vec<FleetFinding> {
    let mut by_name: BTreeMap<&str, Vec<(&str, &HandlerEvidence, &str)>> = BTreeMap::new();
    for c in clusters {
        for g in &c.grants {
            let e = c.handlers.get(&g.name).unwrap_or(&HandlerEvidence::Unknown);
            by_name
                .entry(&g.name)
                .or_default()
                .push((&c.cluster, e, &g.handler));
        }
    }
    by_name
        .into_iter()
        .filter(|(_, seen)| {
            seen.iter().any(|(_, e, _)| e.present()) && seen.iter().any(|(_, e, _)| e.absent())
        })
        .map(|(name, seen)| {
            let part = |pick: fn(&HandlerEvidence) -> bool| {
                seen.iter()
                    .filter(|(_, e, _)| pick(e))
                    .map(|(c, e, h)| format!("{c} ({h} {})", e.words()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let clusters: Vec<String> = seen.iter().map(|(c, _, _)| (*c).to_string()).collect();
            let f = Finding::new(
                FindingKind::FleetHandlerUneven,
                vec![format!("RuntimeGrant/{name}")],
                format!(
                    "grant {name}'s handler works in {} but not in {}",
                    part(HandlerEvidence::present),
                    part(HandlerEvidence::absent)
                ),
            );
            (clusters, f)
        })
        .collect()
}

/// A Runtime identity granted in one cluster and Blocked in another.
fn identity_split(clusters: &[&ClusterFacts]) -> Vec<FleetFinding> {
    let mut by_identity: BTreeMap<&Identity, Vec<(&str, &RuntimeGrantState)>> = BTreeMap::new();
    for c in clusters {
        for r in &c.runtimes {
            by_identity
                .entry(&r.identity)
                .or_default()
                .push((&c.cluster, r));
        }
    }
    by_identity
        .into_iter()
        .filter(|(_, seen)| {
            seen.iter().any(|(_, r)| r.granted && !r.blocked) && seen.iter().any(|(_, r)| r.blocked)
        })
        .map(|(i, seen)| {
            let part = |blocked: bool| {
                seen.iter()
                    .filter(|(_, r)| r.blocked == blocked && (blocked || r.granted))
                    .map(|(c, r)| format!("{c} ({})", r.object))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let objects: BTreeSet<String> = seen
                .iter()
                .map(|(c, r)| format!("{c}:{}", r.object))
                .collect();
            let f = Finding::new(
                FindingKind::FleetIdentitySplit,
                objects.into_iter().collect(),
                format!(
                    "{}/{}/{}/{} is granted in {} and Blocked in {}",
                    i.project,
                    i.environment,
                    i.application,
                    i.service,
                    part(false),
                    part(true)
                ),
            );
            (names(&seen), f)
        })
        .collect()
}
