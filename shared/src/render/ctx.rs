//! The inputs every per-kind render function shares ([`Ctx`]): made once
//! by [`super::render`] and handed to each, which reach nothing else of
//! the renderer's.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::labels::{self, Component};
use super::names::Names;
use crate::api::{API_VERSION, RuntimeSpec};
use crate::decide::{Decision, Identity};

/// The name of the container port every probe, the Service and the
/// NetworkPolicy point at.
pub const HTTP_PORT_NAME: &str = "http";

/// Shared inputs of every per-kind render function.
pub(crate) struct Ctx<'a> {
    pub spec: &'a RuntimeSpec,
    pub name: &'a str,
    pub namespace: &'a str,
    pub uid: &'a str,
    pub identity: &'a Identity,
    pub decision: &'a Decision,
    pub names: Names,
    pub port: i32,
    pub config_data: BTreeMap<String, String>,
    pub config_checksum: String,
}

impl Ctx<'_> {
    pub(crate) fn autoscaling_on(&self) -> bool {
        self.spec.autoscaling.as_ref().is_some_and(|a| a.enabled)
    }

    /// Metadata of a managed object: name, namespace, berth's labels and
    /// the controller owner reference (so garbage collection removes it
    /// with the Runtime and nobody else adopts it).
    pub(crate) fn meta(&self, name: &str, component: Component) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(self.namespace.to_string()),
            labels: Some(labels::common(self.name, self.identity, component)),
            owner_references: Some(vec![OwnerReference {
                api_version: API_VERSION.to_string(),
                kind: "Runtime".to_string(),
                name: self.name.to_string(),
                uid: self.uid.to_string(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        }
    }
}
