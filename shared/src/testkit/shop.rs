//! A shop whose services are granted gVisor: project `shop`, environment
//! `prod`, application `store`, namespace `shop`; every binding grants
//! the class `gvisor` on the handler `runsc`.

use crate::api::{ProfileState, Runtime};
use crate::binding::Identity;
use crate::decide::{GrantBinding, ObservedClass};

/// The identity of `service`.
pub fn identity(service: &str) -> Identity {
    super::identity("shop", "prod", "store", service)
}

/// A binding `name` granting `service` the class `gvisor`.
pub fn binding(name: &str, service: &str) -> GrantBinding {
    super::binding(name, identity(service), "gvisor", "runsc")
}

/// The class `gvisor` (handler `runsc`).
pub fn class() -> ObservedClass {
    super::class("gvisor", "runsc")
}

/// The Runtime `shop/SERVICE` asking for `profile`, with `state` its last
/// decision on `gvisor` when given.
pub fn runtime(service: &str, profile: Option<&str>, state: Option<ProfileState>) -> Runtime {
    let rt = super::runtime("shop", service, "store", service, profile);
    match state {
        Some(state) => super::decided(rt, state, "gvisor", "runsc"),
        None => rt,
    }
}
