//! Step 4 (apply): server-side apply of the rendered objects with one field
//! manager — but only of objects that differ from the cache, so a reconcile
//! that changes nothing sends nothing.
//!
//! "Differs" means: some field of the desired object is not in the live one
//! with the same value (drift), or the live object's
//! `berth.dev/applied-hash` annotation is not the hash of the desired object
//! (the spec changed, which also covers fields that were *removed* from the
//! desired object). For that decision keyed lists (entries with a `name`)
//! are compared entry by entry; whether an entry another party added may
//! stay is the contract's question (below): in a governed part it may not.
//! Labels and annotations others add on the object itself are not drift.
//!
//! Server-side apply cannot remove a field another manager owns, so the
//! governed parts of each object (`berth_shared::contract`: deny by
//! default, one table of what is tolerated) are compared exactly with the
//! rendered ones, and any foreign difference is corrected by one merge
//! patch carrying the object's uid: one write.
//!
//! Objects are never adopted: an existing object with a managed name and no
//! controller reference to this Runtime is a conflict and is left untouched.
//! Nothing berth does not own is consumed either: while the ConfigMap or
//! the ServiceAccount the pods reference is someone else's (or could not be
//! applied), the Deployment, Jobs and CronJobs are not created or changed.
//!
//! A held (Blocked) Runtime keeps its protection ([`apply_all`] with
//! `held`): missing dependencies are recreated, forbidden drift is removed,
//! and nothing else changes — the workloads are measured against the
//! rendered contract with the tenant's part taken from the live objects
//! (`berth_shared::render::protect`), so the pods keep their class, image
//! and template.

mod all;
mod delete;
mod diff;
mod ensure;
mod frozen;
mod handover;
mod held_target;
mod jobs;
mod outcome;
mod take_back;

pub use all::{Protection, apply_all};
pub use diff::Governed;
// The cache's reduction tests compare with the apply step's own test.
#[cfg(test)]
pub use diff::contains;
pub use held_target::HeldTarget;
pub use outcome::{ApplyOutcome, Managed, Planted};
