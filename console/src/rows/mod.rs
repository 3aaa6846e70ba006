//! The rows of every list and of `berth get`, derived from the [`crate::store::Store`] by
//! pure functions, one module per family next to its tests. Each family's
//! row implements [`Row`] (headers, typed cells, tone, identity), so one
//! generic table holds any of them. Rows know nothing of drawing.

pub mod attestation;
pub mod explain;
pub mod findings;
pub mod grants;
pub mod handlers;
pub mod matrix;
pub mod merged;
pub mod namespaces;
pub mod plan;
pub mod relations;
pub mod retained;
pub mod rollout;
pub mod runtimes;
pub mod table;

#[cfg(test)]
mod classed_tests;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

pub use grants::{GrantRow, grant_rows};
pub use handlers::{HandlerRow, WorkloadEntry, handler_rows, workloads};
pub use merged::{Located, Merged, RowId};
pub use namespaces::{NamespaceRow, namespace_rows};
pub use retained::{RetainedRow, retained_rows};
pub use rollout::{
    EventEntry, PodEntry, ReplicaSetEntry, RolloutRow, deployment_of, events_for, events_of,
    rollout, rollout_rows,
};
pub use runtimes::{RuntimeRow, runtime_rows, state_blocks};
pub use table::{Cell, Row, RowRef, RowTone, SortKey, TableData};

use crate::store::{Kind, WORKLOAD_KINDS};

/// Placeholder for an absent value.
pub const NONE: &str = "-";

/// Seconds since `ts` (`None` when there is no time).
pub fn age_seconds(ts: Option<&Time>, now: Timestamp) -> Option<i64> {
    ts.map(|t| (now.as_second() - t.0.as_second()).max(0))
}

/// A time as seconds since the epoch (what rows keep instead of an age,
/// which the drawing computes: see [`TableData::text`]).
pub fn epoch(ts: Option<&Time>) -> Option<i64> {
    ts.map(|t| t.0.as_second())
}

/// A kubectl-style age: `42s`, `5m`, `3h`, `2d`.
pub fn age(ts: Option<&Time>, now: Timestamp) -> String {
    age_seconds(ts, now).map_or_else(|| NONE.to_string(), human_duration)
}

/// Seconds as `42s`, `5m`, `3h`, `2d` (negative clamps to 0s).
pub fn human_duration(secs: i64) -> String {
    let secs = secs.max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// Kinds of the analysis mapped to the console's store kinds.
pub fn store_kind(kind: &str) -> Option<Kind> {
    // The analysis names its kinds as Kubernetes does, as the store does.
    WORKLOAD_KINDS.iter().copied().find(|k| k.label() == kind)
}
