//! Planning a grants change (issue 18): what a candidate grants file would
//! grant, revoke, roll and retain if the agent were restarted with it, the
//! way `terraform plan` answers for its world.
//!
//! Pure: the caller hands in the bindings loaded now (the agent's, or the
//! published RuntimeGrants), the candidate's load result (the same strict
//! loader the agent uses) and a snapshot of the cluster. [`plan`] runs the
//! agent's own [`decide`](crate::decide::decide) for every Runtime under
//! both sets of bindings, so the plan predicts exactly what the agent will
//! decide after the restart. The result is serializable (`berth plan-grants
//! -o json`, schema in `docs/plan-grants.md`) and classified into an exit
//! code a pipeline can use ([`Outcome::exit_code`]).

mod batch;
mod bindings;
mod classes;
mod inputs;
mod pending;
mod runtimes;
mod types;

#[cfg(test)]
mod tests;

pub use bindings::diff_bindings;
pub use inputs::{Candidate, Cluster, loader_problems};
pub use pending::{candidate_from_pending, pending_spec};
pub use types::*;

use crate::decide::GrantBinding;

/// The `apiVersion` of a plan document.
pub const PLAN_API_VERSION: &str = "berth.dev/v1alpha1";
/// The `kind` of a plan document.
pub const PLAN_KIND: &str = "GrantsPlan";

/// The plan of replacing `current` with `candidate` in `cluster`.
pub fn plan(current: &[GrantBinding], candidate: &Candidate, cluster: &Cluster<'_>) -> Plan {
    let mut out = Plan {
        api_version: PLAN_API_VERSION.to_string(),
        kind: PLAN_KIND.to_string(),
        source: candidate.source.clone(),
        sha256: candidate.sha256.clone(),
        outcome: Outcome::NoChange,
        exit_code: 0,
        summary: Summary::default(),
        bindings: BindingChanges::default(),
        runtimes: Vec::new(),
        classes: Vec::new(),
        problems: Vec::new(),
        warnings: Vec::new(),
    };
    let next = match &candidate.bindings {
        Ok(next) => next,
        Err(problems) => {
            out.problems = problems.clone();
            out.outcome = Outcome::Invalid;
            out.exit_code = out.outcome.exit_code();
            out.summary.problems = out.problems.len();
            return out;
        }
    };
    out.bindings = diff_bindings(current, next);
    out.problems = classes::reconcile_problems(next, cluster.classes);
    out.runtimes = runtimes::transitions(current, next, cluster);
    out.classes = classes::effects(current, next, &out.runtimes, cluster);
    out.outcome = if out.bindings.is_empty() {
        Outcome::NoChange
    } else if out.runtimes.iter().any(RuntimeChange::disrupts) {
        Outcome::Disruptive
    } else {
        Outcome::Safe
    };
    out.exit_code = out.outcome.exit_code();
    out.summary = Summary::of(&out);
    out
}
