//! What a held (Blocked) Runtime's existing objects are kept at
//! (docs/architecture.md §5, "Blocked"; docs/runtime-semantics.md).
//!
//! Blocked stops the tenant's changes, not the protection: the agent still
//! removes what the production contract forbids and recreates missing
//! dependencies, but the pods keep their current class, image and
//! template. So the desired object a correction is measured against is the
//! *rendered* one (the contract: security contexts, volumes, containers,
//! service account, host namespaces, …) with everything the tenant's spec
//! controls taken from a *reference* instead: what berth last applied of
//! it ([`last_applied`], recorded in the Runtime's status, which only the
//! agent writes). Taking the tenant's part from the reference, rather than
//! the contract's part from the render, means a field forgotten here stays
//! at the rendered (safe) value: at worst a spec change reaches a held
//! object with a correction, never a forbidden field survives one.
//!
//! The reference is not the live object: measured against itself, every
//! edit made *while* held would be "the tenant's part" and stay — a
//! `kubectl scale`, a new image, a template annotation, an HPA's bounds
//! (issue 52). The live object is the reference only for a Runtime whose
//! status records nothing yet (last applied by an agent before this
//! record existed).
//!
//! Only the workloads and their autoscaler are measured this way: they are
//! what runs with the class. The objects around them (ConfigMap,
//! ServiceAccount, Service, PodDisruptionBudget, NetworkPolicy) are
//! measured against the current rendering, so that no foreign edit of them
//! survives a hold.
//!
//! Pure: the agent pairs each rendered object with its reference.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec,
};
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{Container, ContainerPort, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::Rendered;
use crate::api::LastAppliedParts;

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
        // The podMetadata allowlist: no key a runtime or a Kubernetes
        // component reads is carried over from the reference.
        annotations.retain(|k, _| crate::api::pod_annotations::allowed(k));
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

/// The held Deployment: [`held_template`], and the reference's replica count.
pub fn held_deployment(rendered: &Deployment, live: &Deployment) -> Deployment {
    let mut out = rendered.clone();
    if let (Some(o), Some(l)) = (out.spec.as_mut(), live.spec.as_ref()) {
        o.replicas = l.replicas;
        o.template = held_template(&o.template, &l.template);
    }
    out
}

/// The held CronJob: the reference's schedule, suspension, concurrency
/// policy and Job limits, and [`held_template`].
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

/// The held HorizontalPodAutoscaler: the rendered one (the target, no
/// `behavior`) with the reference's bounds and metrics (what
/// `spec.autoscaling` sets).
pub fn held_autoscaler(
    rendered: &HorizontalPodAutoscaler,
    reference: &HorizontalPodAutoscalerSpec,
) -> HorizontalPodAutoscaler {
    let mut out = rendered.clone();
    if let Some(o) = out.spec.as_mut() {
        o.min_replicas = reference.min_replicas;
        o.max_replicas = reference.max_replicas;
        o.metrics = reference.metrics.clone();
    }
    out
}

/// The autoscaler a held Runtime is measured against when its current
/// spec renders none (autoscaling switched off while held): the rendered
/// Deployment's metadata (an HPA's is the same) and target, its bounds
/// taken from the reference by [`held_autoscaler`].
pub fn autoscaler_stand_in(deployment: &Deployment) -> HorizontalPodAutoscaler {
    HorizontalPodAutoscaler {
        metadata: deployment.metadata.clone(),
        spec: Some(HorizontalPodAutoscalerSpec {
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".to_string()),
                kind: "Deployment".to_string(),
                name: deployment.metadata.name.clone().unwrap_or_default(),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The record of what berth applied (`status.lastApplied`, kept as
/// [`crate::api::LastApplied`]): each workload reduced to its tenant's part. Defined through the held functions
/// themselves (`held(skeleton, applied)`, a skeleton holding only the
/// names they match by), so the record holds exactly what a hold takes
/// from it: `held(rendered, record) == held(rendered, applied)`.
pub fn last_applied(rendered: &Rendered) -> LastAppliedParts {
    LastAppliedParts {
        deployment: Some(held_deployment(
            &skeleton_deployment(&rendered.deployment),
            &rendered.deployment,
        )),
        cron_jobs: rendered
            .cron_jobs
            .iter()
            .map(|c| held_cron_job(&skeleton_cron_job(c), c))
            .collect(),
        autoscaler: rendered
            .horizontal_pod_autoscaler
            .as_ref()
            .and_then(|h| h.spec.as_ref())
            .and_then(|spec| {
                let skeleton = HorizontalPodAutoscaler {
                    spec: Some(HorizontalPodAutoscalerSpec::default()),
                    ..Default::default()
                };
                held_autoscaler(&skeleton, spec).spec
            }),
    }
}

/// The template's containers by name (and their ports by name), nothing else.
fn skeleton_template(t: &PodTemplateSpec) -> PodTemplateSpec {
    let containers = t
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .map(|c| Container {
            name: c.name.clone(),
            ports: c.ports.as_ref().map(|ports| {
                ports
                    .iter()
                    .map(|p| ContainerPort {
                        name: p.name.clone(),
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        })
        .collect();
    PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers,
            ..Default::default()
        }),
    }
}

fn skeleton_deployment(d: &Deployment) -> Deployment {
    Deployment {
        spec: Some(DeploymentSpec {
            template: d
                .spec
                .as_ref()
                .map(|s| skeleton_template(&s.template))
                .unwrap_or_default(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn skeleton_cron_job(c: &CronJob) -> CronJob {
    let template = c
        .spec
        .as_ref()
        .and_then(|s| s.job_template.spec.as_ref())
        .map(|j| skeleton_template(&j.template))
        .unwrap_or_default();
    CronJob {
        metadata: ObjectMeta {
            name: c.metadata.name.clone(),
            ..Default::default()
        },
        spec: Some(CronJobSpec {
            job_template: JobTemplateSpec {
                metadata: None,
                spec: Some(JobSpec {
                    template,
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
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

    /// The record holds exactly what a hold takes: measured against it, a
    /// held workload is what it is measured against the whole applied
    /// object — for every example, every workload and the autoscaler.
    #[test]
    fn the_record_holds_what_a_hold_takes() {
        let (_, after) = ran_and_changed();
        for e in examples() {
            let applied = rendered(&e);
            let record = last_applied(&applied);
            let d = record.deployment.as_ref().expect("deployment recorded");
            assert_eq!(
                held_deployment(&after.deployment, d),
                held_deployment(&after.deployment, &applied.deployment),
                "{}",
                e.name
            );
            assert_eq!(record.cron_jobs.len(), applied.cron_jobs.len());
            for (c, whole) in record.cron_jobs.iter().zip(&applied.cron_jobs) {
                assert_eq!(c.metadata.name, whole.metadata.name);
                for desired in &after.cron_jobs {
                    assert_eq!(
                        held_cron_job(desired, c),
                        held_cron_job(desired, whole),
                        "{}",
                        e.name
                    );
                }
            }
            match (&applied.horizontal_pod_autoscaler, &record.autoscaler) {
                (Some(h), Some(spec)) => {
                    let base = autoscaler_stand_in(&after.deployment);
                    assert_eq!(
                        held_autoscaler(&base, spec),
                        held_autoscaler(&base, h.spec.as_ref().expect("spec")),
                    );
                }
                (None, None) => {}
                other => panic!("{}: autoscaler recorded wrongly: {other:?}", e.name),
            }
            let size = serde_json::to_string(&record).expect("json").len();
            eprintln!("{}: status.lastApplied is {size} bytes", e.name);
        }
    }

    /// What is edited on the live workloads while held is undone: measured
    /// against the record, the replica count, image, class, placement and
    /// template metadata are what berth applied, whatever the live object
    /// says (against the live object itself, every such edit stayed).
    #[test]
    fn an_edit_made_while_held_is_not_the_tenants_part() {
        // Without autoscaling: berth owns the replica count.
        let mut ran = example("everything");
        ran.runtime.spec.autoscaling = None;
        let before = rendered(&ran);
        let mut changed = ran.clone();
        changed.runtime.spec.image.tag = Some("next".into());
        changed.decision = Decision::NotRequested;
        let after = rendered(&changed);
        let record = last_applied(&before);
        let mut live = before.deployment.clone();
        let spec = live.spec.as_mut().expect("spec");
        spec.replicas = Some(50);
        let template = &mut spec.template;
        template
            .metadata
            .get_or_insert_with(Default::default)
            .annotations
            .get_or_insert_with(Default::default)
            .insert("example.com/while-held".into(), "init=/bin/sh".into());
        let pod = template.spec.as_mut().expect("pod");
        pod.runtime_class_name = Some("unbounded".into());
        pod.node_selector = Some([("pool".to_string(), "payments".to_string())].into());
        pod.containers[0].image = Some("registry.invalid/evil:1".into());

        let against_live = held_deployment(&after.deployment, &live);
        assert!(
            violations(&live, &against_live).is_empty(),
            "measured against itself, the edit is the tenant's part"
        );
        let held = held_deployment(
            &after.deployment,
            record.deployment.as_ref().expect("recorded"),
        );
        assert_eq!(held, held_deployment(&after.deployment, &before.deployment));
        let found: Vec<String> = violations(&live, &held)
            .iter()
            .map(|v| v.path.clone())
            .collect();
        for path in [
            "spec.replicas",
            "spec.template.metadata.annotations.example.com/while-held",
            "spec.template.spec.runtimeClassName",
            "spec.template.spec.nodeSelector",
            "spec.template.spec.containers[app].image",
        ] {
            assert!(
                found.iter().any(|f| f.starts_with(path)),
                "{path} in {found:#?}"
            );
        }
    }

    /// The autoscaler is held to the recorded bounds and metrics; its
    /// target and `behavior` are the contract's (rendered).
    #[test]
    fn a_held_autoscaler_takes_bounds_and_metrics_from_the_reference() {
        let e = example("everything");
        let applied = rendered(&e);
        let hpa = applied
            .horizontal_pod_autoscaler
            .clone()
            .expect("the example autoscales");
        let mut edited = hpa.spec.clone().expect("spec");
        edited.max_replicas = 99;
        edited.min_replicas = Some(50);
        edited.behavior = Some(Default::default());
        let held = held_autoscaler(&hpa, &edited);
        let spec = held.spec.expect("spec");
        assert_eq!(spec.max_replicas, 99);
        assert_eq!(spec.min_replicas, Some(50));
        assert_eq!(spec.behavior, None, "behavior is the contract's");
        let stand_in = autoscaler_stand_in(&applied.deployment);
        assert_eq!(stand_in.metadata, hpa.metadata);
        let from_record = held_autoscaler(
            &stand_in,
            last_applied(&applied)
                .autoscaler
                .as_ref()
                .expect("recorded"),
        );
        assert_eq!(
            from_record, hpa,
            "the stand-in held to the record is the rendering"
        );
    }
}
