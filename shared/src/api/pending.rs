//! The `PendingGrantsFile` custom resource (issue 18): the grants file on
//! disk when it differs from the one the agent loaded — validated by the
//! agent's strict loader, never applied. It lets `berth plan-grants
//! --pending` and the console's Plan view compute what the next restart
//! would do without access to the file.
//!
//! Cluster-scoped, one per agent (named after its Lease), present only
//! while a pending file exists, written only by the agent (the same
//! admission policy as RuntimeGrants). Everything is in `spec`: the agent
//! is its only writer, so a status subresource would buy nothing but a
//! second write.

// Every `printcolumn(...)` repeats `type_ = ...`, which clippy's
// duplicated_attributes lint mistakes for a duplicated attribute.
#![allow(clippy::duplicated_attributes)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::binding::Binding;

/// Most problems kept on the object (the loader may find more).
pub const MAX_PENDING_PROBLEMS: usize = 100;

/// The pending grants file of one agent. `metadata.name` is the agent's
/// Lease name (`berth.dev/published-by` on its RuntimeGrants).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "PendingGrantsFile",
    plural = "pendinggrantsfiles",
    singular = "pendinggrantsfile",
    derive = "PartialEq",
    derive = "Default",
    shortname = "pgf",
    category = "berth",
    doc = "The berth agent's grants file on disk when it differs from the one loaded: validated, not applied (it takes effect on the next agent restart). Written only by the agent; plan it with `berth plan-grants --pending`.",
    printcolumn(name = "Verdict", type_ = "string", json_path = ".spec.verdict"),
    printcolumn(
        name = "Sha256",
        type_ = "string",
        json_path = ".spec.sha256",
        priority = 1
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PendingGrantsFileSpec {
    /// The agent's verdict on the file on disk.
    pub verdict: PendingVerdict,
    /// sha256 of the pending content, when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = "^[a-f0-9]{64}$"))]
    pub sha256: Option<String>,
    /// sha256 of the file the agent loaded (and runs with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = "^[a-f0-9]{64}$"))]
    pub loaded_sha256: Option<String>,
    /// When the agent first saw this content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<Time>,
    /// The pending bindings (`Valid` only), in file order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub bindings: Vec<Binding>,
    /// Why the loader refuses the file (`Invalid` or `Unreadable`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub problems: Vec<PendingProblem>,
}

/// What the loader says of the file on disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PendingVerdict {
    /// It loads: a restart would apply these bindings.
    #[default]
    Valid,
    /// Its content breaks a rule: a restart would fail.
    Invalid,
    /// It breaks a file-safety rule or cannot be read: a restart would fail.
    Unreadable,
}

/// One loader problem.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingProblem {
    /// The rule id (`docs/grants-file.md`).
    #[schemars(length(max = 64))]
    pub rule: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    #[schemars(length(max = 2048))]
    pub message: String,
}
