//! berth's API: the `Runtime` and `RuntimeGrant` custom resources (group
//! `berth.dev`, version `v1alpha1`), their status types, stable condition
//! types and reasons, and the CRDs generated from them.
//!
//! The CRDs are generated from these types rather than written by hand, so
//! the schema the apiserver enforces is the one the agent deserializes. The
//! committed copies in `assets/crds/` are checked against the generated
//! output by a unit test (`BERTH_UPDATE_GOLDEN=1` regenerates them).

mod attestation;
pub mod condition;
mod conditions;
mod grant;
mod last_applied;
pub mod meta;
mod pending;
pub mod pod_annotations;
mod runtime;
mod runtime_jobs;
mod runtime_status;
pub(crate) mod schema;
pub mod selector_messages;
pub mod selectors;

#[cfg(test)]
pub(crate) mod tests;

/// The schema's patterns and limits, at the bottom of the crate so the
/// binding types can carry them too (`crate::patterns`).
pub use crate::patterns;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

pub use attestation::{
    AttestationState, HandlerAttestation, MAX_ATTESTATION_MESSAGE, MAX_ATTESTED_NODES,
    NodeAttestation, attestation_summary,
};
pub use conditions::{condition_types, grant_condition_types, reasons};
pub use grant::{
    GrantSource, NodeCoverage, ObjectRef, RuntimeGrant, RuntimeGrantSpec, RuntimeGrantStatus,
    WorkloadRef, coverage_summary,
};
pub use last_applied::{LastApplied, LastAppliedParts};
pub use pending::{
    MAX_PENDING_PROBLEMS, PendingGrantsFile, PendingGrantsFileSpec, PendingProblem, PendingVerdict,
};
pub use runtime::{
    AutoscalingSpec, ConfigSpec, DEFAULT_ACTIVE_DEADLINE_SECONDS, DEFAULT_BACKOFF_LIMIT,
    DEFAULT_CPU_UTILIZATION, DEFAULT_DRAIN_SECONDS, DEFAULT_MAX_REPLICAS, DEFAULT_MIN_REPLICAS,
    DEFAULT_PORT, DEFAULT_REPLICAS, ExposeSpec, ExposeType, GRACE_MARGIN_SECONDS, ImageSpec,
    IngressPeer, NetworkPolicySpec, PodMetadataSpec, ResourceAmounts, ResourcesSpec, Runtime,
    RuntimeSpec, SchedulingSpec,
};
pub use runtime_jobs::{ConcurrencyPolicy, JobSpec, ScheduleSpec};
pub use runtime_status::{
    ExposureRef, IdentityStatus, JobRunStatus, MAX_EXPOSURE_REFS, ProfileState, ProfileStatus,
    RolloutPhase, RolloutStatus, RuntimeStatus, UpgradeStatus,
};

/// The API group of every berth resource.
pub const GROUP: &str = "berth.dev";
/// The served and stored version.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of berth resources.
pub const API_VERSION: &str = "berth.dev/v1alpha1";

/// Failure to turn the CRDs into YAML.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// yaml_serde refused a CRD (would be a bug in the types).
    #[error("serializing CRD {name} to YAML: {source}")]
    Yaml {
        /// The CRD's name.
        name: String,
        /// The serializer's error.
        #[source]
        source: yaml_serde::Error,
    },
}

/// Every CRD berth installs, in a stable order (Runtime, RuntimeGrant,
/// PendingGrantsFile).
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        Runtime::crd(),
        RuntimeGrant::crd(),
        PendingGrantsFile::crd(),
    ]
}

/// One CRD as YAML (a single document, no `---`).
pub fn crd_yaml(crd: &CustomResourceDefinition) -> Result<String, CrdError> {
    yaml_serde::to_string(crd).map_err(|source| CrdError::Yaml {
        name: crd.metadata.name.clone().unwrap_or_default(),
        source,
    })
}

/// The committed file name of a CRD under `assets/crds/`, e.g.
/// `runtimes.berth.dev.yaml`.
pub fn crd_file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or("unnamed"))
}

/// Every CRD as `(file name, YAML)`, the form committed under `assets/crds/`.
pub fn crd_files() -> Result<Vec<(String, String)>, CrdError> {
    crds()
        .iter()
        .map(|crd| Ok((crd_file_name(crd), crd_yaml(crd)?)))
        .collect()
}

/// Every CRD as one multi-document YAML stream (what `berth-agent crds`
/// prints), each document starting with `---`.
pub fn crds_yaml() -> Result<String, CrdError> {
    let mut out = String::new();
    for (_, yaml) in crd_files()? {
        out.push_str("---\n");
        out.push_str(&yaml);
    }
    Ok(out)
}
