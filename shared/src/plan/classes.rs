//! Per-RuntimeClass effects (handlers newly required, classes that become
//! removable or stay needed) and the bindings the agent would refuse at
//! reconcile.

use std::collections::BTreeSet;

use crate::analysis::{RemovalVerdict, class_usage, coverage, removal_verdict};
use crate::decide::{GrantBinding, ObservedClass};

use super::Cluster;
use super::types::{ClassChange, ClassEffect, PlanProblem, RuntimeChange, Stage};

fn problem(b: &GrantBinding, rule: &str, message: String) -> PlanProblem {
    PlanProblem {
        stage: Stage::Reconcile,
        rule: rule.to_string(),
        binding: Some(b.name.clone()),
        runtime_class: Some(b.runtime_class.clone()),
        line: None,
        column: None,
        message,
    }
}

/// The bindings of `next` the agent would refuse when a Runtime selects
/// them, in the order of the agent's own checks (the RuntimeGrant
/// `ClassReady` condition).
pub fn reconcile_problems(next: &[GrantBinding], classes: &[ObservedClass]) -> Vec<PlanProblem> {
    let mut out = Vec::new();
    for b in next {
        let class = classes.iter().find(|c| c.name == b.runtime_class);
        let p = match class {
            None => problem(
                b,
                "ClassMissing",
                format!("RuntimeClass {} does not exist", b.runtime_class),
            ),
            Some(c) if c.deleting => problem(
                b,
                "ClassDeleting",
                format!("RuntimeClass {} is being deleted", c.name),
            ),
            Some(c) if c.handler != b.handler => problem(
                b,
                "HandlerMismatch",
                format!(
                    "RuntimeClass {} names handler {}, the binding expects {}",
                    c.name, c.handler, b.handler
                ),
            ),
            Some(c) if c.has_overhead || c.has_scheduling => problem(
                b,
                "ClassUnsupported",
                format!(
                    "RuntimeClass {} sets overhead or scheduling, which berth does not support",
                    c.name
                ),
            ),
            Some(_) => continue,
        };
        out.push(p);
    }
    out
}

/// What changes for each class: `(class, handler)` pairs `next` requires
/// that `current` did not, and classes `current` granted that `next` does
/// not. Sorted by class name, then effect.
pub fn effects(
    current: &[GrantBinding],
    next: &[GrantBinding],
    runtimes: &[RuntimeChange],
    cluster: &Cluster<'_>,
) -> Vec<ClassChange> {
    let pairs = |bs: &[GrantBinding]| -> BTreeSet<(String, String)> {
        bs.iter()
            .map(|b| (b.runtime_class.clone(), b.handler.clone()))
            .collect()
    };
    let (now, then) = (pairs(current), pairs(next));
    let usage = class_usage(cluster.workloads);
    let mut out = Vec::new();

    for (class, handler) in then.difference(&now) {
        let observed = cluster.classes.iter().find(|c| &c.name == class);
        let missing: BTreeSet<String> = runtimes
            .iter()
            .filter(|r| {
                r.effect.rolls()
                    && r.after.runtime_class.as_deref() == Some(class)
                    && r.after.handler.as_deref() == Some(handler)
            })
            .flat_map(|r| r.stall_nodes.iter().cloned())
            .collect();
        let cov = coverage(cluster.nodes, handler);
        let message = if missing.is_empty() {
            format!(
                "handler {handler} becomes required for RuntimeClass {class}; {} Ready nodes report it",
                cov.summary()
            )
        } else {
            format!(
                "handler {handler} becomes required for RuntimeClass {class}; {} node(s) in an affected Runtime's placement do not report it and the rollout would stall there",
                missing.len()
            )
        };
        out.push(ClassChange {
            name: class.clone(),
            effect: ClassEffect::HandlerRequired,
            present: observed.is_some(),
            class_handler: observed.map(|c| c.handler.clone()),
            required_handler: Some(handler.clone()),
            bindings: next
                .iter()
                .filter(|b| &b.runtime_class == class && &b.handler == handler)
                .map(|b| b.name.clone())
                .collect(),
            nodes: cov.summary(),
            missing_nodes: missing.into_iter().collect(),
            workloads: 0,
            rollback_revisions: 0,
            message,
        });
    }

    let granted_now: BTreeSet<&String> = current.iter().map(|b| &b.runtime_class).collect();
    for class in granted_now {
        if next.iter().any(|b| &b.runtime_class == class) {
            continue;
        }
        let observed = cluster.classes.iter().find(|c| &c.name == class);
        let using = usage.get(class).cloned().unwrap_or_default();
        let handler = observed.map(|c| c.handler.clone());
        let cov = handler.as_deref().map(|h| coverage(cluster.nodes, h));
        let (effect, workloads, rollbacks, message) = match removal_verdict(&using, 0) {
            RemovalVerdict::Safe => (
                ClassEffect::SafeToRemove,
                0,
                0,
                format!(
                    "no binding grants RuntimeClass {class} any more and nothing references it: it and its handler can be removed"
                ),
            ),
            RemovalVerdict::Unsafe { why, counts } => (
                ClassEffect::StillNeeded,
                counts.workloads,
                counts.rollback_revisions,
                format!("no binding grants RuntimeClass {class} any more, but keep it: {why}"),
            ),
        };
        out.push(ClassChange {
            name: class.clone(),
            effect,
            present: observed.is_some(),
            class_handler: handler,
            required_handler: None,
            bindings: Vec::new(),
            nodes: cov.map(|c| c.summary()).unwrap_or_default(),
            missing_nodes: Vec::new(),
            workloads,
            rollback_revisions: rollbacks,
            message,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}
