//! The agent over a Runtime's life on a real control plane: suspend scales
//! to zero and suspends schedules; NetworkPolicy, HPA, jobs and schedules
//! switched off delete only the Runtime's own objects; the agent runs with
//! exactly the shipped RBAC; losing the lease stops it at once; a cache
//! that receives nothing (its watch refused) makes it exit, untouched.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_shared::api::{Runtime, RuntimeGrant};
use berth_tests::harness::{self, wait_for, wait_for_value};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, Granted, condition, create_runtime, get, server_pods, setup_granted,
    wait_condition, wait_reconciles,
};

const WAIT: Duration = Duration::from_secs(120);

fn uid<K: Resource>(obj: &K) -> String {
    obj.meta().uid.clone().unwrap_or_default()
}

async fn merge_runtime(ns: &harness::TestNamespace, name: &str, patch: serde_json::Value) {
    Api::<Runtime>::namespaced(ns.client.clone(), &ns.name)
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("patch Runtime");
}

fn replicas(d: &Deployment) -> Option<i32> {
    d.spec.as_ref().and_then(|s| s.replicas)
}

#[tokio::test]
async fn agent_suspend_scales_to_zero_and_suspends_schedules() {
    let Granted { ns, bw, grants, .. } = setup_granted("agent-susp").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(
        &ns,
        "web",
        json!({
            "runtimeProfile": bw,
            "jobs": [{"name": "migrate"}],
            "schedules": [{"name": "nightly", "schedule": "0 3 * * *"}],
        }),
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    wait_for("two server pods", WAIT, || async {
        server_pods(&ns, "web").await.len() == 2
    })
    .await;

    merge_runtime(&ns, "web", json!({"spec": {"suspend": true}})).await;
    let rt = wait_condition(&ns, "web", "Ready", "False", Some("Suspended")).await;
    let available = condition(&rt, "Available").expect("Available");
    assert_eq!(
        (available.status.as_str(), available.reason.as_str()),
        ("False", "Suspended")
    );
    let d = get::<Deployment>(&ns, "web").await.expect("deployment");
    assert_eq!(replicas(&d), Some(0), "scaled to zero");
    let cron = get::<CronJob>(&ns, "web-cron-nightly")
        .await
        .expect("cronjob");
    assert_eq!(cron.spec.and_then(|s| s.suspend), Some(true));
    // The rollout settles on Suspended once the pods are gone (kwok
    // deletes them like a kubelet would).
    let rts: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    wait_for("rollout phase Suspended and no pods", WAIT, || {
        let rts = rts.clone();
        let ns = ns.clone();
        async move {
            let phase = rts
                .get("web")
                .await
                .ok()
                .and_then(|r| r.status)
                .and_then(|s| s.rollout)
                .map(|r| r.phase.as_str());
            phase == Some("Suspended") && server_pods(&ns, "web").await.is_empty()
        }
    })
    .await;

    // No new Jobs while suspended: the one-time Job, once gone, is not
    // created again however often the agent looks.
    let jobs: Api<Job> = Api::namespaced(ns.client.clone(), &ns.name);
    jobs.delete(
        "web-job-migrate",
        &DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..Default::default()
        },
    )
    .await
    .expect("delete job");
    wait_for("Job gone", WAIT, || {
        let jobs = jobs.clone();
        async move { matches!(jobs.get_opt("web-job-migrate").await, Ok(None)) }
    })
    .await;
    wait_reconciles(&agent, 3.0).await;
    let listed = jobs.list(&ListParams::default()).await.expect("list jobs");
    assert!(
        listed.items.is_empty(),
        "no Job while suspended: {:?}",
        listed
            .items
            .iter()
            .map(|j| j.name_any())
            .collect::<Vec<_>>()
    );
    let d = get::<Deployment>(&ns, "web").await.expect("deployment");
    assert_eq!(replicas(&d), Some(0), "still zero after resyncs");

    // Resuming brings the pods and the schedule back.
    merge_runtime(&ns, "web", json!({"spec": {"suspend": false}})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    let cron = get::<CronJob>(&ns, "web-cron-nightly")
        .await
        .expect("cronjob");
    assert_eq!(cron.spec.and_then(|s| s.suspend), Some(false));
    assert_eq!(server_pods(&ns, "web").await.len(), 2);
}

#[tokio::test]
async fn agent_network_policy_jobs_and_schedules_off_delete_only_own() {
    let Granted { ns, bw, grants, .. } = setup_granted("agent-np").await;
    let nps: Api<NetworkPolicy> = Api::namespaced(ns.client.clone(), &ns.name);
    // Not berth's, though it carries berth's labels (so it is in the
    // agent's label-filtered cache): must survive every prune.
    let unrelated: NetworkPolicy = serde_json::from_value(json!({
        "metadata": {"name": "unrelated", "labels": {
            "app.kubernetes.io/managed-by": "berth", "berth.dev/runtime": "web"}},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}
    }))
    .expect("np");
    let unrelated = nps
        .create(&PostParams::default(), &unrelated)
        .await
        .expect("unrelated np");
    let _agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    let np_on = json!({"enabled": true, "ingress": [{"podLabels": {"role": "frontend"}}]});
    create_runtime(
        &ns,
        "web",
        json!({
            "runtimeProfile": bw, "replicas": 1, "networkPolicy": np_on,
            "jobs": [{"name": "migrate"}, {"name": "seed"}],
            "schedules": [{"name": "nightly", "schedule": "0 3 * * *"},
                          {"name": "hourly", "schedule": "0 * * * *"}],
        }),
    )
    .await;
    // A second Runtime (default runtime, another service: one Runtime per
    // identity) with the same kinds of objects.
    create_runtime(
        &ns,
        "api",
        json!({
            "service": "api", "replicas": 1, "networkPolicy": np_on,
            "jobs": [{"name": "seed"}],
            "schedules": [{"name": "hourly", "schedule": "0 * * * *"}],
        }),
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    wait_condition(&ns, "api", "Ready", "True", None).await;

    // The policy: ingress only, from the configured pods, to the http port.
    let np = nps.get("web").await.expect("web NetworkPolicy");
    let spec = np.spec.clone().expect("spec");
    assert_eq!(spec.policy_types, Some(vec!["Ingress".to_string()]));
    assert!(spec.egress.is_none_or(|e| e.is_empty()), "no egress rules");
    let selector = serde_json::to_value(&spec.pod_selector).expect("json");
    assert_eq!(
        selector["matchLabels"]["berth.dev/runtime"], "web",
        "{selector}"
    );
    let ingress = spec.ingress.expect("ingress");
    assert_eq!(ingress.len(), 1);
    assert_eq!(
        serde_json::to_value(&ingress[0]).expect("json"),
        json!({"from": [{"podSelector": {"matchLabels": {"role": "frontend"}}}],
               "ports": [{"port": "http", "protocol": "TCP"}]})
    );
    // …and "http" is the server container's port.
    let d = get::<Deployment>(&ns, "web").await.expect("deployment");
    let ports = d.spec.expect("spec").template.spec.expect("pod").containers[0]
        .ports
        .clone()
        .unwrap_or_default();
    assert!(
        ports.iter().any(|p| p.name.as_deref() == Some("http")),
        "{ports:?}"
    );

    let keep_np = [unrelated.clone(), nps.get("api").await.expect("api np")];
    let keep_jobs = [
        get::<Job>(&ns, "web-job-migrate").await.expect("job"),
        get::<Job>(&ns, "api-job-seed").await.expect("job"),
    ];
    let keep_crons = [
        get::<CronJob>(&ns, "web-cron-nightly").await.expect("cron"),
        get::<CronJob>(&ns, "api-cron-hourly").await.expect("cron"),
    ];
    assert!(get::<Job>(&ns, "web-job-seed").await.is_some());
    assert!(get::<CronJob>(&ns, "web-cron-hourly").await.is_some());

    // Off: the policy, the seed Job and the hourly CronJob of web go …
    merge_runtime(
        &ns,
        "web",
        json!({"spec": {
            "networkPolicy": {"enabled": false},
            "jobs": [{"name": "migrate"}],
            "schedules": [{"name": "nightly", "schedule": "0 3 * * *"}],
        }}),
    )
    .await;
    wait_for(
        "web's NetworkPolicy, seed Job and hourly CronJob deleted",
        WAIT,
        || {
            let ns = ns.clone();
            async move {
                get::<NetworkPolicy>(&ns, "web").await.is_none()
                    && get::<Job>(&ns, "web-job-seed").await.is_none()
                    && get::<CronJob>(&ns, "web-cron-hourly").await.is_none()
            }
        },
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    // … and nothing else.
    for np in &keep_np {
        let now = get::<NetworkPolicy>(&ns, &np.name_any()).await;
        assert_eq!(now.map(|n| uid(&n)), Some(uid(np)), "{}", np.name_any());
    }
    for job in &keep_jobs {
        let now = get::<Job>(&ns, &job.name_any()).await;
        assert_eq!(now.map(|n| uid(&n)), Some(uid(job)), "{}", job.name_any());
    }
    for cron in &keep_crons {
        let now = get::<CronJob>(&ns, &cron.name_any()).await;
        assert_eq!(now.map(|n| uid(&n)), Some(uid(cron)), "{}", cron.name_any());
    }
}

#[tokio::test]
async fn agent_autoscaling_owns_replicas_while_on_and_is_deleted_when_off() {
    let Granted { ns, bw, grants, .. } = setup_granted("agent-hpa").await;
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(ns.client.clone(), &ns.name);
    let unrelated: HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": "unrelated", "labels": {"app.kubernetes.io/managed-by": "berth"}},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nothing"},
                 "minReplicas": 1, "maxReplicas": 2}
    }))
    .expect("hpa");
    let unrelated = hpas
        .create(&PostParams::default(), &unrelated)
        .await
        .expect("unrelated hpa");
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": bw, "replicas": 2,
               "resources": {"requests": {"cpu": "100m"}}}),
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;

    // Every replica count the Deployment goes through from here on.
    let deps: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    let seen = Arc::new(Mutex::new(Vec::<i32>::new()));
    let watch = {
        let seen = seen.clone();
        let stream = watcher(
            deps.clone(),
            watcher::Config::default().fields("metadata.name=web"),
        )
        .applied_objects();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(Ok(d)) = stream.next().await {
                if let Some(r) = replicas(&d) {
                    seen.lock().expect("lock").push(r);
                }
            }
        })
    };

    merge_runtime(
        &ns,
        "web",
        json!({"spec": {"autoscaling": {"enabled": true, "minReplicas": 3, "maxReplicas": 4}}}),
    )
    .await;
    let hpa = wait_for_value("web HPA", WAIT, || {
        let hpas = hpas.clone();
        async move { hpas.get_opt("web").await.ok().flatten() }
    })
    .await;
    let spec = hpa.spec.expect("spec");
    assert_eq!((spec.min_replicas, spec.max_replicas), (Some(3), 4));
    assert_eq!(spec.scale_target_ref.name, "web");
    assert_eq!(spec.scale_target_ref.kind, "Deployment");
    let metric = serde_json::to_value(spec.metrics.expect("metrics")).expect("json");
    assert_eq!(metric[0]["resource"]["name"], "cpu", "{metric}");
    // The HPA controller raises replicas to its minimum; the agent leaves
    // them alone from then on.
    wait_for("HPA scales the Deployment to 3", WAIT, || {
        let deps = deps.clone();
        async move { deps.get("web").await.ok().and_then(|d| replicas(&d)) == Some(3) }
    })
    .await;
    wait_reconciles(&agent, 3.0).await;
    assert_eq!(
        replicas(&deps.get("web").await.expect("deployment")),
        Some(3),
        "the agent does not fight the HPA over replicas"
    );
    {
        let seen = seen.lock().expect("lock");
        assert!(
            seen.iter().all(|r| *r >= 2),
            "handing replicas to the HPA never scaled the Deployment down: {seen:?}"
        );
    }

    // Off: the HPA is deleted and the spec's replicas apply again; the
    // unrelated HPA stays.
    merge_runtime(
        &ns,
        "web",
        json!({"spec": {"autoscaling": {"enabled": false}}}),
    )
    .await;
    wait_for("HPA deleted and replicas back to 2", WAIT, || {
        let (deps, hpas) = (deps.clone(), hpas.clone());
        async move {
            matches!(hpas.get_opt("web").await, Ok(None))
                && deps.get("web").await.ok().and_then(|d| replicas(&d)) == Some(2)
        }
    })
    .await;
    watch.abort();
    let still = hpas.get("unrelated").await.expect("unrelated HPA stays");
    assert_eq!(uid(&still), uid(&unrelated));
    wait_condition(&ns, "web", "Ready", "True", None).await;
}

/// The multi-document YAML of an RBAC asset, as JSON values.
fn yaml_documents(text: &str) -> Vec<serde_json::Value> {
    yaml_serde::Deserializer::from_str(text)
        .map(|d| {
            let v: yaml_serde::Value = serde::Deserialize::deserialize(d).expect("yaml");
            serde_json::to_value(v).expect("json")
        })
        .filter(|v| !v.is_null())
        .collect()
}

/// Creates the shipped RBAC for a ServiceAccount in `ns` (cluster-scoped
/// names prefixed with `ns`), each document passed through `edit` first;
/// returns the cluster-scoped names created.
pub(crate) async fn install_shipped_rbac(
    client: &kube::Client,
    ns: &str,
    edit: impl Fn(&mut serde_json::Value),
) -> (Vec<String>, Vec<String>) {
    let mut docs = yaml_documents(include_str!("../../assets/rbac/agent.yaml"));
    docs.extend(yaml_documents(include_str!(
        "../../assets/rbac/agent-admission.yaml"
    )));
    let pp = PostParams::default();
    let (mut roles, mut bindings) = (Vec::new(), Vec::new());
    let unique = |name: &serde_json::Value| format!("{ns}-{}", name.as_str().expect("name"));
    for mut doc in docs {
        edit(&mut doc);
        let kind = doc["kind"].as_str().expect("kind").to_string();
        if let Some(subjects) = doc["subjects"].as_array_mut() {
            for s in subjects {
                s["namespace"] = json!(ns);
            }
        }
        match kind.as_str() {
            "ServiceAccount" => {
                doc["metadata"]["namespace"] = json!(ns);
                let sa: ServiceAccount = serde_json::from_value(doc).expect("sa");
                Api::<ServiceAccount>::namespaced(client.clone(), ns)
                    .create(&pp, &sa)
                    .await
                    .expect("create sa");
            }
            "ClusterRole" => {
                doc["metadata"]["name"] = json!(unique(&doc["metadata"]["name"]));
                let r: ClusterRole = serde_json::from_value(doc).expect("role");
                roles.push(r.name_any());
                Api::<ClusterRole>::all(client.clone())
                    .create(&pp, &r)
                    .await
                    .expect("create clusterrole");
            }
            "ClusterRoleBinding" => {
                doc["metadata"]["name"] = json!(unique(&doc["metadata"]["name"]));
                doc["roleRef"]["name"] = json!(unique(&doc["roleRef"]["name"]));
                let b: ClusterRoleBinding = serde_json::from_value(doc).expect("binding");
                bindings.push(b.name_any());
                Api::<ClusterRoleBinding>::all(client.clone())
                    .create(&pp, &b)
                    .await
                    .expect("create clusterrolebinding");
            }
            "Role" => {
                doc["metadata"]["namespace"] = json!(ns);
                let r: Role = serde_json::from_value(doc).expect("role");
                Api::<Role>::namespaced(client.clone(), ns)
                    .create(&pp, &r)
                    .await
                    .expect("create role");
            }
            "RoleBinding" => {
                doc["metadata"]["namespace"] = json!(ns);
                let b: RoleBinding = serde_json::from_value(doc).expect("rolebinding");
                Api::<RoleBinding>::namespaced(client.clone(), ns)
                    .create(&pp, &b)
                    .await
                    .expect("create rolebinding");
            }
            other => panic!("unexpected kind {other} in the RBAC assets"),
        }
    }
    assert!(!roles.is_empty() && !bindings.is_empty());
    (roles, bindings)
}

/// A kubeconfig for `token` on the test cluster (server and CA from the
/// harness kubeconfig), written next to `beside`.
fn token_kubeconfig(
    beside: &std::path::Path,
    token: &str,
    admin: &std::path::Path,
) -> std::path::PathBuf {
    let admin = std::fs::read_to_string(admin).expect("kubeconfig");
    let admin: yaml_serde::Value = yaml_serde::from_str(&admin).expect("kubeconfig yaml");
    let cluster = &admin["clusters"][0]["cluster"];
    let server = cluster["server"].as_str().expect("server");
    let ca = cluster["certificate-authority"].as_str().expect("ca path");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    certificate-authority: {ca}\n\
         users:\n- name: agent\n  user:\n    token: {token}\n\
         contexts:\n- name: c\n  context:\n    cluster: c\n    user: agent\ncurrent-context: c\n"
    );
    let path = beside.with_extension("kubeconfig");
    std::fs::write(&path, text).expect("write kubeconfig");
    path
}

/// A kubeconfig for the shipped RBAC's ServiceAccount in `ns` (a bound
/// token), written next to `beside`.
pub(crate) async fn agent_kubeconfig(
    ns: &harness::TestNamespace,
    beside: &std::path::Path,
) -> std::path::PathBuf {
    agent_kubeconfig_in(ns, beside, None).await
}

/// [`agent_kubeconfig`] for the cluster of the admin kubeconfig `admin`
/// (`None`: the shared cluster's).
pub(crate) async fn agent_kubeconfig_in(
    ns: &harness::TestNamespace,
    beside: &std::path::Path,
    admin: Option<std::path::PathBuf>,
) -> std::path::PathBuf {
    let token = Api::<ServiceAccount>::namespaced(ns.client.clone(), &ns.name)
        .create_token_request(
            "berth-agent",
            &PostParams::default(),
            &TokenRequest {
                spec: TokenRequestSpec {
                    expiration_seconds: Some(3600),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .expect("token request")
        .status
        .expect("token status")
        .token;
    let beside = beside.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let admin = admin.unwrap_or_else(|| harness::cluster().kubeconfig.clone());
        token_kubeconfig(&beside, &token, &admin)
    })
    .await
    .expect("kubeconfig")
}

/// Deletes the cluster-scoped RBAC objects [`install_shipped_rbac`] made.
pub(crate) async fn delete_rbac(client: &kube::Client, roles: Vec<String>, bindings: Vec<String>) {
    for r in roles {
        let _ = Api::<ClusterRole>::all(client.clone())
            .delete(&r, &DeleteParams::default())
            .await;
    }
    for b in bindings {
        let _ = Api::<ClusterRoleBinding>::all(client.clone())
            .delete(&b, &DeleteParams::default())
            .await;
    }
}

#[tokio::test]
async fn agent_runs_with_exactly_the_shipped_rbac() {
    let Granted { ns, bw, grants, .. } = setup_granted("agent-rbac").await;
    let (roles, bindings) = install_shipped_rbac(&ns.client, &ns.name, |_| {}).await;
    let kubeconfig = agent_kubeconfig(&ns, &grants).await;
    let mut opts = AgentOpts::new(&ns.name, Some(&grants));
    opts.kubeconfig = Some(kubeconfig);
    let agent = Agent::start(opts).await;

    // Every managed kind, the HPA and NetworkPolicy included.
    create_runtime(
        &ns,
        "web",
        json!({
            "runtimeProfile": bw, "replicas": 2,
            "resources": {"requests": {"cpu": "100m"}},
            "autoscaling": {"enabled": true, "minReplicas": 2, "maxReplicas": 3},
            "networkPolicy": {"enabled": true, "ingress": [{"podLabels": {"role": "frontend"}}]},
            "jobs": [{"name": "migrate"}],
            "schedules": [{"name": "nightly", "schedule": "0 3 * * *"}],
        }),
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    for present in [
        get::<HorizontalPodAutoscaler>(&ns, "web").await.is_some(),
        get::<NetworkPolicy>(&ns, "web").await.is_some(),
        get::<Job>(&ns, "web-job-migrate").await.is_some(),
        get::<CronJob>(&ns, "web-cron-nightly").await.is_some(),
    ] {
        assert!(present);
    }
    // The RuntimeGrant is published (cluster-scoped write + status).
    let rtgs: Api<RuntimeGrant> = Api::all(ns.client.clone());
    wait_for("RuntimeGrant with status", WAIT, || {
        let rtgs = rtgs.clone();
        let bw = bw.clone();
        async move {
            rtgs.get_opt(&bw)
                .await
                .ok()
                .flatten()
                .and_then(|g| g.status)
                .is_some_and(|s| !s.runtimes.is_empty())
        }
    })
    .await;
    // Deletes: switching things off.
    merge_runtime(
        &ns,
        "web",
        json!({"spec": {"networkPolicy": {"enabled": false}, "autoscaling": {"enabled": false},
                        "jobs": null, "schedules": null}}),
    )
    .await;
    wait_for("own objects deleted", WAIT, || {
        let ns = ns.clone();
        async move {
            get::<HorizontalPodAutoscaler>(&ns, "web").await.is_none()
                && get::<NetworkPolicy>(&ns, "web").await.is_none()
                && get::<Job>(&ns, "web-job-migrate").await.is_none()
                && get::<CronJob>(&ns, "web-cron-nightly").await.is_none()
        }
    })
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    // Events are raised on trouble only: a Runtime asking for a profile no
    // binding grants is Blocked, and its Warning needs the Event
    // permission of the shipped RBAC (events.k8s.io).
    create_runtime(&ns, "refused", json!({"runtimeProfile": "not-granted"})).await;
    wait_condition(&ns, "refused", "Blocked", "True", Some("NotGranted")).await;
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(ns.client.clone(), &ns.name);
    wait_for("an Event from the agent", WAIT, || {
        let events = events.clone();
        async move {
            events.list(&ListParams::default()).await.is_ok_and(|l| {
                l.items
                    .iter()
                    .any(|e| e.reporting_controller.as_deref() == Some("berth-agent"))
            })
        }
    })
    .await;
    let log = agent.log_text();
    let lower = log.to_lowercase();
    assert!(
        !lower.contains("forbidden") && !lower.contains(" 403"),
        "the shipped RBAC is missing a permission:\n{log}"
    );

    drop(agent);
    delete_rbac(&ns.client, roles, bindings).await;
}

/// A cache whose watch is refused receives nothing: once a whole
/// `--cache-sync-timeout-seconds` window passes so, the leader releases the
/// Lease and exits non-zero naming the cache, having written nothing (a
/// restart starts every watch afresh; a cache still receiving objects is
/// waited for instead, see `controller::list_progress`).
#[tokio::test]
async fn agent_exits_untouched_when_a_cache_receives_nothing() {
    let Granted { ns, bw, grants, .. } = setup_granted("agent-nosync").await;
    // The shipped RBAC without the right to list and watch ReplicaSets (it
    // has no Pod right at all any more: bare-pod analysis is opt-in).
    let (roles, bindings) = install_shipped_rbac(&ns.client, &ns.name, |doc| {
        if doc["kind"] == "ClusterRole"
            && let Some(rules) = doc["rules"].as_array_mut()
        {
            for rule in rules.iter_mut() {
                if let Some(resources) = rule["resources"].as_array_mut() {
                    resources.retain(|r| r != "replicasets");
                }
            }
            // A rule must name a resource.
            rules.retain(|rule| rule["resources"].as_array().is_none_or(|r| !r.is_empty()));
        }
    })
    .await;
    let kubeconfig = agent_kubeconfig(&ns, &grants).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": bw})).await;

    let mut opts = AgentOpts::new(&ns.name, Some(&grants));
    opts.kubeconfig = Some(kubeconfig);
    opts.cache_sync_timeout_seconds = 3;
    let lease_name = opts.lease_name.clone();
    let identity = opts.identity.clone();
    let mut agent = Agent::spawn(opts).await;
    let code = wait_for_value("the agent gives up", Duration::from_secs(60), || {
        let code = agent.exit_code();
        async move { code }
    })
    .await;
    let log = agent.log_text();
    assert!(code.is_some_and(|c| c != 0), "exit code {code:?}\n{log}");
    assert!(
        log.contains("caches did not sync: nothing received for 3s while listing")
            && log.contains("\"replicasets\""),
        "the error must name the cache that received nothing:\n{log}"
    );
    // It wrote nothing: no status, no Deployment; and it handed the Lease on.
    let runtime: Runtime = Api::namespaced(ns.client.clone(), &ns.name)
        .get("web")
        .await
        .expect("runtime");
    assert!(runtime.status.is_none(), "status written: {runtime:?}");
    assert!(get::<Deployment>(&ns, "web").await.is_none());
    let lease = Api::<Lease>::namespaced(ns.client.clone(), &ns.name)
        .get_opt(&lease_name)
        .await
        .expect("lease");
    let holder = lease.and_then(|l| l.spec).and_then(|s| s.holder_identity);
    assert_ne!(
        holder.as_deref(),
        Some(identity.as_str()),
        "lease kept:\n{log}"
    );
    delete_rbac(&ns.client, roles, bindings).await;
}

/// RFC 3339 `timestamp` of a JSON log line containing `needle`.
fn log_time(log: &str, needle: &str) -> Option<Timestamp> {
    log.lines()
        .filter(|l| l.contains(needle))
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .and_then(|v| v["timestamp"].as_str().and_then(|t| t.parse().ok()))
}

#[tokio::test]
async fn agent_losing_the_lease_stops_writes_and_exits_non_zero() {
    let Granted { ns, bw, grants, .. } = setup_granted("agent-lose").await;
    let opts = AgentOpts::new(&ns.name, Some(&grants));
    let lease_name = opts.lease_name.clone();
    let mut agent = Agent::start(opts).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": bw})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;

    // Keep the agent busy writing: a foreign controller keeps drifting the
    // Deployment's replicas, which the leader reverts.
    let deps: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    let drift = {
        let deps = deps.clone();
        tokio::spawn(async move {
            loop {
                let _ = deps
                    .patch(
                        "web",
                        &PatchParams::apply("drifter").force(),
                        &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                             "spec": {"replicas": 5}})),
                    )
                    .await;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        })
    };
    wait_for("the leader reverts drift", WAIT, || {
        let log = agent.log_text();
        // A foreign replica count is corrected (the contract governs the
        // whole spec) or re-applied: either is the leader writing.
        async move {
            log.matches("applying drifted or changed object").count()
                + log
                    .matches("removing what the production contract forbids")
                    .count()
                >= 2
        }
    })
    .await;

    // Another identity takes the Lease with a fresh renewTime. The agent
    // renews concurrently, so a replace can meet a 409 Conflict: read the
    // Lease again and retry, as any real contender would.
    let leases: Api<Lease> = Api::namespaced(ns.client.clone(), &ns.name);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut lease = leases.get(&lease_name).await.expect("lease");
        let spec = lease.spec.as_mut().expect("lease spec");
        assert_eq!(
            spec.holder_identity.as_deref(),
            Some(format!("{}-a", ns.name).as_str())
        );
        spec.holder_identity = Some("intruder".into());
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        spec.lease_duration_seconds = Some(3600);
        match leases
            .replace(&lease_name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => break,
            Err(kube::Error::Api(e)) if e.code == 409 && attempt < 10 => continue,
            Err(e) => panic!("take the lease (attempt {attempt}): {e}"),
        }
    }
    let taken = Instant::now();

    // The agent notices at its next renewal and exits non-zero, well
    // within the lease duration (4 s).
    let code = wait_for_value("the agent exits", Duration::from_secs(4), || {
        let code = agent.exit_code();
        async move { code }
    })
    .await;
    let elapsed = taken.elapsed();
    drift.abort();
    let log = agent.log_text();
    assert!(
        code.is_some_and(|c| c != 0),
        "exit code {code:?} after {elapsed:?}\n{log}"
    );
    let lost =
        log_time(&log, "leadership lost").unwrap_or_else(|| panic!("no loss logged:\n{log}"));
    // Nothing written after the loss: the agent kept reverting the drift
    // up to the takeover; no berth-agent write to the Deployment or the
    // Runtime's status is newer than the logged loss.
    let d = deps.get("web").await.expect("deployment");
    for mf in d.metadata.managed_fields.unwrap_or_default() {
        if mf.manager.as_deref() == Some("berth-agent")
            && let Some(t) = mf.time
        {
            // managedFields times have second precision.
            assert!(t.0 <= lost, "berth-agent wrote at {} after {lost}", t.0);
        }
    }
    let rt = Api::<Runtime>::namespaced(ns.client.clone(), &ns.name)
        .get("web")
        .await
        .expect("runtime");
    for mf in rt.metadata.managed_fields.unwrap_or_default() {
        if mf.manager.as_deref() == Some("berth-agent")
            && let Some(t) = mf.time
        {
            assert!(
                t.0 <= lost,
                "berth-agent wrote status at {} after {lost}",
                t.0
            );
        }
    }
    // The agent did not release or retake the Lease on its way out.
    let lease = leases.get(&lease_name).await.expect("lease");
    assert_eq!(
        lease.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("intruder")
    );
}
