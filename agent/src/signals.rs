//! What the agent's tasks tell each other, kept apart from the tasks
//! themselves so that none of them imports another to be told: the
//! canaries' verdicts (written by the canary scheduler, read by the
//! reconcile and the grants publisher) and the changes that wake the
//! grants publisher (sent by the controller's caches). Neither imports
//! any other module of the agent.

pub mod attestations;
pub mod publisher_triggers;
