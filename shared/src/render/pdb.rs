//! The PodDisruptionBudget: voluntary disruptions (drains) take at most one
//! server pod at a time.

use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::ctx::Ctx;
use super::labels::{self, Component};

pub(crate) fn render(ctx: &Ctx<'_>) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: ctx.meta(&ctx.names.workload, Component::Server),
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(1)),
            selector: Some(LabelSelector {
                match_labels: Some(labels::selector(ctx.name)),
                match_expressions: None,
            }),
            // Pods that are not Ready protect nothing; letting them be
            // evicted keeps a crash-looping Runtime from blocking node drains.
            unhealthy_pod_eviction_policy: Some("AlwaysAllow".to_string()),
            ..Default::default()
        }),
        ..Default::default()
    }
}
