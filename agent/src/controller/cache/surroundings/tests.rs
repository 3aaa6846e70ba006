use super::*;
use k8s_openapi::api::apps::v1::ReplicaSet;
use serde_json::json;

fn replica_set(owner: bool, labels: serde_json::Value, class: Option<&str>) -> Workload {
    let mut v = json!({
        "metadata": {"name": "web-1", "namespace": "team", "labels": labels},
        "spec": {"selector": {}, "template": {"metadata": {"labels": labels},
            "spec": {"runtimeClassName": class, "containers": []}}},
    });
    if owner {
        v["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "Deployment",
            "name": "web", "uid": "d", "controller": true}]);
    }
    let rs: ReplicaSet = serde_json::from_value(v).expect("rs");
    Workload::from_replica_set(&rs, None)
}

#[test]
fn an_orphan_is_berth_s_names_a_runtime_has_a_class_and_no_controller() {
    let berth = json!({"app.kubernetes.io/managed-by": "berth", "berth.dev/runtime": "web"});
    let o = Orphan::of(&replica_set(false, berth.clone(), Some("gvisor"))).expect("orphan");
    assert_eq!((&*o.runtime, &*o.class), ("web", "gvisor"));
    // Controlled, not berth's, naming no Runtime, or on the default runtime.
    assert!(Orphan::of(&replica_set(true, berth.clone(), Some("gvisor"))).is_none());
    assert!(
        Orphan::of(&replica_set(
            false,
            json!({"berth.dev/runtime": "web"}),
            Some("gvisor")
        ))
        .is_none()
    );
    assert!(
        Orphan::of(&replica_set(
            false,
            json!({"app.kubernetes.io/managed-by": "berth"}),
            Some("gvisor")
        ))
        .is_none()
    );
    assert!(Orphan::of(&replica_set(false, berth, None)).is_none());
}
