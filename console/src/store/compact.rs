//! Objects reduced at ingestion to what the views read. Pods and the pod
//! templates of workloads are the bulk of a cluster (containers, env,
//! volumes, probes, status of every container); the console's rows read a
//! handful of their fields. Only those are kept, before sanitizing (which
//! then has less to walk); the Details screen fetches the whole object when
//! it opens (see [`compacted`]).
//!
//! What is kept, and who reads it:
//! - metadata: identity, times, labels, owner references, and only berth's
//!   own and the Deployment revision annotations (the shared analysis: the
//!   runtime profile, rollback revisions; the rollout view: revisions);
//! - pod templates: labels, berth's annotations, `runtimeClassName` and the
//!   first container's name and image (analysis; the rollout's image);
//! - Pods: the above, `nodeName`, `phase` and the `Ready` condition
//!   (analysis; the rollout's pod lines).

use berth_shared::api::meta::REVISION_ANNOTATION;
use berth_shared::render::labels::RESERVED_PREFIX;
use k8s_openapi::api::core::v1::{
    Container, Pod, PodCondition, PodSpec, PodStatus, PodTemplateSpec,
};
use kube::api::ObjectMeta;

use super::{Kind, Object};

/// Whether objects of this kind are kept reduced: whoever needs the whole
/// object (the Details screen) must fetch it.
pub fn compacted(kind: Kind) -> bool {
    super::WORKLOAD_KINDS.contains(&kind)
}

/// Reduces an object of a [`compacted`] kind; others pass unchanged.
pub fn compact(obj: Object) -> Object {
    match obj {
        Object::Pod(mut p) => {
            pod(&mut p);
            Object::Pod(p)
        }
        Object::Deployment(mut d) => {
            meta(&mut d.metadata);
            if let Some(s) = d.spec.as_mut() {
                template(&mut s.template);
            }
            Object::Deployment(d)
        }
        Object::ReplicaSet(mut r) => {
            meta(&mut r.metadata);
            if let Some(t) = r.spec.as_mut().and_then(|s| s.template.as_mut()) {
                template(t);
            }
            Object::ReplicaSet(r)
        }
        Object::StatefulSet(mut s) => {
            meta(&mut s.metadata);
            if let Some(spec) = s.spec.as_mut() {
                template(&mut spec.template);
                // Claims templates are whole PVC specs nobody here reads.
                spec.volume_claim_templates = None;
            }
            Object::StatefulSet(s)
        }
        Object::DaemonSet(mut d) => {
            meta(&mut d.metadata);
            if let Some(s) = d.spec.as_mut() {
                template(&mut s.template);
            }
            Object::DaemonSet(d)
        }
        Object::Job(mut j) => {
            meta(&mut j.metadata);
            if let Some(s) = j.spec.as_mut() {
                template(&mut s.template);
            }
            Object::Job(j)
        }
        Object::CronJob(mut c) => {
            meta(&mut c.metadata);
            if let Some(s) = c.spec.as_mut().and_then(|s| s.job_template.spec.as_mut()) {
                template(&mut s.template);
            }
            Object::CronJob(c)
        }
        other => other,
    }
}

/// Keeps berth's own annotations and the Deployment revision.
fn annotations(meta: &mut ObjectMeta) {
    if let Some(a) = meta.annotations.as_mut() {
        a.retain(|k, _| k.starts_with(RESERVED_PREFIX) || k == REVISION_ANNOTATION);
        if a.is_empty() {
            meta.annotations = None;
        }
    }
}

fn meta(meta: &mut ObjectMeta) {
    annotations(meta);
    meta.managed_fields = None;
    meta.finalizers = None;
}

fn first_container(spec: &PodSpec) -> Vec<Container> {
    spec.containers
        .first()
        .map(|c| Container {
            name: c.name.clone(),
            image: c.image.clone(),
            ..Default::default()
        })
        .into_iter()
        .collect()
}

fn template(t: &mut PodTemplateSpec) {
    if let Some(m) = t.metadata.as_mut() {
        annotations(m);
    }
    if let Some(s) = t.spec.as_ref() {
        t.spec = Some(PodSpec {
            runtime_class_name: s.runtime_class_name.clone(),
            containers: first_container(s),
            ..Default::default()
        });
    }
}

fn pod(p: &mut Pod) {
    meta(&mut p.metadata);
    if let Some(s) = p.spec.as_ref() {
        p.spec = Some(PodSpec {
            runtime_class_name: s.runtime_class_name.clone(),
            node_name: s.node_name.clone(),
            containers: first_container(s),
            ..Default::default()
        });
    }
    if let Some(s) = p.status.as_ref() {
        let ready = s
            .conditions
            .iter()
            .flatten()
            .filter(|c| c.type_ == "Ready")
            .map(|c| PodCondition {
                type_: c.type_.clone(),
                status: c.status.clone(),
                ..Default::default()
            })
            .collect::<Vec<_>>();
        p.status = Some(PodStatus {
            phase: s.phase.clone(),
            conditions: (!ready.is_empty()).then_some(ready),
            ..Default::default()
        });
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use berth_shared::analysis::Workload;
    use berth_shared::api::meta::pod_ready;
    use k8s_openapi::api::apps::v1::ReplicaSet;

    pub(in crate::store) fn from<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
        serde_json::from_value(v).expect("object")
    }

    fn big_template() -> serde_json::Value {
        serde_json::json!({
            "metadata": {
                "labels": {"app": "web", "berth.dev/managed-by": "berth"},
                "annotations": {"berth.dev/runtime-profile": "bounded", "note": "x".repeat(500)}
            },
            "spec": {
                "runtimeClassName": "kata",
                "nodeSelector": {"zone": "a"},
                "volumes": [{"name": "v", "emptyDir": {}}],
                "containers": [
                    {"name": "app", "image": "registry.invalid/web:2",
                     "env": [{"name": "A", "value": "x".repeat(1000)}],
                     "args": ["--a", "--b"]},
                    {"name": "sidecar", "image": "registry.invalid/side:1"}
                ]
            }
        })
    }

    /// A Pod as the API server sends it, with much the console drops
    /// (also the slim Pod's tests' input, [`super::super::slim`]).
    pub(in crate::store) fn full_pod() -> Pod {
        let mut spec = big_template()["spec"].clone();
        spec["nodeName"] = "node-3".into();
        from(serde_json::json!({
            "metadata": {
                "name": "web-1", "namespace": "ns", "uid": "u1",
                "labels": {"app": "web"},
                "annotations": {"berth.dev/runtime-profile": "bounded", "big": "x".repeat(5000)},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "web-abc", "uid": "u2", "controller": true}],
                "finalizers": ["f"]
            },
            "spec": spec,
            "status": {
                "phase": "Running",
                "conditions": [
                    {"type": "Ready", "status": "True", "message": "m"},
                    {"type": "PodScheduled", "status": "True"}
                ],
                "containerStatuses": [{"name": "app", "image": "i", "imageID": "x",
                    "ready": true, "restartCount": 0}]
            }
        }))
    }

    #[test]
    fn a_pod_keeps_what_the_views_read() {
        let full = full_pod();
        let before = Workload::from_pod(&full);
        let Object::Pod(small) = compact(Object::from(full.clone())) else {
            panic!("a pod");
        };
        // The analysis and the rollout lines see the same pod.
        assert_eq!(Workload::from_pod(&small), before);
        assert!(pod_ready(&small));
        let spec = small.spec.as_ref().expect("spec");
        assert_eq!(spec.runtime_class_name.as_deref(), Some("kata"));
        assert_eq!(spec.containers.len(), 1);
        assert_eq!(
            spec.containers[0].image.as_deref(),
            Some("registry.invalid/web:2")
        );
        assert!(spec.containers[0].env.is_none() && spec.volumes.is_none());
        let status = small.status.as_ref().expect("status");
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert!(status.container_statuses.is_none());
        let ann = small.metadata.annotations.as_ref().expect("annotations");
        assert_eq!(ann.len(), 1, "{ann:?}");
        let size = |p: &Pod| serde_json::to_string(p).map(|s| s.len()).unwrap_or(0);
        assert!(
            size(&small) * 10 < size(&full),
            "{} vs {}",
            size(&small),
            size(&full)
        );
    }

    #[test]
    fn a_replica_set_keeps_revision_owner_and_template_class() {
        let full: ReplicaSet = from(serde_json::json!({
            "metadata": {
                "name": "web-abc", "namespace": "ns",
                "annotations": {REVISION_ANNOTATION: "3", "other": "x"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                    "name": "web", "uid": "u", "controller": true}]
            },
            "spec": {"replicas": 2, "selector": {}, "template": big_template()},
            "status": {"replicas": 2, "readyReplicas": 1}
        }));
        let before = Workload::from_replica_set(&full, Some("2"));
        let Object::ReplicaSet(small) = compact(Object::from(full)) else {
            panic!("a replica set");
        };
        assert_eq!(Workload::from_replica_set(&small, Some("2")), before);
        assert!(before.is_rollback_revision);
        let t = small.spec.as_ref().and_then(|s| s.template.as_ref());
        assert_eq!(
            berth_shared::api::meta::template_image(t).as_deref(),
            Some("registry.invalid/web:2")
        );
        assert_eq!(
            small.metadata.annotations,
            Some([(REVISION_ANNOTATION.to_string(), "3".to_string())].into())
        );
    }

    #[test]
    fn only_workloads_and_pods_are_compacted() {
        assert!(compacted(Kind::Pod) && compacted(Kind::ReplicaSet));
        assert!(!compacted(Kind::Runtime) && !compacted(Kind::Event));
    }
}
