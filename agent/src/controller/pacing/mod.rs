//! What the status step remembers between reconciles to pace its writes
//! (docs/architecture.md §5, step 5): when each Runtime's status was last
//! written and what ([`last_status_writes`]), the agent's own writes while the
//! caches may not show them yet ([`write_memory`]), the Runtimes whose
//! status write waits behind the first-pass backlog ([`deferred_status`]) and
//! those whose first pass failed to write its status ([`first_passes`]);
//! how long a progress-only write may wait ([`PROGRESS_INTERVAL`] and its
//! kin), and the key a memory keeps a Runtime under ([`key`]).

pub mod deferred_status;
pub mod first_passes;
mod intervals;
mod key;
pub mod last_status_writes;
pub mod write_memory;

use std::sync::Arc;
use std::time::Instant;

pub use self::intervals::{FIRST_PASS_PROGRESS_INTERVAL, PROGRESS_INTERVAL};
pub(crate) use self::key::key;

/// Every memory of the pacing, one per reconcile context
/// (`context::Record::pacing`).
#[derive(Default)]
pub struct Memories {
    /// Writes sent whose result the cache may not show yet.
    pub written: write_memory::WriteMemory,
    /// When each Runtime's status was last written (progress pacing), and
    /// what, while the cache does not show it.
    pub last_status_writes: last_status_writes::LastStatusWrites,
    /// Status writes deferred behind the first-pass backlog.
    pub deferred_status: deferred_status::DeferredStatusWrites,
    /// Runtimes whose status write failed at their generation: not part of
    /// the first-pass backlog.
    pub failed_first_passes: first_passes::FailedFirstPasses,
}

impl Memories {
    /// Forgets, every [`write_memory::FORGET_EVERY`], the writes older
    /// than [`write_memory::REMEMBER_WRITES_FOR`]: the objects'
    /// ([`write_memory::WriteMemory`]) and the Runtimes' statuses
    /// ([`last_status_writes::LastStatusWrites`]). Runs until the
    /// controller's runtime stops.
    pub async fn forget_old_writes(self: Arc<Self>) {
        let mut tick = tokio::time::interval(write_memory::FORGET_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let now = Instant::now();
            self.written.forget_old(now);
            self.last_status_writes.forget_old(now);
        }
    }
}
