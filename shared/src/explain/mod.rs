//! Explain (issue 31): the agent's own decision for one Runtime, workload
//! or pod, walked step by step — identity, binding, RuntimeClass, handler
//! presence, placement, admission, resulting conditions — each with a
//! verdict, a one-line reason and the object it read.
//!
//! Pure, like the rest of `shared/`: the console reads the cluster (and
//! runs the server-side dry-run for the admission step) and hands plain
//! values in. Every verdict comes from the functions the agent itself
//! calls ([`crate::decide::decide`], [`crate::decide::binding_for`],
//! [`crate::analysis::placement_coverage`],
//! [`crate::status::handler_ready`], [`crate::analysis::covered_by_grant`]),
//! so explain and reconcile cannot disagree; `tests.rs` drives both from
//! the same inputs.

mod attestation;
mod runtime;
mod steps;
mod workload;

#[cfg(test)]
mod tests;

use serde::Serialize;

pub use runtime::{RuntimeFacts, explain_runtime};
pub use steps::{Mismatch, closest_binding};
pub use workload::{WorkloadFacts, explain_workload};

/// A step's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Nothing here stands in the way.
    Pass,
    /// This step is why the subject is refused, blocked or at risk.
    Fail,
    /// Cannot be told from what could be read.
    Unknown,
    /// Not reached: an earlier step decided.
    Skipped,
}

impl Verdict {
    /// `pass`, `FAIL`, `unknown`, `skipped`: the table's word.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Unknown => "unknown",
            Verdict::Skipped => "skipped",
        }
    }
}

/// Which step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum StepKind {
    /// The namespace's identity labels (project, environment).
    Identity,
    /// The binding matched, or the closest one and how it differs.
    Binding,
    /// The RuntimeClass: exists, handler, overhead, scheduling.
    RuntimeClass,
    /// Handler presence on every node the pods may land on.
    Handlers,
    /// What the class's canaries saw on those nodes (`crate::attest`).
    Attestation,
    /// Whether any node may take the pods at all.
    Placement,
    /// The admission verdict (a server-side dry-run by the caller).
    Admission,
    /// The conditions that result.
    Conditions,
}

impl StepKind {
    /// Every step, in the order they are walked.
    pub const ALL: [StepKind; 8] = [
        StepKind::Identity,
        StepKind::Binding,
        StepKind::RuntimeClass,
        StepKind::Handlers,
        StepKind::Attestation,
        StepKind::Placement,
        StepKind::Admission,
        StepKind::Conditions,
    ];

    /// The step's title.
    pub fn title(self) -> &'static str {
        match self {
            StepKind::Identity => "identity",
            StepKind::Binding => "binding",
            StepKind::RuntimeClass => "runtimeclass",
            StepKind::Handlers => "handlers",
            StepKind::Attestation => "attestation",
            StepKind::Placement => "placement",
            StepKind::Admission => "admission",
            StepKind::Conditions => "conditions",
        }
    }
}

/// One step of an explanation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Which step.
    pub step: StepKind,
    /// Its outcome.
    pub verdict: Verdict,
    /// One line: why.
    pub reason: String,
    /// The object read, `Kind/name` or `Kind/namespace/name` (empty when
    /// none was).
    pub object: String,
    /// Further lines (per-node presence, field-by-field mismatches).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

impl Step {
    fn new(step: StepKind, verdict: Verdict, reason: impl Into<String>, object: String) -> Self {
        Step {
            step,
            verdict,
            reason: reason.into(),
            object,
            details: Vec::new(),
        }
    }

    fn skipped(step: StepKind, why: &str) -> Self {
        Step::new(step, Verdict::Skipped, why, String::new())
    }

    fn with_details(mut self, details: Vec<String>) -> Self {
        self.details = details;
        self
    }
}

/// The admission verdict the caller obtained with a server-side dry-run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "verdict")]
pub enum Admission {
    /// The apiserver's admission chain accepted the object.
    Allowed {
        /// What was tried, e.g. "dry-run create of a copy".
        tried: String,
        /// Warnings returned, if any.
        warnings: Vec<String>,
    },
    /// Denied, with the webhook's or policy's message.
    Denied {
        /// What was tried.
        tried: String,
        /// The message.
        message: String,
    },
    /// The dry-run was not made or failed for another reason.
    NotChecked {
        /// Why.
        why: String,
    },
}

/// An explanation: the subject, the agent's decision and the steps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// `Kind/namespace/name` of what is explained.
    pub subject: String,
    /// The decision's stable reason (`Granted`, `Revoked`, `NotGranted`, …;
    /// for a workload outside a Runtime: `Covered`, `Retained`, `NoClass`).
    pub decision: String,
    /// The decision as a sentence.
    pub message: String,
    /// The steps, in [`StepKind::ALL`] order.
    pub steps: Vec<Step>,
}

impl Explanation {
    /// The first failing step, if any: "why is this blocked?".
    pub fn first_failure(&self) -> Option<&Step> {
        self.steps.iter().find(|s| s.verdict == Verdict::Fail)
    }

    /// The step of a kind.
    pub fn step(&self, kind: StepKind) -> Option<&Step> {
        self.steps.iter().find(|s| s.step == kind)
    }

    /// Plain text lines (the CLI's table and the console's view): one line
    /// per step, details indented beneath. Not sanitized: callers print
    /// through the sanitizer.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![
            format!("{}: {}", self.subject, self.decision),
            format!("  {}", self.message),
        ];
        for s in &self.steps {
            let object = if s.object.is_empty() {
                String::new()
            } else {
                format!("  [{}]", s.object)
            };
            out.push(format!(
                "{:<7} {:<12} {}{object}",
                s.verdict.word(),
                s.step.title(),
                s.reason
            ));
            out.extend(s.details.iter().map(|d| format!("{:21}{d}", "")));
        }
        out
    }
}

fn admission_step(admission: Option<&Admission>) -> Step {
    match admission {
        None => Step::new(
            StepKind::Admission,
            Verdict::Unknown,
            "not checked (no server-side dry-run was made)",
            String::new(),
        ),
        Some(Admission::Allowed { tried, warnings }) => Step::new(
            StepKind::Admission,
            Verdict::Pass,
            format!("admitted: {tried}"),
            String::new(),
        )
        .with_details(warnings.iter().map(|w| format!("warning: {w}")).collect()),
        Some(Admission::Denied { tried, message }) => Step::new(
            StepKind::Admission,
            Verdict::Fail,
            format!("denied ({tried}): {message}"),
            String::new(),
        ),
        Some(Admission::NotChecked { why }) => Step::new(
            StepKind::Admission,
            Verdict::Unknown,
            format!("not checked: {why}"),
            String::new(),
        ),
    }
}
