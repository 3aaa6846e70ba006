//! What the status step remembers between reconciles to pace its writes
//! (docs/architecture.md §5, step 5): when each Runtime's status was last
//! written and what ([`last_status_writes`]), the agent's own writes while the
//! caches may not show them yet ([`write_memory`]), the Runtimes whose
//! status write waits behind the first-pass backlog ([`deferred_status`]) and
//! those whose first pass failed to write its status ([`first_passes`]).

pub mod deferred_status;
pub mod first_passes;
pub mod last_status_writes;
pub mod write_memory;

/// Every memory of the pacing, one per reconcile context
/// (`context::Context::pacing`).
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
