//! Degraded: something needs attention while the service still runs — a
//! render or apply failure, an unowned object in the way, a rollout past
//! its deadline, nodes in the placement without the handler or where its
//! canary fails.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::applied::Applied;
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
    } else if let Some(a) = applied.filter(|a| !a.dependencies.is_empty()) {
        build(
            ct::DEGRADED,
            true,
            reasons::DEPENDENCY_NOT_OWNED,
            dependency_message(a),
        )
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
    } else if handler_ready.reason == reasons::HANDLER_FAILING {
        build(
            ct::DEGRADED,
            true,
            reasons::HANDLER_FAILING,
            "the handler's canary fails on nodes the pods may land on (HandlerReady names them and why)",
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

/// Names each object in the way and how to resolve it, then any other
/// conflict.
fn dependency_message(a: &Applied<'_>) -> String {
    let others: Vec<&str> = a
        .conflicts
        .iter()
        .filter(|c| !a.dependencies.contains(c))
        .map(String::as_str)
        .collect();
    let mut message = format!(
        "{} {} not owned by this Runtime and the pods would use {}: the Deployment, Jobs and CronJobs are not created or changed while {} there (the contract is still enforced on them); delete {} (berth recreates the Runtime's own) or rename the Runtime",
        a.dependencies.join(", "),
        if a.dependencies.len() == 1 {
            "exists and is"
        } else {
            "exist and are"
        },
        if a.dependencies.len() == 1 {
            "it"
        } else {
            "them"
        },
        if a.dependencies.len() == 1 {
            "it is"
        } else {
            "they are"
        },
        if a.dependencies.len() == 1 {
            "it"
        } else {
            "them"
        },
    );
    if !others.is_empty() {
        message.push_str(&format!(
            "; also not owned and left untouched: {}",
            others.join(", ")
        ));
    }
    message
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
            dependencies: &[],
            errors: &errors,
            jobs: &[],
            last_applied: None,
        };
        let dependencies = ["ConfigMap/web-config".to_string()];
        let in_the_way = Applied {
            conflicts: &dependencies,
            dependencies: &dependencies,
            errors: &errors,
            jobs: &[],
            last_applied: None,
        };
        let failed = Applied {
            conflicts: &[],
            dependencies: &[],
            errors: &errors,
            jobs: &[],
            last_applied: None,
        };
        let clean = Applied::default();
        let present = build(ct::HANDLER_READY, true, reasons::HANDLER_PRESENT, "");
        let incomplete = build(ct::HANDLER_READY, false, reasons::PLACEMENT_INCOMPLETE, "");
        let ok = RolloutPhase::Complete;
        // (render error, applied, phase, handler, status, reason)
        let cases = [
            (
                Some("bad"),
                Some(&in_the_way),
                RolloutPhase::Failed,
                &incomplete,
                "True",
                reasons::RENDER_FAILED,
            ),
            (
                None,
                Some(&in_the_way),
                RolloutPhase::Failed,
                &incomplete,
                "True",
                reasons::DEPENDENCY_NOT_OWNED,
            ),
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
    fn a_dependency_in_the_way_is_named_with_how_to_resolve_it() {
        let present = build(ct::HANDLER_READY, true, reasons::HANDLER_PRESENT, "");
        let conflicts = [
            "ConfigMap/web-config".to_string(),
            "Service/web".to_string(),
            "ServiceAccount/web".to_string(),
        ];
        let one = ["ConfigMap/web-config".to_string()];
        let c = degraded(
            None,
            Some(&Applied {
                conflicts: &conflicts[..1],
                dependencies: &one,
                ..Applied::default()
            }),
            RolloutPhase::Pending,
            &present,
        );
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", reasons::DEPENDENCY_NOT_OWNED)
        );
        assert_eq!(
            c.message,
            "ConfigMap/web-config exists and is not owned by this Runtime and the pods would use it: the Deployment, Jobs and CronJobs are not created or changed while it is there (the contract is still enforced on them); delete it (berth recreates the Runtime's own) or rename the Runtime"
        );
        let two = [
            "ConfigMap/web-config".to_string(),
            "ServiceAccount/web".to_string(),
        ];
        let c = degraded(
            None,
            Some(&Applied {
                conflicts: &conflicts,
                dependencies: &two,
                ..Applied::default()
            }),
            RolloutPhase::Complete,
            &present,
        );
        assert!(
            c.message
                .starts_with("ConfigMap/web-config, ServiceAccount/web exist and are not owned"),
            "{}",
            c.message
        );
        assert!(
            c.message.ends_with(
                "delete them (berth recreates the Runtime's own) or rename the Runtime; also not owned and left untouched: Service/web"
            ),
            "{}",
            c.message
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
                dependencies: &[],
                errors: &errors,
                jobs: &[],
                last_applied: None,
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
