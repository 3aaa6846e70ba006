//! berth integration tests: one test binary, one real local control plane
//! (see `berth_tests::harness`), a namespace per test.

mod admission;
mod agent_classes;
mod agent_contract;
mod agent_grants;
mod agent_identity;
mod agent_leader;
mod agent_lifecycle;
mod agent_reconcile;
mod agent_semantics;
mod agent_support;
mod assets;
mod chart;
mod console;
mod crds;
mod faults;
mod foundation;
mod image;
mod retire;
mod version;
