//! berth integration tests: one test binary, one real local control plane
//! (see `berth_tests::harness`), a namespace per test.

mod admission;
mod agent_classes;
mod agent_contract;
mod agent_deletions;
mod agent_dependencies;
mod agent_grants;
mod agent_held;
mod agent_identity;
mod agent_leader;
mod agent_lifecycle;
mod agent_ops;
mod agent_pods;
mod agent_reconcile;
mod agent_semantics;
mod alerts;
mod as_shipped;
mod assets;
mod autoscale_zero;
mod bench_smoke;
mod chart;
mod console;
mod console_fleet;
mod console_get;
mod console_matrix;
mod console_scope;
mod contract_adversary;
mod contract_construction;
mod contract_schema;
mod crds;
mod demo_canaries;
mod explain;
mod exposure;
mod faults;
mod foundation;
mod held_workloads;
mod image;
mod job_contract;
mod job_identity;
mod kube_score;
mod metrics_doc;
mod plan_grants;
mod pod_annotations;
mod prometheus;
mod real_node;
mod real_node_canary;
mod reserved_labels;
mod retire;
mod runtime_grant_policy;
mod selectors;
mod support;
mod version;
mod workload_policy;

// Test support lives under support/; the old path stays for modules that
// name it.
use support::agent as agent_support;
