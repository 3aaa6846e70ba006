//! Step 5 (status): the Runtime's status from what was read, decided and
//! applied, written through the status subresource only when it differs
//! from what is stored (conditions keep their lastTransitionTime while their
//! status does not change).

use std::sync::Arc;

use berth_shared::analysis::{NodeInfo, Placement, placement_coverage};
use berth_shared::api::{
    RolloutPhase, RolloutStatus, Runtime, RuntimeStatus, UpgradeStatus, condition_types as ct,
    reasons,
};
use berth_shared::decide::Decision;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::apply::ApplyOutcome;
use super::read::Snapshot;

/// Why the agent did not apply, when it did not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Applied (or tried to).
    None,
    /// Blocked by the grant decision (or an incomplete identity).
    Blocked {
        /// Stable reason.
        reason: String,
        /// Message.
        message: String,
    },
}

/// Inputs of [`compute`].
pub struct StatusInput<'a> {
    /// The Runtime.
    pub runtime: &'a Runtime,
    /// Read + decide.
    pub snapshot: &'a Snapshot,
    /// Whether the agent held back.
    pub hold: &'a Hold,
    /// What apply did (None when held).
    pub applied: Option<&'a ApplyOutcome>,
    /// A render failure message.
    pub render_error: Option<&'a str>,
    /// The Runtime's Deployment (if it exists and is ours).
    pub deployment: Option<&'a Deployment>,
    /// ReplicaSets controlled by that Deployment.
    pub replica_sets: &'a [Arc<ReplicaSet>],
    /// Nodes.
    pub nodes: &'a [NodeInfo],
}

fn cond(type_: &str, ok: bool, reason: &str, message: impl Into<String>) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: if ok { "True" } else { "False" }.to_string(),
        reason: reason.to_string(),
        message: message.into(),
        observed_generation: None,
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
    }
}

fn deployment_condition<'a>(
    d: &'a Deployment,
    type_: &str,
) -> Option<&'a k8s_openapi::api::apps::v1::DeploymentCondition> {
    d.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == type_))
}

fn template_image(t: Option<&k8s_openapi::api::core::v1::PodTemplateSpec>) -> Option<String> {
    t.and_then(|t| t.spec.as_ref())
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
}

/// Rollout summary and the image most ready replicas run.
pub fn rollout(
    runtime: &Runtime,
    deployment: Option<&Deployment>,
    replica_sets: &[Arc<ReplicaSet>],
    blocked: bool,
) -> (Option<RolloutStatus>, Option<String>) {
    let Some(d) = deployment else {
        let phase = if blocked {
            RolloutPhase::Blocked
        } else if runtime.spec.suspend {
            RolloutPhase::Suspended
        } else {
            RolloutPhase::Pending
        };
        return (
            Some(RolloutStatus {
                phase,
                ..Default::default()
            }),
            None,
        );
    };
    let spec_replicas = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let st = d.status.clone().unwrap_or_default();
    let desired = spec_replicas;
    let updated = st.updated_replicas.unwrap_or(0);
    let ready = st.ready_replicas.unwrap_or(0);
    let available = st.available_replicas.unwrap_or(0);
    let total = st.replicas.unwrap_or(0);
    let observed = st.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0);
    let failed = deployment_condition(d, "Progressing")
        .is_some_and(|c| c.reason.as_deref() == Some("ProgressDeadlineExceeded"));
    let complete = observed
        && updated == desired
        && ready == desired
        && available == desired
        && total == desired;
    let phase = if blocked {
        RolloutPhase::Blocked
    } else if runtime.spec.suspend && complete {
        RolloutPhase::Suspended
    } else if failed {
        RolloutPhase::Failed
    } else if complete {
        RolloutPhase::Complete
    } else {
        RolloutPhase::Progressing
    };
    let revision = d
        .annotations()
        .get("deployment.kubernetes.io/revision")
        .and_then(|r| r.parse().ok());
    // The image most ready pods run: the ReplicaSet with most ready
    // replicas (the template's when nothing is ready yet and complete).
    let current_image = replica_sets
        .iter()
        .filter(|rs| {
            rs.status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0)
                > 0
        })
        // Ties go to the newest revision, then the name: never to the
        // store's (hash map) order.
        .max_by_key(|rs| {
            let ready = rs
                .status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0);
            let revision: u64 = rs
                .annotations()
                .get("deployment.kubernetes.io/revision")
                .and_then(|r| r.parse().ok())
                .unwrap_or(0);
            (ready, revision, rs.name_any())
        })
        .and_then(|rs| template_image(rs.spec.as_ref().and_then(|s| s.template.as_ref())))
        .or_else(|| {
            complete
                .then(|| template_image(d.spec.as_ref().map(|s| &s.template)))
                .flatten()
        });
    (
        Some(RolloutStatus {
            revision,
            desired,
            updated,
            ready,
            available,
            unavailable: st.unavailable_replicas.unwrap_or(0),
            phase,
        }),
        current_image,
    )
}

/// The status to write (lastTransitionTimes not yet merged).
pub fn compute(input: &StatusInput<'_>) -> RuntimeStatus {
    let rt = input.runtime;
    let decision = &input.snapshot.decision;
    let blocked = matches!(input.hold, Hold::Blocked { .. });
    let (rollout, current_image) = rollout(rt, input.deployment, input.replica_sets, blocked);
    let phase = rollout.as_ref().map_or(RolloutPhase::Pending, |r| r.phase);
    let mut conditions = Vec::new();

    // ProfileGranted
    let granted_ok = decision.allows_changes();
    conditions.push(cond(
        ct::PROFILE_GRANTED,
        granted_ok,
        decision.reason(),
        decision.message(),
    ));

    // HandlerReady
    let handler_cond = match decision {
        Decision::NotRequested => cond(
            ct::HANDLER_READY,
            true,
            reasons::NO_HANDLER_NEEDED,
            "no runtimeProfile requested",
        ),
        Decision::Granted { handler, .. } => {
            let sched = rt.spec.scheduling.as_ref();
            let placement = Placement {
                node_selector: sched.map(|s| &s.node_selector),
                affinity: sched.and_then(|s| s.affinity.as_ref()),
                tolerations: sched.map_or(&[], |s| s.tolerations.as_slice()),
            };
            let cov = placement_coverage(input.nodes, &placement, handler);
            let unknown_note = if cov.unknown > 0 {
                format!(
                    "; {} report no handler list (presence unknown)",
                    cov.unknown
                )
            } else {
                String::new()
            };
            if cov.eligible > 0 && cov.unknown == cov.eligible {
                // No node in the placement says which handlers it has
                // (older kubelets/runtimes): unknown, not absent. Ready
                // then follows the rollout alone.
                Condition {
                    status: "Unknown".to_string(),
                    ..cond(
                        ct::HANDLER_READY,
                        false,
                        reasons::HANDLER_UNKNOWN,
                        format!(
                            "none of the {} Ready nodes the pods may be scheduled onto reports a handler list (status.runtimeHandlers); whether they have handler {handler} is unknown",
                            cov.eligible
                        ),
                    )
                }
            } else if cov.with_handler == 0 && cov.unknown == 0 {
                cond(
                    ct::HANDLER_READY,
                    false,
                    reasons::HANDLER_ABSENT,
                    format!(
                        "no Ready node the pods may be scheduled onto reports handler {handler} ({} eligible)",
                        cov.eligible
                    ),
                )
            } else if !cov.missing.is_empty() {
                // Sorted: the store's order is a hash map's, and status
                // must not change when nothing changed.
                let mut names = cov.missing.clone();
                names.sort();
                names.truncate(10);
                cond(
                    ct::HANDLER_READY,
                    false,
                    reasons::PLACEMENT_INCOMPLETE,
                    format!(
                        "{} of {} Ready nodes the pods may be scheduled onto do not report handler {handler}; pods landing there would fail to start: {}{unknown_note}",
                        cov.missing.len(),
                        cov.eligible,
                        names.join(", ")
                    ),
                )
            } else {
                cond(
                    ct::HANDLER_READY,
                    true,
                    reasons::HANDLER_PRESENT,
                    if cov.unknown == 0 {
                        format!(
                            "all {} Ready nodes the pods may be scheduled onto report handler {handler}",
                            cov.eligible
                        )
                    } else {
                        format!(
                            "{} of {} Ready nodes the pods may be scheduled onto report handler {handler}{unknown_note}",
                            cov.with_handler, cov.eligible
                        )
                    },
                )
            }
        }
        other => cond(ct::HANDLER_READY, false, other.reason(), other.message()),
    };
    // Unknown presence does not hold Ready back: the rollout decides.
    let handler_ok = handler_cond.status != "False";
    let placement_incomplete = handler_cond.reason == reasons::PLACEMENT_INCOMPLETE;
    conditions.push(handler_cond);

    // Progressing
    let progressing = match phase {
        RolloutPhase::Complete => cond(
            ct::PROGRESSING,
            false,
            reasons::ROLLOUT_COMPLETE,
            "the rollout is complete",
        ),
        RolloutPhase::Failed => cond(
            ct::PROGRESSING,
            false,
            reasons::PROGRESS_DEADLINE_EXCEEDED,
            "the Deployment exceeded its progress deadline; no automatic rollback",
        ),
        RolloutPhase::Suspended => cond(
            ct::PROGRESSING,
            false,
            reasons::SUSPENDED,
            "the Runtime is suspended",
        ),
        RolloutPhase::Blocked => {
            let (reason, message) = match input.hold {
                Hold::Blocked { reason, message } => (reason.as_str(), message.as_str()),
                Hold::None => (decision.reason(), ""),
            };
            cond(ct::PROGRESSING, false, reason, message.to_string())
        }
        RolloutPhase::Pending | RolloutPhase::Progressing => cond(
            ct::PROGRESSING,
            true,
            reasons::ROLLING_OUT,
            "the Deployment is rolling out",
        ),
    };
    conditions.push(progressing);

    // Available
    let available_ok = input
        .deployment
        .is_some_and(|d| deployment_condition(d, "Available").is_some_and(|c| c.status == "True"))
        && !rt.spec.suspend;
    conditions.push(if rt.spec.suspend {
        cond(
            ct::AVAILABLE,
            false,
            reasons::SUSPENDED,
            "the Runtime is suspended",
        )
    } else if available_ok {
        cond(
            ct::AVAILABLE,
            true,
            reasons::MINIMUM_REPLICAS_AVAILABLE,
            "enough replicas are available",
        )
    } else {
        cond(
            ct::AVAILABLE,
            false,
            reasons::MINIMUM_REPLICAS_UNAVAILABLE,
            "too few replicas are available",
        )
    });

    // Degraded
    let applied = input.applied;
    let degraded = if let Some(e) = input.render_error {
        cond(ct::DEGRADED, true, reasons::RENDER_FAILED, e.to_string())
    } else if let Some(a) = applied.filter(|a| !a.conflicts.is_empty()) {
        cond(
            ct::DEGRADED,
            true,
            reasons::CONFLICT,
            format!(
                "objects with managed names exist and are not owned by this Runtime; left untouched: {}",
                a.conflicts.join(", ")
            ),
        )
    } else if let Some(a) = applied.filter(|a| !a.errors.is_empty()) {
        cond(
            ct::DEGRADED,
            true,
            reasons::APPLY_FAILED,
            a.errors.join("; "),
        )
    } else if phase == RolloutPhase::Failed {
        cond(
            ct::DEGRADED,
            true,
            reasons::PROGRESS_DEADLINE_EXCEEDED,
            "the Deployment exceeded its progress deadline",
        )
    } else if placement_incomplete {
        cond(
            ct::DEGRADED,
            true,
            reasons::PLACEMENT_INCOMPLETE,
            "some nodes the pods may land on lack the handler",
        )
    } else {
        cond(
            ct::DEGRADED,
            false,
            reasons::AS_EXPECTED,
            "nothing needs attention",
        )
    };
    let degraded_true = degraded.status == "True";
    let degraded_reason = degraded.reason.clone();
    conditions.push(degraded);

    // Blocked
    conditions.push(match input.hold {
        Hold::Blocked { reason, message } => cond(ct::BLOCKED, true, reason, message.clone()),
        Hold::None => cond(
            ct::BLOCKED,
            false,
            reasons::AS_EXPECTED,
            "managed objects are kept as rendered",
        ),
    });

    // Upgrading
    let desired_image = rt.spec.image.reference();
    let previous_upgrade = rt.status.as_ref().and_then(|s| s.upgrade.clone());
    let last_successful = if phase == RolloutPhase::Complete
        && current_image.as_deref() == Some(desired_image.as_str())
    {
        Some(desired_image.clone())
    } else {
        previous_upgrade.and_then(|u| u.last_successful_image)
    };
    let changing = current_image.as_deref().is_some_and(|c| c != desired_image) && !blocked;
    conditions.push(if changing && phase == RolloutPhase::Failed {
        cond(
            ct::UPGRADING,
            false,
            reasons::PROGRESS_DEADLINE_EXCEEDED,
            format!("upgrade to {desired_image} failed: progress deadline exceeded; no automatic rollback"),
        )
    } else if changing {
        cond(
            ct::UPGRADING,
            true,
            reasons::IMAGE_CHANGING,
            format!(
                "rolling from {} to {desired_image}",
                current_image.as_deref().unwrap_or("?")
            ),
        )
    } else {
        cond(ct::UPGRADING, false, reasons::IMAGE_CURRENT, "the image is the one rolled out")
    });

    // Ready
    let ready = if blocked {
        let reason = match input.hold {
            Hold::Blocked { reason, .. } => reason.clone(),
            Hold::None => String::new(),
        };
        cond(
            ct::READY,
            false,
            &reason,
            "blocked: managed objects are left unchanged",
        )
    } else if !granted_ok {
        cond(ct::READY, false, decision.reason(), decision.message())
    } else if degraded_true {
        cond(ct::READY, false, &degraded_reason, "degraded")
    } else if !handler_ok {
        cond(
            ct::READY,
            false,
            reasons::HANDLER_ABSENT,
            "the handler is not present where the pods may run",
        )
    } else if rt.spec.suspend {
        cond(
            ct::READY,
            false,
            reasons::SUSPENDED,
            "the Runtime is suspended",
        )
    } else if rt.spec.wanted_replicas() > 0
        && input
            .deployment
            .and_then(|d| d.status.as_ref())
            .and_then(|s| s.available_replicas)
            .unwrap_or(0)
            == 0
    {
        // A Deployment at 0 replicas is "complete" and "available" to
        // Kubernetes; with replicas wanted, it is not ready.
        cond(
            ct::READY,
            false,
            reasons::MINIMUM_REPLICAS_UNAVAILABLE,
            format!(
                "no replica is available; {} wanted",
                rt.spec.wanted_replicas()
            ),
        )
    } else if phase != RolloutPhase::Complete || !available_ok {
        cond(
            ct::READY,
            false,
            reasons::ROLLING_OUT,
            "the rollout is not complete",
        )
    } else {
        cond(
            ct::READY,
            true,
            reasons::AS_EXPECTED,
            "rolled out and available",
        )
    };
    conditions.push(ready);

    let generation = rt.metadata.generation;
    for c in &mut conditions {
        c.observed_generation = generation;
    }
    RuntimeStatus {
        observed_generation: generation,
        identity: input.snapshot.identity.as_ref().ok().map(|i| i.to_status()),
        profile: decision.profile_status(),
        rollout,
        upgrade: Some(UpgradeStatus {
            desired_image: Some(desired_image),
            current_image,
            last_successful_image: last_successful,
        }),
        conditions,
        // What apply recorded; unchanged while nothing was applied.
        jobs: match input.applied {
            Some(a) => a.jobs.clone(),
            None => rt
                .status
                .as_ref()
                .map(|s| s.jobs.clone())
                .unwrap_or_default(),
        },
    }
}

/// Copies lastTransitionTime from `old` for conditions whose status did not
/// change; stamps now for the others.
pub fn merge_transition_times(new: &mut RuntimeStatus, old: Option<&RuntimeStatus>) {
    let now = Time(Timestamp::now());
    for c in &mut new.conditions {
        let previous = old.and_then(|o| o.conditions.iter().find(|p| p.type_ == c.type_));
        c.last_transition_time = match previous {
            Some(p) if p.status == c.status => p.last_transition_time.clone(),
            _ => now.clone(),
        };
    }
}
