use std::collections::BTreeMap;

use super::*;
use crate::exposure::hashed::LabelHashes;
use crate::exposure::network_policy::Beyond;

#[test]
fn found_objects_are_sorted_most_urgent_kind_first_and_once() {
    let slice = Exposing::slice("team", "manual", None);
    let service = Exposing::service("team", "b");
    let service_a = Exposing::service("team", "a");
    let orphan = Exposing::orphan("Pod", "team", "web-1", "gvisor");
    let policy = Exposing::policy("team", "open", &Beyond::TooLarge);
    let e = Exposure::new(
        vec![
            slice.clone(),
            service.clone(),
            policy.clone(),
            service.clone(),
            orphan.clone(),
            service_a.clone(),
        ],
        true,
    );
    assert_eq!(e.found, vec![orphan, policy, service_a, service, slice]);
}

#[test]
fn pod_labels_keep_each_distinct_set_once() {
    let h = LabelHashes::default();
    let a = BTreeMap::from([("app".to_string(), "web".to_string())]);
    let b = BTreeMap::from([("app".to_string(), "job".to_string())]);
    let labels = PodLabels::new(&h, [&a, &b, &a]);
    assert_eq!(labels.sets().len(), 2);
}

#[test]
fn each_kind_has_its_reason_and_the_status_entry_names_the_object() {
    let r = Exposing::orphan("ReplicaSet", "team", "web-6d4", "gvisor").reference();
    assert_eq!(
        (
            r.kind.as_str(),
            r.namespace.as_str(),
            r.name.as_str(),
            r.reason.as_str()
        ),
        ("ReplicaSet", "team", "web-6d4", reasons::ORPHANED)
    );
    for k in [
        ExposureKind::Orphan,
        ExposureKind::NetworkPolicy,
        ExposureKind::Service,
        ExposureKind::EndpointSlice,
    ] {
        assert_eq!(ExposureKind::of_reason(k.reason()), Some(k));
    }
}
