//! A Runtime's status: what the agent observed and decided for it, written
//! only by the agent (docs/architecture.md §6).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::LastApplied;
use crate::binding::Identity;

/// What the agent observed and decided for a Runtime.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeStatus {
    /// The spec generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The identity grants were matched against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentityStatus>,
    /// The requested profile and the grant decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileStatus>,
    /// Rollout progress of the Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutStatus>,
    /// Image upgrade tracking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<UpgradeStatus>,
    /// Standard conditions; see `berth_shared::api::condition_types`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// One-time Jobs the agent has started, by `jobs[]` entry: a Job that
    /// ran for the same template is never created again (after a TTL
    /// cleanup, a manual delete or a resume); a changed template runs once
    /// more.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(length(max = 64))]
    pub jobs: Vec<JobRunStatus>,
    /// What the agent last applied of the parts of the workloads the spec
    /// controls: what a held Runtime's workloads are kept at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied: Option<LastApplied>,
    /// What is not the Runtime's own and yet reaches or runs as its pods
    /// (the `Exposed` condition's objects, the first
    /// [`MAX_EXPOSURE_REFS`]): a foreign NetworkPolicy admitting more, a
    /// Service or EndpointSlice selecting or listing the pods, an orphan
    /// with the Runtime's labels on a granted class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub exposure: Vec<ExposureRef>,
}

/// The most objects `status.exposure` names (the `Exposed` condition's
/// message counts the rest).
pub const MAX_EXPOSURE_REFS: usize = 16;

/// One object in `status.exposure`.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ExposureRef {
    /// Its kind (`NetworkPolicy`, `Service`, `EndpointSlice`,
    /// `ReplicaSet`, `Pod`, …).
    pub kind: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Why: the `Exposed` reason it gives (`ForeignNetworkPolicy`,
    /// `ForeignService`, `ForeignEndpointSlice`, `Orphaned`).
    pub reason: String,
}

/// A one-time Job the agent created.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobRunStatus {
    /// The `jobs[]` entry name.
    pub name: String,
    /// The Job object's name.
    pub job: String,
    /// Hash of the rendered Job it was created from.
    pub template_hash: String,
    /// The uid of the Job berth created for it: only that Job is the
    /// entry's run (one planted at the name has another uid). Absent in
    /// records written before uids were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

/// The identity of a Runtime.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdentityStatus {
    /// From the Namespace label `berth.dev/project`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// From the Namespace label `berth.dev/environment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// From `spec.application`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<String>,
    /// From `spec.service`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
}

impl From<&Identity> for IdentityStatus {
    fn from(identity: &Identity) -> Self {
        IdentityStatus {
            project: Some(identity.project.clone()),
            environment: Some(identity.environment.clone()),
            application: Some(identity.application.clone()),
            service: Some(identity.service.clone()),
        }
    }
}

/// The requested profile and what was decided for it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfileStatus {
    /// The requested alias (`spec.runtimeProfile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// The RuntimeClass of the matching binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// The handler the binding expects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler: Option<String>,
    /// The decision.
    pub state: ProfileState,
}

/// The grant decision states (docs/architecture.md §5, step 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ProfileState {
    #[default]
    NotRequested,
    Granted,
    NotGranted,
    Revoked,
    ClassMissing,
    HandlerMismatch,
    ClassUnsupported,
    ClassDeleting,
}

impl ProfileState {
    /// The serialized name, also used in printer columns and the console.
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileState::NotRequested => "NotRequested",
            ProfileState::Granted => "Granted",
            ProfileState::NotGranted => "NotGranted",
            ProfileState::Revoked => "Revoked",
            ProfileState::ClassMissing => "ClassMissing",
            ProfileState::HandlerMismatch => "HandlerMismatch",
            ProfileState::ClassUnsupported => "ClassUnsupported",
            ProfileState::ClassDeleting => "ClassDeleting",
        }
    }
}

impl std::fmt::Display for ProfileState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Rollout progress, summarised from the Deployment and its ReplicaSets.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    /// The Deployment revision (`deployment.kubernetes.io/revision`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// Replicas wanted.
    #[serde(default)]
    pub desired: i32,
    /// Replicas on the current pod template.
    #[serde(default)]
    pub updated: i32,
    /// Replicas ready.
    #[serde(default)]
    pub ready: i32,
    /// Replicas available.
    #[serde(default)]
    pub available: i32,
    /// Replicas unavailable.
    #[serde(default)]
    pub unavailable: i32,
    /// Summary phase.
    #[serde(default)]
    pub phase: RolloutPhase,
}

/// Summary of where a rollout is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum RolloutPhase {
    #[default]
    Pending,
    Progressing,
    Complete,
    Failed,
    Suspended,
    Blocked,
    // Rolled out, but the Runtime is not Ready (a dependency not owned, a
    // conflict, no replica available, …; the Ready condition says why):
    // the phase never says Complete then. (A plain comment: a doc comment
    // on one variant would turn the CRD's enum into a oneOf.)
    Degraded,
}

impl RolloutPhase {
    /// The serialized name.
    pub fn as_str(self) -> &'static str {
        match self {
            RolloutPhase::Pending => "Pending",
            RolloutPhase::Progressing => "Progressing",
            RolloutPhase::Complete => "Complete",
            RolloutPhase::Failed => "Failed",
            RolloutPhase::Suspended => "Suspended",
            RolloutPhase::Blocked => "Blocked",
            RolloutPhase::Degraded => "Degraded",
        }
    }
}

/// Image upgrade tracking.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeStatus {
    /// The image the spec asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_image: Option<String>,
    /// The image most replicas run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_image: Option<String>,
    /// The last image a rollout completed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_image: Option<String>,
}
