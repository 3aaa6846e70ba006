//! A canary Job read back: which class and node it checked, and what it
//! found, from the Job's own status alone (no Pod is read).

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::Timestamp;

use super::checks::Failure;
use super::job::{Rule, rules};
use super::{CLASS_ANNOTATION, NODE_ANNOTATION, SUBJECT_ANNOTATION};
use crate::sanitize;

/// Why a canary failed, as its Job says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The canary ran and this check failed.
    Check(Failure),
    /// The pod's sandbox was never created.
    NoSandbox,
    /// The container exited with another code (a crash, a kill, an image
    /// that is not the agent's).
    OtherExit(Option<i32>),
    /// The pod did not start before the Job's deadline (not scheduled).
    NotStarted,
    /// The Job failed for another reason (its reason and message, cleaned
    /// and cut).
    Other(String),
}

/// What a canary Job shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not finished.
    Running,
    /// Every check passed.
    Passed {
        /// When it completed.
        at: Option<Timestamp>,
    },
    /// It failed.
    Failed {
        /// When it failed.
        at: Option<Timestamp>,
        /// Why.
        cause: Cause,
    },
}

/// One canary Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanaryRecord {
    /// The Job's name.
    pub job: String,
    /// The class it ran on.
    pub class: String,
    /// The node it was pinned to.
    pub node: String,
    /// The subject fingerprint it checked.
    pub subject: String,
    /// When it was created.
    pub created: Option<Timestamp>,
    /// What it shows.
    pub outcome: Outcome,
}

/// Longest foreign text (a Job's reason and message) kept in a cause.
const MAX_OTHER: usize = 200;

/// The index `N` of "… rule at index N".
fn rule_index(message: &str) -> Option<usize> {
    let (_, tail) = message.rsplit_once("rule at index ")?;
    tail.trim()
        .trim_end_matches('.')
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The `N` of "… with exit code N …".
fn exit_code(message: &str) -> Option<i32> {
    let (_, tail) = message.split_once("exit code ")?;
    tail.split_whitespace().next()?.parse().ok()
}

/// Why a Job that failed with `reason` and `message` failed.
pub fn cause(reason: &str, message: &str) -> Cause {
    match reason {
        "PodFailurePolicy" => {
            let rule = rule_index(message).and_then(|i| rules().get(i).copied());
            match rule {
                // The exit code the Job names must be the rule's: a message
                // of another shape is not trusted to mean the check.
                Some(Rule::Check(f)) if exit_code(message) == Some(f.exit_code()) => {
                    Cause::Check(f)
                }
                Some(Rule::NoSandbox) => Cause::NoSandbox,
                Some(Rule::OtherExit) => Cause::OtherExit(exit_code(message)),
                _ => other(reason, message),
            }
        }
        "DeadlineExceeded" => Cause::NotStarted,
        _ => other(reason, message),
    }
}

fn other(reason: &str, message: &str) -> Cause {
    let mut text = sanitize::value(&format!("{reason}: {message}"));
    if text.chars().count() > MAX_OTHER {
        text = text.chars().take(MAX_OTHER).collect::<String>() + "…";
    }
    Cause::Other(text)
}

impl CanaryRecord {
    /// Reads a canary Job; `None` when it is not one (no class or node
    /// annotation).
    pub fn from_job(job: &Job) -> Option<Self> {
        let meta = &job.metadata;
        let annotations = meta.annotations.as_ref()?;
        let class = annotations.get(CLASS_ANNOTATION)?.clone();
        let node = annotations.get(NODE_ANNOTATION)?.clone();
        let subject = annotations
            .get(SUBJECT_ANNOTATION)
            .cloned()
            .unwrap_or_default();
        let conditions = job
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        let done = |type_: &str| {
            conditions
                .iter()
                .find(|c| c.type_ == type_ && c.status == "True")
        };
        let outcome = if let Some(c) = done("Complete") {
            Outcome::Passed {
                at: c
                    .last_transition_time
                    .as_ref()
                    .map(|t| t.0)
                    .or_else(|| job.status.as_ref()?.completion_time.as_ref().map(|t| t.0)),
            }
        } else if let Some(c) = done("Failed") {
            Outcome::Failed {
                at: c.last_transition_time.as_ref().map(|t| t.0),
                cause: cause(
                    c.reason.as_deref().unwrap_or_default(),
                    c.message.as_deref().unwrap_or_default(),
                ),
            }
        } else {
            Outcome::Running
        };
        Some(CanaryRecord {
            job: meta.name.clone().unwrap_or_default(),
            class,
            node,
            subject,
            created: meta.creation_timestamp.as_ref().map(|t| t.0),
            outcome,
        })
    }

    /// Whether it has finished.
    pub fn finished(&self) -> bool {
        !matches!(self.outcome, Outcome::Running)
    }
}

/// Cuts a canary Job down to what [`CanaryRecord::from_job`] reads (its
/// name, namespace, creation time, berth's three canary annotations, and
/// its Complete and Failed conditions), for the agent's cache of its
/// canary Jobs. Each pair keeps a few finished Jobs for three effective
/// periods (the evidence a restarted agent reads), so with the budget at
/// S (3,800 pairs) the namespace holds about 11,000 of them; whole, each
/// carries the pod template, the contract and the pod failure policy.
pub fn keep_what_the_record_reads(job: &mut Job) {
    let meta = &mut job.metadata;
    meta.labels = None;
    meta.owner_references = None;
    meta.managed_fields = None;
    meta.finalizers = None;
    if let Some(a) = meta.annotations.as_mut() {
        a.retain(|k, _| {
            [CLASS_ANNOTATION, NODE_ANNOTATION, SUBJECT_ANNOTATION].contains(&k.as_str())
        });
    }
    job.spec = None;
    if let Some(status) = job.status.take() {
        let conditions = status.conditions.map(|c| {
            c.into_iter()
                .filter(|c| matches!(c.type_.as_str(), "Complete" | "Failed") && c.status == "True")
                .map(|c| k8s_openapi::api::batch::v1::JobCondition {
                    last_probe_time: None,
                    ..c
                })
                .collect()
        });
        job.status = Some(k8s_openapi::api::batch::v1::JobStatus {
            conditions,
            completion_time: status.completion_time,
            ..Default::default()
        });
    }
}
