use super::*;
use berth_shared::analysis::Workload;
use berth_shared::api::API_VERSION;
use k8s_openapi::api::apps::v1::DeploymentCondition;
use k8s_openapi::api::core::v1::{
    Capabilities, ContainerPort, EnvVar, HostPathVolumeSource, PodCondition, PodStatus,
    SecurityContext, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, OwnerReference};
use serde_json::Value;

use crate::controller::reconcile::apply::{Governed, contains};

pub(super) fn map(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

pub(super) fn controller(api_version: &str, kind: &str, uid: &str) -> Option<Vec<OwnerReference>> {
    Some(vec![OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: "owner".into(),
        uid: uid.into(),
        controller: Some(true),
        ..Default::default()
    }])
}

/// Metadata as a busy cluster has it: managed fields, kubectl's copy,
/// others' labels and annotations next to berth's.
pub(super) fn busy_meta(owner: Option<Vec<OwnerReference>>) -> ObjectMeta {
    ObjectMeta {
        name: Some("web".into()),
        namespace: Some("team".into()),
        uid: Some("u-web".into()),
        resource_version: Some("42".into()),
        generation: Some(3),
        generate_name: Some("web-".into()),
        owner_references: owner,
        managed_fields: Some(vec![ManagedFieldsEntry {
            manager: Some("kubectl".into()),
            ..Default::default()
        }]),
        labels: map(&[
            ("app", "web"),
            (MANAGED_BY_LABEL, "berth"),
            ("berth.dev/project", "demo"),
            ("pod-template-hash", "abc"),
        ]),
        annotations: map(&[
            (LAST_APPLIED_ANNOTATION, "{\"huge\": true}"),
            (REVISION_ANNOTATION, "4"),
            (RUNTIME_PROFILE_ANNOTATION, "gvisor"),
            ("other.io/note", "x"),
        ]),
        ..Default::default()
    }
}

/// A pod spec with every field the production contract forbids.
fn forbidden_pod_spec() -> PodSpec {
    PodSpec {
        runtime_class_name: Some("gvisor".into()),
        host_network: Some(true),
        host_pid: Some(true),
        host_ipc: Some(true),
        node_selector: map(&[("zone", "a")]),
        containers: vec![
            Container {
                name: "app".into(),
                image: Some("registry/app:2".into()),
                env: Some(vec![EnvVar {
                    name: "A".into(),
                    value: Some("1".into()),
                    ..Default::default()
                }]),
                ports: Some(vec![ContainerPort {
                    container_port: 80,
                    host_port: Some(80),
                    ..Default::default()
                }]),
                security_context: Some(SecurityContext {
                    privileged: Some(true),
                    capabilities: Some(Capabilities {
                        add: Some(vec!["NET_ADMIN".into()]),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
            Container {
                name: "sidecar".into(),
                image: Some("registry/sidecar:1".into()),
                ..Default::default()
            },
        ],
        volumes: Some(vec![Volume {
            name: "host".into(),
            host_path: Some(HostPathVolumeSource {
                path: "/".into(),
                ..Default::default()
            }),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

fn template(spec: PodSpec) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: map(&[
                ("app", "web"),
                (MANAGED_BY_LABEL, "berth"),
                ("berth.dev/service", "api"),
            ]),
            annotations: map(&[
                (RUNTIME_PROFILE_ANNOTATION, "gvisor"),
                ("checksum/config", "abc"),
            ]),
            ..Default::default()
        }),
        spec: Some(spec),
    }
}

pub(super) fn busy_deployment(owner: Option<Vec<OwnerReference>>) -> Deployment {
    Deployment {
        metadata: busy_meta(owner),
        spec: Some(DeploymentSpec {
            replicas: Some(3),
            template: template(forbidden_pod_spec()),
            ..Default::default()
        }),
        status: Some(DeploymentStatus {
            replicas: Some(3),
            ready_replicas: Some(2),
            conditions: Some(vec![DeploymentCondition {
                type_: "Progressing".into(),
                status: "True".into(),
                message: Some("long text".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

fn json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("serializable")
}

#[test]
fn a_foreign_deployment_keeps_what_is_read_and_drops_the_rest() {
    let mut d = busy_deployment(controller("example.com/v1", "Operator", "op"));
    deployment(&mut d);
    let v = json(&d);
    // (JSON pointer, kept?)
    let table = [
        ("/metadata/name", true),
        ("/metadata/namespace", true),
        ("/metadata/uid", true),
        ("/metadata/ownerReferences/0/uid", true),
        ("/metadata/labels/app.kubernetes.io~1managed-by", true),
        ("/metadata/labels/berth.dev~1project", true),
        ("/metadata/labels/app", false),
        ("/metadata/labels/pod-template-hash", false),
        (
            "/metadata/annotations/deployment.kubernetes.io~1revision",
            true,
        ),
        ("/metadata/annotations/berth.dev~1runtime-profile", true),
        (
            "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
            false,
        ),
        ("/metadata/annotations/other.io~1note", false),
        ("/metadata/managedFields", false),
        ("/metadata/generateName", false),
        ("/spec/replicas", true),
        ("/spec/template/spec/runtimeClassName", true),
        ("/spec/template/spec/containers/0/image", true),
        ("/spec/template/spec/containers/0/env", false),
        ("/spec/template/spec/containers/0/securityContext", false),
        ("/spec/template/spec/containers/1", false),
        ("/spec/template/spec/hostNetwork", false),
        ("/spec/template/spec/volumes", false),
        ("/spec/template/spec/nodeSelector", false),
        ("/spec/template/metadata/labels/berth.dev~1service", true),
        ("/spec/template/metadata/labels/app", false),
        (
            "/spec/template/metadata/annotations/berth.dev~1runtime-profile",
            true,
        ),
        (
            "/spec/template/metadata/annotations/checksum~1config",
            false,
        ),
        ("/status/readyReplicas", true),
        ("/status/conditions", false),
    ];
    for (pointer, kept) in table {
        assert_eq!(v.pointer(pointer).is_some(), kept, "{pointer} in {v:#}");
    }
}

/// The part of a workload the analysis reads: of its labels only berth's
/// (`covered_by_grant` reads the identity labels, nothing reads the rest).
fn read(mut w: Workload) -> Workload {
    std::sync::Arc::make_mut(&mut w.labels)
        .retain(|k, _| k == MANAGED_BY_LABEL || k.starts_with("berth.dev/"));
    w
}

#[test]
fn the_analysis_sees_the_same_workloads_after_reduction() {
    let foreign = || controller("example.com/v1", "Operator", "op");
    let d = busy_deployment(foreign());
    let mut rd = d.clone();
    deployment(&mut rd);
    assert_eq!(
        read(Workload::from_deployment(&rd)),
        read(Workload::from_deployment(&d))
    );

    let rs = ReplicaSet {
        metadata: busy_meta(controller("apps/v1", "Deployment", "u-web")),
        spec: Some(ReplicaSetSpec {
            replicas: Some(0),
            template: Some(template(forbidden_pod_spec())),
            ..Default::default()
        }),
        status: Some(ReplicaSetStatus {
            replicas: 0,
            ready_replicas: Some(0),
            ..Default::default()
        }),
    };
    let mut rrs = rs.clone();
    replica_set(&mut rrs);
    for rev in [None, Some("4"), Some("5")] {
        assert_eq!(
            read(Workload::from_replica_set(&rrs, rev)),
            read(Workload::from_replica_set(&rs, rev))
        );
    }

    let j = Job {
        metadata: busy_meta(foreign()),
        spec: Some(JobSpec {
            parallelism: Some(2),
            template: template(forbidden_pod_spec()),
            ..Default::default()
        }),
        status: Some(JobStatus {
            ready: Some(1),
            active: Some(2),
            conditions: Some(vec![
                JobCondition {
                    type_: "Complete".into(),
                    status: "True".into(),
                    message: Some("done".into()),
                    ..Default::default()
                },
                JobCondition {
                    type_: "SuccessCriteriaMet".into(),
                    status: "True".into(),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }),
    };
    let mut rj = j.clone();
    job(&mut rj);
    assert_eq!(read(Workload::from_job(&rj)), read(Workload::from_job(&j)));
    assert_eq!(
        Workload::from_job(&rj).replicas,
        0,
        "finished stays finished"
    );

    let c = CronJob {
        metadata: busy_meta(None),
        spec: Some(CronJobSpec {
            schedule: "* * * * *".into(),
            suspend: Some(true),
            job_template: JobTemplateSpec {
                metadata: None,
                spec: Some(JobSpec {
                    template: template(forbidden_pod_spec()),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        status: Some(CronJobStatus {
            active: Some(vec![Default::default(), Default::default()]),
            ..Default::default()
        }),
    };
    let mut rc = c.clone();
    cron_job(&mut rc);
    assert_eq!(
        read(Workload::from_cron_job(&rc)),
        read(Workload::from_cron_job(&c))
    );

    let s = StatefulSet {
        metadata: busy_meta(None),
        spec: Some(StatefulSetSpec {
            replicas: Some(2),
            service_name: Some("db".into()),
            template: template(forbidden_pod_spec()),
            ..Default::default()
        }),
        status: Some(StatefulSetStatus {
            replicas: 2,
            ready_replicas: Some(1),
            current_revision: Some("db-1".into()),
            ..Default::default()
        }),
    };
    let mut rs2 = s.clone();
    stateful_set(&mut rs2);
    assert_eq!(
        read(Workload::from_stateful_set(&rs2)),
        read(Workload::from_stateful_set(&s))
    );

    let ds = DaemonSet {
        metadata: busy_meta(None),
        spec: Some(DaemonSetSpec {
            template: template(forbidden_pod_spec()),
            ..Default::default()
        }),
        status: Some(DaemonSetStatus {
            desired_number_scheduled: 5,
            number_ready: 4,
            current_number_scheduled: 5,
            ..Default::default()
        }),
    };
    let mut rds = ds.clone();
    daemon_set(&mut rds);
    assert_eq!(
        read(Workload::from_daemon_set(&rds)),
        read(Workload::from_daemon_set(&ds))
    );

    let p = Pod {
        metadata: busy_meta(None),
        spec: Some(forbidden_pod_spec()),
        status: Some(PodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    };
    let mut rp = p.clone();
    pod(&mut rp);
    assert_eq!(read(Workload::from_pod(&rp)), read(Workload::from_pod(&p)));
}

#[test]
fn the_rollout_summary_reads_the_same_replica_sets_after_reduction() {
    use berth_shared::api::meta::template_image;
    let rs = ReplicaSet {
        metadata: busy_meta(controller("apps/v1", "Deployment", "u-web")),
        spec: Some(ReplicaSetSpec {
            replicas: Some(3),
            template: Some(template(forbidden_pod_spec())),
            ..Default::default()
        }),
        status: Some(ReplicaSetStatus {
            replicas: 3,
            ready_replicas: Some(3),
            ..Default::default()
        }),
    };
    let mut reduced = rs.clone();
    replica_set(&mut reduced);
    let image = |r: &ReplicaSet| template_image(r.spec.as_ref().and_then(|s| s.template.as_ref()));
    assert_eq!(image(&reduced).as_deref(), Some("registry/app:2"));
    assert_eq!(
        berth_shared::api::meta::revision(&reduced.metadata),
        Some("4")
    );
    assert_eq!(
        reduced.status,
        rs.status.clone().map(|s| ReplicaSetStatus {
            conditions: None,
            ..s
        })
    );
    assert_eq!(
        reduced.metadata.owner_references,
        rs.metadata.owner_references
    );
}

/// The rendered (desired) pod spec the live one is compared with.
fn desired_deployment() -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("team".into()),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(3),
            template: template(PodSpec {
                runtime_class_name: Some("gvisor".into()),
                containers: vec![Container {
                    name: "app".into(),
                    image: Some("registry/app:2".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: None,
    }
}

#[test]
fn drift_detection_on_a_reduced_owned_object_still_sees_every_forbidden_field() {
    let runtime_owner = controller(API_VERSION, "Runtime", "u-rt");
    let live = busy_deployment(runtime_owner);
    // The cache's pipeline (`cache::cache`): stripped, kept whole in the
    // bodies, then reduced for the store.
    let mut stored = live.clone();
    strip(&mut stored);
    let bodies = crate::controller::cache::bodies::Bodies::<Deployment>::default();
    bodies.observe(&watcher::Event::Apply(
        crate::controller::cache::stored::Stored::of(stored.clone()),
    ));
    deployment(&mut stored);
    assert!(owned_by_runtime(&stored.metadata));
    // The store keeps the metadata and status whole, not the pod spec.
    assert_eq!(stored.metadata.labels, live.metadata.labels);
    assert_eq!(stored.status, live.status);
    let pod_spec = |d: &Deployment| d.spec.as_ref().and_then(|s| s.template.spec.clone());
    assert_eq!(
        pod_spec(&stored).and_then(|s| s.host_network),
        None,
        "the store's copy is reduced"
    );
    // What the apply step compares (`cached_objects::Cached`): the body, in which
    // only managedFields and kubectl's copy are gone.
    let reduced = bodies.get("team", "web").expect("a body").typed;
    let mut expected = live.clone();
    expected.metadata.managed_fields = None;
    if let Some(a) = expected.metadata.annotations.as_mut() {
        a.remove(LAST_APPLIED_ANNOTATION);
    }
    assert_eq!(reduced, expected);

    let desired = desired_deployment();
    let found = |d: &Deployment| -> Vec<String> {
        Deployment::violations(d, &desired)
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    let on_live = found(&live);
    assert_eq!(found(&reduced), on_live);
    for field in [
        "hostNetwork",
        "hostPID",
        "hostIPC",
        "containers[sidecar]",
        "volumes[host]",
        "containers[app].securityContext.privileged",
        "containers[app].securityContext.capabilities.add",
        "containers[app].ports",
    ] {
        assert!(
            on_live.iter().any(|v| v.contains(field)),
            "{field} not in {on_live:?}"
        );
    }
    // Field drift (the apply step's containment check) too.
    let mut drifted = desired.clone();
    if let Some(c) = drifted
        .spec
        .as_mut()
        .and_then(|s| s.template.spec.as_mut())
        .and_then(|s| s.containers.first_mut())
    {
        c.image = Some("registry/app:3".into());
    }
    let reduced_value = json(&reduced);
    assert!(contains(Some(&reduced_value), &json(&desired)));
    assert!(!contains(Some(&reduced_value), &json(&drifted)));

    // The same object owned by someone else would have lost them: the
    // owner decides, nothing else.
    let mut foreign = busy_deployment(controller("example.com/v1", "Runtime", "x"));
    deployment(&mut foreign);
    let on_foreign = found(&foreign);
    assert!(
        !on_foreign.iter().any(|v| v.contains("hostNetwork")),
        "{on_foreign:?}"
    );
}

#[test]
fn owned_jobs_and_cron_jobs_are_kept_whole() {
    let runtime_owner = controller(API_VERSION, "Runtime", "u-rt");
    let spec = JobSpec {
        template: template(forbidden_pod_spec()),
        backoff_limit: Some(2),
        ..Default::default()
    };
    let j = Job {
        metadata: busy_meta(runtime_owner.clone()),
        spec: Some(spec.clone()),
        status: None,
    };
    let mut rj = j.clone();
    job(&mut rj);
    assert_eq!(rj.spec, j.spec);
    assert_eq!(
        rj.metadata.annotations.as_ref().map(BTreeMap::len),
        Some(3),
        "only kubectl's copy goes"
    );
    let c = CronJob {
        metadata: busy_meta(runtime_owner),
        spec: Some(CronJobSpec {
            schedule: "0 * * * *".into(),
            job_template: JobTemplateSpec {
                metadata: None,
                spec: Some(spec),
            },
            ..Default::default()
        }),
        status: None,
    };
    let mut rc = c.clone();
    cron_job(&mut rc);
    assert_eq!(rc.spec, c.spec);
    // The reduced CronJob still shows the comparison every forbidden field.
    let rendered = CronJob {
        spec: Some(CronJobSpec {
            schedule: "0 * * * *".into(),
            ..Default::default()
        }),
        ..rc.clone()
    };
    let found: Vec<String> = CronJob::violations(&rc, &rendered)
        .iter()
        .map(ToString::to_string)
        .collect();
    for field in ["hostNetwork", "containers[sidecar]", "volumes[host]"] {
        assert!(
            found.iter().any(|v| v.contains(field)),
            "{field}: {found:?}"
        );
    }
}
