//! Runtimes: identity, profile, grant state, handler, ready/desired,
//! rollout phase, age. Blocked and exposed Runtimes are red.

use berth_shared::api::{ProfileState, RolloutPhase, Runtime, condition, condition_types};
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::table::{Cell, Row, RowRef, RowTone};
use super::{NONE, age, epoch};
use crate::store::Store;

/// One Runtime.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeRow {
    pub namespace: String,
    pub name: String,
    pub application: String,
    pub service: String,
    pub profile: String,
    pub grant: String,
    pub handler: String,
    pub ready: i32,
    pub desired: i32,
    pub phase: String,
    pub age: String,
    /// Creation time, seconds since the epoch: the AGE column is computed
    /// from it when drawn.
    #[serde(skip)]
    pub created: Option<i64>,
    /// The object's uid (the selection follows it).
    #[serde(skip)]
    pub uid: String,
    /// The agent will not change anything for it (grant gone, class
    /// missing, …): highlighted.
    pub blocked: bool,
    /// Something that is not its own reaches or runs as its pods
    /// (`Exposed=True`): highlighted.
    pub exposed: bool,
    /// Why it is blocked, degraded or exposed (condition message), if it
    /// is.
    pub message: String,
}

/// Whether a grant state blocks the Runtime.
pub fn state_blocks(state: ProfileState) -> bool {
    !matches!(state, ProfileState::NotRequested | ProfileState::Granted)
}

/// Rows of the Runtimes view.
pub fn runtime_rows(store: &Store, now: Timestamp) -> Vec<RuntimeRow> {
    store
        .runtimes
        .values()
        .map(|r| runtime_row(r, now))
        .collect()
}

fn runtime_row(r: &Runtime, now: Timestamp) -> RuntimeRow {
    // Borrowed, not cloned: this runs for every Runtime on each change of
    // any one of them (issue 14: the clone was a third of the rebuild).
    let status = r.status.as_ref();
    let conditions = status.map_or(&[][..], |s| s.conditions.as_slice());
    let profile = status.and_then(|s| s.profile.as_ref());
    let rollout = status.and_then(|s| s.rollout.as_ref());
    let blocked = condition::is_true(conditions, condition_types::BLOCKED)
        || profile.as_ref().is_some_and(|p| state_blocks(p.state))
        || rollout
            .as_ref()
            .is_some_and(|ro| ro.phase == RolloutPhase::Blocked);
    let exposed = condition::is_true(conditions, condition_types::EXPOSED);
    let message = [
        condition_types::BLOCKED,
        condition_types::PROFILE_GRANTED,
        condition_types::DEGRADED,
        condition_types::EXPOSED,
    ]
    .iter()
    .filter_map(|t| condition::find(conditions, t))
    .find(|c| {
        (c.type_ == condition_types::PROFILE_GRANTED && c.status == "False")
            || (c.type_ != condition_types::PROFILE_GRANTED && c.status == "True")
    })
    .map(|c| c.message.clone())
    .unwrap_or_default();
    RuntimeRow {
        namespace: r.metadata.namespace.clone().unwrap_or_default(),
        name: r.metadata.name.clone().unwrap_or_default(),
        application: r.spec.application.clone(),
        service: r.spec.service.clone(),
        profile: r
            .spec
            .runtime_profile
            .clone()
            .unwrap_or_else(|| NONE.into()),
        grant: profile
            .as_ref()
            .map(|p| p.state.as_str().to_string())
            .unwrap_or_else(|| NONE.into()),
        handler: profile
            .and_then(|p| p.handler.clone())
            .unwrap_or_else(|| NONE.into()),
        ready: rollout.as_ref().map(|r| r.ready).unwrap_or(0),
        desired: rollout.as_ref().map(|r| r.desired).unwrap_or(0),
        phase: rollout
            .map(|r| shown_phase(r.phase, conditions).as_str().to_string())
            .unwrap_or_else(|| NONE.into()),
        age: age(r.metadata.creation_timestamp.as_ref(), now),
        created: epoch(r.metadata.creation_timestamp.as_ref()),
        uid: r.metadata.uid.clone().unwrap_or_default(),
        blocked,
        exposed,
        message,
    }
}

/// The phase shown: never Complete for a Runtime whose Ready condition is
/// not True (the agent writes Degraded then itself; a status written by an
/// older agent may still say Complete). Without a Ready condition at all
/// the stored phase is shown as it is.
fn shown_phase(
    phase: RolloutPhase,
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
) -> RolloutPhase {
    let not_ready = condition::find(conditions, condition_types::READY)
        .is_some_and(|c| c.status != condition::TRUE);
    if phase == RolloutPhase::Complete && not_ready {
        RolloutPhase::Degraded
    } else {
        phase
    }
}

/// Column headers.
pub const HEADERS: &[&str] = &[
    "NAMESPACE",
    "NAME",
    "APPLICATION/SERVICE",
    "PROFILE",
    "GRANT",
    "HANDLER",
    "READY",
    "PHASE",
    "AGE",
    "MESSAGE",
];

impl Row for RuntimeRow {
    fn headers() -> &'static [&'static str] {
        HEADERS
    }

    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::text(&self.namespace),
            Cell::text(&self.name),
            Cell::text(format!("{}/{}", self.application, self.service)),
            Cell::text(&self.profile),
            Cell::text(&self.grant),
            Cell::text(&self.handler),
            Cell::ratio(self.ready.into(), self.desired.into()),
            Cell::text(&self.phase),
            Cell::age(self.age.clone(), self.created),
            Cell::text(&self.message),
        ]
    }

    fn tone(&self) -> RowTone {
        if self.blocked || self.exposed {
            RowTone::Problem
        } else if matches!(self.phase.as_str(), "Progressing" | "Failed" | "Degraded")
            || self.ready < self.desired
        {
            RowTone::Warn
        } else {
            RowTone::Normal
        }
    }

    fn target(&self) -> RowRef {
        RowRef::Runtime((self.namespace.clone(), self.name.clone()))
    }

    fn uid(&self) -> &str {
        &self.uid
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::rows::TableData;

    #[test]
    fn blocked_runtimes_are_problems_and_progressing_ones_warnings() {
        let app = fixtures::app();
        let rows = runtime_rows(&app.clusters[0].data.store, fixtures::now());
        let tone = |n: &str| rows.iter().find(|r| r.name == n).map(Row::tone);
        assert_eq!(tone("worker"), Some(RowTone::Problem));
        assert_eq!(tone("api"), Some(RowTone::Warn));
        assert_eq!(tone("web"), Some(RowTone::Normal));
        let t = TableData::of(&rows);
        assert_eq!(t.headers.len(), t.cells[0].len());
        // The uid is the identity.
        assert!(t.ids.iter().any(|id| id == "uid-web"), "{:?}", t.ids);
    }

    #[test]
    fn an_exposed_runtime_is_a_problem_and_says_what_reaches_it() {
        let runtime: Runtime = serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1",
            "kind": "Runtime",
            "metadata": {"name": "web", "namespace": "team", "uid": "u"},
            "spec": {"application": "a", "service": "s", "image": {"repository": "r"}},
            "status": {
                "rollout": {"desired": 1, "ready": 1, "phase": "Complete"},
                "conditions": [
                    {"type": "Ready", "status": "True", "reason": "AsExpected",
                        "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "Degraded", "status": "False", "reason": "AsExpected",
                        "message": "nothing needs attention", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "Exposed", "status": "True", "reason": "ForeignNetworkPolicy",
                        "message": "NetworkPolicy/team/allow-all selects the pods", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                ],
            },
        }))
        .expect("runtime");
        let row = runtime_row(&runtime, fixtures::now());
        assert!(row.exposed && !row.blocked);
        assert_eq!(row.tone(), RowTone::Problem);
        assert_eq!(row.message, "NetworkPolicy/team/allow-all selects the pods");
    }

    #[test]
    fn a_complete_rollout_that_is_not_ready_is_not_shown_complete() {
        let runtime = |ready: &str| -> Runtime {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "berth.dev/v1alpha1",
                "kind": "Runtime",
                "metadata": {"name": "web", "namespace": "team", "uid": "u"},
                "spec": {"application": "a", "service": "s", "image": {"repository": "r"}},
                "status": {
                    "rollout": {"desired": 2, "ready": 2, "phase": "Complete"},
                    "conditions": [{"type": "Ready", "status": ready, "reason": "DependencyNotOwned",
                        "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                },
            }))
            .expect("runtime")
        };
        let row = runtime_row(&runtime("False"), fixtures::now());
        assert_eq!(row.phase, "Degraded");
        assert_eq!(row.tone(), RowTone::Warn);
        assert_eq!(
            runtime_row(&runtime("Unknown"), fixtures::now()).phase,
            "Degraded"
        );
        assert_eq!(
            runtime_row(&runtime("True"), fixtures::now()).phase,
            "Complete"
        );
    }
}
