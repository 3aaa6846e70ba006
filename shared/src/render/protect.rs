//! What a held (Blocked) Runtime's existing objects are kept at
//! (docs/architecture.md §5, "Blocked"; docs/runtime-semantics.md).
//!
//! Blocked stops the tenant's changes, not the protection: the agent still
//! removes what the production contract forbids and recreates missing
//! dependencies, but the pods keep their current class, image and
//! template. So the desired object a correction is measured against is the
//! *rendered* one (the contract: security contexts, volumes, containers,
//! service account, host namespaces, …) with everything the tenant's spec
//! controls taken from the *live* object instead. Taking the tenant's
//! part from the live object, rather than the contract's part from the
//! render, means a field forgotten here stays at the rendered (safe)
//! value: at worst a spec change reaches a held object with a correction,
//! never a forbidden field survives one.
//!
//! Only the workloads are measured this way: they are what runs with the
//! class. The objects around them (ConfigMap, ServiceAccount, Service,
//! PodDisruptionBudget, NetworkPolicy) are measured against the current
//! rendering, so that no foreign edit of them survives a hold.
//!
//! Pure: the agent pairs each rendered object with its live copy.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::PodTemplateSpec;

/// Template annotations that set a security profile: never carried over
/// from the live template (the contract sets the profiles).
const PROFILE_ANNOTATION_PREFIXES: &[&str] = &[
    "container.apparmor.security.beta.kubernetes.io/",
    "seccomp.security.alpha.kubernetes.io/",
];

/// The rendered pod template with what the tenant's spec controls taken
/// from `live`: the template's labels and annotations (pod metadata, the
/// config checksum, the profile), the RuntimeClass, placement (node
/// selector, tolerations, affinity), the grace period, and each rendered
/// container's image, command, arguments, resources and port numbers.
/// Everything else — the contract — is the rendered one.
pub fn held_template(rendered: &PodTemplateSpec, live: &PodTemplateSpec) -> PodTemplateSpec {
    let mut out = rendered.clone();
    let mut metadata = live.metadata.clone().unwrap_or_default();
    if let Some(annotations) = metadata.annotations.as_mut() {
        annotations.retain(|k, _| !PROFILE_ANNOTATION_PREFIXES.iter().any(|p| k.starts_with(p)));
    }
    out.metadata = Some(metadata);
    let (Some(spec), Some(l)) = (out.spec.as_mut(), live.spec.as_ref()) else {
        return out;
    };
    spec.runtime_class_name = l.runtime_class_name.clone();
    spec.node_selector = l.node_selector.clone();
    spec.tolerations = l.tolerations.clone();
    spec.affinity = l.affinity.clone();
    spec.termination_grace_period_seconds = l.termination_grace_period_seconds;
    for c in &mut spec.containers {
        let Some(lc) = l.containers.iter().find(|lc| lc.name == c.name) else {
            continue;
        };
        c.image = lc.image.clone();
        c.command = lc.command.clone();
        c.args = lc.args.clone();
        c.resources = lc.resources.clone();
        for port in c.ports.iter_mut().flatten() {
            if let Some(lp) = lc.ports.iter().flatten().find(|lp| lp.name == port.name) {
                port.container_port = lp.container_port;
            }
        }
    }
    out
}

/// The held Deployment: [`held_template`], and the live replica count.
pub fn held_deployment(rendered: &Deployment, live: &Deployment) -> Deployment {
    let mut out = rendered.clone();
    if let (Some(o), Some(l)) = (out.spec.as_mut(), live.spec.as_ref()) {
        o.replicas = l.replicas;
        o.template = held_template(&o.template, &l.template);
    }
    out
}

/// The held CronJob: the live schedule, suspension, concurrency policy and
/// Job limits, and [`held_template`].
pub fn held_cron_job(rendered: &CronJob, live: &CronJob) -> CronJob {
    let mut out = rendered.clone();
    let (Some(o), Some(l)) = (out.spec.as_mut(), live.spec.as_ref()) else {
        return out;
    };
    o.schedule = l.schedule.clone();
    o.time_zone = l.time_zone.clone();
    o.suspend = l.suspend;
    o.concurrency_policy = l.concurrency_policy.clone();
    if let (Some(oj), Some(lj)) = (o.job_template.spec.as_mut(), l.job_template.spec.as_ref()) {
        oj.backoff_limit = lj.backoff_limit;
        oj.active_deadline_seconds = lj.active_deadline_seconds;
        oj.template = held_template(&oj.template, &lj.template);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ExposeSpec, PodMetadataSpec, ResourceAmounts, ResourcesSpec, SchedulingSpec};
    use crate::contract;
    use crate::decide::Decision;
    use crate::render::examples::{Example, examples};
    use crate::render::{Rendered, render};
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn example(name: &str) -> Example {
        examples()
            .into_iter()
            .find(|e| e.name == name)
            .expect("example")
    }

    fn rendered(e: &Example) -> Rendered {
        render(&e.runtime, &e.identity, &e.decision).expect("render")
    }

    /// What the contract finds on `live` against `desired` (Deployments).
    fn violations(live: &Deployment, desired: &Deployment) -> Vec<contract::Violation> {
        let json = |d: &Deployment| serde_json::to_value(d).expect("json");
        contract::violations(contract::Kind::Deployment, &json(live), &json(desired))
    }

    fn pod(d: &Deployment) -> &PodSpec {
        d.spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .expect("pod spec")
    }

    /// The Runtime as it ran (granted, everything set), then every spec
    /// field a tenant controls changed, and the grant gone (blocked).
    fn ran_and_changed() -> (Rendered, Rendered) {
        let ran = example("everything");
        let before = rendered(&ran);
        let mut changed = ran.clone();
        let spec = &mut changed.runtime.spec;
        spec.image.tag = Some("evil".into());
        spec.replicas = Some(7);
        spec.resources = Some(ResourcesSpec {
            requests: Some(ResourceAmounts {
                cpu: Some(Quantity("3".into())),
                memory: None,
                ephemeral_storage: None,
            }),
            limits: None,
        });
        spec.scheduling = Some(SchedulingSpec::default());
        spec.expose = Some(ExposeSpec {
            port: Some(9999),
            type_: None,
        });
        spec.pod_metadata = Some(PodMetadataSpec {
            labels: [("new".to_string(), "label".to_string())].into(),
            annotations: Default::default(),
        });
        spec.shutdown_drain_timeout_seconds = Some(1);
        if let Some(c) = spec.config.as_mut() {
            c.env.insert("NEW".into(), "value".into());
        }
        for s in &mut spec.schedules {
            s.schedule = "1 1 * * *".into();
            s.command = vec!["other".into()];
        }
        changed.decision = Decision::NotRequested;
        let after = rendered(&changed);
        (before, after)
    }

    #[test]
    fn a_held_template_is_the_live_one_when_nothing_forbidden_was_added() {
        let (before, after) = ran_and_changed();
        assert_ne!(
            before.deployment.spec.as_ref().map(|s| &s.template),
            after.deployment.spec.as_ref().map(|s| &s.template),
            "the spec change would roll the pods"
        );
        let held = held_deployment(&after.deployment, &before.deployment);
        assert_eq!(
            held.spec.as_ref().map(|s| &s.template),
            before.deployment.spec.as_ref().map(|s| &s.template),
            "held: the pods keep their class, image and template"
        );
        assert_eq!(
            held.spec.as_ref().and_then(|s| s.replicas),
            before.deployment.spec.as_ref().and_then(|s| s.replicas)
        );
        assert!(violations(&before.deployment, &held).is_empty());
        for (live, desired) in before.cron_jobs.iter().zip(&after.cron_jobs) {
            let held = held_cron_job(desired, live);
            assert_eq!(held.spec, live.spec, "{:?}", live.metadata.name);
        }
    }

    #[test]
    fn what_the_contract_forbids_is_not_carried_over() {
        let (before, after) = ran_and_changed();
        let mut live = before.deployment.clone();
        let template = &mut live.spec.as_mut().expect("spec").template;
        template
            .metadata
            .get_or_insert_with(Default::default)
            .annotations
            .get_or_insert_with(Default::default)
            .insert(
                "container.apparmor.security.beta.kubernetes.io/app".into(),
                "unconfined".into(),
            );
        let spec = template.spec.as_mut().expect("pod");
        spec.host_network = Some(true);
        spec.host_pid = Some(true);
        spec.service_account_name = Some("admin".into());
        spec.automount_service_account_token = Some(true);
        spec.containers.push(Container {
            name: "sidecar".into(),
            image: Some("evil".into()),
            ..Default::default()
        });
        let app = &mut spec.containers[0];
        app.security_context = None;
        app.env = Some(vec![k8s_openapi::api::core::v1::EnvVar {
            name: "LD_PRELOAD".into(),
            value: Some("/evil.so".into()),
            ..Default::default()
        }]);
        assert!(!violations(&live, &before.deployment).is_empty());

        let held = held_deployment(&after.deployment, &live);
        let p = pod(&held);
        assert_eq!(p.host_network, None);
        assert_eq!(p.host_pid, None);
        assert_eq!(
            p.service_account_name,
            pod(&before.deployment).service_account_name
        );
        assert_eq!(p.automount_service_account_token, Some(false));
        assert_eq!(p.containers.len(), 1);
        assert_eq!(p.containers[0].env, None);
        assert_eq!(
            p.containers[0].security_context,
            pod(&before.deployment).containers[0].security_context
        );
        // Kept from the live pods: class and image.
        assert_eq!(
            p.runtime_class_name,
            pod(&before.deployment).runtime_class_name
        );
        assert!(p.runtime_class_name.is_some(), "the class it ran with");
        assert_eq!(
            p.containers[0].image,
            pod(&before.deployment).containers[0].image
        );
        let annotations = held
            .spec
            .as_ref()
            .and_then(|s| s.template.metadata.as_ref())
            .and_then(|m| m.annotations.clone())
            .unwrap_or_default();
        assert!(!annotations.keys().any(|k| k.contains("apparmor")));
        // Corrected, it is exactly what ran before.
        assert_eq!(
            held.spec.as_ref().map(|s| &s.template),
            before.deployment.spec.as_ref().map(|s| &s.template)
        );
    }
}
