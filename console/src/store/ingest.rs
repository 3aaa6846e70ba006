//! Where cluster data enters the model: every object is stripped of
//! `managedFields` and large annotations, then every string in it (keys and
//! values) goes through [`berth_shared::sanitize`].

use berth_shared::sanitize;
use kube::ResourceExt;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::object::Object;

/// Annotations longer than this (bytes) are replaced by a short marker.
pub const MAX_ANNOTATION_BYTES: usize = 2048;
/// Bound for any one string value kept in the model (characters).
pub const MAX_VALUE_CHARS: usize = sanitize::MAX_VALUE_CHARS;
/// Annotation dropped entirely: a copy of the whole object.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Reduces one object to what the views read ([`super::compact`]), then
/// strips and sanitizes it: how every watched or listed object enters the
/// store.
pub fn admit<K: Into<super::Object>>(obj: K) -> Option<super::Object> {
    super::compact::compact(obj.into()).prepared()
}

/// Strips and sanitizes one object. Returns `None` only if the sanitized
/// form no longer deserializes (it is then left out rather than shown raw).
pub fn prepare<K>(mut obj: K) -> Option<K>
where
    K: ResourceExt + Serialize + DeserializeOwned + Clone,
{
    strip(&mut obj);
    // Nearly every object holds nothing to clean: checking its JSON text
    // costs a fraction of the round trip through a `Value` (issue 32).
    if sanitize::is_clean_serialized(&obj) {
        return Some(fresh(obj));
    }
    let mut v = serde_json::to_value(&obj).ok()?;
    sanitize::json(&mut v, MAX_VALUE_CHARS);
    serde_json::from_value(v).ok()
}

/// A copy of `obj` in fresh allocations, the original dropped.
///
/// An object parsed from a LIST page and reduced in place
/// ([`super::compact`]) keeps its strings where the parse put them,
/// between the allocations of the fields compaction dropped and of the
/// page's other objects: freed, those leave the allocator's pages mostly
/// empty but resident. The round trip through a `Value` used to copy
/// every object anyway; the fast path must too. Measured on a scale-S
/// cluster (issue 32): the console with every view visited held 168 MB
/// without the copy and 118–132 MB with it; a first Handlers or Retained
/// frame took as long.
fn fresh<K: Clone>(obj: K) -> K {
    obj.clone()
}

/// Removes `managedFields`, the last-applied annotation and the value of any
/// annotation above [`MAX_ANNOTATION_BYTES`].
pub fn strip<K: ResourceExt>(obj: &mut K) {
    let meta = obj.meta_mut();
    meta.managed_fields = None;
    if let Some(ann) = meta.annotations.as_mut() {
        ann.remove(LAST_APPLIED);
        for v in ann.values_mut() {
            if v.len() > MAX_ANNOTATION_BYTES {
                *v = format!("<{} bytes omitted>", v.len());
            }
        }
    }
}

// [`Object::prepared`], from the table ([`super::table`]): what
// [`admit`] ends with.
macro_rules! object_prepared {
    ($( $variant:ident => $ty:ty [read $wire:ty] as $kept:ty, $field:ident, $label:literal, $namespaced:literal, $links:path, $classed:path; )*) => {
        impl Object {
            /// The object stripped and sanitized ([`prepare`]);
            /// `None` if it no longer deserializes.
            pub fn prepared(self) -> Option<Object> {
                match self { $( Object::$variant(o) => prepare(*o).map(Object::from), )* }
            }
        }
    };
}

super::table::kinds! { object_prepared }

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    use kube::api::ObjectMeta;
    use std::collections::BTreeMap;

    #[test]
    fn a_clean_object_skips_the_round_trip_and_ends_the_same() {
        // As `admit` hands it over: reduced first.
        let crate::store::Object::Pod(pod) =
            crate::store::compact::compact(crate::store::compact::tests::full_pod().into())
        else {
            panic!("a Pod stays a Pod");
        };
        let pod = *pod;
        let mut stripped = pod.clone();
        strip(&mut stripped);
        // The fast path is the one taken…
        assert!(sanitize::is_clean_serialized(&stripped));
        // …and gives what the round trip through a `Value` gives.
        let mut v = serde_json::to_value(&stripped).expect("to value");
        sanitize::json(&mut v, MAX_VALUE_CHARS);
        let slow: Pod = serde_json::from_value(v).expect("from value");
        assert_eq!(prepare(pod), Some(slow));
    }

    #[test]
    fn strips_managed_fields_big_annotations_and_escapes() {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("web\u{1b}[2J-1".into()),
                namespace: Some("ns".into()),
                managed_fields: Some(vec![ManagedFieldsEntry::default()]),
                annotations: Some(BTreeMap::from([
                    ("big".to_string(), "x".repeat(10_000)),
                    (LAST_APPLIED.to_string(), "{}".to_string()),
                    ("note\u{202e}".to_string(), "a\u{9b}31mb".to_string()),
                ])),
                ..Default::default()
            },
            ..Default::default()
        };
        let pod = prepare(pod).expect("prepared");
        assert_eq!(pod.metadata.name.as_deref(), Some("web-1"));
        assert!(pod.metadata.managed_fields.is_none());
        let ann = pod.metadata.annotations.expect("annotations");
        assert_eq!(
            ann.get("big").map(String::as_str),
            Some("<10000 bytes omitted>")
        );
        assert!(!ann.contains_key(LAST_APPLIED));
        assert_eq!(ann.get("note<U+202E>").map(String::as_str), Some("ab"));
    }
}
