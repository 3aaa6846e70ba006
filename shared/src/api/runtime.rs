//! The `Runtime` custom resource: one service's workload, written by
//! application teams (docs/architecture.md §4).
//!
//! Everything a team may set is here and nothing else: there is no free-form
//! PodSpec, so the production contract rendered by [`crate::render`] cannot
//! be bypassed from the spec.

// Every `printcolumn(...)` repeats `type_ = ...`, which clippy's
// duplicated_attributes lint mistakes for a duplicated attribute.
#![allow(clippy::duplicated_attributes)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::patterns;
use super::runtime_jobs::{JobSpec, ScheduleSpec};
use super::runtime_status::RuntimeStatus;
use super::schema;

/// Replicas when `spec.replicas` is unset: two, so a single node drain or
/// pod restart never takes the service down.
pub const DEFAULT_REPLICAS: i32 = 2;
/// The `http` container port when `spec.expose` is unset: 9000, the
/// production contract's HTTP target port.
pub const DEFAULT_PORT: i32 = 9000;
/// Drain timeout when `spec.shutdownDrainTimeoutSeconds` is unset.
pub const DEFAULT_DRAIN_SECONDS: i32 = 30;
/// Seconds added to the drain timeout for the termination grace period: the
/// drain must finish before the kubelet sends SIGKILL, with room for the
/// process to exit after draining.
pub const GRACE_MARGIN_SECONDS: i64 = 6;
/// Autoscaling defaults.
pub const DEFAULT_MIN_REPLICAS: i32 = 2;
/// Upper bound of replicas when autoscaling and `maxReplicas` is unset.
pub const DEFAULT_MAX_REPLICAS: i32 = 10;
/// CPU utilisation target when autoscaling and the target is unset.
pub const DEFAULT_CPU_UTILIZATION: i32 = 80;
/// Job `backoffLimit` when unset: a one-time job is retried a little, not forever.
pub const DEFAULT_BACKOFF_LIMIT: i32 = 2;
/// Job `activeDeadlineSeconds` when unset: one hour.
pub const DEFAULT_ACTIVE_DEADLINE_SECONDS: i64 = 3600;

/// The desired state of one service's workload.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "Runtime",
    plural = "runtimes",
    singular = "runtime",
    namespaced,
    status = "RuntimeStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "rt",
    category = "berth",
    // Field selectors on the identity's spec half let the admission webhook
    // list only the Runtimes that could claim the same identity.
    selectable = ".spec.application",
    selectable = ".spec.service",
    doc = "One service's workload, run under berth's production contract. Project and environment come from the Namespace labels berth.dev/project and berth.dev/environment.",
    printcolumn(
        name = "Application",
        type_ = "string",
        json_path = ".spec.application"
    ),
    printcolumn(name = "Service", type_ = "string", json_path = ".spec.service"),
    printcolumn(name = "Profile", type_ = "string", json_path = ".spec.runtimeProfile"),
    printcolumn(name = "Grant", type_ = "string", json_path = ".status.profile.state"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.rollout.ready"),
    printcolumn(
        name = "Desired",
        type_ = "integer",
        json_path = ".status.rollout.desired"
    ),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.rollout.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!(has(self.autoscaling) && has(self.autoscaling.enabled) && self.autoscaling.enabled) || (has(self.resources) && has(self.resources.requests) && has(self.resources.requests.cpu))",
        "message": "autoscaling.enabled requires resources.requests.cpu: CPU utilisation scaling cannot work without a CPU request",
        "fieldPath": ".autoscaling",
        "reason": "FieldValueRequired"
    }
]))]
pub struct RuntimeSpec {
    /// The application this service belongs to. Immutable: it is half of the
    /// identity grants are matched against.
    #[schemars(regex(pattern = patterns::SCOPE_NAME), length(min = 1, max = 40))]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "application is immutable"}]))]
    pub application: String,

    /// The service name within the application. Immutable, like application.
    #[schemars(regex(pattern = patterns::SCOPE_NAME), length(min = 1, max = 40))]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "service is immutable"}]))]
    pub service: String,

    /// The container image: a repository and exactly one of tag or digest.
    pub image: ImageSpec,

    /// Desired replicas (default 2). Ignored while autoscaling is enabled:
    /// the HorizontalPodAutoscaler owns the count then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub replicas: Option<i32>,

    /// The grant alias (a binding name in the operator's grants file) whose
    /// RuntimeClass this service should run with. Unset runs with the
    /// cluster's default runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = patterns::DNS_LABEL), length(min = 1, max = 63))]
    pub runtime_profile: Option<String>,

    /// Scale the service to zero and suspend its schedules; no new one-time
    /// jobs are started.
    #[serde(default)]
    pub suspend: bool,

    /// Configuration rendered into the Runtime's ConfigMap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ConfigSpec>,

    /// CPU, memory and ephemeral-storage requests and limits of the
    /// container; what is left out gets the contract's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesSpec>,

    /// How the service's `http` port is exposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expose: Option<ExposeSpec>,

    /// One-time jobs, each run once as a Job with the same image and contract.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = patterns::MAX_JOBS))]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self.all(j, self.exists_one(o, o.name == j.name))", "message": "job names must be unique"}]))]
    pub jobs: Vec<JobSpec>,

    /// Scheduled jobs, each run as a CronJob with the same image and contract.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = patterns::MAX_JOBS))]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self.all(j, self.exists_one(o, o.name == j.name))", "message": "schedule names must be unique"}]))]
    pub schedules: Vec<ScheduleSpec>,

    /// Labels and annotations added to every pod. berth's own labels always
    /// win over these, and keys under `berth.dev/` are reserved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_metadata: Option<PodMetadataSpec>,

    /// Where the pods may run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<SchedulingSpec>,

    /// An ingress-only NetworkPolicy for the service's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<NetworkPolicySpec>,

    /// CPU-based horizontal autoscaling (autoscaling/v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<AutoscalingSpec>,

    /// Seconds the service needs to drain after SIGTERM (default 30). The
    /// termination grace period is this plus 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 600))]
    pub shutdown_drain_timeout_seconds: Option<i32>,
}

/// A container image reference split into its parts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "has(self.tag) != has(self.digest)", "message": "exactly one of image.tag or image.digest must be set"}]))]
pub struct ImageSpec {
    /// Repository, optionally with registry host and port, e.g.
    /// `registry.example.com/team/app`.
    #[schemars(regex(pattern = patterns::IMAGE_REPOSITORY), length(min = 1, max = 255))]
    pub repository: String,
    /// Image tag. Exactly one of tag and digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = patterns::IMAGE_TAG), length(min = 1, max = 128))]
    pub tag: Option<String>,
    /// Image digest (`sha256:…`). Exactly one of tag and digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = patterns::IMAGE_DIGEST), length(min = 71, max = 71))]
    pub digest: Option<String>,
}

impl RuntimeSpec {
    /// The replicas the service should run with: none while suspended, at
    /// least `minReplicas` while autoscaling, else `replicas`.
    pub fn wanted_replicas(&self) -> i32 {
        if self.suspend {
            0
        } else if let Some(a) = self.autoscaling.as_ref().filter(|a| a.enabled) {
            a.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS)
        } else {
            self.replicas.unwrap_or(DEFAULT_REPLICAS)
        }
    }
}

impl ImageSpec {
    /// The container's `imagePullPolicy`: `IfNotPresent` for a digest (the
    /// content cannot change), `Always` for a tag (a tag can move, and a
    /// cached private image must not be usable without credentials).
    pub fn pull_policy(&self) -> &'static str {
        if self.digest.is_some() {
            "IfNotPresent"
        } else {
            "Always"
        }
    }

    /// The full image reference, `repository:tag` or `repository@digest`.
    /// A digest wins if both are somehow set (the CEL rule forbids that).
    pub fn reference(&self) -> String {
        match (&self.digest, &self.tag) {
            (Some(digest), _) => format!("{}@{}", self.repository, digest),
            (None, Some(tag)) => format!("{}:{}", self.repository, tag),
            (None, None) => self.repository.clone(),
        }
    }
}

/// Configuration data for the service.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigSpec {
    /// Environment variables (name → value).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::env_map")]
    pub env: BTreeMap<String, String>,
}

/// Requests and limits of the one container.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesSpec {
    /// Resources reserved for the container; a CPU request is required for
    /// autoscaling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ResourceAmounts>,
    /// Upper bounds for the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ResourceAmounts>,
}

/// CPU, memory and ephemeral-storage amounts. What is left out gets the
/// contract's default (`crate::render::resources`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceAmounts {
    /// CPU, e.g. `250m` or `1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub cpu: Option<Quantity>,
    /// Memory, e.g. `256Mi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub memory: Option<Quantity>,
    /// Local ephemeral storage (the writable `/tmp`, logs), e.g. `1Gi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub ephemeral_storage: Option<Quantity>,
}

/// How the Service exposes the `http` port.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExposeSpec {
    /// The container's `http` port, also the Service port (default 9000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<i32>,
    /// The Service type (default ClusterIP).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<ExposeType>,
}

/// Service types a Runtime may use. ExternalName is left out on purpose: it
/// exposes nothing of the Runtime's pods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ExposeType {
    #[default]
    ClusterIP,
    NodePort,
    LoadBalancer,
}

impl ExposeType {
    /// The Service `spec.type` string.
    pub fn as_str(self) -> &'static str {
        match self {
            ExposeType::ClusterIP => "ClusterIP",
            ExposeType::NodePort => "NodePort",
            ExposeType::LoadBalancer => "LoadBalancer",
        }
    }
}

/// Extra pod labels and annotations.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodMetadataSpec {
    /// Extra pod labels. Keys the controllers own (controller-uid,
    /// job-name, pod-template-hash, app.kubernetes.io/managed-by,
    /// batch.kubernetes.io/*) are refused.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::pod_label_map")]
    pub labels: BTreeMap<String, String>,
    /// Extra pod annotations: keys outside the Kubernetes domains
    /// (`*.kubernetes.io/`, `*.k8s.io/`) and plain names without a dot.
    /// Annotations the container runtime reads (`io.katacontainers.*`,
    /// `dev.gvisor.*`, AppArmor, seccomp, CDI) are refused.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::pod_annotation_map")]
    pub annotations: BTreeMap<String, String>,
}

/// Pod placement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingSpec {
    /// Node labels the pods require.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::node_selector_map")]
    pub node_selector: BTreeMap<String, String>,
    /// Taints the pods tolerate. Each names its taint's key: a toleration
    /// without one tolerates every taint (nodes set apart for others).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self.all(t, has(t.key) && t.key != '')", "message": super::selector_messages::KEYLESS_TOLERATION, "reason": "FieldValueInvalid"}]))]
    pub tolerations: Vec<Toleration>,
    /// Node and pod (anti-)affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
}

/// The ingress-only NetworkPolicy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicySpec {
    /// Whether berth manages a NetworkPolicy for the pods. Turning it off
    /// deletes only berth's own policy.
    #[serde(default)]
    pub enabled: bool,
    /// Who may connect to the `http` port. Nothing else is allowed in: an
    /// enabled policy with no peers admits no traffic at all (it never
    /// fails open).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = patterns::MAX_INGRESS_PEERS))]
    pub ingress: Vec<IngressPeer>,
}

/// One allowed source of traffic: pods matching `podLabels` in namespaces
/// matching `namespaceLabels`. Only `podLabels` means pods of the
/// Runtime's own namespace only (never other namespaces); only
/// `namespaceLabels` means every pod in those namespaces. An empty map in
/// either is refused: it would match every namespace or every pod.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "has(self.namespaceLabels) || has(self.podLabels)", "message": "an ingress peer needs namespaceLabels or podLabels"}]))]
pub struct IngressPeer {
    /// Labels of the namespaces traffic may come from (use
    /// `kubernetes.io/metadata.name` to name one namespace). Never empty:
    /// an empty selector would admit every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::namespace_selector_map")]
    pub namespace_labels: Option<BTreeMap<String, String>>,
    /// Labels of the pods traffic may come from. Never empty: to admit
    /// every pod of a namespace, name it in `namespaceLabels` and leave
    /// this out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::pod_selector_map")]
    pub pod_labels: Option<BTreeMap<String, String>>,
}

/// CPU-based autoscaling. The CEL rule repeats the defaults
/// (`DEFAULT_MIN_REPLICAS`, `DEFAULT_MAX_REPLICAS`) so that setting only one
/// bound is still checked against the other's effective value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "(has(self.maxReplicas) ? self.maxReplicas : 10) >= (has(self.minReplicas) ? self.minReplicas : 2)", "message": "autoscaling.maxReplicas must be at least minReplicas", "fieldPath": ".maxReplicas"}]))]
pub struct AutoscalingSpec {
    /// Whether berth manages a HorizontalPodAutoscaler. While on, it owns
    /// the replica count.
    #[serde(default)]
    pub enabled: bool,
    /// Lower bound (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub min_replicas: Option<i32>,
    /// Upper bound (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub max_replicas: Option<i32>,
    /// Average CPU utilisation target in percent of the request (default 80).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    #[serde(rename = "targetCPUUtilizationPercentage")]
    pub target_cpu_utilization_percentage: Option<i32>,
}
