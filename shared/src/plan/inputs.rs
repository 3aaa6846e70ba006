//! What a plan is made from: the cluster as it is, and the candidate file
//! as the loader judged it (its refusal as plan problems). Read by the
//! planner ([`super::plan`]) and each of its steps, so no step reaches
//! back into the planner.

use k8s_openapi::api::core::v1::Namespace;

use super::types::{PlanProblem, Stage};
use crate::analysis::{NodeInfo, Workload};
use crate::api::Runtime;
use crate::decide::{GrantBinding, ObservedClass};
use crate::grants::GrantsError;

/// What the plan looks at in the cluster.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cluster<'a> {
    /// Runtimes (their status.profile is the agent's previous decision).
    pub runtimes: &'a [Runtime],
    /// Namespaces (their labels give the Runtimes' project and environment).
    pub namespaces: &'a [Namespace],
    /// RuntimeClasses as observed.
    pub classes: &'a [ObservedClass],
    /// Nodes with the handlers they report.
    pub nodes: &'a [NodeInfo],
    /// Workloads referencing RuntimeClasses (retained, rollback revisions).
    pub workloads: &'a [Workload],
}

/// The candidate file as the loader judged it.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Where it came from (a path, or the agent's pending file).
    pub source: String,
    /// sha256 of its bytes, when they could be read.
    pub sha256: Option<String>,
    /// Its bindings, or every problem the loader found.
    pub bindings: Result<Vec<GrantBinding>, Vec<PlanProblem>>,
}

/// The loader's refusal as plan problems: one per content problem (with
/// its rule and position), or one for a file-level refusal.
pub fn loader_problems(error: &GrantsError) -> Vec<PlanProblem> {
    match error {
        GrantsError::Invalid { problems, .. } => problems
            .iter()
            .map(|p| {
                let at = p.position();
                PlanProblem {
                    stage: Stage::Load,
                    rule: p.rule().to_string(),
                    binding: None,
                    runtime_class: None,
                    line: at.map(|a| a.line),
                    column: at.map(|a| a.column),
                    message: p.to_string(),
                }
            })
            .collect(),
        other => vec![PlanProblem {
            stage: Stage::Load,
            rule: other.rule().to_string(),
            binding: None,
            runtime_class: None,
            line: None,
            column: None,
            message: other.to_string(),
        }],
    }
}
