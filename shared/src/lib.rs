//! berth-shared: the pure logic both binaries call.
//!
//! Nothing here talks to the Kubernetes API; the agent and the console do the
//! I/O and hand plain values to these functions.

pub mod analysis;
pub mod api;
pub mod attest;
pub mod binding;
pub mod claims;
pub mod contract;
pub mod decide;
pub mod explain;
pub mod exposure;
pub mod findings;
pub mod grants;
pub mod matrix;
pub mod patterns;
pub mod plan;
pub mod quantity;
pub mod render;
pub mod sanitize;
pub mod status;
pub mod sync;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

#[cfg(test)]
mod layering_tests;
