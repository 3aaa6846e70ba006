//! Deployments and ReplicaSets as the store keeps them, like Pods
//! ([`super::slim`]): what the views and the shared analysis read, without
//! the rest of the k8s-openapi structs (4.5 and 6.2 kB inline when nearly
//! every field is absent, as after compaction).
//!
//! Who reads what: the shared analysis (metadata, the template's labels,
//! berth's annotations and class, replicas, ready replicas, the revision:
//! [`SlimDeployment::workload`], [`SlimReplicaSet::workload`]), the
//! rollout (names, revisions, replicas, the template's image, the
//! Deployment's `Progressing` condition and deadline), relations (owners,
//! the Runtime label, replicas), Details until the whole object is read
//! ([`super::kept::Kept::object`]).

use berth_shared::analysis::{Labels, Workload, WorkloadKind};
use berth_shared::render::RUNTIME_PROFILE_ANNOTATION;
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentCondition, DeploymentSpec, DeploymentStatus, ReplicaSet, ReplicaSetSpec,
    ReplicaSetStatus,
};
use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};
use kube::api::ObjectMeta;

use super::intern;
use super::kept::Kept;
use super::meta::{HasSlimMeta, SlimMeta, overlay};
use super::slim::SlimContainer;

/// The condition of a Deployment the rollout reads.
const PROGRESSING: &str = "Progressing";

/// What is kept of a pod template.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlimTemplate {
    /// `metadata.labels` (shared).
    pub labels: Labels,
    /// berth's annotations (shared).
    pub annotations: Labels,
    /// `spec.runtimeClassName`.
    pub runtime_class_name: Option<String>,
    /// The first container's name and image.
    pub container: Option<SlimContainer>,
}

impl SlimTemplate {
    /// The first container's image.
    pub fn image(&self) -> Option<&str> {
        self.container.as_ref()?.image.as_deref()
    }

    fn to_template(&self) -> PodTemplateSpec {
        let meta = ObjectMeta {
            labels: intern::to_opt(&self.labels),
            annotations: intern::to_opt(&self.annotations),
            ..Default::default()
        };
        PodTemplateSpec {
            metadata: (meta != ObjectMeta::default()).then_some(meta),
            spec: Some(PodSpec {
                runtime_class_name: self.runtime_class_name.clone(),
                containers: self
                    .container
                    .iter()
                    .map(SlimContainer::to_container)
                    .collect(),
                ..Default::default()
            }),
        }
    }
}

impl From<PodTemplateSpec> for SlimTemplate {
    fn from(t: PodTemplateSpec) -> Self {
        let (labels, annotations) = t
            .metadata
            .map(|m| (m.labels, m.annotations))
            .unwrap_or_default();
        let spec = t.spec.unwrap_or_default();
        SlimTemplate {
            labels: intern::opt(labels),
            annotations: intern::opt(annotations),
            runtime_class_name: spec.runtime_class_name,
            container: spec.containers.into_iter().next().map(SlimContainer::from),
        }
    }
}

/// The shared analysis's view of a workload with a pod template, as
/// `Workload::from_*` builds it from the whole object: `labels` is the
/// template's overlaid with the object's own ([`overlay`]).
fn workload(
    kind: WorkloadKind,
    meta: &SlimMeta,
    template: Option<&SlimTemplate>,
    labels: &Labels,
    replicas: i32,
    ready: i32,
) -> Workload {
    Workload {
        kind,
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        runtime_class: template
            .and_then(|t| t.runtime_class_name.clone())
            .filter(|c| !c.is_empty()),
        replicas: replicas.max(0),
        ready: ready.max(0),
        managed_by_berth: meta.is_managed()
            || template.is_some_and(|t| {
                t.labels
                    .get(berth_shared::api::meta::MANAGED_BY_LABEL)
                    .map(String::as_str)
                    == Some(berth_shared::api::meta::MANAGED_BY)
            }),
        owner: meta.controller(),
        is_rollback_revision: false,
        suspended: false,
        runtime_profile: template
            .and_then(|t| t.annotations.get(RUNTIME_PROFILE_ANNOTATION).cloned()),
        labels: labels.clone(),
    }
}

/// What is kept of a Deployment's `spec`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlimDeploymentSpec {
    /// `replicas`.
    pub replicas: Option<i32>,
    /// `progressDeadlineSeconds`.
    pub progress_deadline_seconds: Option<i32>,
    /// `template`.
    pub template: SlimTemplate,
}

/// What is kept of a Deployment's `status`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlimDeploymentStatus {
    /// `replicas`.
    pub replicas: Option<i32>,
    /// `readyReplicas`.
    pub ready_replicas: Option<i32>,
    /// The `Progressing` condition, without its message.
    pub conditions: Option<Vec<DeploymentCondition>>,
}

/// A Deployment reduced to what the console reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlimDeployment {
    pub metadata: SlimMeta,
    pub spec: Option<SlimDeploymentSpec>,
    pub status: Option<SlimDeploymentStatus>,
    /// The template's labels overlaid with the Deployment's own (the
    /// analysis's labels, shared).
    pub labels: Labels,
}

impl SlimDeployment {
    /// The Deployment as the shared analysis sees it (as
    /// [`Workload::from_deployment`] sees [`Kept::object`]).
    pub fn workload(&self) -> Workload {
        let spec = self.spec.as_ref();
        workload(
            WorkloadKind::Deployment,
            &self.metadata,
            spec.map(|s| &s.template),
            &self.labels,
            spec.and_then(|s| s.replicas).unwrap_or(1),
            self.status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0),
        )
    }
}

impl From<Deployment> for SlimDeployment {
    fn from(d: Deployment) -> Self {
        let metadata = SlimMeta::from(d.metadata);
        let spec = d.spec.map(|s| SlimDeploymentSpec {
            replicas: s.replicas,
            progress_deadline_seconds: s.progress_deadline_seconds,
            template: SlimTemplate::from(s.template),
        });
        let status = d.status.map(|s| SlimDeploymentStatus {
            replicas: s.replicas,
            ready_replicas: s.ready_replicas,
            conditions: s.conditions.map(|cs| {
                cs.into_iter()
                    .filter(|c| c.type_ == PROGRESSING)
                    .map(|c| DeploymentCondition { message: None, ..c })
                    .collect()
            }),
        });
        let labels = match &spec {
            Some(s) => overlay(&s.template.labels, &metadata.labels),
            None => metadata.labels.clone(),
        };
        SlimDeployment {
            metadata,
            spec,
            status,
            labels,
        }
    }
}

impl Kept<Deployment> for SlimDeployment {
    fn keep(obj: Box<Deployment>) -> Box<Self> {
        Box::new(SlimDeployment::from(*obj))
    }

    fn object(&self) -> Deployment {
        Deployment {
            metadata: self.metadata.to_meta(),
            spec: self.spec.as_ref().map(|s| DeploymentSpec {
                replicas: s.replicas,
                progress_deadline_seconds: s.progress_deadline_seconds,
                template: s.template.to_template(),
                ..Default::default()
            }),
            status: self.status.as_ref().map(|s| DeploymentStatus {
                replicas: s.replicas,
                ready_replicas: s.ready_replicas,
                conditions: s.conditions.clone(),
                ..Default::default()
            }),
        }
    }

    fn key(&self) -> super::ObjKey {
        self.metadata.key()
    }
}

/// What is kept of a ReplicaSet's `spec`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlimReplicaSetSpec {
    /// `replicas`.
    pub replicas: Option<i32>,
    /// `template`.
    pub template: Option<SlimTemplate>,
}

/// What is kept of a ReplicaSet's `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlimReplicaSetStatus {
    /// `replicas`.
    pub replicas: i32,
    /// `readyReplicas`.
    pub ready_replicas: Option<i32>,
}

/// A ReplicaSet reduced to what the console reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlimReplicaSet {
    pub metadata: SlimMeta,
    pub spec: Option<SlimReplicaSetSpec>,
    pub status: Option<SlimReplicaSetStatus>,
    /// The template's labels overlaid with the ReplicaSet's own (the
    /// analysis's labels, shared).
    pub labels: Labels,
}

impl SlimReplicaSet {
    /// The template, if any.
    pub fn template(&self) -> Option<&SlimTemplate> {
        self.spec.as_ref()?.template.as_ref()
    }

    /// The ReplicaSet as the shared analysis sees it (as
    /// [`Workload::from_replica_set`] sees [`Kept::object`], with the same
    /// `deployment_revision`).
    pub fn workload(&self, deployment_revision: Option<&str>) -> Workload {
        let replicas = self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let mut w = workload(
            WorkloadKind::ReplicaSet,
            &self.metadata,
            self.template(),
            &self.labels,
            replicas,
            self.status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0),
        );
        let owned_by_deployment = w.owner.as_ref().is_some_and(|o| o.kind == "Deployment");
        w.is_rollback_revision = owned_by_deployment
            && match (deployment_revision, self.metadata.revision()) {
                (Some(current), Some(own)) => current != own,
                _ => replicas == 0,
            };
        w
    }
}

impl From<ReplicaSet> for SlimReplicaSet {
    fn from(r: ReplicaSet) -> Self {
        let metadata = SlimMeta::from(r.metadata);
        let spec = r.spec.map(|s| SlimReplicaSetSpec {
            replicas: s.replicas,
            template: s.template.map(SlimTemplate::from),
        });
        let status = r.status.map(|s| SlimReplicaSetStatus {
            replicas: s.replicas,
            ready_replicas: s.ready_replicas,
        });
        let labels = match spec.as_ref().and_then(|s| s.template.as_ref()) {
            Some(t) => overlay(&t.labels, &metadata.labels),
            None => metadata.labels.clone(),
        };
        SlimReplicaSet {
            metadata,
            spec,
            status,
            labels,
        }
    }
}

impl Kept<ReplicaSet> for SlimReplicaSet {
    fn keep(obj: Box<ReplicaSet>) -> Box<Self> {
        Box::new(SlimReplicaSet::from(*obj))
    }

    fn object(&self) -> ReplicaSet {
        ReplicaSet {
            metadata: self.metadata.to_meta(),
            spec: self.spec.as_ref().map(|s| ReplicaSetSpec {
                replicas: s.replicas,
                template: s.template.as_ref().map(SlimTemplate::to_template),
                ..Default::default()
            }),
            status: self.status.as_ref().map(|s| ReplicaSetStatus {
                replicas: s.replicas,
                ready_replicas: s.ready_replicas,
                ..Default::default()
            }),
        }
    }

    fn key(&self) -> super::ObjKey {
        self.metadata.key()
    }
}

impl HasSlimMeta for SlimDeployment {
    fn slim_meta(&self) -> &SlimMeta {
        &self.metadata
    }
}

impl HasSlimMeta for SlimReplicaSet {
    fn slim_meta(&self) -> &SlimMeta {
        &self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::super::compact::tests::from;
    use super::*;
    use crate::store::{Kind, Object, Store, ingest};
    use berth_shared::api::meta::REVISION_ANNOTATION;
    use std::sync::Arc;

    fn template(class: &str, esc: &str) -> serde_json::Value {
        serde_json::json!({
            "metadata": {
                "labels": {"app": format!("web{esc}"), "app.kubernetes.io/managed-by": "berth",
                    "berth.dev/service": "api"},
                "annotations": {"berth.dev/runtime-profile": "bounded", "note": "x".repeat(500)}
            },
            "spec": {
                "runtimeClassName": class,
                "containers": [
                    {"name": "app", "image": format!("registry.invalid/web{esc}:2"),
                     "env": [{"name": "A", "value": "x".repeat(1000)}]},
                    {"name": "sidecar", "image": "registry.invalid/side:1"}
                ]
            }
        })
    }

    fn deployment(esc: &str) -> Deployment {
        from(serde_json::json!({
            "metadata": {
                "name": "web", "namespace": "ns", "uid": "u1",
                "labels": {"berth.dev/runtime": format!("web{esc}"), "app": "web-own"},
                "annotations": {REVISION_ANNOTATION: "4", "big": "x".repeat(5000)},
                "ownerReferences": [{"apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
                    "name": "web", "uid": "u0", "controller": true}],
                "managedFields": [{"manager": "berth"}]
            },
            "spec": {"replicas": 3, "progressDeadlineSeconds": 120, "selector": {},
                "template": template("kata", esc)},
            "status": {"replicas": 3, "readyReplicas": 2, "conditions": [
                {"type": "Available", "status": "True"},
                {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
                 "message": "m".repeat(300), "lastUpdateTime": "2026-11-28T12:00:00Z"}
            ]}
        }))
    }

    fn replica_set(name: &str, revision: &str, replicas: i32) -> ReplicaSet {
        from(serde_json::json!({
            "metadata": {
                "name": name, "namespace": "ns",
                "labels": {"pod-template-hash": name},
                "annotations": {REVISION_ANNOTATION: revision},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                    "name": "web", "uid": "u1", "controller": true}]
            },
            "spec": {"replicas": replicas, "selector": {}, "template": template("kata", "")},
            "status": {"replicas": replicas, "readyReplicas": replicas}
        }))
    }

    /// Admitted and kept, the way every watched object gets there.
    fn kept(obj: impl Into<Object>) -> Store {
        let mut store = Store::default();
        store.apply(ingest::admit(obj).expect("admitted"));
        store
    }

    #[test]
    fn a_deployment_keeps_what_the_views_read() {
        let full = deployment("");
        let store = kept(full.clone());
        let key = ("ns".to_string(), "web".to_string());
        let slim = store.deployments.get(&key).expect("kept");
        // The analysis sees the same Deployment, labels and all.
        assert_eq!(slim.workload(), Workload::from_deployment(&full));
        let w = slim.workload();
        assert!(w.managed_by_berth);
        assert_eq!(w.runtime_profile.as_deref(), Some("bounded"));
        assert_eq!(w.labels.get("app").map(String::as_str), Some("web-own"));
        // Its labels are the store's: no copy per conversion.
        assert!(Arc::ptr_eq(&w.labels, &slim.labels));
        // The rollout: revision, deadline, the Progressing condition
        // (without its message), the template's image.
        assert_eq!(slim.metadata.revision(), Some("4"));
        let spec = slim.spec.as_ref().expect("spec");
        assert_eq!(spec.progress_deadline_seconds, Some(120));
        assert_eq!(spec.template.image(), Some("registry.invalid/web:2"));
        let conds = slim.status.as_ref().and_then(|s| s.conditions.as_ref());
        let conds = conds.expect("conditions");
        assert_eq!(conds.len(), 1);
        assert_eq!(conds[0].reason.as_deref(), Some("ReplicaSetUpdated"));
        assert!(conds[0].message.is_none() && conds[0].last_update_time.is_some());
        // The owner index and the classed index.
        let owned: Vec<_> = store
            .links
            .of(Kind::Deployment, "ns", "Runtime", "web")
            .collect();
        assert_eq!(owned, ["web"]);
        assert!(store.classed.keys(Kind::Deployment).any(|k| *k == key));
        // Details until the whole object is read: the reduced object.
        let Some(Object::Deployment(back)) = store.get(Kind::Deployment, &key) else {
            panic!("a deployment");
        };
        assert_eq!(
            Workload::from_deployment(&back),
            Workload::from_deployment(&full)
        );
        assert_eq!(back.metadata.uid.as_deref(), Some("u1"));
        assert!(size_of::<SlimDeployment>() * 4 < size_of::<Deployment>());
    }

    #[test]
    fn replica_sets_are_judged_by_revision_as_the_analysis_judges_them() {
        for (rev, replicas, dep_rev) in [
            ("4", 3, Some("4")),
            ("3", 0, Some("4")),
            ("3", 2, Some("4")),
            ("3", 0, None),
            ("3", 2, None),
        ] {
            let full = replica_set("web-abc", rev, replicas);
            let store = kept(full.clone());
            let slim = store.replicasets.values().next().expect("kept");
            assert_eq!(
                slim.workload(dep_rev),
                Workload::from_replica_set(&full, dep_rev),
                "{rev} {replicas} {dep_rev:?}"
            );
            assert_eq!(
                slim.template().and_then(SlimTemplate::image),
                Some("registry.invalid/web:2")
            );
            let owned: Vec<_> = store
                .links
                .of(Kind::ReplicaSet, "ns", "Deployment", "web")
                .collect();
            assert_eq!(owned, ["web-abc"]);
        }
        // Bare objects convert too.
        let bare: ReplicaSet = from(serde_json::json!({"metadata": {"name": "b"}}));
        let slim = SlimReplicaSet::from(bare.clone());
        assert_eq!(slim.workload(None), Workload::from_replica_set(&bare, None));
        let bare: Deployment = from(serde_json::json!({"metadata": {"name": "b"}}));
        let slim = SlimDeployment::from(bare.clone());
        assert_eq!(slim.workload(), Workload::from_deployment(&bare));
    }

    #[test]
    fn replica_sets_of_one_template_share_their_maps() {
        let a = kept(replica_set("web-a", "1", 1));
        let b = kept(replica_set("web-b", "1", 1));
        let (a, b) = (
            a.replicasets.values().next().expect("a"),
            b.replicasets.values().next().expect("b"),
        );
        let (ta, tb) = (a.template().expect("a"), b.template().expect("b"));
        assert!(Arc::ptr_eq(&ta.labels, &tb.labels));
        assert!(Arc::ptr_eq(&ta.annotations, &tb.annotations));
        // Their own labels differ (the hash): so do the analysis's.
        assert!(!Arc::ptr_eq(&a.labels, &b.labels));
        assert_eq!(
            a.labels.get("pod-template-hash").map(String::as_str),
            Some("web-a")
        );
    }

    #[test]
    fn what_is_kept_was_sanitized() {
        let esc = "\u{1b}]52;c;AAAA\u{7}\u{1b}[2J";
        let store = kept(deployment(esc));
        let slim = store.deployments.values().next().expect("kept");
        assert_eq!(slim.metadata.label("berth.dev/runtime"), Some("web"));
        let t = &slim.spec.as_ref().expect("spec").template;
        assert_eq!(t.labels.get("app").map(String::as_str), Some("web"));
        assert_eq!(t.image(), Some("registry.invalid/web:2"));
        assert!(!slim.labels.values().any(|v| v.contains('\u{1b}')));
        // Only berth's annotations and the revision.
        assert_eq!(slim.metadata.annotations.len(), 1);
        assert_eq!(t.annotations.len(), 1);
    }
}
