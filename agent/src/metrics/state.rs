//! Gauges derived from the cached Runtimes and RuntimeGrants, set once per
//! grants-publisher pass (leader only). Every known state and phase is
//! written, zeros included, so a dashboard or an alert never mistakes
//! "none in this state" for "not exported".

use std::collections::BTreeMap;
use std::sync::Arc;

use berth_shared::api::condition::{self, FALSE, TRUE};
use berth_shared::api::condition_types as ct;
use berth_shared::api::grant_condition_types as gct;
use berth_shared::api::{ProfileState, RolloutPhase, Runtime, RuntimeGrant};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::{CoverageLabels, GrantLabels, Metrics, PhaseLabels, ProblemLabels, StateLabels};

/// Every profile state, for the zeros.
const PROFILE_STATES: [ProfileState; 8] = [
    ProfileState::NotRequested,
    ProfileState::Granted,
    ProfileState::NotGranted,
    ProfileState::Revoked,
    ProfileState::ClassMissing,
    ProfileState::HandlerMismatch,
    ProfileState::ClassUnsupported,
    ProfileState::ClassDeleting,
];

/// Every rollout phase, for the zeros.
const PHASES: [RolloutPhase; 7] = [
    RolloutPhase::Pending,
    RolloutPhase::Progressing,
    RolloutPhase::Complete,
    RolloutPhase::Failed,
    RolloutPhase::Suspended,
    RolloutPhase::Blocked,
    RolloutPhase::Degraded,
];

/// The RuntimeGrant states of `berth_agent_grants`.
pub const GRANT_STATES: [&str; 3] = ["Ready", "NotReady", "Retired"];

/// The conditions whose problem status `runtime_problem_since` reports:
/// `(type, problem status)`.
const PROBLEMS: [(&str, &str); 4] = [
    (ct::BLOCKED, TRUE),
    (ct::DEGRADED, TRUE),
    (ct::HANDLER_READY, FALSE),
    (ct::EXPOSED, TRUE),
];

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Runtimes by grant state and phase, blocked Runtimes, the queue, and the
/// problem timestamps.
pub fn runtimes(m: &Metrics, runtimes: &[Arc<Runtime>]) {
    let mut states: BTreeMap<&str, usize> =
        PROFILE_STATES.iter().map(|s| (s.as_str(), 0)).collect();
    let mut phases: BTreeMap<&str, usize> = PHASES.iter().map(|p| (p.as_str(), 0)).collect();
    let (mut blocked, mut queued) = (0, 0);
    m.runtime_problems.clear();
    for r in runtimes {
        let status = r.status.as_ref();
        let state = status
            .and_then(|s| s.profile.as_ref())
            .map_or(ProfileState::NotRequested, |p| p.state);
        *states.entry(state.as_str()).or_default() += 1;
        let phase = status
            .and_then(|s| s.rollout.as_ref())
            .map_or(RolloutPhase::Pending, |r| r.phase);
        *phases.entry(phase.as_str()).or_default() += 1;
        let conditions = status.map_or(&[][..], |s| s.conditions.as_slice());
        if condition::is_true(conditions, ct::BLOCKED) {
            blocked += 1;
        }
        if r.metadata.deletion_timestamp.is_none()
            && r.metadata.generation > status.and_then(|s| s.observed_generation)
        {
            queued += 1;
        }
        for (type_, bad) in PROBLEMS {
            if let Some(c) = condition::find(conditions, type_).filter(|c| c.status == bad) {
                problem(m, r, c);
            }
        }
    }
    m.runtimes.clear();
    for (state, n) in states {
        m.runtimes
            .get_or_create(&StateLabels {
                state: state.to_string(),
            })
            .set(count(n));
    }
    m.runtimes_by_phase.clear();
    for (phase, n) in phases {
        m.runtimes_by_phase
            .get_or_create(&PhaseLabels {
                phase: phase.to_string(),
            })
            .set(count(n));
    }
    m.blocked_runtimes.set(blocked);
    m.queue_depth.set(queued);
}

fn problem(m: &Metrics, r: &Runtime, c: &Condition) {
    m.runtime_problems
        .get_or_create(&ProblemLabels {
            runtime_namespace: r.metadata.namespace.clone().unwrap_or_default(),
            runtime: r.metadata.name.clone().unwrap_or_default(),
            condition: c.type_.clone(),
            reason: c.reason.clone(),
        })
        .set(c.last_transition_time.0.as_second());
}

/// A RuntimeGrant's state for `berth_agent_grants`.
pub fn grant_state(grant: &RuntimeGrant) -> &'static str {
    let conditions = grant
        .status
        .as_ref()
        .map_or(&[][..], |s| s.conditions.as_slice());
    if condition::is_true(conditions, gct::RETIRED) {
        "Retired"
    } else if condition::is_true(conditions, gct::CLASS_READY) {
        "Ready"
    } else {
        "NotReady"
    }
}

/// RuntimeGrants (those `publisher` published) by state, their holders and
/// their node coverage.
pub fn grants(m: &Metrics, grants: &[Arc<RuntimeGrant>], publisher: &str) {
    let mut states: BTreeMap<&str, usize> = GRANT_STATES.iter().map(|s| (*s, 0)).collect();
    m.grant_runtimes.clear();
    m.grant_nodes.clear();
    for g in grants {
        let ours = g
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(berth_shared::api::meta::PUBLISHED_BY_LABEL))
            .is_some_and(|p| p == publisher);
        if !ours {
            continue;
        }
        *states.entry(grant_state(g)).or_default() += 1;
        let name = g.metadata.name.clone().unwrap_or_default();
        let status = g.status.as_ref();
        m.grant_runtimes
            .get_or_create(&GrantLabels {
                grant: name.clone(),
                runtime_class: g.spec.runtime_class.clone(),
            })
            .set(count(status.map_or(0, |s| s.runtimes.len())));
        if let Some(nodes) = status.and_then(|s| s.nodes.as_ref()) {
            let without = nodes.total - nodes.with_handler - nodes.unknown;
            for (coverage, n) in [
                ("with_handler", nodes.with_handler),
                ("without_handler", without.max(0)),
                ("unknown", nodes.unknown),
            ] {
                m.grant_nodes
                    .get_or_create(&CoverageLabels {
                        grant: name.clone(),
                        handler: g.spec.handler.clone(),
                        coverage: coverage.to_string(),
                    })
                    .set(i64::from(n));
            }
        }
    }
    m.grants.clear();
    for (state, n) in states {
        m.grants
            .get_or_create(&StateLabels {
                state: state.to_string(),
            })
            .set(count(n));
    }
}
