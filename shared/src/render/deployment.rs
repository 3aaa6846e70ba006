//! The Deployment running the server pods.

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::api::DEFAULT_REPLICAS;

use super::ctx::Ctx;
use super::labels::{self, Component};
use super::pod_template::{PodKind, pod_template};

/// Old ReplicaSets kept for rollback. Few, because each one that names a
/// RuntimeClass keeps that class "in use" (see the console's Retained view).
pub const REVISION_HISTORY_LIMIT: i32 = 3;

/// The replica count to write: zero while suspended; none while the HPA is
/// on, so the HPA's count is never fought over by server-side apply; else
/// the spec's (default 2).
pub fn desired_replicas(ctx: &Ctx<'_>) -> Option<i32> {
    if ctx.spec.suspend {
        Some(0)
    } else if ctx.autoscaling_on() {
        None
    } else {
        Some(ctx.spec.replicas.unwrap_or(DEFAULT_REPLICAS))
    }
}

pub(crate) fn render(ctx: &Ctx<'_>) -> Deployment {
    let kind = PodKind {
        component: Component::Server,
        job: None,
        command: &[],
        args: &[],
        checksum: true,
    };
    Deployment {
        metadata: ctx.meta(&ctx.names.workload, Component::Server),
        spec: Some(DeploymentSpec {
            replicas: desired_replicas(ctx),
            selector: LabelSelector {
                match_labels: Some(labels::selector(ctx.name)),
                match_expressions: None,
            },
            // Never below the desired count during a rollout: one extra pod
            // at a time comes up, gets ready, then an old one goes.
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".to_string()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_unavailable: Some(IntOrString::Int(0)),
                    max_surge: Some(IntOrString::Int(1)),
                }),
            }),
            revision_history_limit: Some(REVISION_HISTORY_LIMIT),
            template: pod_template(ctx, &kind),
            ..Default::default()
        }),
        ..Default::default()
    }
}
