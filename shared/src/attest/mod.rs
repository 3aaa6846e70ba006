//! Attestation (issue 53, pure): proving that each granted handler really
//! starts a sandbox, of the kind it claims, on every node that reports it.
//!
//! A node's `status.runtimeHandlers` says that its container runtime has a
//! handler configured, nothing more: a handler whose binary or shim is
//! gone, or that a typo in containerd's config maps to plain runc, is
//! reported all the same. So the agent runs a *canary* per granted class
//! and node: a Job in its own namespace, pinned to the node, on the class,
//! from the agent's own image (`berth-agent canary`), under the full
//! production contract. The canary checks what the class claims and exits
//! with a code naming the first check that failed; the Job's pod failure
//! policy turns each code into a rule of its own, so the Job alone says
//! which check failed (the agent has no Pod permission and needs none).
//!
//! The parts, each pure:
//! - [`expect`]: what a class claims ([`CanaryClass`]: its sandbox kind,
//!   a declared open-files limit) and what a node offers ([`CanaryNode`]);
//! - [`checks`]: the canary's checks over what it saw inside the pod
//!   ([`Facts`]), and the exit code of each failure;
//! - [`job`]: the canary Job, with its pod failure policy;
//! - [`record`]: what a canary Job says, read back ([`CanaryRecord`]);
//! - [`verdicts`]: per class and node, verified / failing / unverified,
//!   and the bounded status a RuntimeGrant carries;
//! - [`plan`]: which canaries are due, within the concurrency cap and the
//!   budget of launches per hour.

pub mod checks;
pub mod expect;
pub mod job;
pub mod plan;
pub mod record;
pub mod verdicts;

#[cfg(test)]
mod budget_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod verdict_tests;

pub use checks::{Facts, Failure, SandboxSeen, run_checks};
pub use expect::{CanaryClass, CanaryNode, SandboxKind};
pub use job::{CanaryJob, render};
pub use plan::{Cadence, Launch, Policy, Started, due};
pub use record::{CanaryRecord, Cause, Outcome, keep_what_the_record_reads};
pub use verdicts::{ClassVerdicts, NodeVerdict, attest_class};

/// Label on every canary Job and its pods (value `true`): what the
/// agent's watch of its namespace selects.
pub use crate::api::meta::CANARY_LABEL;
/// Annotation on a canary Job: the RuntimeClass it runs on.
pub const CLASS_ANNOTATION: &str = "berth.dev/canary-class";
/// Annotation on a canary Job: the node it is pinned to.
pub const NODE_ANNOTATION: &str = "berth.dev/canary-node";
/// Annotation on a canary Job: the fingerprint of what it checks (class,
/// handler, claims, node kernel, image); a change makes the last evidence
/// stale and a new canary due.
pub const SUBJECT_ANNOTATION: &str = "berth.dev/canary-subject";
/// The canary container's name.
pub const CONTAINER: &str = "canary";

/// A RuntimeClass annotation declaring the kind of sandbox its handler
/// gives: `gvisor`, `host` (runc-like: the node's own kernel) or `vm`
/// (Kata-like: a kernel of its own). Without it the kind follows the
/// handler's name ([`SandboxKind::from_handler`]).
pub const SANDBOX_ANNOTATION: &str = "berth.dev/sandbox";
/// A RuntimeClass annotation declaring the open-files limit (soft
/// `RLIMIT_NOFILE`) its handler sets, e.g. `256`: the canary checks it.
pub const NOFILE_ANNOTATION: &str = "berth.dev/nofile";

/// The annotation kwok puts on the nodes it simulates: such a node runs no
/// container, so nothing on it can be attested.
pub const SIMULATED_NODE_ANNOTATION: &str = "kwok.x-k8s.io/node";

/// The reasons of a node's attestation (`status.attestation.nodes[].reason`):
/// stable strings, matched by the console, alerts and tests.
pub mod reasons {
    /// The last canary passed every check.
    pub const VERIFIED: &str = "Verified";
    /// The sandbox was never created (the pod never became ready to start
    /// containers): the handler's binary or shim is broken or missing.
    pub const SANDBOX_NOT_CREATED: &str = "SandboxNotCreated";
    /// The sandbox is not of the kind the class claims (gVisor's kernel
    /// expected, the host's seen, …).
    pub const KERNEL_MISMATCH: &str = "KernelMismatch";
    /// The pod does not see the production contract (uid, read-only root,
    /// capabilities, token, no new privileges).
    pub const CONTRACT_BROKEN: &str = "ContractBroken";
    /// What the class declares (an open-files limit) is not what the pod
    /// sees.
    pub const DECLARED_LIMIT_MISMATCH: &str = "DeclaredLimitMismatch";
    /// The canary's container failed without a verdict of its own (it
    /// crashed, was killed, or never ran to the end).
    pub const CANARY_FAILED: &str = "CanaryFailed";
    /// The canary was not started in time (not scheduled: the node is
    /// full, or its kubelet did not start it).
    pub const NOT_STARTED: &str = "NotStarted";
    /// No canary has finished on this node yet (one may be running).
    pub const NOT_RUN_YET: &str = "NotRunYet";
    /// The node is not checked: cordoned, NotReady, under pressure, or
    /// simulated.
    pub const SKIPPED: &str = "Skipped";
    /// The class's claims cannot be checked (an invalid annotation).
    pub const CLAIM_INVALID: &str = "ClaimInvalid";
}
