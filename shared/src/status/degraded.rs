//! Degraded: something needs attention while the service still runs — a
//! render or apply failure, an unowned object in the way, a rollout past
//! its deadline, nodes in the placement without the handler.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::Applied;
use crate::api::condition::build;
use crate::api::{RolloutPhase, condition_types as ct, reasons};

/// Degraded, the first trouble in order of urgency.
pub fn degraded(
    render_error: Option<&str>,
    applied: Option<&Applied<'_>>,
    phase: RolloutPhase,
    handler_ready: &Condition,
) -> Condition {
    if let Some(e) = render_error {
        build(ct::DEGRADED, true, reasons::RENDER_FAILED, e)
    } else if let Some(a) = applied.filter(|a| !a.conflicts.is_empty()) {
        build(
            ct::DEGRADED,
            true,
            reasons::CONFLICT,
            format!(
                "objects with managed names exist and are not owned by this Runtime; left untouched: {}",
                a.conflicts.join(", ")
            ),
        )
    } else if let Some(first) = applied.and_then(|a| a.errors.first()) {
        // The first failure's step is the reason (and so the Event's);
        // the message lists every failure.
        let all: Vec<&str> = applied
            .map(|a| a.errors.iter().map(|e| e.message.as_str()).collect())
            .unwrap_or_default();
        build(ct::DEGRADED, true, first.reason, all.join("; "))
    } else if phase == RolloutPhase::Failed {
        build(
            ct::DEGRADED,
            true,
            reasons::PROGRESS_DEADLINE_EXCEEDED,
            "the Deployment exceeded its progress deadline",
        )
    } else if handler_ready.reason == reasons::PLACEMENT_INCOMPLETE {
        build(
            ct::DEGRADED,
            true,
            reasons::PLACEMENT_INCOMPLETE,
            "some nodes the pods may land on lack the handler",
        )
    } else {
        build(
            ct::DEGRADED,
            false,
            reasons::AS_EXPECTED,
            "nothing needs attention",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::ApplyFailure;

    #[test]
    fn table() {
        let conflicts = ["ConfigMap web".to_string()];
        let errors = [ApplyFailure {
            reason: reasons::APPLY_FAILED,
            message: "Deployment web: forbidden".to_string(),
        }];
        let both = Applied {
            conflicts: &conflicts,
            errors: &errors,
            jobs: &[],
        };
        let failed = Applied {
            conflicts: &[],
            errors: &errors,
            jobs: &[],
        };
        let clean = Applied::default();
        let present = build(ct::HANDLER_READY, true, reasons::HANDLER_PRESENT, "");
        let incomplete = build(ct::HANDLER_READY, false, reasons::PLACEMENT_INCOMPLETE, "");
        let ok = RolloutPhase::Complete;
        // (render error, applied, phase, handler, status, reason)
        let cases = [
            (
                Some("bad"),
                Some(&both),
                RolloutPhase::Failed,
                &incomplete,
                "True",
                reasons::RENDER_FAILED,
            ),
            (
                None,
                Some(&both),
                RolloutPhase::Failed,
                &incomplete,
                "True",
                reasons::CONFLICT,
            ),
            (
                None,
                Some(&failed),
                RolloutPhase::Failed,
                &incomplete,
                "True",
                reasons::APPLY_FAILED,
            ),
            (
                None,
                Some(&clean),
                RolloutPhase::Failed,
                &incomplete,
                "True",
                reasons::PROGRESS_DEADLINE_EXCEEDED,
            ),
            (
                None,
                None,
                RolloutPhase::Failed,
                &present,
                "True",
                reasons::PROGRESS_DEADLINE_EXCEEDED,
            ),
            (
                None,
                Some(&clean),
                ok,
                &incomplete,
                "True",
                reasons::PLACEMENT_INCOMPLETE,
            ),
            (
                None,
                Some(&clean),
                ok,
                &present,
                "False",
                reasons::AS_EXPECTED,
            ),
            (
                None,
                None,
                RolloutPhase::Blocked,
                &present,
                "False",
                reasons::AS_EXPECTED,
            ),
        ];
        for (render, applied, phase, handler, status, reason) in cases {
            let c = degraded(render, applied, phase, handler);
            assert_eq!(c.type_, ct::DEGRADED);
            assert_eq!(
                (c.status.as_str(), c.reason.as_str()),
                (status, reason),
                "{render:?} {applied:?} {phase:?}"
            );
        }
        let c = degraded(None, Some(&both), ok, &present);
        assert_eq!(
            c.message,
            "objects with managed names exist and are not owned by this Runtime; left untouched: ConfigMap web"
        );
        assert_eq!(
            degraded(None, Some(&failed), ok, &present).message,
            "Deployment web: forbidden"
        );
    }

    #[test]
    fn an_apply_failure_gives_its_step_as_the_reason_and_lists_every_failure() {
        for reason in reasons::APPLY_FAILURES {
            let errors = [
                ApplyFailure {
                    reason,
                    message: "Deployment/web: boom".to_string(),
                },
                ApplyFailure {
                    reason: reasons::DELETE_FAILED,
                    message: "Job/web-migrate: gone wrong".to_string(),
                },
            ];
            let applied = Applied {
                conflicts: &[],
                errors: &errors,
                jobs: &[],
            };
            let present = build(ct::HANDLER_READY, true, reasons::HANDLER_PRESENT, "");
            let c = degraded(None, Some(&applied), RolloutPhase::Complete, &present);
            assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", reason));
            assert_eq!(
                c.message,
                "Deployment/web: boom; Job/web-migrate: gone wrong"
            );
        }
    }
}
