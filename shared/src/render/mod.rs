//! Render (docs/architecture.md §5, step 3): the complete desired set of objects for one
//! Runtime, as pure functions of (Runtime, identity, grant decision).
//!
//! The agent server-side-applies the result, the console diffs it before a
//! retirement, and the golden files pin it down. Nothing here decides
//! *whether* to apply (a blocked Runtime still renders; the agent then
//! leaves its objects alone) — only *what* the objects look like.

mod configmap;
mod cronjob;
mod ctx;
mod deployment;
// Test data (the golden render cases), for tests and the `testkit` feature
// only: never in a shipped binary.
#[cfg(any(test, feature = "testkit"))]
pub mod examples;
mod hpa;
mod job;
pub mod labels;
pub mod names;
mod network_policy;
mod pdb;
pub(crate) mod pod_template;
pub mod protect;
pub mod resources;
mod service;
mod service_account;

#[cfg(test)]
mod job_tests;
#[cfg(test)]
mod tests;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::api::{DEFAULT_PORT, Runtime};
use crate::decide::{Decision, Identity};

pub use configmap::config_checksum;
pub use cronjob::{JOBS_HISTORY_LIMIT, STARTING_DEADLINE_SECONDS};
use ctx::Ctx;
pub use ctx::HTTP_PORT_NAME;
pub use deployment::REVISION_HISTORY_LIMIT;
pub use job::{DEFINITION_HASH_LEN, definition_hash as job_definition_hash};
pub use labels::{CONFIG_CHECKSUM_ANNOTATION, Component, RUNTIME_PROFILE_ANNOTATION};
pub use names::Names;
pub use pod_template::{
    CONTAINER_NAME, LIVE_PATH, READY_PATH, RUN_AS_ID, termination_grace_seconds,
};

/// Why a Runtime could not be rendered: the owner reference needs the
/// fields the apiserver fills in, so a Runtime that was never stored cannot
/// own anything.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// `metadata.name` is missing.
    #[error("the Runtime has no metadata.name")]
    MissingName,
    /// `metadata.namespace` is missing.
    #[error("Runtime {name} has no metadata.namespace")]
    MissingNamespace {
        /// The Runtime's name.
        name: String,
    },
    /// `metadata.uid` is missing (not read from the API).
    #[error("Runtime {name} has no metadata.uid; render only Runtimes read from the API")]
    MissingUid {
        /// The Runtime's name.
        name: String,
    },
    /// A selector would match everything (`crate::api::selectors`): the
    /// CRD refuses these, so only a Runtime stored before that rule gets
    /// here. Nothing is rendered rather than a policy that admits anyone.
    #[error("Runtime {name}: {}", problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    MatchEverything {
        /// The Runtime's name.
        name: String,
        /// Every such selector, naming its field.
        problems: Vec<crate::api::selectors::MatchEverything>,
    },
    /// An object failed to serialize (a bug).
    #[error("serializing rendered {kind}: {message}")]
    Serialize {
        /// Object kind.
        kind: &'static str,
        /// The serializer's message.
        message: String,
    },
}

/// The complete desired set for one Runtime.
#[derive(Clone, Debug, PartialEq)]
pub struct Rendered {
    /// Environment for the containers.
    pub config_map: ConfigMap,
    /// The pods' own identity, without a token.
    pub service_account: ServiceAccount,
    /// In front of the `http` port.
    pub service: Service,
    /// The server pods.
    pub deployment: Deployment,
    /// At most one server pod voluntarily disrupted at a time.
    pub pod_disruption_budget: PodDisruptionBudget,
    /// When `spec.networkPolicy.enabled`.
    pub network_policy: Option<NetworkPolicy>,
    /// When `spec.autoscaling.enabled` and not suspended.
    pub horizontal_pod_autoscaler: Option<HorizontalPodAutoscaler>,
    /// One per `jobs[]` entry; empty while suspended (no new Jobs — the
    /// agent must not delete existing ones because of that).
    pub jobs: Vec<Job>,
    /// One per `schedules[]` entry, suspended while the Runtime is.
    pub cron_jobs: Vec<CronJob>,
}

/// Renders every managed object of `runtime`.
pub fn render(
    runtime: &Runtime,
    identity: &Identity,
    decision: &Decision,
) -> Result<Rendered, RenderError> {
    let name = runtime
        .metadata
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .ok_or(RenderError::MissingName)?;
    let namespace = runtime
        .metadata
        .namespace
        .as_deref()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| RenderError::MissingNamespace {
            name: name.to_string(),
        })?;
    let uid = runtime
        .metadata
        .uid
        .as_deref()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| RenderError::MissingUid {
            name: name.to_string(),
        })?;
    let spec = &runtime.spec;
    let problems = crate::api::selectors::match_everything(spec);
    if !problems.is_empty() {
        return Err(RenderError::MatchEverything {
            name: name.to_string(),
            problems,
        });
    }
    let config_data = spec
        .config
        .as_ref()
        .map(|c| c.env.clone())
        .unwrap_or_default();
    let ctx = Ctx {
        spec,
        name,
        namespace,
        uid,
        identity,
        decision,
        names: Names::for_runtime(name),
        port: spec
            .expose
            .as_ref()
            .and_then(|e| e.port)
            .unwrap_or(DEFAULT_PORT),
        config_checksum: config_checksum(&config_data),
        config_data,
    };
    Ok(Rendered {
        config_map: configmap::render(&ctx),
        service_account: service_account::render(&ctx),
        service: service::render(&ctx),
        deployment: deployment::render(&ctx),
        pod_disruption_budget: pdb::render(&ctx),
        network_policy: network_policy::render(&ctx),
        horizontal_pod_autoscaler: hpa::render(&ctx),
        jobs: if spec.suspend {
            Vec::new()
        } else {
            spec.jobs.iter().map(|j| job::render(&ctx, j)).collect()
        },
        cron_jobs: spec
            .schedules
            .iter()
            .map(|s| cronjob::render(&ctx, s))
            .collect(),
    })
}

fn to_value<T: serde::Serialize>(
    kind: &'static str,
    object: &T,
) -> Result<serde_json::Value, RenderError> {
    serde_json::to_value(object).map_err(|e| RenderError::Serialize {
        kind,
        message: e.to_string(),
    })
}

impl Rendered {
    /// Every object as JSON (with apiVersion and kind), in a stable order:
    /// ConfigMap, ServiceAccount, Service, Deployment, PodDisruptionBudget,
    /// NetworkPolicy, HorizontalPodAutoscaler, Jobs, CronJobs.
    pub fn manifests(&self) -> Result<Vec<serde_json::Value>, RenderError> {
        let mut out = vec![
            to_value("ConfigMap", &self.config_map)?,
            to_value("ServiceAccount", &self.service_account)?,
            to_value("Service", &self.service)?,
            to_value("Deployment", &self.deployment)?,
            to_value("PodDisruptionBudget", &self.pod_disruption_budget)?,
        ];
        if let Some(np) = &self.network_policy {
            out.push(to_value("NetworkPolicy", np)?);
        }
        if let Some(hpa) = &self.horizontal_pod_autoscaler {
            out.push(to_value("HorizontalPodAutoscaler", hpa)?);
        }
        for job in &self.jobs {
            out.push(to_value("Job", job)?);
        }
        for cron in &self.cron_jobs {
            out.push(to_value("CronJob", cron)?);
        }
        Ok(out)
    }

    /// Every object as one multi-document YAML stream.
    pub fn to_yaml(&self) -> Result<String, RenderError> {
        let mut out = String::new();
        for manifest in self.manifests()? {
            out.push_str("---\n");
            let yaml = yaml_serde::to_string(&manifest).map_err(|e| RenderError::Serialize {
                kind: "manifest",
                message: e.to_string(),
            })?;
            out.push_str(&yaml);
        }
        Ok(out)
    }
}
