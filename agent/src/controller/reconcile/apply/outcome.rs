//! What the apply step works with and returns: [`ApplyOutcome`], the
//! owner it applies for, the kinds it manages and how each object is kept
//! in line ([`Mode`]). Below every other part of the step, which all
//! share it.

use std::fmt::Debug;

use berth_shared::api::{JobRunStatus, LastApplied, Runtime};
use kube::Resource;

use crate::controller::cache::Parsed;
use crate::controller::reconcile::apply_error::ApplyError;

/// What the apply step did.
#[derive(Debug, Default)]
pub struct ApplyOutcome {
    /// `Kind/name` of objects that exist and are not ours.
    pub conflicts: Vec<String>,
    /// Of those, the ones the pods reference: the workloads were left
    /// alone because of them.
    pub dependencies: Vec<String>,
    /// Failures, one per object.
    pub errors: Vec<ApplyError>,
    /// Writes sent.
    pub writes: usize,
    /// The one-time Jobs started so far (the status record).
    pub jobs: Vec<JobRunStatus>,
    /// What was applied of the workloads' tenant part, when the whole
    /// rendering went out (the status record a hold keeps them at).
    pub last_applied: Option<LastApplied>,
    /// The uids of the objects created, by name (a one-time Job's record).
    pub created: Vec<String>,
    /// Jobs planted at a one-time job's name, deleted (each a Warning Event).
    pub planted: Vec<Planted>,
}

/// A Job at a one-time job's name that berth did not create (`jobs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planted {
    /// The Job's name.
    pub job: String,
    /// What tells it from berth's (another uid, the parts that differ).
    pub differences: Vec<String>,
}

/// A namespaced kind the apply step reads from a cache and writes (every
/// managed kind is one; written once here rather than on each function).
pub trait Managed: Parsed + Resource<Scope = kube::core::NamespaceResourceScope> {}

impl<K> Managed for K where K: Parsed + Resource<Scope = kube::core::NamespaceResourceScope> {}

/// The Runtime an object is applied for: its uid (only objects it
/// controls are changed) and what its status records berth last applied
/// (what a held workload is measured against).
#[derive(Clone, Copy, Debug)]
pub struct Owner<'a> {
    /// The Runtime's uid.
    pub uid: &'a str,
    /// `status.lastApplied`.
    pub last_applied: Option<&'a LastApplied>,
}

impl<'a> Owner<'a> {
    /// The owner `runtime` is.
    pub fn of(runtime: &'a Runtime, uid: &'a str) -> Self {
        Owner {
            uid,
            last_applied: runtime
                .status
                .as_ref()
                .and_then(|s| s.last_applied.as_ref()),
        }
    }
}

/// How an object is kept in line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// Applied whenever it differs.
    Converge,
    /// Created when absent, never changed (Jobs: their template is immutable
    /// and a finished Job stays as it ran).
    CreateOnly,
    /// Held, a dependency: created when absent; when present, only what
    /// the contract forbids is removed (against [`HeldTarget::held_target`]).
    Protect,
    /// Held, a workload: never created; when present, only what the
    /// contract forbids is removed (against [`HeldTarget::held_target`]).
    Correct,
}

/// What each mode may do, in one place (`ensure` asks these gates).
impl Mode {
    /// Measured against what the Runtime is held to ([`HeldTarget::held_target`]).
    pub(super) fn held(self) -> bool {
        matches!(self, Mode::Protect | Mode::Correct)
    }

    /// An absent object is created.
    pub(super) fn creates(self) -> bool {
        self != Mode::Correct
    }

    /// A present object has what the contract forbids removed.
    pub(super) fn corrects(self) -> bool {
        self != Mode::CreateOnly
    }

    /// A present object that differs is applied (the tenant's changes).
    pub(super) fn applies(self) -> bool {
        self == Mode::Converge
    }
}

impl ApplyOutcome {
    /// Adds what another step did (its failures after this one's, so the
    /// first failure named stays the first step's).
    pub(super) fn merge(&mut self, other: ApplyOutcome) {
        self.conflicts.extend(other.conflicts);
        self.dependencies.extend(other.dependencies);
        self.errors.extend(other.errors);
        self.writes += other.writes;
        self.jobs.extend(other.jobs);
        self.created.extend(other.created);
        self.planted.extend(other.planted);
        self.last_applied = self.last_applied.take().or(other.last_applied);
    }
}
