//! What the apply step did, as the status reports it: its own module, so
//! that the conditions computed from it (`degraded`) and the snapshot that
//! carries it (`Observed`) both read it without reaching into each other.

use crate::api::{JobRunStatus, LastApplied};

/// One failure of the apply step: the reason names the step that failed
/// (one of [`crate::api::reasons::APPLY_FAILURES`]), the message the object
/// and the cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApplyFailure {
    /// The step's reason, also the `Degraded` reason and Event reason.
    pub reason: &'static str,
    /// `Kind/name: cause`.
    pub message: String,
}

/// What the apply step did, as far as status reports it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Applied<'a> {
    /// Objects with a managed name not owned by the Runtime (left alone).
    pub conflicts: &'a [String],
    /// Of those, the ones the pods reference (ConfigMap, ServiceAccount):
    /// the workloads were not created or changed because of them.
    pub dependencies: &'a [String],
    /// Why applying some object failed, one per failure.
    pub errors: &'a [ApplyFailure],
    /// The one-time Jobs apply recorded.
    pub jobs: &'a [JobRunStatus],
    /// What apply carried out of the workloads' tenant part, when the
    /// whole rendering went out (None: the record stays as it was).
    pub last_applied: Option<&'a LastApplied>,
}
