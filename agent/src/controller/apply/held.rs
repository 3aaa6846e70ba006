//! What a held (Blocked) Runtime's objects are measured against, per kind
//! (the pure part is `berth_shared::render::protect`).

use berth_shared::render::protect;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

/// What a held Runtime's object is measured against: by default the
/// rendered one (the objects around the workloads: no foreign edit of them
/// survives a hold); for the workloads, which must keep running as they
/// are, the rendered contract with the tenant's part taken from the live
/// object (`berth_shared::render::protect`).
pub trait Held: Clone {
    /// The desired object while held, given the live one.
    fn held(rendered: &Self, _live: &Self) -> Self {
        rendered.clone()
    }
}

impl Held for ConfigMap {}
impl Held for ServiceAccount {}
impl Held for Service {}
impl Held for NetworkPolicy {}
impl Held for PodDisruptionBudget {}
impl Held for HorizontalPodAutoscaler {}
impl Held for Job {}
impl Held for Deployment {
    fn held(rendered: &Self, live: &Self) -> Self {
        protect::held_deployment(rendered, live)
    }
}
impl Held for CronJob {
    fn held(rendered: &Self, live: &Self) -> Self {
        protect::held_cron_job(rendered, live)
    }
}
