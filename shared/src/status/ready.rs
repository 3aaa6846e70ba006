//! Ready: rolled out and available, with nothing blocking or degrading it.
//! False names the first reason in order: blocked, not granted, degraded,
//! handler absent, suspended, no replica available, rollout incomplete.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::Hold;
use crate::api::condition::{FALSE, TRUE, build};
use crate::api::{RolloutPhase, Runtime, condition_types as ct, reasons};
use crate::decide::Decision;

/// What Ready is computed from: the snapshot's facts and the conditions
/// it summarizes.
#[derive(Clone, Copy, Debug)]
pub struct ReadyFacts<'a> {
    /// The Runtime.
    pub runtime: &'a Runtime,
    /// The grant decision.
    pub decision: &'a Decision,
    /// Whether the agent held back.
    pub hold: &'a Hold,
    /// The Degraded condition.
    pub degraded: &'a Condition,
    /// The HandlerReady condition (Unknown does not hold Ready back).
    pub handler_ready: &'a Condition,
    /// The Available condition.
    pub available: &'a Condition,
    /// The rollout phase.
    pub phase: RolloutPhase,
    /// The Deployment's available replicas (0 without one).
    pub available_replicas: i32,
}

/// Ready from the other conditions and the rollout.
pub fn ready(f: &ReadyFacts<'_>) -> Condition {
    let rt = f.runtime;
    let wanted = rt.spec.wanted_replicas();
    if let Hold::Blocked { reason, .. } = f.hold {
        build(
            ct::READY,
            false,
            reason,
            "blocked: its spec changes are not carried out",
        )
    } else if !f.decision.allows_changes() {
        build(ct::READY, false, f.decision.reason(), f.decision.message())
    } else if f.degraded.status == TRUE {
        build(ct::READY, false, &f.degraded.reason, "degraded")
    } else if f.handler_ready.status == FALSE {
        build(
            ct::READY,
            false,
            reasons::HANDLER_ABSENT,
            "the handler is not present where the pods may run",
        )
    } else if rt.spec.suspend {
        build(
            ct::READY,
            false,
            reasons::SUSPENDED,
            "the Runtime is suspended",
        )
    } else if wanted > 0 && f.available_replicas == 0 {
        // A Deployment at 0 replicas is "complete" and "available" to
        // Kubernetes; with replicas wanted, it is not ready.
        build(
            ct::READY,
            false,
            reasons::MINIMUM_REPLICAS_UNAVAILABLE,
            format!("no replica is available; {wanted} wanted"),
        )
    } else if f.phase != RolloutPhase::Complete || f.available.status != TRUE {
        build(
            ct::READY,
            false,
            reasons::ROLLING_OUT,
            "the rollout is not complete",
        )
    } else {
        build(
            ct::READY,
            true,
            reasons::AS_EXPECTED,
            "rolled out and available",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::condition::unknown;
    use crate::testkit::status::*;

    struct Case {
        hold: Hold,
        decision: Decision,
        degraded: bool,
        handler: &'static str,
        suspend: bool,
        replicas: i32,
        available_replicas: i32,
        phase: RolloutPhase,
        available: bool,
    }

    const FINE: fn() -> Case = || Case {
        hold: Hold::None,
        decision: Decision::NotRequested,
        degraded: false,
        handler: TRUE,
        suspend: false,
        replicas: 2,
        available_replicas: 2,
        phase: RolloutPhase::Complete,
        available: true,
    };

    fn run(c: &Case) -> Condition {
        let mut rt = runtime();
        rt.spec.suspend = c.suspend;
        rt.spec.replicas = Some(c.replicas);
        let degraded = build(ct::DEGRADED, c.degraded, reasons::CONFLICT, "");
        let handler = match c.handler {
            "Unknown" => unknown(ct::HANDLER_READY, reasons::HANDLER_UNKNOWN, ""),
            s => build(ct::HANDLER_READY, s == TRUE, reasons::HANDLER_ABSENT, ""),
        };
        let available = build(ct::AVAILABLE, c.available, "", "");
        ready(&ReadyFacts {
            runtime: &rt,
            decision: &c.decision,
            hold: &c.hold,
            degraded: &degraded,
            handler_ready: &handler,
            available: &available,
            phase: c.phase,
            available_replicas: c.available_replicas,
        })
    }

    #[test]
    fn table() {
        let held = Hold::Blocked {
            reason: reasons::REVOKED.into(),
            message: "gone".into(),
        };
        let cases: Vec<(Case, &str, &str)> = vec![
            (FINE(), "True", reasons::AS_EXPECTED),
            (
                Case {
                    handler: "Unknown",
                    ..FINE()
                },
                "True",
                reasons::AS_EXPECTED,
            ),
            (
                Case {
                    decision: granted(),
                    ..FINE()
                },
                "True",
                reasons::AS_EXPECTED,
            ),
            (
                Case {
                    hold: held,
                    decision: revoked(),
                    degraded: true,
                    ..FINE()
                },
                "False",
                reasons::REVOKED,
            ),
            (
                Case {
                    decision: class_missing(),
                    degraded: true,
                    ..FINE()
                },
                "False",
                reasons::CLASS_MISSING,
            ),
            (
                Case {
                    degraded: true,
                    handler: FALSE,
                    ..FINE()
                },
                "False",
                reasons::CONFLICT,
            ),
            (
                Case {
                    handler: FALSE,
                    suspend: true,
                    ..FINE()
                },
                "False",
                reasons::HANDLER_ABSENT,
            ),
            (
                Case {
                    suspend: true,
                    available_replicas: 0,
                    ..FINE()
                },
                "False",
                reasons::SUSPENDED,
            ),
            (
                Case {
                    available_replicas: 0,
                    phase: RolloutPhase::Progressing,
                    ..FINE()
                },
                "False",
                reasons::MINIMUM_REPLICAS_UNAVAILABLE,
            ),
            (
                Case {
                    replicas: 0,
                    available_replicas: 0,
                    ..FINE()
                },
                "True",
                reasons::AS_EXPECTED,
            ),
            (
                Case {
                    phase: RolloutPhase::Progressing,
                    ..FINE()
                },
                "False",
                reasons::ROLLING_OUT,
            ),
            (
                Case {
                    available: false,
                    ..FINE()
                },
                "False",
                reasons::ROLLING_OUT,
            ),
        ];
        for (case, status, reason) in cases {
            let c = run(&case);
            assert_eq!(c.type_, ct::READY);
            assert_eq!(
                (c.status.as_str(), c.reason.as_str()),
                (status, reason),
                "hold={:?} decision={:?} degraded={} handler={} suspend={} phase={:?}",
                case.hold,
                case.decision,
                case.degraded,
                case.handler,
                case.suspend,
                case.phase
            );
        }
    }
}
