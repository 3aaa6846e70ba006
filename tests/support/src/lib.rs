//! What berth's integration tests (`tests/it/`) and its benchmark
//! (`berth-bench`) share: the harness (one local cluster per test run,
//! namespaces, the agent and the console as processes, the workspace's
//! binaries built once), grants files as the agent requires them, the
//! apiserver's audit log, a proxy that stalls a connection on demand, and
//! tmux for the console.

pub mod audit;
pub mod grants_file;
pub mod harness;
pub mod proxy;
pub mod tmux;

#[cfg(test)]
mod layering_tests;
