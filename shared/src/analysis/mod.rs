//! Workload analysis (pure): which workloads reference which RuntimeClass,
//! which nodes report which handler, whether a class can be removed, and
//! which workloads are *retained* — still referencing a class whose grant is
//! gone or never existed.
//!
//! The agent (RuntimeGrant status, `HandlerReady`/`PlacementIncomplete`) and
//! the console (Handlers and Retained views) both call this; neither touches
//! the API here. Typical use:
//!
//! ```
//! use berth_shared::analysis::{self, NodeInfo, WorkloadSources};
//! # let (deployments, replica_sets, nodes, classes, grants) =
//! #     (vec![], vec![], Vec::<k8s_openapi::api::core::v1::Node>::new(), vec![], vec![]);
//! let workloads = WorkloadSources {
//!     deployments: &deployments,
//!     replica_sets: &replica_sets,
//!     ..Default::default()
//! }
//! .collect();
//! let nodes: Vec<NodeInfo> = nodes.iter().map(NodeInfo::from_node).collect();
//! let reports = analysis::handler_reports(&classes, &grants, &nodes, &workloads);
//! let retained = analysis::retained(&workloads, &grants, None);
//! # assert!(reports.is_empty() && retained.is_empty());
//! ```
//!
//! API stability: the console depends on the names exported here; add
//! fields and functions, do not rename or remove them.

mod nodes;
mod report;
mod workload;

#[cfg(test)]
mod tests;

pub use nodes::{
    Coverage, NodeInfo, Placement, PlacementCoverage, Presence, coverage, coverage_summary,
    placement_coverage,
};
pub use report::{
    HandlerReport, RemovalVerdict, RetainReason, Retained, UsageCounts, binding_from_grant,
    class_usage, covered_by_grant, handler_reports, removal_verdict, retained,
};
pub use workload::{
    DeploymentRevisions, Labels, MANAGED_BY_LABEL, Owner, REVISION_ANNOTATION, Workload,
    WorkloadKind, WorkloadSources,
};
