//! What the agent's canaries saw of a granted handler, node by node
//! (issue 53): a RuntimeGrant's `status.attestation`. A node's report
//! (`status.runtimeHandlers`) says a handler is configured; a canary Job
//! run on that node, on the class, says whether it really starts a
//! sandbox of the kind it claims, under the production contract
//! (`berth_shared::attest`).
//!
//! Bounded for clusters with thousands of nodes: the counts cover every
//! node, the list names at most [`MAX_ATTESTED_NODES`] of them, failing
//! ones first.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most nodes a grant's attestation lists (failing first, then
/// unverified, then verified; by name within each).
pub const MAX_ATTESTED_NODES: usize = 50;

/// Longest message kept per node (a canary's reason is short; what a node
/// or Job says is cut here).
pub const MAX_ATTESTATION_MESSAGE: usize = 300;

/// What a node's canary showed.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
pub enum AttestationState {
    /// The handler started a canary of the kind it claims, under the
    /// contract, at `at`.
    Verified,
    /// The canary failed: the reason says which check.
    Failing,
    /// No evidence: not run yet, running, skipped (cordoned, NotReady,
    /// full, simulated) or canaries off.
    #[default]
    Unverified,
}

impl AttestationState {
    /// `verified`, `failing`, `unverified`.
    pub fn word(self) -> &'static str {
        match self {
            AttestationState::Verified => "verified",
            AttestationState::Failing => "failing",
            AttestationState::Unverified => "unverified",
        }
    }
}

/// One node's evidence for one class.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeAttestation {
    /// The node.
    pub node: String,
    /// What the canary showed.
    pub state: AttestationState,
    /// Why, as a stable word (`Verified`, `SandboxNotCreated`,
    /// `KernelMismatch`, `Skipped`, …; see
    /// `berth_shared::attest::reasons`).
    pub reason: String,
    /// What was seen, for people.
    pub message: String,
    /// When the evidence was produced (the canary Job's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Time>,
    /// The canary Job that produced it (in the agent's namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

/// What the canaries saw of one class's handler on every node that reports
/// it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HandlerAttestation {
    /// Whether the agent runs canaries at all.
    pub canaries: bool,
    /// Why not, when it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_reason: Option<String>,
    /// Seconds between two canaries of one node, as configured.
    pub period_seconds: i64,
    /// Seconds between two canaries of one node in fact: the period,
    /// stretched so that every (class, node) pair of the cluster fits the
    /// budget (max(period, pairs × 3600 / budget)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective_period_seconds: Option<i64>,
    /// Most canary launches an hour, cluster-wide (none: no cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_per_hour: Option<i64>,
    /// What each canary of this class checks (the same on every node).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// Nodes whose last canary passed.
    pub verified: i32,
    /// Nodes whose last canary failed.
    pub failing: i32,
    /// Nodes without evidence.
    pub unverified: i32,
    /// `2 verified, 1 failing` (the printer column).
    pub summary: String,
    /// The nodes, failing first, at most [`MAX_ATTESTED_NODES`]; none when
    /// canaries are off (every node counted is unverified, for `offReason`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 50))]
    pub nodes: Vec<NodeAttestation>,
    /// Nodes counted above and not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unlisted: i32,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

impl HandlerAttestation {
    /// The listed evidence for `node`, if listed.
    pub fn node(&self, node: &str) -> Option<&NodeAttestation> {
        self.nodes.iter().find(|n| n.node == node)
    }
}

/// `2 verified, 1 failing, 1 unverified` (zero counts left out; `no node`
/// when all are zero).
pub fn attestation_summary(verified: usize, failing: usize, unverified: usize) -> String {
    let parts: Vec<String> = [
        (failing, "failing"),
        (verified, "verified"),
        (unverified, "unverified"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, w)| format!("{n} {w}"))
    .collect();
    if parts.is_empty() {
        "no node".to_string()
    } else {
        parts.join(", ")
    }
}
