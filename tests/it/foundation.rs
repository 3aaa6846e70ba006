//! Proof that the local control plane is real: the scheduler, the
//! controller-manager (ReplicaSets, garbage collection, Jobs, CronJobs), the
//! RuntimeClass admission plugin and kwok's simulated nodes all take part.

use std::collections::BTreeMap;
use std::time::Duration;

use berth_tests::harness::{TestNamespace, create_runtime_class, wait_for, wait_for_value};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, ReplicaSet};
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, Job, JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{Container, Node, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Api;
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};

const WAIT: Duration = Duration::from_secs(90);

fn labels(app: &str) -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_string(), app.to_string())])
}

fn pod_spec(class: &str, restart: &str) -> PodSpec {
    PodSpec {
        runtime_class_name: Some(class.to_string()),
        restart_policy: Some(restart.to_string()),
        containers: vec![Container {
            name: "app".into(),
            image: Some("registry.invalid/berth/app:1".into()),
            ..Default::default()
        }],
        ..Default::default()
    }
}

async fn create_deployment(ns: &TestNamespace, name: &str, class: &str, replicas: i32) {
    let d = Deployment {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels(name)),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(name)),
                    ..Default::default()
                }),
                spec: Some(pod_spec(class, "Always")),
            },
            ..Default::default()
        }),
        ..Default::default()
    };
    Api::<Deployment>::namespaced(ns.client.clone(), &ns.name)
        .create(&PostParams::default(), &d)
        .await
        .expect("create Deployment");
}

fn rollout_complete(d: &Deployment, replicas: i32) -> bool {
    let Some(s) = d.status.as_ref() else {
        return false;
    };
    let observed = s.observed_generation == d.metadata.generation;
    let progressing_done = s.conditions.as_ref().is_some_and(|cs| {
        cs.iter().any(|c| {
            c.type_ == "Progressing"
                && c.status == "True"
                && c.reason.as_deref() == Some("NewReplicaSetAvailable")
        })
    });
    observed
        && progressing_done
        && s.updated_replicas == Some(replicas)
        && s.ready_replicas == Some(replicas)
        && s.available_replicas == Some(replicas)
}

async fn wait_rollout(ns: &TestNamespace, name: &str, replicas: i32) {
    let api: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    wait_for(
        &format!("Deployment {name} to complete its rollout"),
        WAIT,
        || {
            let api = api.clone();
            async move {
                api.get_opt(name)
                    .await
                    .ok()
                    .flatten()
                    .is_some_and(|d| rollout_complete(&d, replicas))
            }
        },
    )
    .await;
}

async fn pods(ns: &TestNamespace, selector: &str) -> Vec<Pod> {
    Api::<Pod>::namespaced(ns.client.clone(), &ns.name)
        .list(&ListParams::default().labels(selector))
        .await
        .expect("list pods")
        .items
}

fn is_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// (a) pods that use a RuntimeClass are scheduled onto kwok nodes, become
/// Ready, and the Deployment reports its rollout complete.
#[tokio::test]
async fn deployment_using_runtime_class_rolls_out_on_kwok_nodes() {
    let ns = TestNamespace::new("found-a").await;
    let class = format!("{}-bounded", ns.name);
    create_runtime_class(&ns.client, &class, "bounded-runc").await;
    create_deployment(&ns, "web", &class, 3).await;
    wait_rollout(&ns, "web", 3).await;

    let nodes: Vec<String> = Api::<Node>::all(ns.client.clone())
        .list(&ListParams::default().labels("type=kwok"))
        .await
        .expect("list nodes")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    let ps = pods(&ns, "app=web").await;
    assert_eq!(ps.len(), 3, "three pods");
    for p in &ps {
        let spec = p.spec.as_ref().expect("pod spec");
        assert_eq!(spec.runtime_class_name.as_deref(), Some(class.as_str()));
        let node = spec.node_name.as_deref().expect("scheduled");
        assert!(nodes.iter().any(|n| n == node), "{node} is a kwok node");
        assert!(is_ready(p), "pod is Ready");
        assert_eq!(
            p.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Running")
        );
    }
    // Every node reports the handler the class names.
    for n in Api::<Node>::all(ns.client.clone())
        .list(&ListParams::default().labels("type=kwok"))
        .await
        .expect("list nodes")
        .items
    {
        let handlers: Vec<String> = n
            .status
            .and_then(|s| s.runtime_handlers)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|h| h.name)
            .collect();
        assert!(handlers.iter().any(|h| h == "bounded-runc"), "{handlers:?}");
    }
}

/// (b) once the RuntimeClass is gone, scaling up creates no pod and the
/// ReplicaSet reports the admission failure.
#[tokio::test]
async fn deleted_runtime_class_blocks_new_pods() {
    let ns = TestNamespace::new("found-b").await;
    let class = format!("{}-bounded", ns.name);
    create_runtime_class(&ns.client, &class, "bounded-runc").await;
    create_deployment(&ns, "web", &class, 2).await;
    wait_rollout(&ns, "web", 2).await;

    Api::<RuntimeClass>::all(ns.client.clone())
        .delete(&class, &DeleteParams::default())
        .await
        .expect("delete RuntimeClass");
    let deployments: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scale up");

    let rs_api: Api<ReplicaSet> = Api::namespaced(ns.client.clone(), &ns.name);
    let message = wait_for_value("ReplicaSet ReplicaFailure condition", WAIT, || {
        let rs_api = rs_api.clone();
        async move {
            let list = rs_api.list(&ListParams::default()).await.ok()?;
            list.items.into_iter().find_map(|rs| {
                rs.status?.conditions?.into_iter().find_map(|c| {
                    (c.type_ == "ReplicaFailure" && c.status == "True")
                        .then(|| c.message.unwrap_or_default())
                })
            })
        }
    })
    .await;
    assert!(
        message.contains("RuntimeClass") && message.contains(&class),
        "ReplicaFailure names the missing class: {message}"
    );
    // Still exactly the two pods that ran before.
    assert_eq!(pods(&ns, "app=web").await.len(), 2);
}

/// (c) deleting a Deployment garbage-collects its ReplicaSets and pods.
#[tokio::test]
async fn deleting_deployment_collects_replicasets_and_pods() {
    let ns = TestNamespace::new("found-c").await;
    let class = format!("{}-bounded", ns.name);
    create_runtime_class(&ns.client, &class, "bounded-runc").await;
    create_deployment(&ns, "web", &class, 2).await;
    wait_rollout(&ns, "web", 2).await;
    let rs_api: Api<ReplicaSet> = Api::namespaced(ns.client.clone(), &ns.name);
    assert_eq!(
        rs_api
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .len(),
        1
    );

    Api::<Deployment>::namespaced(ns.client.clone(), &ns.name)
        .delete("web", &DeleteParams::background())
        .await
        .expect("delete Deployment");
    wait_for("ReplicaSets and pods to be garbage-collected", WAIT, || {
        let rs_api = rs_api.clone();
        let ns = ns.clone();
        async move {
            let rs_left = rs_api
                .list(&ListParams::default())
                .await
                .map(|l| l.items.len())
                .unwrap_or(usize::MAX);
            rs_left == 0 && pods(&ns, "app=web").await.is_empty()
        }
    })
    .await;
}

/// (d) a CronJob whose template uses the class creates Jobs and pods on
/// schedule, and kwok completes them.
#[tokio::test]
async fn cronjob_using_runtime_class_runs_on_schedule() {
    let ns = TestNamespace::new("found-d").await;
    let class = format!("{}-bounded", ns.name);
    create_runtime_class(&ns.client, &class, "bounded-runc").await;
    let cj = CronJob {
        metadata: ObjectMeta {
            name: Some("tick".into()),
            ..Default::default()
        },
        spec: Some(CronJobSpec {
            schedule: "* * * * *".into(),
            job_template: JobTemplateSpec {
                metadata: None,
                spec: Some(JobSpec {
                    template: PodTemplateSpec {
                        metadata: Some(ObjectMeta {
                            labels: Some(labels("tick")),
                            ..Default::default()
                        }),
                        spec: Some(pod_spec(&class, "Never")),
                    },
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    };
    Api::<CronJob>::namespaced(ns.client.clone(), &ns.name)
        .create(&PostParams::default(), &cj)
        .await
        .expect("create CronJob");

    // A one-minute schedule fires within ~60s of creation (+ the cronjob
    // controller's resync); 150s bounds it.
    let jobs: Api<Job> = Api::namespaced(ns.client.clone(), &ns.name);
    let job = wait_for_value(
        "a Job created by the CronJob to succeed",
        Duration::from_secs(150),
        || {
            let jobs = jobs.clone();
            async move {
                let list = jobs.list(&ListParams::default()).await.ok()?;
                list.items
                    .into_iter()
                    .find(|j| j.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0) >= 1)
            }
        },
    )
    .await;
    let owner = job
        .metadata
        .owner_references
        .as_ref()
        .and_then(|o| o.first())
        .expect("the Job is owned");
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("CronJob", "tick")
    );
    let job_pods = pods(&ns, "app=tick").await;
    assert!(!job_pods.is_empty(), "the Job created pods");
    for p in &job_pods {
        let spec = p.spec.as_ref().expect("pod spec");
        assert_eq!(spec.runtime_class_name.as_deref(), Some(class.as_str()));
        assert!(spec.node_name.is_some(), "scheduled onto a node");
    }
    assert!(
        job_pods
            .iter()
            .any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded")),
        "kwok completed the Job's pod"
    );
}
