//! What a held (Blocked) Runtime's objects are measured against, per kind
//! (the pure part is `berth_shared::render::protect`).

use berth_shared::api::LastApplied;
use berth_shared::render::protect;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::ResourceExt;

/// What a held Runtime's object is measured against: by default the
/// rendered one (the objects around the workloads: no foreign edit of them
/// survives a hold); for the workloads and their autoscaler, which must
/// keep running as they are, the rendered contract with the tenant's part
/// taken from a reference (`berth_shared::render::protect`): what berth
/// last applied ([`HeldTarget::recorded`], the Runtime's `status.lastApplied`),
/// or the live object when the status records nothing yet.
pub trait HeldTarget: Clone {
    /// The desired object while held, given the reference.
    fn held_target(rendered: &Self, _reference: &Self) -> Self {
        rendered.clone()
    }

    /// What berth last applied of the object named `name`, as the
    /// Runtime's status records it (None: not recorded).
    fn recorded(_record: &LastApplied, _name: &str) -> Option<Self> {
        None
    }
}

impl HeldTarget for ConfigMap {}
impl HeldTarget for ServiceAccount {}
impl HeldTarget for Service {}
impl HeldTarget for NetworkPolicy {}
impl HeldTarget for PodDisruptionBudget {}
impl HeldTarget for Job {}
impl HeldTarget for Deployment {
    fn held_target(rendered: &Self, reference: &Self) -> Self {
        protect::held_deployment(rendered, reference)
    }
    fn recorded(record: &LastApplied, _name: &str) -> Option<Self> {
        record.parts().ok()?.deployment
    }
}
impl HeldTarget for CronJob {
    fn held_target(rendered: &Self, reference: &Self) -> Self {
        protect::held_cron_job(rendered, reference)
    }
    fn recorded(record: &LastApplied, name: &str) -> Option<Self> {
        record
            .parts()
            .ok()?
            .cron_jobs
            .into_iter()
            .find(|c| c.name_any() == name)
    }
}
impl HeldTarget for HorizontalPodAutoscaler {
    fn held_target(rendered: &Self, reference: &Self) -> Self {
        match &reference.spec {
            Some(spec) => protect::held_autoscaler(rendered, spec),
            None => rendered.clone(),
        }
    }
    fn recorded(record: &LastApplied, _name: &str) -> Option<Self> {
        record
            .parts()
            .ok()?
            .autoscaler
            .map(|spec| HorizontalPodAutoscaler {
                spec: Some(spec),
                ..Default::default()
            })
    }
}
