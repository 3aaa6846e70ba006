//! Explaining a Runtime: the agent's read-and-decide step
//! (agent/src/controller/reconcile/read.rs) replayed on the caller's copies.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt as _;

use crate::analysis::{NodeInfo, Placement};
use crate::api::{HandlerAttestation, Runtime, condition_types as ct};
use crate::attest::ClassVerdicts;
use crate::decide::{
    self, DecideInput, Decision, ENVIRONMENT_LABEL, GrantBinding, Identity, IdentityError,
    ObservedClass, PROJECT_LABEL,
};
use crate::status::handler_ready;
use k8s_openapi::jiff::Timestamp;

use super::attestation::attestation_step;
use super::steps::{binding_step, class_step, identity_step, node_steps};
use super::{Admission, Explanation, Step, StepKind, Verdict, admission_step};

/// What explaining a Runtime reads.
#[derive(Clone, Copy, Debug)]
pub struct RuntimeFacts<'a> {
    /// The Runtime (its stored status included).
    pub runtime: &'a Runtime,
    /// Its Namespace's labels; `None` when the Namespace is not known
    /// (the agent then treats both identity labels as missing).
    pub namespace_labels: Option<&'a BTreeMap<String, String>>,
    /// The bindings: the agent's loaded file, or the RuntimeGrants it
    /// published (the console's copy).
    pub bindings: &'a [GrantBinding],
    /// What the bindings are, for the steps' objects (`RuntimeGrant`).
    pub binding_source: &'a str,
    /// Every RuntimeClass known.
    pub classes: &'a [RuntimeClass],
    /// Every node, reduced.
    pub nodes: &'a [NodeInfo],
    /// The admission verdict, when the caller made the dry-run.
    pub admission: Option<&'a Admission>,
    /// What the granted class's canaries saw (its grant's
    /// `status.attestation`), when published.
    pub attestation: Option<&'a HandlerAttestation>,
    /// Now (for the evidence's age; `None`: ages left out).
    pub now: Option<Timestamp>,
}

/// The identity exactly as the agent forms it: a Namespace absent from its
/// cache lacks both labels.
pub fn runtime_identity(
    runtime: &Runtime,
    namespace_labels: Option<&BTreeMap<String, String>>,
) -> Result<Identity, IdentityError> {
    let ns_name = runtime.namespace().unwrap_or_default();
    match namespace_labels {
        Some(labels) => decide::identity(
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(ns_name),
                    labels: Some(labels.clone()),
                    ..Default::default()
                },
                ..Default::default()
            },
            runtime,
        ),
        None => Err(IdentityError::MissingLabels {
            namespace: ns_name,
            missing: vec![PROJECT_LABEL, ENVIRONMENT_LABEL],
        }),
    }
}

/// The agent's decision for the Runtime, made as its reconcile makes it:
/// the binding first, then the class that binding names.
pub fn runtime_decision(
    f: &RuntimeFacts<'_>,
    identity: &Result<Identity, IdentityError>,
) -> Decision {
    let requested = f.runtime.spec.runtime_profile.as_deref();
    let class = observed_class(f, identity);
    decide::decide(DecideInput {
        bindings: f.bindings,
        identity: identity.as_ref(),
        requested,
        class: class.as_ref(),
        previous: f.runtime.status.as_ref().and_then(|s| s.profile.as_ref()),
    })
}

fn binding<'a>(
    f: &RuntimeFacts<'a>,
    identity: &Result<Identity, IdentityError>,
) -> Option<&'a GrantBinding> {
    let requested = f.runtime.spec.runtime_profile.as_deref()?;
    decide::binding_for(f.bindings, identity.as_ref().ok()?, requested)
}

fn observed_class(
    f: &RuntimeFacts<'_>,
    identity: &Result<Identity, IdentityError>,
) -> Option<ObservedClass> {
    let b = binding(f, identity)?;
    f.classes
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(b.runtime_class.as_str()))
        .map(ObservedClass::from_runtime_class)
}

/// The class a granted decision names ("" otherwise).
fn decision_class(decision: &Decision) -> &str {
    match decision {
        Decision::Granted { runtime_class, .. } => runtime_class,
        _ => "",
    }
}

/// Explains the agent's decision for one Runtime.
pub fn explain_runtime(f: &RuntimeFacts<'_>) -> Explanation {
    let rt = f.runtime;
    let ns = rt.namespace().unwrap_or_default();
    let identity = runtime_identity(rt, f.namespace_labels);
    let decision = runtime_decision(f, &identity);
    let mut steps = vec![identity_step(&ns, identity.as_ref())];
    let alias = rt.spec.runtime_profile.as_deref().filter(|a| !a.is_empty());

    match (alias, &identity) {
        (None, _) => steps.push(Step::new(
            StepKind::Binding,
            Verdict::Pass,
            "no runtimeProfile requested: the cluster's default runtime, no grant needed",
            String::new(),
        )),
        (Some(_), Err(_)) => steps.push(Step::skipped(
            StepKind::Binding,
            "the identity is incomplete, so no binding can match",
        )),
        (Some(alias), Ok(id)) => {
            let mut step = binding_step(f.bindings, id, alias, f.binding_source);
            if let Decision::Revoked { runtime_class, .. } = &decision {
                step.details.insert(
                    0,
                    format!(
                        "revoked: status.profile says {alias} was granted before (class {})",
                        runtime_class.as_deref().unwrap_or("unknown")
                    ),
                );
            }
            steps.push(step);
        }
    }

    match binding(f, &identity) {
        Some(b) => {
            let class = f
                .classes
                .iter()
                .find(|c| c.metadata.name.as_deref() == Some(b.runtime_class.as_str()));
            steps.push(class_step(&decision, class, &b.runtime_class));
        }
        None => steps.push(Step::skipped(
            StepKind::RuntimeClass,
            "no binding, no class to read",
        )),
    }

    steps.extend(handler_steps(f, &decision));

    steps.push(admission_step(f.admission));
    let verdicts = f
        .attestation
        .map(|a| ClassVerdicts::from_status(decision_class(&decision), "", a));
    steps.push(conditions_step(rt, &decision, f.nodes, verdicts.as_ref()));

    Explanation {
        subject: format!("Runtime/{ns}/{}", rt.name_any()),
        decision: decision.reason().to_string(),
        message: decision.message(),
        steps,
    }
}

/// The handlers, attestation and placement steps: read from the nodes
/// for a granted class; otherwise skipped, saying why.
fn handler_steps(f: &RuntimeFacts<'_>, decision: &Decision) -> Vec<Step> {
    let skipped = |why: &str| {
        [
            StepKind::Handlers,
            StepKind::Attestation,
            StepKind::Placement,
        ]
        .map(|kind| Step::skipped(kind, why))
        .to_vec()
    };
    match decision {
        Decision::Granted { handler, .. } => {
            let sched = f.runtime.spec.scheduling.as_ref();
            let placement = Placement {
                node_selector: sched.map(|s| &s.node_selector),
                affinity: sched.and_then(|s| s.affinity.as_ref()),
                tolerations: sched.map_or(&[], |s| s.tolerations.as_slice()),
            };
            let (handlers, placement_step, _) = node_steps(f.nodes, &placement, handler);
            let attestation = attestation_step(
                f.nodes,
                &placement,
                handler,
                decision_class(decision),
                f.attestation,
                f.now,
            );
            vec![handlers, attestation, placement_step]
        }
        Decision::NotRequested => skipped("no handler needed"),
        _ => skipped("the grant decision failed first"),
    }
}

fn stored<'a>(rt: &'a Runtime, type_: &str) -> Option<&'a Condition> {
    rt.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

/// The conditions the agent's own functions give (ProfileGranted's reason
/// is the decision's, HandlerReady from [`handler_ready`]), next to what
/// the Runtime's status says now.
fn conditions_step(
    rt: &Runtime,
    decision: &Decision,
    nodes: &[NodeInfo],
    attested: Option<&ClassVerdicts>,
) -> Step {
    let handler = handler_ready(rt, decision, nodes, attested);
    let blocked = !decision.allows_changes();
    // What reaches or runs as the pods is the agent's finding from the
    // cluster around them (its caches, not the caller's): read from the
    // status.
    let exposed = stored(rt, ct::EXPOSED).filter(|c| c.status == "True");
    let verdict = if blocked || handler.status == "False" || exposed.is_some() {
        Verdict::Fail
    } else {
        Verdict::Pass
    };
    let reason = format!(
        "ProfileGranted={} ({}), HandlerReady={} ({}){}{}",
        if decision.is_granted() {
            "True"
        } else {
            "False"
        },
        decision.reason(),
        handler.status,
        handler.reason,
        if blocked {
            "; changes to managed objects are blocked"
        } else {
            ""
        },
        exposed
            .map(|c| format!(
                "; Exposed ({}): {} object(s) not its own reach or run as its pods",
                c.reason,
                rt.status.as_ref().map_or(0, |s| s.exposure.len())
            ))
            .unwrap_or_default()
    );
    let mut details = Vec::new();
    for type_ in [
        ct::PROFILE_GRANTED,
        ct::HANDLER_READY,
        ct::BLOCKED,
        ct::DEGRADED,
        ct::EXPOSED,
        ct::READY,
    ] {
        if let Some(c) = stored(rt, type_) {
            details.push(format!(
                "status: {}={} ({}) {}",
                c.type_, c.status, c.reason, c.message
            ));
        }
    }
    let stored_state = rt
        .status
        .as_ref()
        .and_then(|s| s.profile.as_ref())
        .map(|p| p.state);
    let stored_handler = stored(rt, ct::HANDLER_READY).map(|c| c.reason.as_str());
    let agrees = stored_state == Some(decision.state())
        || (stored_state.is_none() && matches!(decision, Decision::NotRequested));
    details.push(if agrees && stored_handler.is_none_or(|r| r == handler.reason) {
        "the agent's status agrees".to_string()
    } else {
        format!(
            "the agent's status differs (profile {:?}, HandlerReady {}): not reconciled since the last change, or the agent reads other grants",
            stored_state,
            stored_handler.unwrap_or("unset")
        )
    });
    Step::new(
        StepKind::Conditions,
        verdict,
        reason,
        format!(
            "Runtime/{}/{}",
            rt.namespace().unwrap_or_default(),
            rt.name_any()
        ),
    )
    .with_details(details)
}
