//! Golden files and contract checks for the render functions.

use std::collections::BTreeMap;

use super::*;
use crate::api::tests::check_golden;
use crate::render::examples::{Example, examples};

fn render_example(e: &Example) -> Rendered {
    render(&e.runtime, &e.identity, &e.decision).expect("render")
}

fn example(name: &str) -> Example {
    examples()
        .into_iter()
        .find(|e| e.name == name)
        .expect("example")
}

#[test]
fn golden_files_match() {
    for e in examples() {
        let yaml = render_example(&e).to_yaml().expect("yaml");
        check_golden(&format!("shared/src/render/golden/{}.yaml", e.name), &yaml);
    }
}

#[test]
fn rendering_is_deterministic() {
    for e in examples() {
        assert_eq!(render_example(&e), render_example(&e), "{}", e.name);
    }
}

#[test]
fn every_name_and_label_is_valid() {
    for e in examples() {
        for m in render_example(&e).manifests().expect("manifests") {
            let kind = m["kind"].as_str().unwrap_or_default();
            let name = m["metadata"]["name"].as_str().expect("name");
            let max = if kind == "CronJob" { 52 } else { 63 };
            assert!(
                name.len() <= max && names::is_dns1035_label(name),
                "{} {kind} {name}",
                e.name
            );
            let mut label_maps = vec![
                &m["metadata"]["labels"],
                &m["spec"]["template"]["metadata"]["labels"],
            ];
            label_maps.push(&m["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]);
            for labels in label_maps.into_iter().filter_map(|l| l.as_object()) {
                for (k, v) in labels {
                    assert!(
                        names::is_label_value(v.as_str().unwrap_or("!")),
                        "{} {kind} {k}={v}",
                        e.name
                    );
                }
            }
        }
    }
}

fn pod_spec(d: &Rendered) -> &k8s_openapi::api::core::v1::PodSpec {
    d.deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("pod spec")
}

#[test]
fn production_contract() {
    let r = render_example(&example("everything"));
    let pod = pod_spec(&r);
    assert_eq!(pod.automount_service_account_token, Some(false));
    assert_eq!(pod.enable_service_links, Some(false));
    assert_eq!(pod.termination_grace_period_seconds, Some(45 + 6));
    let psc = pod.security_context.as_ref().expect("psc");
    assert_eq!(
        (psc.run_as_non_root, psc.run_as_user, psc.run_as_group),
        (Some(true), Some(10001), Some(10001))
    );
    assert_eq!(
        psc.seccomp_profile.as_ref().map(|s| s.type_.as_str()),
        Some("RuntimeDefault")
    );
    let c = &pod.containers[0];
    let sc = c.security_context.as_ref().expect("sc");
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.privileged, Some(false));
    assert_eq!(
        sc.capabilities.as_ref().and_then(|c| c.drop.clone()),
        Some(vec!["ALL".to_string()])
    );
    let startup = c.startup_probe.as_ref().expect("startup");
    assert_eq!(
        (
            startup.period_seconds,
            startup.timeout_seconds,
            startup.failure_threshold
        ),
        (Some(2), Some(1), Some(30))
    );
    let live = c.liveness_probe.as_ref().expect("live");
    assert_eq!(
        (
            live.period_seconds,
            live.timeout_seconds,
            live.failure_threshold
        ),
        (Some(10), Some(2), Some(3))
    );
    let ready = c.readiness_probe.as_ref().expect("ready");
    assert_eq!(
        (
            ready.period_seconds,
            ready.timeout_seconds,
            ready.failure_threshold
        ),
        (Some(5), Some(2), Some(3))
    );
    assert_eq!(
        ready.http_get.as_ref().and_then(|h| h.path.as_deref()),
        Some("/health/ready")
    );
    let spread = &pod.topology_spread_constraints.as_ref().expect("spread")[0];
    assert_eq!(
        (
            spread.max_skew,
            spread.topology_key.as_str(),
            spread.when_unsatisfiable.as_str()
        ),
        (1, "kubernetes.io/hostname", "ScheduleAnyway")
    );
    let spec = r.deployment.spec.as_ref().expect("spec");
    assert_eq!(spec.revision_history_limit, Some(3));
    let ru = spec
        .strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref())
        .expect("ru");
    assert_eq!(
        ru.max_unavailable,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(0))
    );
    assert_eq!(
        ru.max_surge,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1))
    );
    // Default drain: 30 + 6.
    assert_eq!(
        pod_spec(&render_example(&example("minimal"))).termination_grace_period_seconds,
        Some(36)
    );
    // Every owner reference is the Runtime, as controller.
    for m in r.manifests().expect("manifests") {
        let owner = &m["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "Runtime");
        assert_eq!(owner["controller"], true);
        assert_eq!(owner["uid"], examples::EXAMPLE_UID);
    }
}

#[test]
fn runtime_class_only_when_granted() {
    for e in examples() {
        let r = render_example(&e);
        let mut templates = vec![r.deployment.spec.as_ref().map(|s| &s.template)];
        templates.extend(r.jobs.iter().map(|j| j.spec.as_ref().map(|s| &s.template)));
        templates.extend(r.cron_jobs.iter().map(|c| {
            c.spec
                .as_ref()
                .and_then(|s| s.job_template.spec.as_ref())
                .map(|s| &s.template)
        }));
        for t in templates {
            let t = t.expect("template");
            let class = t.spec.as_ref().and_then(|s| s.runtime_class_name.clone());
            let annotation = t
                .metadata
                .as_ref()
                .and_then(|m| m.annotations.as_ref())
                .and_then(|a| a.get(RUNTIME_PROFILE_ANNOTATION))
                .cloned();
            if e.decision.is_granted() {
                assert_eq!(class.as_deref(), Some("bounded-worker"), "{}", e.name);
                assert_eq!(annotation.as_deref(), Some("bounded-worker"), "{}", e.name);
            } else {
                assert_eq!(class, None, "{}", e.name);
                assert_eq!(
                    annotation, None,
                    "{} must not carry a forged annotation",
                    e.name
                );
            }
        }
    }
}

#[test]
fn operator_labels_win_over_pod_metadata() {
    let r = render_example(&example("pod-metadata-override"));
    let meta = r
        .deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .expect("meta");
    let labels = meta.labels.as_ref().expect("labels");
    assert_eq!(labels["app.kubernetes.io/managed-by"], "berth");
    assert_eq!(labels["app.kubernetes.io/component"], "server");
    assert_eq!(labels["app.kubernetes.io/name"], "worker");
    assert_eq!(labels["berth.dev/runtime"], "worker");
    assert_eq!(labels["berth.dev/project"], "demo");
    assert_eq!(labels["team"], "data");
    let annotations = meta.annotations.as_ref().expect("annotations");
    assert_ne!(annotations[CONFIG_CHECKSUM_ANNOTATION], "forged");
    assert!(!annotations.contains_key(RUNTIME_PROFILE_ANNOTATION));
    assert_eq!(annotations["example.com/keep"], "kept");
    // Selector is only berth's labels.
    let selector = r
        .deployment
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.clone())
        .expect("selector");
    assert_eq!(selector, labels::selector("worker"));
}

#[test]
fn hpa_owns_replicas_and_suspend_is_honoured() {
    let everything = render_example(&example("everything"));
    assert!(everything.horizontal_pod_autoscaler.is_some());
    assert_eq!(
        everything.deployment.spec.as_ref().and_then(|s| s.replicas),
        None,
        "HPA owns replicas"
    );
    assert!(everything.network_policy.is_some());
    assert_eq!(everything.jobs.len(), 1);
    assert_eq!(
        everything.cron_jobs[0]
            .spec
            .as_ref()
            .and_then(|s| s.suspend),
        Some(false)
    );

    let suspended = render_example(&example("suspended"));
    assert_eq!(
        suspended.deployment.spec.as_ref().and_then(|s| s.replicas),
        Some(0)
    );
    assert!(suspended.horizontal_pod_autoscaler.is_none());
    assert!(suspended.jobs.is_empty(), "no new Jobs while suspended");
    assert_eq!(
        suspended.cron_jobs[0].spec.as_ref().and_then(|s| s.suspend),
        Some(true)
    );

    let minimal = render_example(&example("minimal"));
    assert_eq!(
        minimal.deployment.spec.as_ref().and_then(|s| s.replicas),
        Some(2)
    );
    assert!(minimal.network_policy.is_none() && minimal.horizontal_pod_autoscaler.is_none());
}

#[test]
fn config_change_rolls_pods() {
    let mut e = example("everything");
    let before = render_example(&e);
    if let Some(c) = e.runtime.spec.config.as_mut() {
        c.env.insert("LOG_LEVEL".into(), "debug".into());
    }
    let after = render_example(&e);
    let checksum = |r: &Rendered| {
        r.deployment
            .spec
            .as_ref()
            .and_then(|s| s.template.metadata.as_ref())
            .and_then(|m| m.annotations.as_ref())
            .map(|a| a[CONFIG_CHECKSUM_ANNOTATION].clone())
    };
    assert_ne!(checksum(&before), checksum(&after));
    assert_ne!(
        config_checksum(&BTreeMap::from([("A".into(), "BC".into())])),
        config_checksum(&BTreeMap::from([("AB".into(), "C".into())]))
    );
    // Job templates are immutable: no checksum there.
    let job_meta = before.jobs[0]
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .expect("meta");
    assert!(
        job_meta
            .annotations
            .as_ref()
            .is_none_or(|a| !a.contains_key(CONFIG_CHECKSUM_ANNOTATION))
    );
}

#[test]
fn selectors_do_not_pick_job_pods() {
    let r = render_example(&example("everything"));
    let selector = labels::selector("worker");
    let job_labels = r.jobs[0]
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .expect("labels");
    assert!(selector.iter().any(|(k, v)| job_labels.get(k) != Some(v)));
}

#[test]
fn missing_metadata_is_an_error() {
    let e = example("minimal");
    let mut rt = e.runtime.clone();
    rt.metadata.uid = None;
    assert_eq!(
        render(&rt, &e.identity, &e.decision),
        Err(RenderError::MissingUid {
            name: "worker".into()
        })
    );
    rt.metadata.namespace = None;
    assert!(matches!(
        render(&rt, &e.identity, &e.decision),
        Err(RenderError::MissingNamespace { .. })
    ));
    rt.metadata.name = None;
    assert_eq!(
        render(&rt, &e.identity, &e.decision),
        Err(RenderError::MissingName)
    );
}

#[test]
fn network_policy_never_fails_open() {
    let mut e = example("minimal");
    e.runtime.spec.network_policy = Some(crate::api::NetworkPolicySpec {
        enabled: true,
        ingress: Vec::new(),
    });
    let np = render_example(&e)
        .network_policy
        .expect("enabled with no peers still renders a policy");
    let spec = np.spec.expect("spec");
    assert_eq!(
        spec.policy_types.as_deref(),
        Some(&["Ingress".to_string()][..])
    );
    assert_eq!(
        spec.ingress.as_deref().map(<[_]>::len),
        Some(0),
        "no ingress rule: admits nothing"
    );

    // With peers: only from them, only to the http port (9000 by default).
    let everything = render_example(&example("everything"));
    let rules = everything
        .network_policy
        .and_then(|n| n.spec)
        .and_then(|s| s.ingress)
        .expect("rules");
    assert_eq!(rules.len(), 1);
    let ports = rules[0].ports.as_ref().expect("ports");
    assert_eq!(ports.len(), 1);
    assert_eq!(
        ports[0].port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String("http".into()))
    );
    let minimal = render_example(&example("minimal"));
    let container = &pod_spec(&minimal).containers[0];
    assert_eq!(
        container.ports.as_ref().map(|p| p[0].container_port),
        Some(crate::api::DEFAULT_PORT)
    );
    assert_eq!(crate::api::DEFAULT_PORT, 9000);
}

/// podMetadata annotations pass through the allowlist when rendered too:
/// a Runtime stored before the CRD's rule never puts a refused key on its
/// pods (here the kata kernel parameters), the allowed ones stay.
#[test]
fn refused_pod_annotations_never_reach_the_pods() {
    let mut e = example("pod-metadata-override");
    let meta = e
        .runtime
        .spec
        .pod_metadata
        .get_or_insert_with(Default::default);
    meta.annotations.insert(
        "io.katacontainers.config.hypervisor.kernel_params".into(),
        "init=/bin/sh".into(),
    );
    meta.annotations
        .insert("cdi.k8s.io/gpu".into(), "nvidia.com/gpu=all".into());
    let r = render_example(&e);
    let templates = std::iter::once(r.deployment.spec.as_ref().map(|s| &s.template))
        .chain(r.cron_jobs.iter().map(|c| {
            c.spec
                .as_ref()
                .and_then(|s| s.job_template.spec.as_ref())
                .map(|j| &j.template)
        }))
        .chain(r.jobs.iter().map(|j| j.spec.as_ref().map(|s| &s.template)));
    for t in templates.flatten() {
        let annotations = t
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.as_ref())
            .expect("annotations");
        assert_eq!(annotations["example.com/keep"], "kept");
        assert!(
            annotations
                .keys()
                .all(|k| crate::api::pod_annotations::allowed(k)),
            "{annotations:?}"
        );
    }
}
