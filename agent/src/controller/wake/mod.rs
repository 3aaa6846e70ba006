//! What wakes a reconcile, and how often (docs/architecture.md §5, "What
//! wakes a reconcile"): which changes of the watched objects wake a Runtime
//! and which do not ([`triggers`]), the pacing of the wake-ups an owned
//! Deployment's status brings ([`deployment_status`]), the Runtimes a
//! claimant's change of standing wakes ([`rivals`]) and when a failed
//! reconcile comes back ([`retry`]).

pub mod deployment_status;
pub mod retry;
pub mod rivals;
pub mod triggers;
