//! The grants plan from the console's store (`berth plan-grants` and the
//! Plan view): the loaded bindings are the agent's published RuntimeGrants,
//! the cluster is what the store holds. Also the plan as text lines, every
//! value from the cluster or the file sanitized.

use berth_shared::analysis::{Workload, WorkloadKind, binding_from_grant};
use berth_shared::decide::GrantBinding;
use berth_shared::plan::{self, Candidate, ClassEffect, Cluster, Effect, Plan, Stage};
use berth_shared::sanitize;

use super::handlers::{is_retired, node_infos, observed_classes, workloads};
use crate::store::Store;

pub use berth_shared::api::meta::PUBLISHED_BY_LABEL;

/// The bindings the agent whose Lease is named `publisher` has loaded: its
/// RuntimeGrants, without the Retired ones (they grant nothing).
pub fn loaded_bindings(store: &Store, publisher: &str) -> Vec<GrantBinding> {
    super::grants::published_by(store, publisher)
        .filter(|g| !is_retired(g))
        .map(binding_from_grant)
        .collect()
}

/// The ControllerRevisions (StatefulSet/DaemonSet rollback revisions) the
/// agent lists on its RuntimeGrants, Retired ones included: the console
/// does not watch ControllerRevisions, and each one keeps its grant's class
/// needed for a rollback.
fn published_revisions(store: &Store, publisher: &str) -> Vec<Workload> {
    let mut out: Vec<Workload> = Vec::new();
    for g in super::grants::published_by(store, publisher) {
        let listed = g
            .status
            .as_ref()
            .map(|s| s.retained.as_slice())
            .unwrap_or_default();
        for r in listed.iter().filter(|r| r.kind == "ControllerRevision") {
            if out
                .iter()
                .any(|w| w.namespace == r.namespace && w.name == r.name)
            {
                continue;
            }
            out.push(Workload {
                kind: WorkloadKind::ControllerRevision,
                namespace: r.namespace.clone(),
                name: r.name.clone(),
                runtime_class: Some(g.spec.runtime_class.clone()),
                replicas: 0,
                ready: 0,
                managed_by_berth: false,
                owner: None,
                is_rollback_revision: true,
                suspended: false,
                runtime_profile: None,
                labels: Default::default(),
            });
        }
    }
    out
}

/// The plan of replacing `publisher`'s loaded bindings with `candidate`.
pub fn plan_from_store(store: &Store, publisher: &str, candidate: &Candidate) -> Plan {
    let runtimes: Vec<_> = store.runtimes.values().map(|r| (**r).clone()).collect();
    let namespaces: Vec<_> = store.namespaces.values().map(|n| (**n).clone()).collect();
    let classes = observed_classes(store);
    let nodes = node_infos(store);
    let mut workloads = workloads(store);
    workloads.extend(published_revisions(store, publisher));
    plan::plan(
        &loaded_bindings(store, publisher),
        candidate,
        &Cluster {
            runtimes: &runtimes,
            namespaces: &namespaces,
            classes: &classes,
            nodes: &nodes,
            workloads: &workloads,
        },
    )
}

fn s(v: &str) -> String {
    sanitize::value(v)
}

fn opt(v: Option<&str>) -> String {
    v.map_or_else(|| super::NONE.to_string(), s)
}

/// The plan as text, terraform style: a headline, then bindings, Runtimes
/// (revocations first), classes, problems and warnings.
pub fn plan_lines(p: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    let sm = &p.summary;
    out.push(format!(
        "Plan for {}: {} (exit {})",
        s(&p.source),
        p.outcome.as_str(),
        p.exit_code
    ));
    if p.outcome != plan::Outcome::Invalid {
        out.push(format!(
            "  bindings: {} to add, {} to change, {} to remove; runtimes: {} lose their grant, {} roll ({} would stall)",
            sm.added, sm.changed, sm.removed, sm.revoked, sm.rolled, sm.stalled
        ));
    }
    binding_lines(p, &mut out);
    runtime_lines(p, &mut out);
    class_lines(p, &mut out);
    problem_lines(p, &mut out);
    if !p.warnings.is_empty() {
        out.push(String::new());
        out.push("Warnings:".to_string());
        for w in &p.warnings {
            out.push(format!("  {}", s(w)));
        }
    }
    out
}

/// The bindings added (`+`), changed (`~`, field by field) and removed (`-`).
fn binding_lines(p: &Plan, out: &mut Vec<String>) {
    let b = &p.bindings;
    if !b.is_empty() {
        out.push(String::new());
        out.push("Bindings:".to_string());
        for a in &b.added {
            out.push(format!(
                "  + {}  {}/{}/{}/{} -> {} (handler {})",
                s(&a.name),
                s(&a.identity.project),
                s(&a.identity.environment),
                s(&a.identity.application),
                s(&a.identity.service),
                s(&a.runtime_class),
                s(&a.handler)
            ));
        }
        for c in &b.changed {
            out.push(format!("  ~ {}", s(&c.name)));
            for f in &c.fields {
                out.push(format!("      {}: {} -> {}", f.field, s(&f.from), s(&f.to)));
            }
        }
        for r in &b.removed {
            out.push(format!(
                "  - {}  {}/{}/{}/{} -> {} (handler {})",
                s(&r.name),
                s(&r.identity.project),
                s(&r.identity.environment),
                s(&r.identity.application),
                s(&r.identity.service),
                s(&r.runtime_class),
                s(&r.handler)
            ));
        }
    }
}

/// Each Runtime the plan changes: before → after, and where it would stall.
fn runtime_lines(p: &Plan, out: &mut Vec<String>) {
    if !p.runtimes.is_empty() {
        out.push(String::new());
        out.push("Runtimes:".to_string());
        for r in &p.runtimes {
            let what = match r.effect {
                Effect::Revoke => "REVOKE (running pods kept, further changes blocked)",
                Effect::Refuse => "REFUSE (blocked like a revocation)",
                Effect::Grant => "GRANT (pods roll onto the class)",
                Effect::Roll => "ROLL (pods roll onto the new class/handler)",
                Effect::Other => "CHANGE (nothing rolls)",
            };
            out.push(format!(
                "  {}/{} [{}]: {} {} -> {} {}; replicas {} ({} ready): {what}",
                s(&r.namespace),
                s(&r.name),
                s(&r.alias),
                r.before.state,
                opt(r.before.runtime_class.as_deref()),
                r.after.state,
                opt(r.after.runtime_class.as_deref()),
                r.replicas,
                r.ready
            ));
            for line in &r.batch {
                out.push(format!("      {}", s(line)));
            }
            if !r.stall_nodes.is_empty() {
                out.push(format!(
                    "      stalls on {} of {} eligible node(s) lacking handler {}: {}",
                    r.stall_nodes.len(),
                    r.eligible_nodes,
                    opt(r.after.handler.as_deref()),
                    r.stall_nodes
                        .iter()
                        .map(|n| s(n))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
}

/// Each RuntimeClass: required, removable or still needed, and the nodes lacking its handler.
fn class_lines(p: &Plan, out: &mut Vec<String>) {
    if !p.classes.is_empty() {
        out.push(String::new());
        out.push("RuntimeClasses:".to_string());
        for c in &p.classes {
            let tag = match c.effect {
                ClassEffect::HandlerRequired => "REQUIRED",
                ClassEffect::SafeToRemove => "REMOVABLE",
                ClassEffect::StillNeeded => "STILL NEEDED",
            };
            out.push(format!("  {} {tag}: {}", s(&c.name), s(&c.message)));
            if !c.missing_nodes.is_empty() {
                out.push(format!(
                    "      nodes lacking the handler: {}",
                    c.missing_nodes
                        .iter()
                        .map(|n| s(n))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
}

/// What the file or a binding broke, with the rule and where.
fn problem_lines(p: &Plan, out: &mut Vec<String>) {
    if !p.problems.is_empty() {
        out.push(String::new());
        out.push("Problems:".to_string());
        for pr in &p.problems {
            let stage = match pr.stage {
                Stage::Load => "file refused",
                Stage::Reconcile => "binding refused at reconcile",
            };
            let at = match (pr.line, pr.column) {
                (Some(l), Some(c)) => format!("{l}:{c}: "),
                _ => String::new(),
            };
            out.push(format!(
                "  [{}] {stage}: {at}{}",
                s(&pr.rule),
                sanitize::value(&pr.message)
            ));
        }
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
pub(crate) mod tests;
