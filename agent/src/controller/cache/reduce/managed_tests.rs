//! What a label-filtered kind's store keeps ([`managed`]): a Runtime's
//! own object as identity, owners and a digest of its labels and
//! annotations; what the triggers compare still changes with them.

use super::tests::{busy_meta, controller};
use super::*;
use crate::controller::wake::triggers::spec_fingerprint;
use berth_shared::api::API_VERSION;
use k8s_openapi::api::core::v1::{Service, ServiceSpec, ServiceStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};

fn service(owner: Option<Vec<OwnerReference>>) -> Service {
    Service {
        metadata: ObjectMeta {
            generation: Some(3),
            deletion_timestamp: Some(Time(Default::default())),
            ..busy_meta(owner)
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("10.0.0.7".into()),
            ..Default::default()
        }),
        status: Some(ServiceStatus::default()),
    }
}

fn kept(mut svc: Service) -> Service {
    managed(&mut svc);
    svc
}

fn own() -> Option<Vec<OwnerReference>> {
    controller(API_VERSION, "Runtime", "runtime-uid")
}

#[test]
fn a_runtimes_own_object_keeps_identity_owners_and_a_digest_only() {
    let live = service(own());
    let stored = kept(live.clone());
    assert_eq!(stored.spec, None);
    assert_eq!(stored.status, None);
    let (m, l) = (&stored.metadata, &live.metadata);
    assert_eq!(
        (&m.name, &m.namespace, &m.uid, &m.resource_version),
        (&l.name, &l.namespace, &l.uid, &l.resource_version)
    );
    assert_eq!(m.owner_references, l.owner_references);
    assert_eq!(m.generation, l.generation);
    assert_eq!(m.deletion_timestamp, l.deletion_timestamp);
    assert_eq!(m.managed_fields, None);
    assert_eq!(m.labels, None);
    assert_eq!(m.annotations, None);
    let digest = kept_metadata_digest(m).expect("a digest");
    assert_eq!(digest.len(), 16, "{digest}");
    assert_eq!(kept_metadata_digest(l), None);
    assert!(owned_by_runtime(m));
}

/// Issue 52: someone else's object wearing berth's label is a names-only
/// stub, whatever it holds (its spec, labels, annotations and every owner
/// but its controller are gone).
#[test]
fn someone_elses_object_at_berths_name_is_a_bounded_stub() {
    let mut live = service(controller("apps/v1", "Deployment", "other"));
    let many = (0..1000).map(|i| OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: format!("padding-{i}"),
        uid: format!("uid-{i}"),
        ..Default::default()
    });
    live.metadata
        .owner_references
        .get_or_insert_default()
        .extend(many);
    live.metadata
        .annotations
        .get_or_insert_default()
        .insert("blob".into(), "x".repeat(800_000));
    let stored = kept(live.clone());
    let (m, l) = (&stored.metadata, &live.metadata);
    assert_eq!(
        (&m.name, &m.namespace, &m.uid, &m.resource_version),
        (&l.name, &l.namespace, &l.uid, &l.resource_version)
    );
    assert_eq!(m.deletion_timestamp, l.deletion_timestamp);
    assert_eq!(
        m.owner_references,
        controller("apps/v1", "Deployment", "other"),
        "the controller reference alone"
    );
    assert_eq!((&m.labels, &m.annotations), (&None, &None));
    assert_eq!((&stored.spec, &stored.status), (&None, &None));
    assert!(serde_json::to_vec(&stored).expect("json").len() < 1_000);
}

#[test]
fn the_triggers_still_see_labels_and_annotations_change() {
    let base = service(own());
    let fingerprint = |svc: &Service| spec_fingerprint(&kept(svc.clone()));
    type Edit = fn(&mut ObjectMeta);
    let edits: [(&str, Edit); 4] = [
        ("a label changed", |m| {
            m.labels
                .get_or_insert_default()
                .insert(MANAGED_BY_LABEL.into(), "someone".into());
        }),
        ("a label added", |m| {
            m.labels
                .get_or_insert_default()
                .insert("extra".into(), "x".into());
        }),
        ("an annotation removed", |m| {
            m.annotations = None;
        }),
        ("an annotation's value moved to a label", |m| {
            let moved = m.annotations.take().unwrap_or_default();
            m.labels.get_or_insert_default().extend(moved);
        }),
    ];
    for (what, edit) in edits {
        let mut edited = base.clone();
        edit(&mut edited.metadata);
        assert_ne!(fingerprint(&edited), fingerprint(&base), "{what}");
    }
    // Neither the status nor the managed fields nor kubectl's copy wake.
    let mut quiet = base.clone();
    quiet.status = Some(ServiceStatus {
        conditions: Some(Vec::new()),
        ..Default::default()
    });
    quiet.metadata.managed_fields = None;
    if let Some(a) = quiet.metadata.annotations.as_mut() {
        a.remove(LAST_APPLIED_ANNOTATION);
    }
    assert_eq!(fingerprint(&quiet), fingerprint(&base));
}
