//! The optional CPU HorizontalPodAutoscaler (autoscaling/v2). While it
//! exists it owns the Deployment's replica count.

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec, MetricSpec,
    MetricTarget, ResourceMetricSource,
};

use crate::api::{DEFAULT_CPU_UTILIZATION, DEFAULT_MAX_REPLICAS, DEFAULT_MIN_REPLICAS};

use super::ctx::Ctx;
use super::labels::Component;

/// `None` when autoscaling is off or the Runtime is suspended (an HPA
/// would scale a suspended Deployment back up).
pub(crate) fn render(ctx: &Ctx<'_>) -> Option<HorizontalPodAutoscaler> {
    if !ctx.autoscaling_on() || ctx.spec.suspend {
        return None;
    }
    let a = ctx.spec.autoscaling.as_ref()?;
    let min = a.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS);
    // The CEL rule guarantees max >= min; clamp anyway so a Runtime admitted
    // before that rule existed cannot produce an invalid HPA.
    let max = a.max_replicas.unwrap_or(DEFAULT_MAX_REPLICAS).max(min);
    Some(HorizontalPodAutoscaler {
        metadata: ctx.meta(&ctx.names.workload, Component::Server),
        spec: Some(HorizontalPodAutoscalerSpec {
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".to_string()),
                kind: "Deployment".to_string(),
                name: ctx.names.workload.clone(),
            },
            min_replicas: Some(min),
            max_replicas: max,
            metrics: Some(vec![MetricSpec {
                type_: "Resource".to_string(),
                resource: Some(ResourceMetricSource {
                    name: "cpu".to_string(),
                    target: MetricTarget {
                        type_: "Utilization".to_string(),
                        average_utilization: Some(
                            a.target_cpu_utilization_percentage
                                .unwrap_or(DEFAULT_CPU_UTILIZATION),
                        ),
                        ..Default::default()
                    },
                }),
                ..Default::default()
            }]),
            behavior: None,
        }),
        ..Default::default()
    })
}
