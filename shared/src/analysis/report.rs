//! Class usage, per-RuntimeClass handler reports with a removal verdict, and
//! retained workloads.

use std::collections::BTreeMap;

use crate::api::RuntimeGrant;
use crate::decide::{ENVIRONMENT_LABEL, GrantBinding, ObservedClass, PROJECT_LABEL};
use crate::render::labels::{APPLICATION_LABEL, SERVICE_LABEL};

use super::nodes::{Coverage, NodeInfo, coverage};
use super::workload::{Workload, WorkloadKind};

/// A published RuntimeGrant as the plain binding it mirrors (what the
/// console has instead of the grants file).
pub fn binding_from_grant(grant: &RuntimeGrant) -> GrantBinding {
    grant
        .spec
        .binding(grant.metadata.name.as_deref().unwrap_or_default())
}

/// RuntimeClass name → the workloads whose pod template references it, in
/// input order. Workloads without a class are left out.
pub fn class_usage(workloads: &[Workload]) -> BTreeMap<String, Vec<&Workload>> {
    let mut out: BTreeMap<String, Vec<&Workload>> = BTreeMap::new();
    // The agent's canaries probe a class; they do not need it.
    for w in workloads.iter().filter(|w| !w.is_canary()) {
        if let Some(class) = &w.runtime_class {
            out.entry(class.clone()).or_default().push(w);
        }
    }
    out
}

/// What still depends on a class, counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UsageCounts {
    /// Workloads referencing the class (every kind given).
    pub workloads: usize,
    /// Of those, workloads with pods wanted or ready now.
    pub active: usize,
    /// Replicas wanted by the active workloads (sum of `replicas`).
    pub replicas: i64,
    /// Rollback ReplicaSets (a rollback would need the class).
    pub rollback_revisions: usize,
    /// Suspended Jobs/CronJobs (resuming would need the class).
    pub suspended: usize,
    /// Workloads scaled to zero or idle (scaling up would need the class).
    pub idle: usize,
    /// Bindings that grant the class.
    pub grants: usize,
}

/// Whether a RuntimeClass (and its handler on the nodes) can be removed
/// without breaking anything that berth can see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemovalVerdict {
    /// Nothing references it and no grant names it.
    Safe,
    /// Something still needs it.
    Unsafe {
        /// Why, in one sentence.
        why: String,
        /// The numbers behind it.
        counts: UsageCounts,
    },
}

impl RemovalVerdict {
    /// Whether removal is safe.
    pub fn is_safe(&self) -> bool {
        matches!(self, RemovalVerdict::Safe)
    }
}

/// The verdict for a class that `workloads` reference and `grants` bindings
/// name. Finished Jobs and terminated Pods do not hold a class (nothing will
/// start from them again); everything else does, including rollback
/// ReplicaSets, suspended CronJobs and Deployments scaled to zero.
pub fn removal_verdict(workloads: &[&Workload], grants: usize) -> RemovalVerdict {
    let mut counts = UsageCounts {
        grants,
        ..UsageCounts::default()
    };
    // A Deployment, its current ReplicaSet and their pods are one workload:
    // count what the operator manages (the top of each ownership chain),
    // plus rollback revisions, which are a separate reason to keep a class.
    let present: std::collections::HashSet<(&str, &str, &str)> = workloads
        .iter()
        .map(|w| (w.namespace.as_str(), w.kind.as_str(), w.name.as_str()))
        .collect();
    let owned_by_listed = |w: &Workload| {
        w.owner.as_ref().is_some_and(|o| {
            present.contains(&(w.namespace.as_str(), o.kind.as_str(), o.name.as_str()))
        })
    };
    for w in workloads {
        if owned_by_listed(w) && !w.is_rollback_revision {
            continue;
        }
        let finished = matches!(w.kind, WorkloadKind::Job | WorkloadKind::Pod)
            && !w.is_active()
            && !w.suspended;
        if finished {
            continue;
        }
        counts.workloads += 1;
        if w.is_rollback_revision {
            counts.rollback_revisions += 1;
        } else if w.suspended {
            counts.suspended += 1;
        } else if w.is_active() {
            counts.active += 1;
            counts.replicas += i64::from(w.replicas);
        } else {
            counts.idle += 1;
        }
    }
    if counts.workloads == 0 && counts.grants == 0 {
        return RemovalVerdict::Safe;
    }
    let mut parts = Vec::new();
    if counts.active > 0 {
        parts.push(format!(
            "{} running workload(s) with {} replica(s) use it",
            counts.active, counts.replicas
        ));
    }
    if counts.rollback_revisions > 0 {
        parts.push(format!(
            "{} rollback ReplicaSet(s) would need it",
            counts.rollback_revisions
        ));
    }
    if counts.suspended > 0 {
        parts.push(format!(
            "{} suspended Job/CronJob(s) would need it when resumed",
            counts.suspended
        ));
    }
    if counts.idle > 0 {
        parts.push(format!(
            "{} workload(s) scaled to zero would need it to scale up",
            counts.idle
        ));
    }
    if counts.grants > 0 {
        parts.push(format!("{} grant(s) name it", counts.grants));
    }
    RemovalVerdict::Unsafe {
        why: parts.join("; "),
        counts,
    }
}

/// Everything about one RuntimeClass: its handler, who is granted it,
/// which Ready nodes report the handler, which workloads reference it, and
/// whether it can be removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandlerReport {
    /// The class as observed.
    pub class: ObservedClass,
    /// Binding (= RuntimeGrant) names granting this class.
    pub granted_by: Vec<String>,
    /// Of those, bindings expecting another handler than the class names.
    pub handler_mismatch: Vec<String>,
    /// Ready nodes reporting the class's handler.
    pub nodes: Coverage,
    /// Workloads referencing the class.
    pub workloads: Vec<Workload>,
    /// Whether removing the class is safe.
    pub verdict: RemovalVerdict,
}

/// One [`HandlerReport`] per class in `classes`, sorted by class name.
/// `grants` are the loaded bindings (agent) or the published RuntimeGrants
/// converted with [`binding_from_grant`] (console).
pub fn handler_reports(
    classes: &[ObservedClass],
    grants: &[GrantBinding],
    nodes: &[NodeInfo],
    workloads: &[Workload],
) -> Vec<HandlerReport> {
    let usage = class_usage(workloads);
    let mut out: Vec<HandlerReport> = classes
        .iter()
        .map(|class| {
            let using: Vec<&Workload> = usage.get(&class.name).cloned().unwrap_or_default();
            let granting: Vec<&GrantBinding> = grants
                .iter()
                .filter(|g| g.runtime_class == class.name)
                .collect();
            HandlerReport {
                class: class.clone(),
                granted_by: granting.iter().map(|g| g.name.clone()).collect(),
                handler_mismatch: granting
                    .iter()
                    .filter(|g| g.handler != class.handler)
                    .map(|g| g.name.clone())
                    .collect(),
                nodes: coverage(nodes, &class.handler),
                verdict: removal_verdict(&using, granting.len()),
                workloads: using.into_iter().cloned().collect(),
            }
        })
        .collect();
    out.sort_by(|a, b| a.class.name.cmp(&b.class.name));
    out
}

/// Why a workload counts as retained.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetainReason {
    /// A berth-managed workload granted under `alias` whose binding is gone
    /// (or no longer names this class for this identity).
    GrantGone {
        /// The alias on the pod template.
        alias: String,
    },
    /// A berth-managed workload without a profile (or whose identity no
    /// binding covers).
    NotGranted,
    /// berth-managed (it carries berth's labels) with no controller, on a
    /// class a grant names: an orphan (an owner reference removed, a
    /// `pod-template-hash` label removed, a Deployment deleted with
    /// `--cascade=orphan`) runs outside the Runtime and the contract, even
    /// when its labels and profile name a grant that still covers them.
    Orphaned {
        /// The bindings that name its class, sorted.
        granted_as: Vec<String>,
    },
    /// Not managed by berth: it runs its class outside berth's grants. It
    /// predates the workload RuntimeClass admission policy, lives in a
    /// namespace the policy exempts, or names a class no grant names (the
    /// policy only guards granted classes).
    OutsideBerth {
        /// The bindings that name its class, sorted (empty: none does).
        /// Non-empty means the policy would refuse this workload today.
        granted_as: Vec<String>,
    },
}

/// A workload that still references a class no current grant covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retained {
    /// The workload.
    pub workload: Workload,
    /// The class it references.
    pub class: String,
    /// Why it counts as retained.
    pub reason: RetainReason,
}

/// Whether a current binding covers `w`'s class: a berth-managed workload
/// whose pod template names an alias that is still bound, for the identity
/// on its labels, to the same class.
pub fn covered_by_grant(w: &Workload, grants: &[GrantBinding]) -> bool {
    let (Some(class), Some(alias), true) =
        (&w.runtime_class, &w.runtime_profile, w.managed_by_berth)
    else {
        return false;
    };
    let label = |k: &str| w.labels.get(k).map(String::as_str);
    grants.iter().any(|g| {
        g.name == *alias
            && g.runtime_class == *class
            && label(PROJECT_LABEL) == Some(g.identity.project.as_str())
            && label(ENVIRONMENT_LABEL) == Some(g.identity.environment.as_str())
            && label(APPLICATION_LABEL) == Some(g.identity.application.as_str())
            && label(SERVICE_LABEL) == Some(g.identity.service.as_str())
    })
}

/// Every workload that references a RuntimeClass no current grant covers
/// for it: the grant is gone, or there never was one; and every orphan
/// (berth's labels, no controller) on a class a grant names, which no
/// grant covers since the contract no longer governs it. `classes` restricts
/// the answer to those class names (`None` = every class referenced), e.g.
/// the agent asks only about classes named by some binding.
pub fn retained(
    workloads: &[Workload],
    grants: &[GrantBinding],
    classes: Option<&[&str]>,
) -> Vec<Retained> {
    workloads
        .iter()
        .filter(|w| !w.is_canary())
        .filter_map(|w| {
            let class = w.runtime_class.as_ref()?;
            if classes.is_some_and(|cs| !cs.contains(&class.as_str())) {
                return None;
            }
            let granted_as = || {
                let mut granted_as: Vec<String> = grants
                    .iter()
                    .filter(|g| g.runtime_class == *class)
                    .map(|g| g.name.clone())
                    .collect();
                granted_as.sort();
                granted_as.dedup();
                granted_as
            };
            if w.is_orphan() {
                let granted_as = granted_as();
                if !granted_as.is_empty() {
                    return Some(Retained {
                        workload: w.clone(),
                        class: class.clone(),
                        reason: RetainReason::Orphaned { granted_as },
                    });
                }
            }
            if covered_by_grant(w, grants) {
                return None;
            }
            let reason = match (&w.runtime_profile, w.managed_by_berth) {
                (_, false) => RetainReason::OutsideBerth {
                    granted_as: granted_as(),
                },
                (Some(alias), true) => RetainReason::GrantGone {
                    alias: alias.clone(),
                },
                (None, true) => RetainReason::NotGranted,
            };
            Some(Retained {
                workload: w.clone(),
                class: class.clone(),
                reason,
            })
        })
        .collect()
}
