//! Explaining a workload or pod that names a RuntimeClass outside (or
//! beside) a Runtime: what the agent's retained analysis and the workload
//! RuntimeClass policy look at — whether a current grant covers it
//! ([`covered_by_grant`]), the class, and the nodes its pods may land on.

use std::collections::BTreeMap;

use k8s_openapi::api::node::v1::RuntimeClass;

use crate::analysis::{NodeInfo, Placement, RetainReason, Workload, covered_by_grant, retained};
use crate::decide::{self, ENVIRONMENT_LABEL, GrantBinding, Identity, PROJECT_LABEL};
use crate::render::labels::{APPLICATION_LABEL, SERVICE_LABEL};

use super::steps::{Mismatch, closest_binding, identity_step, node_steps};
use super::{Admission, Explanation, Step, StepKind, Verdict, admission_step};

/// What explaining a workload reads.
#[derive(Clone, Copy, Debug)]
pub struct WorkloadFacts<'a> {
    /// The workload (or pod), as the analysis reduces it.
    pub workload: &'a Workload,
    /// Its pod template's scheduling constraints.
    pub placement: Placement<'a>,
    /// A pod's `spec.nodeName`, when already scheduled: only that node
    /// counts then.
    pub node_name: Option<&'a str>,
    /// Its Namespace's labels (`None`: not known).
    pub namespace_labels: Option<&'a BTreeMap<String, String>>,
    /// The bindings (see [`super::RuntimeFacts::bindings`]).
    pub bindings: &'a [GrantBinding],
    /// What the bindings are (`RuntimeGrant`).
    pub binding_source: &'a str,
    /// Every RuntimeClass known.
    pub classes: &'a [RuntimeClass],
    /// Every node, reduced.
    pub nodes: &'a [NodeInfo],
    /// The admission verdict, when the caller made the dry-run.
    pub admission: Option<&'a Admission>,
}

/// Stable decisions of a workload explanation.
pub mod decisions {
    /// A current grant covers the workload's class for its identity.
    pub const COVERED: &str = "Covered";
    /// No current grant covers it (see `analysis::retained`).
    pub const RETAINED: &str = "Retained";
    /// It names no RuntimeClass: the cluster's default runtime.
    pub const NO_CLASS: &str = "NoClass";
}

/// Explains a workload or pod.
pub fn explain_workload(f: &WorkloadFacts<'_>) -> Explanation {
    let w = f.workload;
    let subject = w.key();
    let Some(class_name) = w.runtime_class.as_deref() else {
        let mut steps: Vec<Step> = super::StepKind::ALL
            .iter()
            .map(|k| Step::skipped(*k, "no runtimeClassName: the cluster's default runtime"))
            .collect();
        if let Some(i) = steps.iter().position(|s| s.step == StepKind::Admission) {
            steps[i] = admission_step(f.admission);
        }
        return Explanation {
            subject,
            decision: decisions::NO_CLASS.into(),
            message: "names no RuntimeClass; no grant is needed".into(),
            steps,
        };
    };
    let empty = BTreeMap::new();
    let scope = decide::namespace_scope(&w.namespace, f.namespace_labels.unwrap_or(&empty));
    let label = |k: &str| w.labels.get(k).cloned().unwrap_or_default();
    let identity = scope.map(|(project, environment)| Identity {
        project,
        environment,
        application: label(APPLICATION_LABEL),
        service: label(SERVICE_LABEL),
    });
    let mut steps = vec![identity_step(&w.namespace, identity.as_ref())];

    let verdict = retained(std::slice::from_ref(w), f.bindings, None);
    // An orphan is retained even where its grant would cover it.
    let covered = covered_by_grant(w, f.bindings) && verdict.is_empty();
    steps.push(binding_step(
        f,
        class_name,
        covered,
        verdict.first().map(|r| &r.reason),
    ));

    let class = f
        .classes
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(class_name));
    steps.push(class_step(class, class_name));

    steps.extend(handler_steps(f, class.map(|c| c.handler.as_str())));
    steps.push(admission_step(f.admission));

    let (decision, message, cond) = match verdict.first() {
        None => (
            decisions::COVERED,
            format!("a current grant covers {subject} on RuntimeClass {class_name}"),
            Step::new(
                StepKind::Conditions,
                Verdict::Pass,
                "covered: not retained, no finding",
                String::new(),
            ),
        ),
        Some(r) => {
            let why = retain_words(&r.reason);
            (
                decisions::RETAINED,
                format!(
                    "{subject} references RuntimeClass {class_name}, which no current grant covers for it: {why}"
                ),
                Step::new(
                    StepKind::Conditions,
                    Verdict::Fail,
                    format!("retained: {why}"),
                    String::new(),
                ),
            )
        }
    };
    steps.push(cond);
    Explanation {
        subject,
        decision: decision.into(),
        message,
        steps,
    }
}

/// The handlers, attestation and placement steps of a workload on a class
/// with `handler` (`None`: no such class): its node's, or every node's,
/// handlers and placement; attestation is a granted class's (a Runtime's).
fn handler_steps(f: &WorkloadFacts<'_>, handler: Option<&str>) -> Vec<Step> {
    let Some(handler) = handler else {
        return [
            StepKind::Handlers,
            StepKind::Attestation,
            StepKind::Placement,
        ]
        .map(|kind| Step::skipped(kind, "no class, no handler"))
        .to_vec();
    };
    let only: Vec<NodeInfo>;
    let nodes = match f.node_name {
        Some(n) => {
            only = f.nodes.iter().filter(|x| x.name == n).cloned().collect();
            &only[..]
        }
        None => f.nodes,
    };
    let (handlers, placement, _) = node_steps(nodes, &f.placement, handler);
    vec![
        handlers,
        Step::skipped(
            StepKind::Attestation,
            "canaries attest granted classes: see `berth explain` of a Runtime, or the Handlers view",
        ),
        placement,
    ]
}

/// The retained reason in words.
pub fn retain_words(r: &RetainReason) -> String {
    match r {
        RetainReason::GrantGone { alias } => {
            format!("berth-managed, granted as {alias} before, and that grant is gone")
        }
        RetainReason::NotGranted => "berth-managed without a grant for its class".into(),
        RetainReason::Orphaned { granted_as } => format!(
            "an orphan: it carries berth's labels but has no controller, so it runs granted class ({}) outside its Runtime and the contract",
            granted_as.join(", ")
        ),
        RetainReason::OutsideBerth { granted_as } if granted_as.is_empty() => {
            "not managed by berth; no grant names its class".into()
        }
        RetainReason::OutsideBerth { granted_as } => format!(
            "not managed by berth, yet its class is granted (as {}): it runs a granted class outside berth",
            granted_as.join(", ")
        ),
    }
}

fn binding_step(
    f: &WorkloadFacts<'_>,
    class: &str,
    covered: bool,
    retained: Option<&RetainReason>,
) -> Step {
    let w = f.workload;
    let alias = w.runtime_profile.clone().unwrap_or_default();
    let label = |k: &str| w.labels.get(k).cloned().unwrap_or_default();
    let wanted: Vec<(&'static str, String)> = vec![
        ("runtime_class", class.to_string()),
        ("name", alias.clone()),
        ("project", label(PROJECT_LABEL)),
        ("environment", label(ENVIRONMENT_LABEL)),
        ("application", label(APPLICATION_LABEL)),
        ("service", label(SERVICE_LABEL)),
    ];
    let wanted_ref: Vec<(&'static str, &str)> =
        wanted.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let closest = closest_binding(f.bindings, &wanted_ref);
    let object = |b: &GrantBinding| format!("{}/{}", f.binding_source, b.name);
    if covered {
        let b = closest.map(|(b, _)| b);
        return Step::new(
            StepKind::Binding,
            Verdict::Pass,
            format!("binding {alias} covers it (same identity labels, same class)"),
            b.map(object).unwrap_or_default(),
        );
    }
    let why = retained.map(retain_words).unwrap_or_default();
    if let Some(RetainReason::Orphaned { .. }) = retained {
        return Step::new(
            StepKind::Binding,
            Verdict::Fail,
            format!("no binding covers it: {why}"),
            closest.map(|(b, _)| object(b)).unwrap_or_default(),
        );
    }
    match closest {
        None => Step::new(
            StepKind::Binding,
            Verdict::Fail,
            format!("no grants are loaded: {why}"),
            String::new(),
        ),
        Some((b, mismatches)) => {
            let mut details: Vec<String> = mismatches.iter().map(Mismatch::line).collect();
            if !w.managed_by_berth {
                details.push(
                    "managed-by: the binding covers only berth-managed workloads, this is not one"
                        .into(),
                );
            }
            Step::new(
                StepKind::Binding,
                Verdict::Fail,
                format!("no binding covers it ({why}); closest is {}", b.name),
                object(b),
            )
            .with_details(details)
        }
    }
}

fn class_step(class: Option<&RuntimeClass>, name: &str) -> Step {
    let object = format!("RuntimeClass/{name}");
    match class {
        None => Step::new(
            StepKind::RuntimeClass,
            Verdict::Fail,
            format!("RuntimeClass {name} does not exist: pods naming it are refused"),
            object,
        ),
        Some(c) if c.metadata.deletion_timestamp.is_some() => Step::new(
            StepKind::RuntimeClass,
            Verdict::Fail,
            format!("RuntimeClass {name} is being deleted"),
            object,
        ),
        Some(c) => {
            let observed = decide::ObservedClass::from_runtime_class(c);
            let mut extra = Vec::new();
            if observed.has_overhead {
                extra.push("overhead");
            }
            if observed.has_scheduling {
                extra.push("scheduling");
            }
            Step::new(
                StepKind::RuntimeClass,
                Verdict::Pass,
                format!(
                    "exists, handler {}{}",
                    c.handler,
                    if extra.is_empty() {
                        String::new()
                    } else {
                        format!(", sets {} (applied by admission)", extra.join(" and "))
                    }
                ),
                object,
            )
        }
    }
}
