//! What "differs" means for the apply step: containment of the desired
//! object in the live one (keyed lists entry by entry), the applied-hash
//! annotation, which row of the contract table governs each kind, and the
//! overlay a replace writes. Pure.

use berth_shared::contract::Kind;
#[cfg(test)]
use berth_shared::contract::{self, Violation};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Annotation holding the hash of the object as last applied.
pub const APPLIED_HASH_ANNOTATION: &str = "berth.dev/applied-hash";

/// Whether every field of `desired` is present in `actual` with the same
/// value. Empty objects/arrays/strings and nulls in `desired` match an
/// absent field (the apiserver drops them: a toleration's `value: ""` is
/// not stored, and was applied again and again before issue 52). Lists whose desired entries all carry a
/// `name` are keyed lists: each desired entry must be present (by name),
/// extra entries and their order are someone else's business (the contract
/// check decides whether they are allowed). Other lists are atomic and
/// compared position by position.
pub fn contains(actual: Option<&Value>, desired: &Value) -> bool {
    match desired {
        Value::Null => true,
        Value::Object(d) if d.is_empty() => actual.is_none_or(|a| a.is_object() || a.is_null()),
        Value::Array(d) if d.is_empty() => {
            actual.is_none_or(|a| a.is_null() || a.as_array().is_some_and(Vec::is_empty))
        }
        Value::Object(d) => {
            let Some(Value::Object(a)) = actual else {
                return false;
            };
            d.iter().all(|(k, dv)| contains(a.get(k), dv))
        }
        Value::Array(d) => {
            let Some(Value::Array(a)) = actual else {
                return false;
            };
            let key = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_string);
            if d.iter().all(|dv| key(dv).is_some()) {
                d.iter().all(|dv| {
                    let name = key(dv);
                    a.iter()
                        .find(|av| key(av) == name)
                        .is_some_and(|av| contains(Some(av), dv))
                })
            } else {
                a.len() == d.len() && a.iter().zip(d).all(|(av, dv)| contains(Some(av), dv))
            }
        }
        Value::String(d) if d.is_empty() => {
            actual.is_none_or(|a| a.is_null() || a.as_str() == Some(""))
        }
        scalar => actual == Some(scalar),
    }
}

/// How the production contract governs a managed kind: its row in the
/// contract table (`berth_shared::contract`), and which top-level fields
/// a replace (the fallback when an apply cannot converge) sets whole.
pub trait Governed: Serialize + Sized {
    /// The kind's rows in the contract table.
    const KIND: Kind;
    /// Top-level fields a replace sets whole.
    const WHOLE: &'static [&'static str] = &[];
    /// Forbidden differences between `live` and `desired` (the apply step
    /// compares the JSON it already holds; the typed form is for tests).
    #[cfg(test)]
    fn violations(live: &Self, desired: &Self) -> Vec<Violation> {
        match (serde_json::to_value(live), serde_json::to_value(desired)) {
            (Ok(l), Ok(d)) => contract::violations(Self::KIND, &l, &d),
            _ => Vec::new(),
        }
    }
}

impl Governed for ServiceAccount {
    const KIND: Kind = Kind::ServiceAccount;
}
impl Governed for Service {
    const KIND: Kind = Kind::Service;
}
impl Governed for NetworkPolicy {
    const KIND: Kind = Kind::NetworkPolicy;
}
impl Governed for HorizontalPodAutoscaler {
    const KIND: Kind = Kind::HorizontalPodAutoscaler;
}
impl Governed for Job {
    const KIND: Kind = Kind::Job;
}
impl Governed for ConfigMap {
    const KIND: Kind = Kind::ConfigMap;
    const WHOLE: &'static [&'static str] = &["data", "binaryData"];
}
impl Governed for PodDisruptionBudget {
    const KIND: Kind = Kind::PodDisruptionBudget;
    const WHOLE: &'static [&'static str] = &["spec"];
}
impl Governed for Deployment {
    const KIND: Kind = Kind::Deployment;
}
impl Governed for CronJob {
    const KIND: Kind = Kind::CronJob;
}

pub(super) fn hash(value: &Value) -> String {
    let digest = Sha256::digest(value.to_string().as_bytes());
    digest.iter().take(10).map(|b| format!("{b:02x}")).collect()
}

/// The desired object as JSON with its hash annotation.
pub fn with_hash<K: Serialize>(desired: &K) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(desired)?;
    let h = hash(&value);
    let meta = value
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| {
            <serde_json::Error as serde::ser::Error>::custom("rendered object without metadata")
        })?;
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(a) = annotations.as_object_mut() {
        a.insert(APPLIED_HASH_ANNOTATION.to_string(), Value::String(h));
    }
    Ok(value)
}

/// `live` with the fields in `whole` replaced by `desired`'s (removed when
/// `desired` has none), every other top-level `spec` field of `desired`
/// replacing the live one (fields the agent does not render, such as a
/// Service's clusterIP, stay), and `desired`'s labels and annotations set
/// (others' labels and annotations stay).
pub fn overlay(live: &mut Value, desired: &Value, whole: &[&str]) {
    if let Some(l) = live.as_object_mut() {
        for key in whole {
            match desired.get(*key) {
                Some(v) => {
                    l.insert((*key).to_string(), v.clone());
                }
                None => {
                    l.remove(*key);
                }
            }
        }
    }
    if !whole.contains(&"spec")
        && let (Some(l), Some(d)) = (
            live.get_mut("spec").and_then(Value::as_object_mut),
            desired.get("spec").and_then(Value::as_object),
        )
    {
        for (k, v) in d {
            l.insert(k.clone(), v.clone());
        }
    }
    for key in ["labels", "annotations"] {
        let Some(d) = desired
            .get("metadata")
            .and_then(|m| m.get(key))
            .and_then(Value::as_object)
        else {
            continue;
        };
        let Some(meta) = live.get_mut("metadata").and_then(Value::as_object_mut) else {
            continue;
        };
        let entry = meta
            .entry(key)
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(l) = entry.as_object_mut() {
            for (k, v) in d {
                l.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The hash a rendered object is recorded under (its applied-hash).
pub(super) fn applied_hash(value: &Value) -> Option<String> {
    value
        .pointer(&format!(
            "/metadata/annotations/{}",
            APPLIED_HASH_ANNOTATION.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containment() {
        let actual = json!({"a": 1, "b": {"c": "x", "d": [ {"e": 1, "f": 2} ]}, "extra": true});
        assert!(contains(Some(&actual), &json!({"a": 1})));
        assert!(contains(Some(&actual), &json!({"b": {"d": [{"e": 1}]}})));
        assert!(!contains(Some(&actual), &json!({"b": {"d": [{"e": 2}]}})));
        assert!(!contains(
            Some(&actual),
            &json!({"b": {"d": [{"e": 1}, {"e": 1}]}})
        ));
        assert!(!contains(Some(&actual), &json!({"z": 1})));
        assert!(contains(
            Some(&actual),
            &json!({"z": {}, "y": [], "n": null})
        ));
        assert!(!contains(Some(&actual), &json!({"a": "1"})));
    }

    /// An empty string the apiserver drops on storing (`omitempty`) is
    /// contained in its absence; a different value is not.
    #[test]
    fn an_empty_string_is_contained_in_its_absence() {
        let desired = json!({"tolerations": [{"key": "k", "operator": "Exists", "value": ""}]});
        let stored = json!({"tolerations": [{"key": "k", "operator": "Exists"}]});
        assert!(contains(Some(&stored), &desired));
        let other = json!({"tolerations": [{"key": "k", "operator": "Exists", "value": "x"}]});
        assert!(!contains(Some(&other), &desired));
    }

    #[test]
    fn keyed_lists_tolerate_foreign_entries_and_order() {
        let desired = json!({"containers": [{"name": "app", "image": "x"}]});
        let appended = json!({"containers": [
            {"name": "mesh-proxy", "image": "envoy"},
            {"name": "app", "image": "x", "imagePullPolicy": "IfNotPresent"}]});
        assert!(contains(Some(&appended), &desired));
        let changed = json!({"containers": [{"name": "app", "image": "y"}]});
        assert!(!contains(Some(&changed), &desired));
        let missing = json!({"containers": [{"name": "other", "image": "x"}]});
        assert!(!contains(Some(&missing), &desired));
        // Unkeyed lists stay atomic: an extra entry is a difference.
        let desired = json!({"args": ["a"]});
        assert!(!contains(Some(&json!({"args": ["a", "b"]})), &desired));
    }

    #[test]
    fn overlay_replaces_whole_fields_when_asked() {
        let mut live = json!({
            "metadata": {"name": "web", "labels": {"theirs": "x"}},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}
        });
        let desired = json!({
            "metadata": {"name": "web"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"a": "b"}}}
        });
        overlay(&mut live, &desired, &["spec"]);
        assert_eq!(
            live["spec"],
            json!({"maxUnavailable": 1, "selector": {"matchLabels": {"a": "b"}}})
        );
        assert_eq!(live["metadata"]["labels"]["theirs"], "x");
        let mut cm = json!({"metadata": {"name": "c"}, "data": {"A": "1", "EVIL": "2"}, "binaryData": {"B": "AA=="}});
        overlay(
            &mut cm,
            &json!({"metadata": {"name": "c"}, "data": {"A": "1"}}),
            &["data", "binaryData"],
        );
        assert_eq!(cm, json!({"metadata": {"name": "c"}, "data": {"A": "1"}}));
    }

    #[test]
    fn overlay_replaces_desired_fields_only() {
        let mut live = json!({
            "metadata": {"name": "web", "labels": {"theirs": "x"}, "resourceVersion": "7"},
            "spec": {"clusterIP": "10.0.0.1", "ports": [
                {"name": "http", "port": 9999}, {"name": "extra", "port": 1}]}
        });
        let desired = json!({
            "metadata": {"name": "web", "labels": {"berth": "y"}, "annotations": {"a": "b"}},
            "spec": {"ports": [{"name": "http", "port": 80}]}
        });
        overlay(&mut live, &desired, &[]);
        assert_eq!(
            live,
            json!({
                "metadata": {"name": "web", "labels": {"theirs": "x", "berth": "y"},
                    "annotations": {"a": "b"}, "resourceVersion": "7"},
                "spec": {"clusterIP": "10.0.0.1", "ports": [{"name": "http", "port": 80}]}
            })
        );
    }

    #[test]
    fn hash_annotation_tracks_content() {
        let a = with_hash(&json!({"metadata": {"name": "x"}, "data": {"k": "v"}})).expect("hash");
        let b = with_hash(&json!({"metadata": {"name": "x"}, "data": {"k": "w"}})).expect("hash");
        let ha = &a["metadata"]["annotations"][APPLIED_HASH_ANNOTATION];
        let hb = &b["metadata"]["annotations"][APPLIED_HASH_ANNOTATION];
        assert!(ha.is_string());
        assert_ne!(ha, hb);
        // The same content hashes the same.
        let a2 = with_hash(&json!({"metadata": {"name": "x"}, "data": {"k": "v"}})).expect("hash");
        assert_eq!(a, a2);
    }
}
