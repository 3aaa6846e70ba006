//! The key of the agent's own maps over objects (taken names, owner
//! index, compressed bodies, trigger fingerprints, the Deployment pace): a
//! namespace and a name.
//!
//! Not kube's `ObjectRef`, which also carries the object's uid and
//! resourceVersion (four strings, 96 bytes inline, about 200 bytes with
//! its heap), nor a `(String, String)` (48 bytes inline): each of these
//! maps holds an entry per object of its kind, some 2,000 to 12,000 at
//! scale S, where every byte an entry saves is kilobytes to megabytes of
//! the agent's resident memory (issue 32).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::reflector::ObjectRef;

/// Namespace (empty for a cluster-scoped kind) and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    namespace: Box<str>,
    name: Box<str>,
}

impl ObjectKey {
    /// The key of `ns/name`.
    pub fn new(namespace: &str, name: &str) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key of the object with this metadata.
    pub fn of(meta: &ObjectMeta) -> Self {
        Self::new(
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
        )
    }

    /// The namespace (empty for a cluster-scoped kind).
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The reflector store's key for this object.
    pub fn object_ref<K: Resource<DynamicType = ()>>(&self) -> ObjectRef<K> {
        let r = ObjectRef::new(&self.name);
        if self.namespace.is_empty() {
            r
        } else {
            r.within(&self.namespace)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

    #[test]
    fn the_store_key_is_the_objects_own() {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("team".into()),
                name: Some("web".into()),
                uid: Some("u".into()),
                resource_version: Some("7".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let key = ObjectKey::of(&cm.metadata);
        assert_eq!(key, ObjectKey::new("team", "web"));
        assert_eq!(key.object_ref::<ConfigMap>(), ObjectRef::from_obj(&cm));
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some("team".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            ObjectKey::of(&ns.metadata).object_ref::<Namespace>(),
            ObjectRef::from_obj(&ns),
            "a cluster-scoped object has no namespace in its store key"
        );
        assert_ne!(ObjectKey::new("a", "bc"), ObjectKey::new("ab", "c"));
    }
}
