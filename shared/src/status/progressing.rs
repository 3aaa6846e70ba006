//! Progressing: a rollout is under way.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::Hold;
use crate::api::condition::build;
use crate::api::{RolloutPhase, condition_types as ct, reasons};
use crate::decide::Decision;

/// Progressing from the rollout phase; a blocked rollout says why.
pub fn progressing(phase: RolloutPhase, hold: &Hold, decision: &Decision) -> Condition {
    match phase {
        // Degraded is a Complete rollout of a Runtime that is not Ready
        // (only ever shown, never handed in here).
        RolloutPhase::Complete | RolloutPhase::Degraded => build(
            ct::PROGRESSING,
            false,
            reasons::ROLLOUT_COMPLETE,
            "the rollout is complete",
        ),
        RolloutPhase::Failed => build(
            ct::PROGRESSING,
            false,
            reasons::PROGRESS_DEADLINE_EXCEEDED,
            "the Deployment exceeded its progress deadline; no automatic rollback",
        ),
        RolloutPhase::Suspended => build(
            ct::PROGRESSING,
            false,
            reasons::SUSPENDED,
            "the Runtime is suspended",
        ),
        RolloutPhase::Blocked => {
            let (reason, message) = match hold {
                Hold::Blocked { reason, message } => (reason.as_str(), message.as_str()),
                Hold::None => (decision.reason(), ""),
            };
            build(ct::PROGRESSING, false, reason, message)
        }
        RolloutPhase::Pending | RolloutPhase::Progressing => build(
            ct::PROGRESSING,
            true,
            reasons::ROLLING_OUT,
            "the Deployment is rolling out",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::status::*;

    #[test]
    fn table() {
        let held = Hold::Blocked {
            reason: reasons::REVOKED.into(),
            message: "gone".into(),
        };
        let cases = [
            (
                RolloutPhase::Pending,
                Hold::None,
                "True",
                reasons::ROLLING_OUT,
            ),
            (
                RolloutPhase::Progressing,
                Hold::None,
                "True",
                reasons::ROLLING_OUT,
            ),
            (
                RolloutPhase::Complete,
                Hold::None,
                "False",
                reasons::ROLLOUT_COMPLETE,
            ),
            (
                RolloutPhase::Failed,
                Hold::None,
                "False",
                reasons::PROGRESS_DEADLINE_EXCEEDED,
            ),
            (
                RolloutPhase::Suspended,
                Hold::None,
                "False",
                reasons::SUSPENDED,
            ),
            (RolloutPhase::Blocked, held, "False", reasons::REVOKED),
            // Not reached by compute (Blocked needs a hold); falls back to
            // the decision.
            (
                RolloutPhase::Blocked,
                Hold::None,
                "False",
                reasons::NOT_GRANTED,
            ),
        ];
        for (phase, hold, status, reason) in cases {
            let c = progressing(phase, &hold, &not_granted());
            assert_eq!(c.type_, ct::PROGRESSING);
            assert_eq!(
                (c.status.as_str(), c.reason.as_str()),
                (status, reason),
                "{phase:?} {hold:?}"
            );
        }
        let c = progressing(
            RolloutPhase::Blocked,
            &Hold::Blocked {
                reason: "R".into(),
                message: "why".into(),
            },
            &granted(),
        );
        assert_eq!(c.message, "why");
    }
}
