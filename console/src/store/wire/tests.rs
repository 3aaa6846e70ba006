use k8s_openapi::api::core::v1::Pod;
use kube::Resource;
use kube::core::ObjectList;
use serde_json::{Value, json};

use super::WirePod;
use crate::store::compact::tests::full_pod;
use crate::store::slim::SlimPod;
use crate::store::{Stored, ingest};

/// What the store keeps of a Pod read whole (as before this module).
fn kept_whole(v: &Value) -> SlimPod {
    let pod: Pod = serde_json::from_value(v.clone()).expect("a Pod");
    slim(ingest::admit(pod))
}

/// What the store keeps of the same Pod read off the wire.
fn kept_wire(v: &Value) -> SlimPod {
    let wire: WirePod = serde_json::from_str(&v.to_string()).expect("a WirePod");
    slim(ingest::admit(Pod::from(wire)))
}

fn slim(obj: Option<crate::store::Object>) -> SlimPod {
    match Stored::from(obj.expect("admitted")) {
        Stored::Pod(p) => *p,
        other => panic!("not a pod: {other:?}"),
    }
}

/// A Pod as the apiserver sends it, with what nobody here reads:
/// managedFields, a resourceVersion, several containers, statuses.
fn served_pod() -> Value {
    let mut v = serde_json::to_value(full_pod()).expect("json");
    v["apiVersion"] = "v1".into();
    v["kind"] = "Pod".into();
    let m = &mut v["metadata"];
    m["resourceVersion"] = "4711".into();
    m["creationTimestamp"] = "2026-12-01T10:00:00Z".into();
    m["generateName"] = "web-".into();
    m["managedFields"] = json!([{
        "manager": "kube-controller-manager", "operation": "Update",
        "apiVersion": "v1", "time": "2026-12-01T10:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
    }]);
    v
}

#[test]
fn a_pod_read_off_the_wire_is_kept_as_the_whole_pod_is() {
    let served = served_pod();
    let mut cases = vec![("served", served.clone())];
    // Absent and null parts, as other servers and older objects send them.
    let mut bare = served.clone();
    bare.as_object_mut().expect("object").remove("spec");
    bare.as_object_mut().expect("object").remove("status");
    cases.push(("no spec, no status", bare));
    let mut nulls = served.clone();
    nulls["metadata"]["labels"] = Value::Null;
    nulls["metadata"]["annotations"] = Value::Null;
    nulls["spec"]["runtimeClassName"] = Value::Null;
    nulls["status"]["conditions"] = Value::Null;
    cases.push(("nulls", nulls));
    let mut no_containers = served.clone();
    no_containers["spec"]["containers"] = json!([]);
    cases.push(("no containers", no_containers));
    let mut pending = served.clone();
    pending["status"] = json!({"phase": "Pending", "conditions": [
        {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
        {"type": "Ready", "status": "True"}
    ]});
    cases.push(("two Ready conditions", pending));
    cases.push((
        "metadata only",
        json!({"metadata": {"name": "p", "namespace": "ns"}}),
    ));
    for (what, v) in cases {
        assert_eq!(kept_wire(&v), kept_whole(&v), "{what}");
    }
    // And what is kept is not empty: the comparison compares something.
    let kept = kept_wire(&served);
    assert_eq!(kept.runtime_class_name(), Some("kata"));
    assert_eq!(kept.node_name(), Some("node-3"));
    assert!(kept.ready());
    assert_eq!(kept.metadata.owners.len(), 1);
}

#[test]
fn the_watcher_reads_what_it_resumes_from_and_nothing_unread_is_kept() {
    let wire: WirePod = serde_json::from_value(served_pod()).expect("a WirePod");
    assert_eq!(wire.meta().resource_version.as_deref(), Some("4711"));
    let m = &wire.metadata;
    assert!(m.managed_fields.is_none() && m.finalizers.is_none() && m.generate_name.is_none());
    let pod = Pod::from(wire);
    let spec = pod.spec.expect("spec");
    assert_eq!(spec.containers.len(), 1, "only the first container");
    assert!(spec.containers[0].env.is_none() && spec.volumes.is_none());
    let status = pod.status.expect("status");
    assert!(status.container_statuses.is_none());
}

#[test]
fn a_list_page_parses_into_wire_pods_at_the_pods_url() {
    let page = json!({"apiVersion": "v1", "kind": "PodList",
        "metadata": {"resourceVersion": "9", "continue": "c"},
        "items": [served_pod(), {"metadata": {"name": "b", "namespace": "ns"}}]});
    let list: ObjectList<WirePod> = serde_json::from_value(page).expect("a PodList page");
    assert_eq!(list.items.len(), 2);
    assert_eq!(list.metadata.continue_.as_deref(), Some("c"));
    assert_eq!(
        WirePod::url_path(&(), Some("ns")),
        Pod::url_path(&(), Some("ns"))
    );
    assert_eq!(WirePod::kind(&()), "Pod");
}

#[test]
fn what_is_read_off_the_wire_is_sanitized_before_it_is_kept() {
    let mut v = served_pod();
    v["metadata"]["name"] = "web-\u{1b}]52;c;aGk=\u{7}1".into();
    v["metadata"]["labels"] = json!({"app": "\u{1b}[2Jweb"});
    v["spec"]["containers"][0]["image"] = "registry.invalid/\u{1b}[31mweb:2".into();
    v["status"]["phase"] = "Running\u{9b}1m".into();
    let kept = kept_wire(&v);
    let image = kept.spec.as_ref().and_then(|s| s.container.as_ref());
    let strings = [
        kept.metadata.name(),
        kept.metadata.label("app").unwrap_or_default(),
        image.and_then(|c| c.image.as_deref()).unwrap_or_default(),
        kept.phase().unwrap_or_default(),
    ];
    for s in strings {
        assert!(!s.is_empty(), "{strings:?}");
        assert!(!s.chars().any(char::is_control), "{s:?} reached the store");
    }
    assert_eq!(kept, kept_whole(&v));
}
