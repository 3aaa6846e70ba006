//! What the status step remembers between reconciles to pace its writes
//! (docs/architecture.md §5, step 5): when each Runtime's status was last
//! written and what ([`status_pacer`]), the agent's own writes while the
//! caches may not show them yet ([`write_memory`]), the Runtimes whose
//! status write waits behind the first-pass backlog ([`held_status`]) and
//! those whose first pass failed to write its status ([`first_passes`]).

pub mod first_passes;
pub mod held_status;
pub mod status_pacer;
pub mod write_memory;
