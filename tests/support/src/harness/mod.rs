//! The integration-test harness: one local control plane per test binary,
//! started lazily by the first test that asks for it and stopped when the
//! test process exits (even after a panic or abort), and a fresh namespace
//! plus a `kube::Client` per test.
//!
//! Split by purpose: the clusters themselves (`clusters`), clients of the
//! shared one (`clients`), namespaces (`namespaces`), waiting
//! (`waiting`), cluster-scoped objects (`cluster_objects`), merged
//! kubeconfigs (`kubeconfigs`), the apiserver's request counters
//! (`apiserver_metrics`) and the workspace's binaries (`binaries`).
//! Everything is re-exported here, so callers name `harness::X`.

mod apiserver_metrics;
mod binaries;
mod clients;
mod cluster_objects;
mod clusters;
mod kubeconfigs;
mod namespaces;
pub mod panic_summary;
mod waiting;

pub use apiserver_metrics::{agent_kind_write, apiserver_requests};
pub use binaries::{localcluster_binary, profile_dir, workspace_binary};
pub use clients::{admin_client, restricted_client};
pub use cluster_objects::{apply_crds, create_runtime_class, install_crds};
pub use clusters::{
    SharedCluster, cluster, private_cluster, private_cluster_with, real_node_cluster,
};
pub use kubeconfigs::merge_kubeconfigs;
pub use namespaces::TestNamespace;
pub use waiting::{wait_for, wait_for_ok, wait_for_value};
