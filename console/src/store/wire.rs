//! Pods as the console reads them off the wire: a LIST page or a watch
//! event is parsed straight into [`WirePod`], the few fields
//! [`super::compact`] keeps of a Pod, instead of into a whole k8s-openapi
//! `Pod`. serde skips every other field without allocating it: at scale S
//! the 20,000 Pods of a first Handlers or Retained frame were mostly
//! parsed into strings, maps and `managedFields` entries that compaction
//! dropped at once (issue 32's profile: 38 % of the frame's CPU in the
//! parse). A [`WirePod`] becomes the reduced `Pod` it stands for
//! ([`From`]) before [`super::ingest::admit`], which strips and sanitizes
//! it as any other object: nothing read here reaches a view unsanitized.
//!
//! What is read, and why: the metadata [`super::meta::SlimMeta`] keeps
//! (and the `resourceVersion` the watcher resumes from), `runtimeClassName`,
//! `nodeName`, the first container's name and image, `phase` and the
//! conditions' types and statuses. Details fetches the whole Pod
//! (the watch layer's `fetch` reads the k8s-openapi type).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{Container, Pod, PodCondition, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::Resource;
use kube::api::ObjectMeta;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};

use super::slim::SlimContainer;

/// A Pod as parsed from the wire (see the module's comment).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct WirePod {
    /// The metadata read ([`WireMeta`]), as kube's watcher needs it.
    #[serde(default, deserialize_with = "wire_meta")]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: Option<WireSpec>,
    #[serde(default)]
    pub status: Option<WireStatus>,
}

/// The metadata fields read; `managedFields`, `finalizers` and the rest
/// are skipped unparsed.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct WireMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    creation_timestamp: Option<Time>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
    owner_references: Option<Vec<OwnerReference>>,
}

fn wire_meta<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    let m = Option::<WireMeta>::deserialize(d)?.unwrap_or_default();
    Ok(ObjectMeta {
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resource_version: m.resource_version,
        creation_timestamp: m.creation_timestamp,
        labels: m.labels,
        annotations: m.annotations,
        owner_references: m.owner_references,
        ..Default::default()
    })
}

/// What is read of `spec`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireSpec {
    pub runtime_class_name: Option<String>,
    pub node_name: Option<String>,
    /// The first container only: the others are skipped unparsed.
    #[serde(rename = "containers", deserialize_with = "first_container")]
    pub container: Option<SlimContainer>,
}

/// What is read of `status`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct WireStatus {
    pub phase: Option<String>,
    pub conditions: Option<Vec<WireCondition>>,
}

/// A condition's type and status.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct WireCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
}

/// The first element of a sequence (or of `null`), the rest skipped.
fn first_container<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SlimContainer>, D::Error> {
    struct First;
    impl<'de> Visitor<'de> for First {
        type Value = Option<SlimContainer>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of containers")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_seq(First)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let first = seq.next_element::<SlimContainer>()?;
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(first)
        }
    }
    d.deserialize_option(First)
}

impl Resource for WirePod {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        Pod::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        Pod::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        Pod::version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        Pod::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl From<WirePod> for Pod {
    /// The reduced Pod that was read (moved, not copied).
    fn from(w: WirePod) -> Self {
        Pod {
            metadata: w.metadata,
            spec: w.spec.map(|s| PodSpec {
                runtime_class_name: s.runtime_class_name,
                node_name: s.node_name,
                containers: s.container.into_iter().map(Container::from).collect(),
                ..Default::default()
            }),
            status: w.status.map(|s| PodStatus {
                phase: s.phase,
                conditions: s.conditions.map(|cs| {
                    cs.into_iter()
                        .map(|c| PodCondition {
                            type_: c.type_,
                            status: c.status,
                            ..Default::default()
                        })
                        .collect()
                }),
                ..Default::default()
            }),
        }
    }
}

#[cfg(test)]
mod tests;
