//! A ReplicaSet as the agent's cache keeps it (issue 32).
//!
//! [`super::replica_set`] already cut every ReplicaSet to what the
//! analysis and the rollout summary read, but the cut-down object was
//! still a k8s-openapi `ReplicaSet`: 2.3 KB inline however few of its
//! fields are set, plus a 2.1 KB `Container` for the one image read. At
//! scale S the ReplicaSets were 8.8 MB of the agent's live heap (README
//! "Where the memory goes"). [`KeptReplicaSet`] holds the same fields in
//! structs their own size; [`KeptReplicaSet::whole`] gives back exactly the
//! reduced `ReplicaSet` (a few per reconcile, one at a time in the
//! analysis), so the readers compute from the same input as before.
//!
//! The watch parses whole ReplicaSets and the cache turns each into this
//! (`cache::cache`); to kube it is a ReplicaSet (`Resource`), so the
//! store, its owner index and the publisher's fingerprints hold it.

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::kept_template::KeptTemplate;

/// A ReplicaSet reduced to what is read, in structs of its own size.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeptReplicaSet {
    /// Identity, owners, berth's labels, the revision and profile
    /// annotations (see `reduce::foreign_meta`).
    metadata: ObjectMeta,
    spec: Option<KeptSpec>,
    status: Option<KeptStatus>,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct KeptSpec {
    replicas: Option<i32>,
    template: Option<KeptTemplate>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct KeptStatus {
    replicas: i32,
    ready_replicas: Option<i32>,
    available_replicas: Option<i32>,
}

impl From<ReplicaSet> for KeptReplicaSet {
    fn from(mut rs: ReplicaSet) -> Self {
        super::replica_set(&mut rs);
        KeptReplicaSet {
            metadata: rs.metadata,
            spec: rs.spec.map(|s| KeptSpec {
                replicas: s.replicas,
                template: s.template.map(KeptTemplate::from),
            }),
            status: rs.status.map(|s| KeptStatus {
                replicas: s.replicas,
                ready_replicas: s.ready_replicas,
                available_replicas: s.available_replicas,
            }),
        }
    }
}

impl KeptReplicaSet {
    /// The ReplicaSet as `reduce::replica_set` left it: what the shared
    /// analysis and rollout summary take.
    pub fn whole(&self) -> ReplicaSet {
        ReplicaSet {
            metadata: self.metadata.clone(),
            spec: self.spec.as_ref().map(|s| ReplicaSetSpec {
                replicas: s.replicas,
                template: s.template.as_ref().map(KeptTemplate::whole),
                ..Default::default()
            }),
            status: self.status.as_ref().map(|s| ReplicaSetStatus {
                replicas: s.replicas,
                ready_replicas: s.ready_replicas,
                available_replicas: s.available_replicas,
                ..Default::default()
            }),
        }
    }
}

super::kept_template::as_kind!(KeptReplicaSet, ReplicaSet);

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
    use kube::Resource;

    type Map = Option<std::collections::BTreeMap<String, String>>;

    fn labels(pairs: &[(&str, &str)]) -> Map {
        Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    /// A ReplicaSet with most of what the API serves, berth's and others'.
    fn busy() -> ReplicaSet {
        ReplicaSet {
            metadata: ObjectMeta {
                name: Some("web-7f9".into()),
                namespace: Some("team".into()),
                uid: Some("u-rs".into()),
                resource_version: Some("42".into()),
                generation: Some(3),
                creation_timestamp: Some(Time(Default::default())),
                labels: labels(&[
                    ("app.kubernetes.io/managed-by", "berth"),
                    ("berth.dev/runtime", "web"),
                    ("pod-template-hash", "7f9"),
                ]),
                annotations: labels(&[
                    ("deployment.kubernetes.io/revision", "4"),
                    ("deployment.kubernetes.io/desired-replicas", "3"),
                ]),
                owner_references: Some(vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                    name: "web".into(),
                    uid: "u-web".into(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]),
                finalizers: Some(vec!["example.com/keep".into()]),
                ..Default::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(3),
                min_ready_seconds: Some(5),
                template: Some(PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: labels(&[("berth.dev/runtime", "web"), ("tier", "front")]),
                        annotations: labels(&[
                            (berth_shared::render::RUNTIME_PROFILE_ANNOTATION, "strict"),
                            ("other", "x"),
                        ]),
                        ..Default::default()
                    }),
                    spec: Some(PodSpec {
                        runtime_class_name: Some("gvisor".into()),
                        host_network: Some(true),
                        containers: vec![
                            Container {
                                name: "app".into(),
                                image: Some("registry/app:2".into()),
                                command: Some(vec!["sh".into()]),
                                ..Default::default()
                            },
                            Container {
                                name: "sidecar".into(),
                                image: Some("registry/side:1".into()),
                                ..Default::default()
                            },
                        ],
                        ..Default::default()
                    }),
                }),
                ..Default::default()
            }),
            status: Some(ReplicaSetStatus {
                replicas: 3,
                ready_replicas: Some(2),
                available_replicas: Some(1),
                fully_labeled_replicas: Some(3),
                observed_generation: Some(3),
                ..Default::default()
            }),
        }
    }

    /// The reduction the readers computed from before this type.
    fn reduced(mut rs: ReplicaSet) -> ReplicaSet {
        super::super::replica_set(&mut rs);
        rs
    }

    #[test]
    fn whole_gives_back_exactly_the_reduced_replica_set() {
        let shapes = [
            busy(),
            ReplicaSet::default(),
            ReplicaSet {
                spec: Some(ReplicaSetSpec::default()),
                status: Some(ReplicaSetStatus::default()),
                ..busy()
            },
            ReplicaSet {
                spec: Some(ReplicaSetSpec {
                    template: Some(PodTemplateSpec::default()),
                    ..Default::default()
                }),
                ..busy()
            },
            ReplicaSet {
                spec: Some(ReplicaSetSpec {
                    template: Some(PodTemplateSpec {
                        metadata: Some(ObjectMeta::default()),
                        spec: Some(PodSpec::default()),
                    }),
                    ..Default::default()
                }),
                ..busy()
            },
        ];
        for rs in shapes {
            let kept = KeptReplicaSet::from(rs.clone());
            assert_eq!(kept.whole(), reduced(rs.clone()), "{rs:?}");
        }
    }

    #[test]
    fn it_is_a_replica_set_to_the_api_and_smaller_than_one() {
        assert_eq!(KeptReplicaSet::kind(&()), "ReplicaSet");
        assert_eq!(KeptReplicaSet::api_version(&()), "apps/v1");
        assert_eq!(KeptReplicaSet::plural(&()), "replicasets");
        assert_eq!(
            KeptReplicaSet::url_path(&(), Some("team")),
            ReplicaSet::url_path(&(), Some("team"))
        );
        let kept = KeptReplicaSet::from(busy());
        assert_eq!(kept.meta().name.as_deref(), Some("web-7f9"));
        // Inline size: the point of the type (a ReplicaSet is 2.3 KB and
        // its one Container another 2.1 KB on the heap).
        assert!(
            std::mem::size_of::<KeptReplicaSet>() * 4 < std::mem::size_of::<ReplicaSet>(),
            "{} vs {}",
            std::mem::size_of::<KeptReplicaSet>(),
            std::mem::size_of::<ReplicaSet>()
        );
    }
}
