//! The plan document: every type serialized by `berth plan-grants -o json`
//! (field names are the documented schema, `docs/plan-grants.md`; add
//! fields, never rename them).

use serde::{Deserialize, Serialize};

use crate::api::ProfileState;
use crate::decide::GrantBinding;

/// A whole plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// [`super::PLAN_API_VERSION`].
    pub api_version: String,
    /// [`super::PLAN_KIND`].
    pub kind: String,
    /// The candidate file (a path, or the agent's pending file).
    pub source: String,
    /// sha256 of the candidate's bytes, when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The classification.
    pub outcome: Outcome,
    /// [`Outcome::exit_code`], for readers of the JSON.
    pub exit_code: i32,
    /// Counts, for a one-line summary.
    pub summary: Summary,
    /// Bindings added, removed and changed.
    pub bindings: BindingChanges,
    /// Runtimes whose grant decision would change; revocations first.
    pub runtimes: Vec<RuntimeChange>,
    /// RuntimeClasses whose needs would change.
    pub classes: Vec<ClassChange>,
    /// Why the agent would refuse the file, or a binding at reconcile.
    pub problems: Vec<PlanProblem>,
    /// Remarks that do not change the outcome (e.g. file-ownership rules
    /// a local copy breaks).
    pub warnings: Vec<String>,
}

/// What applying the file would do, as a pipeline sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// The bindings are the ones loaded: a restart changes nothing.
    NoChange,
    /// Changes, and every running workload stays granted with a rollout
    /// that can finish.
    Safe,
    /// A running workload would lose its grant, or a rollout would stall
    /// on nodes lacking the handler.
    Disruptive,
    /// The agent would refuse the file (and not start).
    Invalid,
}

impl Outcome {
    /// 0 no change, 2 safe changes, 3 disruptive, 1 invalid file.
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::NoChange => 0,
            Outcome::Invalid => 1,
            Outcome::Safe => 2,
            Outcome::Disruptive => 3,
        }
    }

    /// The serialized name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::NoChange => "NoChange",
            Outcome::Safe => "Safe",
            Outcome::Disruptive => "Disruptive",
            Outcome::Invalid => "Invalid",
        }
    }
}

/// Counts of the plan's parts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub added: usize,
    pub removed: usize,
    pub changed: usize,
    /// Runtimes that would lose their grant (revoked or refused).
    pub revoked: usize,
    /// Runtimes whose pods would roll (newly granted, class or handler change).
    pub rolled: usize,
    /// Of the rolled, those whose rollout would stall on some node.
    pub stalled: usize,
    pub problems: usize,
}

impl Summary {
    pub(crate) fn of(plan: &Plan) -> Self {
        let count = |f: fn(&RuntimeChange) -> bool| plan.runtimes.iter().filter(|r| f(r)).count();
        Summary {
            added: plan.bindings.added.len(),
            removed: plan.bindings.removed.len(),
            changed: plan.bindings.changed.len(),
            revoked: count(|r| r.effect.loses_grant()),
            rolled: count(|r| r.effect.rolls()),
            stalled: count(|r| r.effect.rolls() && !r.stall_nodes.is_empty()),
            problems: plan.problems.len(),
        }
    }
}

/// Binding differences, matched by name (the alias).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BindingChanges {
    pub added: Vec<GrantBinding>,
    pub removed: Vec<GrantBinding>,
    pub changed: Vec<BindingChange>,
}

impl BindingChanges {
    /// Nothing added, removed or changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// A binding present in both files with different fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BindingChange {
    pub name: String,
    /// Every differing field, in file order.
    pub fields: Vec<FieldChange>,
}

/// One field's old and new value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldChange {
    /// The grants-file key (`runtime_class`, `handler`, …).
    pub field: String,
    pub from: String,
    pub to: String,
}

/// A Runtime's grant decision, reduced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantState {
    pub state: ProfileState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler: Option<String>,
}

/// What happens to a Runtime's pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Effect {
    /// Granted → Revoked: running pods are kept, further changes blocked.
    Revoke,
    /// Granted → refused at reconcile (class missing, handler mismatch,
    /// unsupported or deleting class): blocked like a revocation.
    Refuse,
    /// Not granted → Granted: its pods roll onto the class.
    Grant,
    /// Granted with another class or handler: its pods roll.
    Roll,
    /// Still not granted, for another reason (nothing rolls).
    Other,
}

impl Effect {
    /// The Runtime would stop being granted.
    pub fn loses_grant(self) -> bool {
        matches!(self, Effect::Revoke | Effect::Refuse)
    }

    /// The Runtime's pods would roll onto a (new) class.
    pub fn rolls(self) -> bool {
        matches!(self, Effect::Grant | Effect::Roll)
    }

    /// Revocations first, then rolls, then the rest.
    pub(crate) fn rank(self) -> u8 {
        match self {
            Effect::Revoke => 0,
            Effect::Refuse => 1,
            Effect::Roll => 2,
            Effect::Grant => 3,
            Effect::Other => 4,
        }
    }
}

/// One Runtime whose decision would change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeChange {
    pub namespace: String,
    pub name: String,
    /// `spec.runtimeProfile`.
    pub alias: String,
    pub before: GrantState,
    pub after: GrantState,
    pub effect: Effect,
    /// Replicas wanted (0 while suspended).
    pub replicas: i32,
    /// Replicas ready now (`status.rollout.ready`).
    pub ready: i32,
    /// Ready, schedulable nodes the Runtime's placement allows.
    pub eligible_nodes: usize,
    /// Of those, nodes reporting a handler list without the new handler:
    /// the rollout would stall there.
    pub stall_nodes: Vec<String>,
    /// Of those, nodes reporting no handler list (presence unknown).
    pub unknown_nodes: usize,
    /// The agent's message for the new decision.
    pub message: String,
    /// What happens to the Runtime's one-time Jobs and CronJobs, one
    /// sentence each (`super::batch`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batch: Vec<String>,
}

impl RuntimeChange {
    /// Whether this change makes the plan disruptive: a running workload
    /// loses its grant, or its pods would roll onto nodes lacking the
    /// handler.
    pub fn disrupts(&self) -> bool {
        let running = self.replicas > 0 || self.ready > 0;
        running
            && (self.effect.loses_grant() || (self.effect.rolls() && !self.stall_nodes.is_empty()))
    }
}

/// What changes for a RuntimeClass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClassEffect {
    /// A binding newly requires the class with this handler.
    HandlerRequired,
    /// No binding grants it any more and nothing references it.
    SafeToRemove,
    /// No binding grants it any more, but workloads or rollback revisions
    /// still reference it: keep it and its handler.
    StillNeeded,
}

/// One RuntimeClass whose needs would change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassChange {
    pub name: String,
    pub effect: ClassEffect,
    /// Whether the class exists.
    pub present: bool,
    /// The handler the class names now, when it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_handler: Option<String>,
    /// The handler the candidate's bindings require (HandlerRequired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_handler: Option<String>,
    /// Candidate bindings naming the class.
    pub bindings: Vec<String>,
    /// Ready nodes reporting the required (or current) handler, `with/total`.
    pub nodes: String,
    /// Nodes in an affected Runtime's placement that do not report the
    /// required handler (the rollout would stall there).
    pub missing_nodes: Vec<String>,
    /// Workloads referencing the class (each ownership chain once).
    pub workloads: usize,
    /// Of those, rollback revisions.
    pub rollback_revisions: usize,
    /// One sentence.
    pub message: String,
}

/// At which stage the agent would refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stage {
    /// The loader refuses the file: the agent does not start.
    Load,
    /// The agent refuses the binding when it reconciles a Runtime.
    Reconcile,
}

/// Why the agent would refuse the file or a binding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanProblem {
    pub stage: Stage,
    /// The loader's rule id (`docs/grants-file.md`) or the reconcile
    /// reason (`ClassMissing`, `HandlerMismatch`, `ClassUnsupported`,
    /// `ClassDeleting`).
    pub rule: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    pub message: String,
}
