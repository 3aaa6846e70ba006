//! An object as the apiserver stores it (issue 52, "compare what the
//! apiserver stores").
//!
//! berth compiles against one version of the Kubernetes API types, and the
//! cluster may run a newer one: a field the compiled types do not know
//! (`hostnameOverride` on a 1.37 pod template, when berth compiled against
//! 1.33; it compiles against 1.34, the oldest supported minor, now) is
//! dropped when an object is parsed into them. Compared as typed structs,
//! such a field was an absence, and another party's `hostnameOverride` on a
//! berth Deployment stayed. So what a watch or a read delivers for the
//! kinds the contract governs is kept as the apiserver's own JSON beside
//! its typed form: the typed one for what berth reads (owners, names,
//! replicas, the tenant's part of a held workload), the JSON for the
//! contract's comparison and correction (`berth_shared::contract`), where a
//! field berth does not render is a difference whoever added it and
//! whichever version introduced it.
//!
//! The JSON is kept without `managedFields` and kubectl's last-applied
//! copy (as every cache strips them from the typed form): nothing compares
//! them and they are most of a small object.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// kubectl's copy of the last applied configuration (stripped, see `reduce`).
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// One object: its typed form and the JSON the apiserver sent.
#[derive(Clone, Debug)]
pub struct Stored<K> {
    /// What berth reads.
    pub typed: K,
    /// The object exactly as the apiserver stores it (less `managedFields`
    /// and the last-applied copy): what the contract compares.
    pub json: Value,
}

impl<K: Serialize + DeserializeOwned> Stored<K> {
    /// The object from its JSON (stripped as a watch strips it).
    pub fn from_json(mut json: Value) -> Result<Self, serde_json::Error> {
        strip(&mut json);
        let typed = K::deserialize(&json)?;
        Ok(Self { typed, json })
    }

    /// An object berth made itself (tests): its JSON is its typed form's.
    #[cfg(test)]
    pub fn of(typed: K) -> Self {
        let mut json = serde_json::to_value(&typed).unwrap_or(Value::Null);
        strip(&mut json);
        Self { typed, json }
    }
}

/// Drops what no comparison reads: `managedFields` and the last-applied copy.
fn strip(json: &mut Value) {
    let Some(meta) = json.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    meta.remove("managedFields");
    if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        annotations.remove(LAST_APPLIED);
        if annotations.is_empty() {
            meta.remove("annotations");
        }
    }
}

impl<'de, K: Serialize + DeserializeOwned> Deserialize<'de> for Stored<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let json = Value::deserialize(deserializer)?;
        Self::from_json(json).map_err(D::Error::custom)
    }
}

/// Sent as it was received: a replace built from it keeps every field.
impl<K> Serialize for Stored<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json.serialize(serializer)
    }
}

/// The kind's own resource (the same URL, kind and scope): a watch or a
/// read of `Api<Stored<K>>` is one of `Api<K>`.
impl<K: Resource> Resource for Stored<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }
    fn api_version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::api_version(dt)
    }
    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }
    /// The typed metadata (the JSON's is the same as received; reductions
    /// change only the typed form).
    fn meta(&self) -> &ObjectMeta {
        self.typed.meta()
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.typed.meta_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use serde_json::json;

    /// A field the compiled types do not know is kept in the JSON (and
    /// sent back as it came), while the typed form has what it knows:
    /// `schedulingGroup`, a 1.36 PodSpec field the `v1_34` types lack.
    #[test]
    fn a_field_newer_than_the_types_is_kept() {
        let wire = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "team",
                "managedFields": [{"manager": "x"}],
                "annotations": {LAST_APPLIED: "{}"}},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"schedulingGroup": {"podGroupName": "evil"},
                    "containers": []}}},
        });
        let stored: Stored<Deployment> = serde_json::from_value(wire).expect("parses");
        assert_eq!(
            stored
                .json
                .pointer("/spec/template/spec/schedulingGroup/podGroupName"),
            Some(&json!("evil"))
        );
        assert_eq!(stored.json.pointer("/metadata/managedFields"), None);
        assert_eq!(stored.json.pointer("/metadata/annotations"), None);
        assert_eq!(stored.typed.metadata.name.as_deref(), Some("web"));
        let typed = serde_json::to_value(&stored.typed).expect("json");
        assert_eq!(typed.pointer("/spec/template/spec/schedulingGroup"), None);
        let sent = serde_json::to_value(&stored).expect("json");
        assert_eq!(sent, stored.json);
    }

    #[test]
    fn it_is_the_kinds_own_resource() {
        assert_eq!(Stored::<Deployment>::kind(&()), "Deployment");
        assert_eq!(Stored::<Deployment>::plural(&()), "deployments");
        assert_eq!(Stored::<Deployment>::api_version(&()), "apps/v1");
    }
}
