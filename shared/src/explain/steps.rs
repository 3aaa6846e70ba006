//! Steps shared by the Runtime and the workload explanations.

use k8s_openapi::api::node::v1::RuntimeClass;
use serde::Serialize;

use crate::analysis::{NodeInfo, Placement, PlacementCoverage, Presence, placement_coverage};
use crate::decide::{Decision, GrantBinding, Identity, IdentityError};

use super::{Step, StepKind, Verdict};

/// Most nodes listed one by one under the handlers step.
const MAX_NODES_LISTED: usize = 20;

/// One field where the closest binding differs from the subject.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// The field (`name`, `project`, `environment`, `application`,
    /// `service`, `runtime_class`).
    pub field: &'static str,
    /// What the binding says.
    pub binding: String,
    /// What the subject has.
    pub actual: String,
}

impl Mismatch {
    /// `project: binding says shop, the subject has web`.
    pub fn line(&self) -> String {
        format!(
            "{}: binding says {:?}, this has {:?}",
            self.field, self.binding, self.actual
        )
    }
}

/// The binding differing from `wanted` in the fewest fields (ties: file
/// order), with those fields. `wanted` is `(field, value)` pairs in the
/// binding's vocabulary; a field not given is not compared.
pub fn closest_binding<'a>(
    bindings: &'a [GrantBinding],
    wanted: &[(&'static str, &str)],
) -> Option<(&'a GrantBinding, Vec<Mismatch>)> {
    bindings
        .iter()
        .map(|b| {
            let mismatches: Vec<Mismatch> = wanted
                .iter()
                .filter_map(|(field, actual)| {
                    let have = field_of(b, field);
                    (have != *actual).then(|| Mismatch {
                        field,
                        binding: have.to_string(),
                        actual: (*actual).to_string(),
                    })
                })
                .collect();
            (b, mismatches)
        })
        .min_by_key(|(_, m)| m.len())
}

fn field_of<'a>(b: &'a GrantBinding, field: &str) -> &'a str {
    match field {
        "name" => &b.name,
        "project" => &b.identity.project,
        "environment" => &b.identity.environment,
        "application" => &b.identity.application,
        "service" => &b.identity.service,
        "runtime_class" => &b.runtime_class,
        _ => &b.handler,
    }
}

/// The identity step, from what `decide::identity` (or `namespace_scope`)
/// returned for `namespace`.
pub(super) fn identity_step(namespace: &str, identity: Result<&Identity, &IdentityError>) -> Step {
    let object = format!("Namespace/{namespace}");
    match identity {
        Ok(id) => Step::new(StepKind::Identity, Verdict::Pass, format!("{id}"), object),
        Err(e) => Step::new(StepKind::Identity, Verdict::Fail, e.to_string(), object),
    }
}

/// The binding step for an identity and an alias: the one `binding_for`
/// finds, or the closest and its differences.
pub(super) fn binding_step(
    bindings: &[GrantBinding],
    identity: &Identity,
    alias: &str,
    source: &str,
) -> Step {
    if let Some(b) = crate::decide::binding_for(bindings, identity, alias) {
        return Step::new(
            StepKind::Binding,
            Verdict::Pass,
            format!(
                "binding {} grants RuntimeClass {} (handler {})",
                b.name, b.runtime_class, b.handler
            ),
            format!("{source}/{}", b.name),
        );
    }
    let wanted = [
        ("name", alias),
        ("project", identity.project.as_str()),
        ("environment", identity.environment.as_str()),
        ("application", identity.application.as_str()),
        ("service", identity.service.as_str()),
    ];
    match closest_binding(bindings, &wanted) {
        None => Step::new(
            StepKind::Binding,
            Verdict::Fail,
            format!("no grants are loaded; nothing grants {alias}"),
            String::new(),
        ),
        Some((b, mismatches)) => Step::new(
            StepKind::Binding,
            Verdict::Fail,
            format!(
                "no binding {alias} for {identity}; closest is {} ({} field(s) differ)",
                b.name,
                mismatches.len()
            ),
            format!("{source}/{}", b.name),
        )
        .with_details(mismatches.iter().map(Mismatch::line).collect()),
    }
}

/// The RuntimeClass step from the agent's decision and the class as read.
pub(super) fn class_step(decision: &Decision, class: Option<&RuntimeClass>, name: &str) -> Step {
    let object = format!("RuntimeClass/{name}");
    let mut details = Vec::new();
    if let Some(c) = class {
        details.push(format!("handler: {}", c.handler));
        let fixed = c.overhead.as_ref().and_then(|o| o.pod_fixed.as_ref());
        details.push(match fixed.filter(|f| !f.is_empty()) {
            Some(f) => format!(
                "overhead: {}",
                f.iter()
                    .map(|(k, v)| format!("{k}={}", v.0))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => "overhead: none".into(),
        });
        let sched = c.scheduling.as_ref();
        let selector = sched.and_then(|s| s.node_selector.as_ref());
        let tolerations = sched
            .and_then(|s| s.tolerations.as_ref())
            .map_or(0, Vec::len);
        details.push(match selector.filter(|s| !s.is_empty()) {
            Some(s) => format!(
                "scheduling: nodeSelector {}; {tolerations} toleration(s)",
                s.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            None if tolerations > 0 => format!("scheduling: {tolerations} toleration(s)"),
            None => "scheduling: none".into(),
        });
    }
    let (verdict, reason) = match decision {
        Decision::ClassMissing { .. }
        | Decision::ClassDeleting { .. }
        | Decision::HandlerMismatch { .. }
        | Decision::ClassUnsupported { .. } => (Verdict::Fail, decision.message()),
        Decision::Granted { handler, .. } => (
            Verdict::Pass,
            format!("exists, handler {handler} as granted, no overhead or scheduling"),
        ),
        _ => (Verdict::Skipped, "not reached".into()),
    };
    Step::new(StepKind::RuntimeClass, verdict, reason, object).with_details(details)
}

/// The handlers and placement steps: [`placement_coverage`] (what the
/// agent's HandlerReady reads) and, node by node, what each eligible node
/// reports.
pub(super) fn node_steps(
    nodes: &[NodeInfo],
    placement: &Placement<'_>,
    handler: &str,
) -> (Step, Step, PlacementCoverage) {
    let cov = placement_coverage(nodes, placement, handler);
    let eligible: Vec<&NodeInfo> = nodes
        .iter()
        .filter(|n| n.ready && !n.unschedulable && placement.allows(n))
        .collect();
    let mut details: Vec<String> = eligible
        .iter()
        .take(MAX_NODES_LISTED)
        .map(|n| {
            let word = match n.presence(handler) {
                Presence::Present => "present",
                Presence::Absent => "missing",
                Presence::Unknown => "unknown (reports no handler list)",
            };
            format!("Node/{}: {word}", n.name)
        })
        .collect();
    if eligible.len() > MAX_NODES_LISTED {
        details.push(format!(
            "… and {} more node(s)",
            eligible.len() - MAX_NODES_LISTED
        ));
    }
    let handlers = if cov.eligible == 0 {
        Step::new(
            StepKind::Handlers,
            Verdict::Skipped,
            "no eligible node to ask",
            String::new(),
        )
    } else if !cov.missing.is_empty() || (cov.with_handler == 0 && cov.unknown == 0) {
        Step::new(
            StepKind::Handlers,
            Verdict::Fail,
            format!(
                "{} of {} eligible node(s) lack handler {handler} ({} unknown)",
                cov.missing.len(),
                cov.eligible,
                cov.unknown
            ),
            "Node".into(),
        )
        .with_details(details)
    } else if cov.with_handler == 0 {
        Step::new(
            StepKind::Handlers,
            Verdict::Unknown,
            format!(
                "none of the {} eligible node(s) reports a handler list",
                cov.eligible
            ),
            "Node".into(),
        )
        .with_details(details)
    } else {
        Step::new(
            StepKind::Handlers,
            Verdict::Pass,
            format!(
                "{} of {} eligible node(s) report handler {handler}{}",
                cov.with_handler,
                cov.eligible,
                if cov.unknown > 0 {
                    format!(" ({} unknown)", cov.unknown)
                } else {
                    String::new()
                }
            ),
            "Node".into(),
        )
        .with_details(details)
    };
    let ready = nodes.iter().filter(|n| n.ready).count();
    let placement_step = if cov.eligible == 0 {
        Step::new(
            StepKind::Placement,
            Verdict::Fail,
            format!(
                "no Ready, schedulable node of {ready} Ready matches nodeSelector, affinity and tolerations"
            ),
            String::new(),
        )
    } else {
        Step::new(
            StepKind::Placement,
            Verdict::Pass,
            format!(
                "{} of {ready} Ready node(s) may take the pods",
                cov.eligible
            ),
            String::new(),
        )
    };
    (handlers, placement_step, cov)
}
