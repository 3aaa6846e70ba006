//! berth-tests: the integration tests (`tests/it/`, one binary), the
//! OpenAPI walk their schema-driven adversary plays (`openapi`) and the
//! docs check. The crates they run on are their own: the local cluster
//! (`berth-localcluster`, what the demo builds), what the tests and the
//! benchmark share (`berth-test-support`) and the benchmark
//! (`berth-bench`); they are re-exported here so that a test imports them
//! from one root (`berth_tests::harness`, `berth_tests::localcluster`).

pub mod docs_check;
pub mod openapi;

pub use berth_bench as bench;
pub use berth_localcluster as localcluster;
pub use berth_localcluster::procfs;
pub use berth_test_support::{audit, grants_file, harness, proxy, tmux};

#[cfg(test)]
mod layering_tests;
