//! berth integration tests: one test binary, one real local control plane
//! (see `berth_tests::harness`), a namespace per test.

mod foundation;
mod crds;
mod assets;
