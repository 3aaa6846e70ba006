//! The production pod contract (docs/architecture.md §5), shared by the Deployment, Job
//! and CronJob pod templates. Nothing here comes from the team's spec except
//! image, resources, command/args, placement and extra metadata — the
//! security settings cannot be weakened from a Runtime.
//!
//! The pull policy follows the image reference: `Always` for a tag (the
//! kubelet then asks the registry, with the pod's credentials, at every
//! start: on a node shared by tenants a cached private image is never
//! usable without them), `IfNotPresent` for a digest (content-addressed:
//! the bytes cannot change; multi-tenant nodes should also enable the
//! kubelet's ensure-secret-pulled-images feature, which re-checks
//! credentials for cached images).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMapEnvSource, Container, ContainerPort, EmptyDirVolumeSource,
    EnvFromSource, HTTPGetAction, PodSecurityContext, PodSpec, PodTemplateSpec, Probe,
    SeccompProfile, SecurityContext, TopologySpreadConstraint, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::api::{DEFAULT_DRAIN_SECONDS, GRACE_MARGIN_SECONDS};

use super::ctx::{Ctx, HTTP_PORT_NAME};
use super::labels::{self, CONFIG_CHECKSUM_ANNOTATION, Component, RUNTIME_PROFILE_ANNOTATION};

/// The non-root uid and gid every container runs as.
pub const RUN_AS_ID: i64 = 10001;
/// The one container's name.
pub const CONTAINER_NAME: &str = "app";
/// Liveness and startup probe path.
pub const LIVE_PATH: &str = "/health/live";
/// Readiness probe path.
pub const READY_PATH: &str = "/health/ready";

/// The termination grace period: the drain timeout plus a margin so the
/// process can exit after draining before SIGKILL.
pub fn termination_grace_seconds(drain: Option<i32>) -> i64 {
    i64::from(drain.unwrap_or(DEFAULT_DRAIN_SECONDS)) + GRACE_MARGIN_SECONDS
}

fn probe(path: &str, period: i32, timeout: i32, failures: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_string()),
            port: IntOrString::String(HTTP_PORT_NAME.to_string()),
            scheme: Some("HTTP".to_string()),
            ..Default::default()
        }),
        period_seconds: Some(period),
        timeout_seconds: Some(timeout),
        failure_threshold: Some(failures),
        success_threshold: Some(1),
        ..Default::default()
    }
}

/// The contract's container security context (also the canary's:
/// `crate::attest::job`).
pub(crate) fn container_security_context() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        privileged: Some(false),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        run_as_user: Some(RUN_AS_ID),
        run_as_group: Some(RUN_AS_ID),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_string()]),
            add: None,
        }),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".to_string(),
            localhost_profile: None,
        }),
        ..Default::default()
    }
}

/// The contract's pod security context (also the canary's).
pub(crate) fn pod_security_context() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(RUN_AS_ID),
        run_as_group: Some(RUN_AS_ID),
        fs_group: Some(RUN_AS_ID),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".to_string(),
            localhost_profile: None,
        }),
        ..Default::default()
    }
}

/// What kind of pod a template is for.
pub(crate) struct PodKind<'a> {
    pub component: Component,
    /// `jobs[]`/`schedules[]` entry name, for the `berth.dev/job` label.
    pub job: Option<&'a str>,
    pub command: &'a [String],
    pub args: &'a [String],
    /// Whether the template carries the config checksum annotation. Job
    /// templates are immutable, so a Job never gets it (a config change
    /// must not make the Job un-appliable).
    pub checksum: bool,
}

/// The pod template for `kind`.
pub(crate) fn pod_template(ctx: &Ctx<'_>, kind: &PodKind<'_>) -> PodTemplateSpec {
    let (pod_labels, annotations, runtime_class_name) = pod_metadata(ctx, kind);
    let spec = pod_spec(ctx, kind, container(ctx, kind), runtime_class_name);
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_labels),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..Default::default()
        }),
        spec: Some(spec),
    }
}

/// The pod's labels and annotations (the team's, with berth's own
/// winning), and the RuntimeClass a granted profile puts it on.
fn pod_metadata(
    ctx: &Ctx<'_>,
    kind: &PodKind<'_>,
) -> (
    BTreeMap<String, String>,
    BTreeMap<String, String>,
    Option<String>,
) {
    let mut owned = labels::common(ctx.name, ctx.identity, kind.component);
    if let Some(job) = kind.job {
        owned.insert(
            labels::JOB_LABEL.to_string(),
            super::names::label_value(job),
        );
    }
    let team = ctx.spec.pod_metadata.as_ref();
    let empty = BTreeMap::new();
    let pod_labels = labels::merge_owned_wins(team.map_or(&empty, |m| &m.labels), owned);

    let mut owned_annotations = BTreeMap::new();
    if kind.checksum {
        owned_annotations.insert(
            CONFIG_CHECKSUM_ANNOTATION.to_string(),
            ctx.config_checksum.clone(),
        );
    }
    let runtime_class_name = match ctx.decision {
        crate::decide::Decision::Granted {
            alias,
            runtime_class,
            ..
        } => {
            owned_annotations.insert(RUNTIME_PROFILE_ANNOTATION.to_string(), alias.clone());
            Some(runtime_class.clone())
        }
        _ => None,
    };
    // Only the keys the allowlist passes: a Runtime stored before the rule
    // never puts a refused key on its pods (its status names them).
    let team_annotations: BTreeMap<String, String> = team
        .map_or(&empty, |m| &m.annotations)
        .iter()
        .filter(|(k, _)| crate::api::pod_annotations::allowed(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let annotations = labels::merge_owned_wins(&team_annotations, owned_annotations);
    (pod_labels, annotations, runtime_class_name)
}

/// The one container: the image, its config, and the hardened defaults
/// (probes and a port only on the server).
fn container(ctx: &Ctx<'_>, kind: &PodKind<'_>) -> Container {
    let server = kind.component == Component::Server;
    Container {
        name: CONTAINER_NAME.to_string(),
        image: Some(ctx.spec.image.reference()),
        image_pull_policy: Some(ctx.spec.image.pull_policy().to_string()),
        command: (!kind.command.is_empty()).then(|| kind.command.to_vec()),
        args: (!kind.args.is_empty()).then(|| kind.args.to_vec()),
        env_from: Some(vec![EnvFromSource {
            config_map_ref: Some(ConfigMapEnvSource {
                name: ctx.names.config_map.clone(),
                optional: Some(false),
            }),
            ..Default::default()
        }]),
        ports: server.then(|| {
            vec![ContainerPort {
                name: Some(HTTP_PORT_NAME.to_string()),
                container_port: ctx.port,
                protocol: Some("TCP".to_string()),
                ..Default::default()
            }]
        }),
        // Probes only on the server: Jobs have no HTTP endpoint to ask.
        startup_probe: server.then(|| probe(LIVE_PATH, 2, 1, 30)),
        liveness_probe: server.then(|| probe(LIVE_PATH, 10, 2, 3)),
        readiness_probe: server.then(|| probe(READY_PATH, 5, 2, 3)),
        resources: Some(super::resources::requirements(ctx.spec.resources.as_ref())),
        security_context: Some(container_security_context()),
        // The root filesystem is read-only; most runtimes still need a
        // writable /tmp.
        volume_mounts: Some(vec![VolumeMount {
            name: "tmp".to_string(),
            mount_path: "/tmp".to_string(),
            ..Default::default()
        }]),
        termination_message_policy: Some("FallbackToLogsOnError".to_string()),
        ..Default::default()
    }
}

/// The pod's spec around the container: the hardened pod settings, the
/// team's scheduling, and (for the server) the spread over hosts.
fn pod_spec(
    ctx: &Ctx<'_>,
    kind: &PodKind<'_>,
    container: Container,
    runtime_class_name: Option<String>,
) -> PodSpec {
    let server = kind.component == Component::Server;
    let scheduling = ctx.spec.scheduling.as_ref();
    PodSpec {
        containers: vec![container],
        service_account_name: Some(ctx.names.workload.clone()),
        automount_service_account_token: Some(false),
        enable_service_links: Some(false),
        security_context: Some(pod_security_context()),
        termination_grace_period_seconds: Some(termination_grace_seconds(
            ctx.spec.shutdown_drain_timeout_seconds,
        )),
        restart_policy: (!server).then(|| "Never".to_string()),
        runtime_class_name,
        node_selector: scheduling
            .map(|s| s.node_selector.clone())
            .filter(|m| !m.is_empty()),
        tolerations: scheduling
            .map(|s| s.tolerations.clone())
            .filter(|t| !t.is_empty()),
        affinity: scheduling.and_then(|s| s.affinity.clone()),
        // Spread replicas over hosts, but never leave a pod pending for it.
        topology_spread_constraints: server.then(|| {
            vec![TopologySpreadConstraint {
                max_skew: 1,
                topology_key: "kubernetes.io/hostname".to_string(),
                when_unsatisfiable: "ScheduleAnyway".to_string(),
                label_selector: Some(LabelSelector {
                    match_labels: Some(labels::selector(ctx.name)),
                    match_expressions: None,
                }),
                ..Default::default()
            }]
        }),
        volumes: Some(vec![Volume {
            name: "tmp".to_string(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        }]),
        ..Default::default()
    }
}
