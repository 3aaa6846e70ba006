//! The demo's granted worker: `analytics/worker` of project `demo`,
//! environment `production`, granted the class `bounded-worker` on the
//! handler `bounded-runc` by the binding `bounded-worker`
//! (assets/demo/grants.toml).

use crate::binding::Identity;
use crate::decide::{GrantBinding, ObservedClass};

/// Its identity.
pub fn identity() -> Identity {
    super::identity("demo", "production", "analytics", "worker")
}

/// The binding `bounded-worker`.
pub fn binding() -> GrantBinding {
    super::binding(
        "bounded-worker",
        identity(),
        "bounded-worker",
        "bounded-runc",
    )
}

/// The class `bounded-worker` (handler `bounded-runc`).
pub fn class() -> ObservedClass {
    super::class("bounded-worker", "bounded-runc")
}
