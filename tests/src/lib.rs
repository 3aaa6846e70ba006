//! berth-tests: the local Kubernetes control plane (`berth-localcluster`)
//! and the harness the integration tests run on.

pub mod audit;
pub mod bench;
pub mod docs_check;
pub mod grants_file;
pub mod harness;
pub mod localcluster;
pub mod openapi;
pub mod procfs;
pub mod proxy;
pub mod tmux;
