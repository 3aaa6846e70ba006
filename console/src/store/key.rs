//! How an object is named in the store: [`ObjKey`]. Its own file so that
//! what is kept of an object ([`super::kept`], [`super::meta`],
//! [`super::slim`]) and the indexes ([`super::index`], [`super::classed`])
//! can name a key without the store that keeps them.

use kube::ResourceExt;

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub type ObjKey = (String, String);

/// The key of an object.
pub fn key_of<K: ResourceExt>(obj: &K) -> ObjKey {
    (obj.namespace().unwrap_or_default(), obj.name_any())
}
