//! Representative Runtimes with their identity and decision: the golden
//! render cases, the integration test's dry-run inputs, and handy demo data.
//! Pure data, no I/O.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm,
    Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::api::{
    AutoscalingSpec, ConcurrencyPolicy, ConfigSpec, ExposeSpec, ExposeType, ImageSpec, IngressPeer,
    JobSpec, NetworkPolicySpec, PodMetadataSpec, ResourceAmounts, ResourcesSpec, Runtime,
    RuntimeSpec, ScheduleSpec, SchedulingSpec,
};
use crate::decide::{Decision, Identity};

/// One case: a stored Runtime (name, namespace and uid set) plus what the
/// agent would have decided for it.
#[derive(Clone, Debug)]
pub struct Example {
    /// Case name; also the golden file's stem.
    pub name: &'static str,
    /// The Runtime.
    pub runtime: Runtime,
    /// Its identity.
    pub identity: Identity,
    /// The grant decision.
    pub decision: Decision,
}

/// Namespace every example lives in (tests move them elsewhere).
pub const EXAMPLE_NAMESPACE: &str = "demo-production";
/// A fixed uid so owner references are stable in golden files.
pub const EXAMPLE_UID: &str = "6f1c2a9e-0000-4000-8000-000000000001";

fn runtime(name: &str, spec: RuntimeSpec) -> Runtime {
    let mut rt = Runtime::new(name, spec);
    rt.metadata.namespace = Some(EXAMPLE_NAMESPACE.to_string());
    rt.metadata.uid = Some(EXAMPLE_UID.to_string());
    rt
}

fn identity(spec: &RuntimeSpec) -> Identity {
    Identity {
        project: "demo".to_string(),
        environment: "production".to_string(),
        application: spec.application.clone(),
        service: spec.service.clone(),
    }
}

fn base(application: &str, service: &str) -> RuntimeSpec {
    RuntimeSpec {
        application: application.to_string(),
        service: service.to_string(),
        image: ImageSpec {
            repository: "registry.example/analytics/worker".to_string(),
            tag: Some("1.4.2".to_string()),
            digest: None,
        },
        ..Default::default()
    }
}

fn granted() -> Decision {
    Decision::Granted {
        alias: "bounded-worker".to_string(),
        runtime_class: "bounded-worker".to_string(),
        handler: "bounded-runc".to_string(),
    }
}

/// The profile `bounded-worker` asked for and not in the grants file.
fn not_granted() -> Decision {
    Decision::NotGranted {
        alias: "bounded-worker".to_string(),
        detail: "no binding named bounded-worker in the grants file".to_string(),
        reason: crate::api::reasons::NOT_GRANTED,
    }
}

fn q(s: &str) -> Option<Quantity> {
    Some(Quantity(s.to_string()))
}

fn map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn everything(spec: &mut RuntimeSpec) {
    spec.replicas = Some(3);
    spec.runtime_profile = Some("bounded-worker".to_string());
    spec.image = ImageSpec {
        repository: "registry.example:5000/analytics/worker".to_string(),
        tag: None,
        digest: Some(format!("sha256:{}", "ab".repeat(32))),
    };
    spec.config = Some(ConfigSpec {
        env: map(&[("LOG_LEVEL", "info"), ("QUEUE_URL", "amqp://queue:5672")]),
    });
    spec.resources = Some(ResourcesSpec {
        requests: Some(ResourceAmounts {
            cpu: q("250m"),
            memory: q("256Mi"),
            ephemeral_storage: q("512Mi"),
        }),
        limits: Some(ResourceAmounts {
            cpu: q("1"),
            memory: q("512Mi"),
            ephemeral_storage: q("2Gi"),
        }),
    });
    spec.expose = Some(ExposeSpec {
        port: Some(9090),
        type_: Some(ExposeType::ClusterIP),
    });
    spec.jobs = vec![JobSpec {
        name: "migrate".to_string(),
        command: vec!["/app/worker".to_string()],
        args: vec!["migrate".to_string(), "--yes".to_string()],
        backoff_limit: Some(1),
        active_deadline_seconds: Some(600),
    }];
    spec.schedules = vec![ScheduleSpec {
        name: "nightly-report".to_string(),
        schedule: "0 3 * * *".to_string(),
        time_zone: Some("Europe/Berlin".to_string()),
        concurrency_policy: Some(ConcurrencyPolicy::Forbid),
        command: vec![],
        args: vec!["report".to_string()],
        backoff_limit: None,
        active_deadline_seconds: None,
    }];
    spec.pod_metadata = Some(PodMetadataSpec {
        labels: map(&[("team", "data")]),
        annotations: map(&[("example.com/owner", "data-team")]),
    });
    spec.scheduling = Some(SchedulingSpec {
        node_selector: map(&[("kubernetes.io/os", "linux")]),
        tolerations: vec![Toleration {
            key: Some("dedicated".to_string()),
            operator: Some("Equal".to_string()),
            value: Some("sandboxed".to_string()),
            effect: Some("NoSchedule".to_string()),
            toleration_seconds: None,
        }],
        affinity: Some(Affinity {
            node_affinity: Some(NodeAffinity {
                preferred_during_scheduling_ignored_during_execution: Some(vec![
                    PreferredSchedulingTerm {
                        weight: 10,
                        preference: NodeSelectorTerm {
                            match_expressions: Some(vec![NodeSelectorRequirement {
                                key: "topology.kubernetes.io/zone".to_string(),
                                operator: "In".to_string(),
                                values: Some(vec!["zone-a".to_string()]),
                            }]),
                            match_fields: None,
                        },
                    },
                ]),
                required_during_scheduling_ignored_during_execution: None,
            }),
            ..Default::default()
        }),
    });
    spec.network_policy = Some(NetworkPolicySpec {
        enabled: true,
        ingress: vec![
            IngressPeer {
                namespace_labels: None,
                pod_labels: Some(map(&[("app.kubernetes.io/name", "gateway")])),
            },
            IngressPeer {
                namespace_labels: Some(map(&[("kubernetes.io/metadata.name", "monitoring")])),
                pod_labels: Some(map(&[("app", "prometheus")])),
            },
        ],
    });
    spec.autoscaling = Some(AutoscalingSpec {
        enabled: true,
        min_replicas: Some(2),
        max_replicas: Some(6),
        target_cpu_utilization_percentage: Some(70),
    });
    spec.shutdown_drain_timeout_seconds = Some(45);
}

/// Every example, in a stable order.
pub fn examples() -> Vec<Example> {
    let mut out = Vec::new();
    let mut push = |name: &'static str, rt_name: &str, spec: RuntimeSpec, decision: Decision| {
        let identity = identity(&spec);
        out.push(Example {
            name,
            runtime: runtime(rt_name, spec),
            identity,
            decision,
        });
    };

    push(
        "minimal",
        "worker",
        base("analytics", "worker"),
        Decision::NotRequested,
    );

    let mut spec = base("analytics", "worker");
    everything(&mut spec);
    push("everything", "worker", spec, granted());

    let mut spec = base("analytics", "worker");
    spec.runtime_profile = Some("bounded-worker".to_string());
    push("granted", "worker", spec, granted());

    let mut spec = base("analytics", "worker");
    spec.runtime_profile = Some("bounded-worker".to_string());
    push("not-granted", "worker", spec, not_granted());

    let mut spec = base("analytics", "worker");
    everything(&mut spec);
    spec.suspend = true;
    push("suspended", "worker", spec, granted());

    let mut spec = base("a".repeat(40).as_str(), &format!("s{}", "x".repeat(39)));
    spec.jobs = vec![JobSpec {
        name: "j".repeat(63),
        ..Default::default()
    }];
    spec.schedules = vec![ScheduleSpec {
        name: "c".repeat(63),
        schedule: "@hourly".to_string(),
        ..Default::default()
    }];
    let long_name = format!("{}.{}.{}", "a".repeat(63), "b".repeat(63), "c".repeat(60));
    push("long-names", &long_name, spec, Decision::NotRequested);

    let mut spec = base("analytics", "worker");
    spec.runtime_profile = Some("bounded-worker".to_string());
    spec.pod_metadata = Some(PodMetadataSpec {
        labels: map(&[
            // (app.kubernetes.io/managed-by is refused by the CRD itself.)
            ("app.kubernetes.io/component", "database"),
            ("app.kubernetes.io/name", "someone-else"),
            ("berth.dev/runtime", "other-runtime"),
            ("berth.dev/project", "other-project"),
            ("team", "data"),
        ]),
        annotations: map(&[
            ("berth.dev/runtime-profile", "forged"),
            ("berth.dev/config-checksum", "forged"),
            ("example.com/keep", "kept"),
        ]),
    });
    push("pod-metadata-override", "worker", spec, not_granted());

    out
}
