//! Builders for the status condition tables (`status::*` tests): a Runtime,
//! its decisions, nodes, and Deployments and ReplicaSets in every rollout
//! state.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentCondition, DeploymentSpec, DeploymentStatus, ReplicaSet, ReplicaSetSpec,
    ReplicaSetStatus,
};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::analysis::NodeInfo;
use crate::api::meta::REVISION_ANNOTATION;
use crate::api::{ImageSpec, Runtime, RuntimeSpec};
use crate::decide::{Decision, Identity};

pub fn runtime() -> Runtime {
    let mut rt = Runtime::new(
        "web",
        RuntimeSpec {
            application: "analytics".into(),
            service: "web".into(),
            image: ImageSpec {
                repository: "img".into(),
                tag: Some("2".into()),
                digest: None,
            },
            ..Default::default()
        },
    );
    rt.metadata.namespace = Some("team".into());
    rt
}

pub fn identity() -> Identity {
    Identity {
        project: "demo".into(),
        environment: "production".into(),
        application: "analytics".into(),
        service: "web".into(),
    }
}

pub fn granted() -> Decision {
    Decision::Granted {
        alias: "p".into(),
        runtime_class: "gvisor".into(),
        handler: "runsc".into(),
    }
}

pub fn not_granted() -> Decision {
    Decision::NotGranted {
        alias: "p".into(),
        detail: "no binding".into(),
        reason: crate::api::reasons::NOT_GRANTED,
    }
}

pub fn revoked() -> Decision {
    Decision::Revoked {
        alias: "p".into(),
        runtime_class: Some("gvisor".into()),
        detail: "the binding is gone".into(),
    }
}

pub fn class_missing() -> Decision {
    Decision::ClassMissing {
        alias: "p".into(),
        runtime_class: "gvisor".into(),
        handler: "runsc".into(),
    }
}

pub fn handler_mismatch() -> Decision {
    Decision::HandlerMismatch {
        alias: "p".into(),
        runtime_class: "gvisor".into(),
        expected: "runsc".into(),
        actual: "runc".into(),
    }
}

pub fn class_unsupported() -> Decision {
    Decision::ClassUnsupported {
        alias: "p".into(),
        runtime_class: "gvisor".into(),
        handler: "runsc".into(),
        overhead: true,
        scheduling: false,
    }
}

pub fn class_deleting() -> Decision {
    Decision::ClassDeleting {
        alias: "p".into(),
        runtime_class: "gvisor".into(),
        handler: "runsc".into(),
    }
}

/// A Ready or NotReady node; `handler` None reports no handler list.
pub fn node(name: &str, ready: bool, handler: Option<&str>) -> NodeInfo {
    NodeInfo {
        name: name.into(),
        ready,
        unschedulable: false,
        handlers: handler
            .map(|h| BTreeSet::from([h.to_string()]))
            .unwrap_or_default(),
        reports_handlers: handler.is_some(),
        labels: BTreeMap::new(),
        taints: Vec::new(),
    }
}

pub fn deployment_cond(type_: &str, status: &str, reason: &str) -> DeploymentCondition {
    DeploymentCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        ..Default::default()
    }
}

pub fn deadline_exceeded() -> DeploymentCondition {
    deployment_cond("Progressing", "False", "ProgressDeadlineExceeded")
}

/// Every replica updated, ready and available; Available True.
pub fn complete(replicas: i32) -> DeploymentStatus {
    DeploymentStatus {
        replicas: Some(replicas),
        updated_replicas: Some(replicas),
        ready_replicas: Some(replicas),
        available_replicas: Some(replicas),
        conditions: Some(vec![deployment_cond(
            "Available",
            "True",
            "MinimumReplicasAvailable",
        )]),
        ..Default::default()
    }
}

/// `done` of `replicas` updated, ready and available.
pub fn progressing_status(replicas: i32, done: i32) -> DeploymentStatus {
    DeploymentStatus {
        replicas: Some(replicas),
        updated_replicas: Some(done),
        ready_replicas: Some(done),
        available_replicas: Some(done),
        unavailable_replicas: Some(replicas - done),
        ..Default::default()
    }
}

fn template(image: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some(image.into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
    }
}

pub fn deployment(replicas: i32, status: DeploymentStatus, revision: Option<&str>) -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            annotations: revision
                .map(|r| BTreeMap::from([(REVISION_ANNOTATION.to_string(), r.to_string())])),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            template: template("img:2"),
            ..Default::default()
        }),
        status: Some(status),
    }
}

pub fn deployment_with_image(replicas: i32, status: DeploymentStatus, image: &str) -> Deployment {
    let mut d = deployment(replicas, status, Some("1"));
    if let Some(spec) = d.spec.as_mut() {
        spec.template = template(image);
    }
    d
}

pub fn replica_set(name: &str, revision: &str, image: &str, ready: i32) -> ReplicaSet {
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            annotations: Some(BTreeMap::from([(
                REVISION_ANNOTATION.to_string(),
                revision.to_string(),
            )])),
            ..Default::default()
        },
        spec: Some(ReplicaSetSpec {
            template: Some(template(image)),
            ..Default::default()
        }),
        status: Some(ReplicaSetStatus {
            ready_replicas: Some(ready),
            ..Default::default()
        }),
    }
}
