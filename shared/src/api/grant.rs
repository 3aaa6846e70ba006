//! The `RuntimeGrant` custom resource: a published mirror of one binding of
//! the loaded grants file (docs/architecture.md §4). Cluster-scoped and written only by the
//! agent, so the console and kubectl can see grants without the file.

// Every `printcolumn(...)` repeats `type_ = ...`, which clippy's
// duplicated_attributes lint mistakes for a duplicated attribute.
#![allow(clippy::duplicated_attributes)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::attestation::HandlerAttestation;
use super::patterns;
use crate::binding::{Binding, Identity};

/// One binding of the grants file. `metadata.name` is the binding name (the
/// alias Runtimes select with `spec.runtimeProfile`).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "RuntimeGrant",
    plural = "runtimegrants",
    singular = "runtimegrant",
    status = "RuntimeGrantStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "rtg",
    category = "berth",
    doc = "A grant of one RuntimeClass to one service, mirrored by the berth agent from its grants file. Read-only for everyone but the agent.",
    printcolumn(name = "Project", type_ = "string", json_path = ".spec.project"),
    printcolumn(
        name = "Environment",
        type_ = "string",
        json_path = ".spec.environment"
    ),
    printcolumn(
        name = "Application",
        type_ = "string",
        json_path = ".spec.application"
    ),
    printcolumn(name = "Service", type_ = "string", json_path = ".spec.service"),
    printcolumn(name = "Class", type_ = "string", json_path = ".spec.runtimeClass"),
    printcolumn(name = "Handler", type_ = "string", json_path = ".spec.handler"),
    printcolumn(
        name = "Class-Present",
        type_ = "boolean",
        json_path = ".status.classPresent"
    ),
    printcolumn(name = "Nodes", type_ = "string", json_path = ".status.nodes.summary"),
    printcolumn(
        name = "Attested",
        type_ = "string",
        json_path = ".status.attestation.summary"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeGrantSpec {
    /// The one identity granted.
    #[serde(flatten)]
    pub identity: Identity,
    /// The RuntimeClass granted.
    #[schemars(regex(pattern = patterns::DNS_SUBDOMAIN), length(min = 1, max = 253))]
    pub runtime_class: String,
    /// The handler the RuntimeClass must name.
    #[schemars(regex(pattern = patterns::DNS_LABEL), length(min = 1, max = 63))]
    pub handler: String,
}

impl RuntimeGrantSpec {
    /// The spec publishing `binding` (its name becomes the object's name).
    pub fn of(binding: &Binding) -> Self {
        RuntimeGrantSpec {
            identity: binding.identity.clone(),
            runtime_class: binding.runtime_class.clone(),
            handler: binding.handler.clone(),
        }
    }

    /// The binding a grant named `name` with this spec mirrors.
    pub fn binding(&self, name: &str) -> Binding {
        Binding {
            name: name.to_string(),
            identity: self.identity.clone(),
            runtime_class: self.runtime_class.clone(),
            handler: self.handler.clone(),
        }
    }
}

/// What the agent observed about a grant.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeGrantStatus {
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Whether the RuntimeClass exists.
    #[serde(default)]
    pub class_present: bool,
    /// The handler the RuntimeClass names, when it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_handler: Option<String>,
    /// Whether the RuntimeClass names the handler the binding expects.
    #[serde(default)]
    pub handler_matches: bool,
    /// Whether the RuntimeClass sets `overhead` (unsupported: it changes
    /// the pods' resource accounting behind the Runtime's back).
    #[serde(default)]
    pub class_has_overhead: bool,
    /// Whether the RuntimeClass sets `scheduling` (unsupported: admission
    /// would merge node selectors and tolerations into berth's pods).
    #[serde(default)]
    pub class_has_scheduling: bool,
    /// Whether the RuntimeClass is being deleted.
    #[serde(default)]
    pub class_deleting: bool,
    /// Nodes reporting the handler in `status.runtimeHandlers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<NodeCoverage>,
    /// What the agent's canaries saw of the handler on each node that
    /// reports it (verified, failing, unverified).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attestation: Option<HandlerAttestation>,
    /// Runtimes that select this grant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtimes: Vec<ObjectRef>,
    /// Workload controllers (Deployments, ReplicaSets, StatefulSets,
    /// DaemonSets, Jobs, CronJobs) whose pod template still names the class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retained: Vec<WorkloadRef>,
    /// The grants file this grant was loaded from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<GrantSource>,
    /// Standard conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

/// How many nodes report a handler.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeCoverage {
    /// Nodes listing the handler in `status.runtimeHandlers`.
    pub with_handler: i32,
    /// All nodes considered.
    pub total: i32,
    /// Of `total`, nodes that report no handler list at all (presence
    /// unknown; older kubelets or runtimes).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unknown: i32,
    /// `with_handler/total` (and how many are unknown), for the printer
    /// column.
    pub summary: String,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

impl NodeCoverage {
    /// Builds the coverage with its summary string.
    pub fn new(with_handler: i32, total: i32, unknown: i32) -> Self {
        let count = |n: i32| usize::try_from(n).unwrap_or(0);
        Self {
            with_handler,
            total,
            unknown,
            summary: coverage_summary(count(with_handler), count(total), count(unknown)),
        }
    }
}

/// `n/m`, saying how many of the m are unknown: `0/3 (3 unknown)` (the
/// RuntimeGrant printer column, and the console's coverage columns).
pub fn coverage_summary(with_handler: usize, total: usize, unknown: usize) -> String {
    if unknown == 0 {
        format!("{with_handler}/{total}")
    } else {
        format!("{with_handler}/{total} ({unknown} unknown)")
    }
}

/// A namespaced object reference.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// A workload controller reference.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRef {
    /// Kind, e.g. `ReplicaSet`.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// Where the grant came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrantSource {
    /// Hex sha256 of the grants file as loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = "^[a-f0-9]{64}$"))]
    pub sha256: Option<String>,
    /// When the agent loaded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_at: Option<Time>,
}
