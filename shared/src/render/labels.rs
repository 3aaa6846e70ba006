//! Labels, selectors and reserved keys.
//!
//! The selector labels never change for a given Runtime name and component,
//! because a Deployment's selector is immutable; everything else may change
//! and only rolls pods. podMetadata is merged first and berth's labels are
//! written over it, so a team cannot make its pods look like another
//! Runtime's or drop out of the Service.

use std::collections::BTreeMap;

use crate::decide::{ENVIRONMENT_LABEL, Identity, PROJECT_LABEL};

use super::names::label_value;

/// The Runtime a managed object or pod belongs to (label value of its name).
pub const RUNTIME_LABEL: &str = "berth.dev/runtime";
/// Application of the Runtime.
pub const APPLICATION_LABEL: &str = "berth.dev/application";
/// Service of the Runtime.
pub const SERVICE_LABEL: &str = "berth.dev/service";
/// `jobs[]` / `schedules[]` entry name on Job and CronJob pods.
pub const JOB_LABEL: &str = "berth.dev/job";
/// Pod template annotation naming the granted profile.
pub const RUNTIME_PROFILE_ANNOTATION: &str = "berth.dev/runtime-profile";
/// Pod template annotation holding the ConfigMap data checksum.
pub const CONFIG_CHECKSUM_ANNOTATION: &str = "berth.dev/config-checksum";
/// Prefix of every berth-owned label and annotation. Keys under it are
/// dropped from podMetadata: a team must not be able to forge, say, the
/// runtime-profile annotation the console reads.
pub const RESERVED_PREFIX: &str = "berth.dev/";

pub use crate::api::meta::MANAGED_BY;

/// What a pod does; part of the selector so Job pods are never selected by
/// the Service, PDB or Deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// The long-running Deployment pods.
    Server,
    /// A one-time Job's pods.
    Job,
    /// A CronJob's pods.
    Schedule,
}

impl Component {
    /// The `app.kubernetes.io/component` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Component::Server => "server",
            Component::Job => "job",
            Component::Schedule => "schedule",
        }
    }
}

/// The selector of the server pods (Deployment, Service, PDB, HPA target,
/// topology spread).
pub fn selector(runtime_name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (RUNTIME_LABEL.to_string(), label_value(runtime_name)),
        (
            "app.kubernetes.io/component".to_string(),
            Component::Server.as_str().to_string(),
        ),
    ])
}

/// The selector of every pod of a Runtime: server, Job and CronJob pods
/// (the NetworkPolicy's, so a Runtime that enables one leaves none of its
/// pods open; Job pods have no `http` port, so they admit nothing).
pub fn runtime_pods(runtime_name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(RUNTIME_LABEL.to_string(), label_value(runtime_name))])
}

/// Labels on every managed object and pod of a Runtime.
pub fn common(
    runtime_name: &str,
    identity: &Identity,
    component: Component,
) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "app.kubernetes.io/name".to_string(),
            label_value(&identity.service),
        ),
        (
            "app.kubernetes.io/instance".to_string(),
            label_value(runtime_name),
        ),
        (
            "app.kubernetes.io/part-of".to_string(),
            label_value(&identity.application),
        ),
        (
            crate::api::meta::MANAGED_BY_LABEL.to_string(),
            MANAGED_BY.to_string(),
        ),
        (
            "app.kubernetes.io/component".to_string(),
            component.as_str().to_string(),
        ),
        (RUNTIME_LABEL.to_string(), label_value(runtime_name)),
        (PROJECT_LABEL.to_string(), label_value(&identity.project)),
        (
            ENVIRONMENT_LABEL.to_string(),
            label_value(&identity.environment),
        ),
        (
            APPLICATION_LABEL.to_string(),
            label_value(&identity.application),
        ),
        (SERVICE_LABEL.to_string(), label_value(&identity.service)),
    ])
}

/// Team-supplied keys with berth's reserved keys removed.
pub fn without_reserved(map: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    map.iter()
        .filter(|(k, _)| !k.starts_with(RESERVED_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// `team` overlaid with `owned`: owned keys always win.
pub fn merge_owned_wins(
    team: &BTreeMap<String, String>,
    owned: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut merged = without_reserved(team);
    merged.extend(owned);
    merged
}
