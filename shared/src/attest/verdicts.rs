//! Per class and node: verified, failing or unverified, from the canary
//! Jobs; and the bounded status a RuntimeGrant carries.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::expect::{CanaryClass, CanaryNode};
use super::job::subject;
use super::plan::{Cadence, Policy};
use super::reasons;
use super::record::{CanaryRecord, Cause, Outcome};
use crate::api::{
    AttestationState, HandlerAttestation, MAX_ATTESTATION_MESSAGE, MAX_ATTESTED_NODES,
    NodeAttestation, attestation_summary,
};

/// One node's verdict for one class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeVerdict {
    /// Verified, failing or unverified.
    pub state: AttestationState,
    /// One of [`reasons`].
    pub reason: String,
    /// What was seen.
    pub message: String,
    /// When the evidence was produced.
    pub at: Option<Timestamp>,
    /// The canary Job that produced it.
    pub job: Option<String>,
}

impl NodeVerdict {
    fn unverified(reason: &str, message: impl Into<String>) -> Self {
        NodeVerdict {
            state: AttestationState::Unverified,
            reason: reason.to_string(),
            message: message.into(),
            at: None,
            job: None,
        }
    }
}

/// Every node's verdict for one class (every node that reports the
/// class's handler).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassVerdicts {
    /// The class.
    pub class: String,
    /// Its handler.
    pub handler: String,
    /// What its canaries check.
    pub checks: Vec<String>,
    /// Node name → verdict.
    pub nodes: BTreeMap<String, NodeVerdict>,
    /// Nodes that report the handler and are judged by none of their own
    /// evidence, all unverified for the one reason the policy states
    /// (canaries off): counted, not listed. A verdict per (class, node)
    /// saying "canaries are off" cost the agent 0.3 MB of heap at S/4
    /// (issue 52's profile), rebuilt on every pass, for nothing that
    /// `offReason` does not say once.
    pub off_nodes: usize,
}

impl ClassVerdicts {
    /// The node's verdict, if the node reports the handler.
    pub fn of(&self, node: &str) -> Option<&NodeVerdict> {
        self.nodes.get(node)
    }

    /// The verdicts a grant's published status lists (its listed nodes
    /// only: the console's and explain's view of what the agent saw).
    pub fn from_status(class: &str, handler: &str, status: &HandlerAttestation) -> Self {
        ClassVerdicts {
            class: class.to_string(),
            handler: handler.to_string(),
            checks: status.checks.clone(),
            off_nodes: 0,
            nodes: status
                .nodes
                .iter()
                .map(|n| {
                    (
                        n.node.clone(),
                        NodeVerdict {
                            state: n.state,
                            reason: n.reason.clone(),
                            message: n.message.clone(),
                            at: n.at.as_ref().map(|t| t.0),
                            job: n.job.clone(),
                        },
                    )
                })
                .collect(),
        }
    }

    /// Nodes in each state: (verified, failing, unverified).
    pub fn counts(&self) -> (usize, usize, usize) {
        let n = |s| self.nodes.values().filter(|v| v.state == s).count();
        (
            n(AttestationState::Verified),
            n(AttestationState::Failing),
            n(AttestationState::Unverified) + self.off_nodes,
        )
    }

    /// Every node judged: listed one by one or counted as off.
    pub fn judged(&self) -> usize {
        self.nodes.len() + self.off_nodes
    }

    /// The status a grant of this class carries: the counts, and at most
    /// [`MAX_ATTESTED_NODES`] nodes, failing first, then unverified, then
    /// verified (by name within each), and the `cadence` canaries keep. With
    /// canaries off it lists no node: `offReason` says why all are
    /// unverified.
    pub fn status(&self, policy: &Policy, cadence: &Cadence) -> HandlerAttestation {
        let (verified, failing, unverified) = self.counts();
        let rank = |s: AttestationState| match s {
            AttestationState::Failing => 0,
            AttestationState::Unverified => 1,
            AttestationState::Verified => 2,
        };
        // Canaries off: every node is unverified for the one reason the
        // status states once (offReason); a list of them says nothing more,
        // and every grant of the class would carry it.
        let mut ordered: Vec<(&String, &NodeVerdict)> = if policy.off.is_some() {
            Vec::new()
        } else {
            self.nodes.iter().collect()
        };
        ordered.sort_by_key(|(name, v)| (rank(v.state), *name));
        let listed: Vec<NodeAttestation> = ordered
            .iter()
            .take(MAX_ATTESTED_NODES)
            .map(|(name, v)| NodeAttestation {
                node: (*name).clone(),
                state: v.state,
                reason: v.reason.clone(),
                message: cut(&v.message),
                at: v.at.map(Time),
                job: v.job.clone(),
            })
            .collect();
        let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        HandlerAttestation {
            canaries: policy.off.is_none(),
            off_reason: policy.off.clone(),
            period_seconds: policy.period_seconds,
            effective_period_seconds: policy
                .off
                .is_none()
                .then_some(cadence.effective_period_seconds),
            budget_per_hour: policy.budget_per_hour.map(i64::from),
            checks: self.checks.clone(),
            verified: count(verified),
            failing: count(failing),
            unverified: count(unverified),
            summary: attestation_summary(verified, failing, unverified),
            unlisted: count(self.judged().saturating_sub(listed.len())),
            nodes: listed,
        }
    }
}

fn cut(message: &str) -> String {
    if message.chars().count() <= MAX_ATTESTATION_MESSAGE {
        message.to_string()
    } else {
        message
            .chars()
            .take(MAX_ATTESTATION_MESSAGE - 1)
            .collect::<String>()
            + "…"
    }
}

/// The verdict a finished canary gives.
fn from_outcome(
    class: &CanaryClass,
    node: &CanaryNode,
    record: &CanaryRecord,
    policy: &Policy,
) -> NodeVerdict {
    let failing = |reason: &str, message: String, at: Option<Timestamp>| NodeVerdict {
        state: AttestationState::Failing,
        reason: reason.to_string(),
        message,
        at,
        job: Some(record.job.clone()),
    };
    match &record.outcome {
        Outcome::Passed { at } => NodeVerdict {
            state: AttestationState::Verified,
            reason: reasons::VERIFIED.to_string(),
            message: format!(
                "a canary ran on {} under the contract",
                class.sandbox.described()
            ),
            at: *at,
            job: Some(record.job.clone()),
        },
        Outcome::Failed { at, cause } => match cause {
            Cause::Check(f) => failing(f.reason(), f.message(class, node.kernel.as_deref()), *at),
            Cause::NoSandbox => failing(
                reasons::SANDBOX_NOT_CREATED,
                format!(
                    "sandbox not created: the canary's pod never became ready to start containers within {} s (handler {}; the node's FailedCreatePodSandBox events say why)",
                    policy.deadline_seconds, class.handler
                ),
                *at,
            ),
            Cause::OtherExit(code) => failing(
                reasons::CANARY_FAILED,
                format!(
                    "the canary's container exited with code {} before a verdict (crashed, killed, or not the agent's image)",
                    code.map_or_else(|| "?".to_string(), |c| c.to_string())
                ),
                *at,
            ),
            Cause::Other(text) => failing(
                reasons::CANARY_FAILED,
                format!("the canary's pod failed before its container ran to the end ({text})"),
                *at,
            ),
            Cause::NotStarted => NodeVerdict {
                state: AttestationState::Unverified,
                reason: reasons::NOT_STARTED.to_string(),
                message: format!(
                    "the canary did not start within {} s (not scheduled: the node may be full)",
                    policy.deadline_seconds + super::job::SCHEDULING_GRACE_SECONDS
                ),
                at: *at,
                job: Some(record.job.clone()),
            },
        },
        Outcome::Running => NodeVerdict::unverified(reasons::NOT_RUN_YET, "a canary is running"),
    }
}

/// Every node's verdict for `class`, from its canary `records` (any order,
/// other classes' ignored). Only nodes that report the class's handler
/// are judged; a class reported nowhere has no verdict at all.
pub fn attest_class(
    class: &CanaryClass,
    nodes: &[CanaryNode],
    records: &[CanaryRecord],
    policy: &Policy,
) -> ClassVerdicts {
    let mut out = ClassVerdicts {
        class: class.name.clone(),
        handler: class.handler.clone(),
        checks: class.checks(),
        nodes: BTreeMap::new(),
        off_nodes: 0,
    };
    if policy.off.is_some() {
        // Unverified for the policy's reason, every one: counted only
        // (see `off_nodes`).
        out.off_nodes = nodes
            .iter()
            .filter(|n| n.info.reports(&class.handler))
            .count();
        return out;
    }
    // The class's records by node, once: a pass judges every pair, and
    // with the budget at S the namespace holds thousands of canary Jobs.
    // Not built when no record will be read (claim invalid).
    let mut by_node: HashMap<&str, Vec<&CanaryRecord>> = HashMap::new();
    if class.invalid.is_none() {
        for r in records.iter().filter(|r| r.class == class.name) {
            by_node.entry(r.node.as_str()).or_default().push(r);
        }
    }
    for node in nodes.iter().filter(|n| n.info.reports(&class.handler)) {
        let verdict = if let Some(invalid) = &class.invalid {
            NodeVerdict::unverified(
                reasons::CLAIM_INVALID,
                format!("RuntimeClass {}: {invalid}", class.name),
            )
        } else if let Some(skip) = node.skip_reason() {
            NodeVerdict::unverified(reasons::SKIPPED, format!("skipped: {skip}"))
        } else {
            let current = subject(class, node, &policy.image);
            let of_pair = by_node.get(node.name()).map_or(&[][..], Vec::as_slice);
            let latest = of_pair
                .iter()
                .filter(|r| r.finished() && r.subject == current)
                .max_by_key(|r| (r.created, &r.job));
            match latest {
                Some(r) => from_outcome(class, node, r, policy),
                None if of_pair.iter().any(|r| !r.finished()) => {
                    NodeVerdict::unverified(reasons::NOT_RUN_YET, "the first canary is running")
                }
                None if of_pair.iter().any(|r| r.finished()) => NodeVerdict::unverified(
                    reasons::NOT_RUN_YET,
                    "the class, the node's kernel or the agent's image changed since the last canary: a new one is due",
                ),
                None => NodeVerdict::unverified(reasons::NOT_RUN_YET, "no canary has run yet"),
            }
        };
        out.nodes.insert(node.name().to_string(), verdict);
    }
    out
}
