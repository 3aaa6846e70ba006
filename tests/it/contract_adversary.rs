//! Issue 27, points 1 and 5, on the real control plane: the governed part
//! of every managed object is exactly the rendered one. The fullest
//! Runtime at rest draws no correction (the apiserver's defaults are not
//! drift); then another field manager (`intruder`) adds, one at a time,
//! what the issue found staying — a key in a selector, AppArmor,
//! SELinux, sysctls, `LD_PRELOAD`, mounts, `envFrom`, … — and each is gone
//! after exactly one write. (Autoscaling from zero: `autoscale_zero.rs`.)

use std::time::Duration;

use berth_tests::harness::{self, wait_for, wait_for_value};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::agent_support::{
    Agent, AgentOpts, Granted, create_runtime, metric_sum, setup_granted, wait_condition,
    wait_reconciles, writes,
};

/// The fullest spec the tests' cluster can run: every optional feature.
pub(crate) fn fullest(profile: &str) -> Value {
    json!({
        "runtimeProfile": profile,
        "resources": {
            "requests": {"cpu": "0.5", "memory": "1024Mi"},
            "limits": {"cpu": "1.5", "memory": "1.5Gi"},
        },
        "expose": {"port": 9090},
        "autoscaling": {"enabled": true, "minReplicas": 2, "maxReplicas": 4,
            "targetCPUUtilizationPercentage": 70},
        "networkPolicy": {"enabled": true, "ingress": [
            {"podLabels": {"role": "frontend"}},
            {"namespaceLabels": {"kubernetes.io/metadata.name": "monitoring"},
             "podLabels": {"app": "prometheus"}},
        ]},
        "jobs": [{"name": "migrate", "command": ["/app/worker"], "args": ["migrate", "--yes"],
            "backoffLimit": 1, "activeDeadlineSeconds": 600}],
        "schedules": [{"name": "nightly", "schedule": "0 3 * * *", "timeZone": "Europe/Berlin",
            "concurrencyPolicy": "Forbid", "args": ["report"]}],
        "config": {"env": {"MODE": "prod", "LOG_LEVEL": "info"}},
        "podMetadata": {"labels": {"team": "data"}, "annotations": {"example.com/owner": "data-team"}},
        "shutdownDrainTimeoutSeconds": 45,
    })
}

fn correct_writes(metrics: &str) -> f64 {
    metric_sum(metrics, "berth_agent_writes_total", |l| {
        l.contains("verb=\"correct\"")
    })
}

pub(crate) fn agent_writes_to(metrics: &str, resource: &str) -> f64 {
    let wanted = format!("resource=\"{resource}\"");
    metric_sum(metrics, "berth_agent_api_requests_total", |l| {
        !l.contains("method=\"GET\"") && l.contains(&wanted)
    })
}

const FORBIDS: &str = "removing what the production contract forbids";

pub(crate) async fn rolled_out(client: &Client, ns: &str, name: &str, min_replicas: i32) {
    let deployments = Api::<Deployment>::namespaced(client.clone(), ns);
    wait_for_value(
        &format!("Deployment {name} rolled out"),
        Duration::from_secs(180),
        || {
            let deployments = deployments.clone();
            async move {
                let d = deployments.get(name).await.ok()?;
                let want = d.spec.as_ref()?.replicas?;
                let s = d.status.as_ref()?;
                let done = want >= min_replicas
                    && s.observed_generation == d.metadata.generation
                    && s.updated_replicas == Some(want)
                    && s.ready_replicas == Some(want)
                    && s.available_replicas == Some(want)
                    && s.replicas == Some(want);
                done.then_some(())
            }
        },
    )
    .await;
}

/// One foreign change: what it does, to which object, and how to see it
/// is still there (on the object as JSON).
struct Attack {
    what: &'static str,
    patch: Value,
    strategic: bool,
    still: fn(&Value) -> bool,
}

fn attack(what: &'static str, patch: Value, still: fn(&Value) -> bool) -> Attack {
    Attack {
        what,
        patch,
        strategic: true,
        still,
    }
}

/// Plays each attack on `name` of kind `K`: it lands, it is removed, and
/// exactly one write of the agent to `resource` removed it.
async fn play<K>(
    agent: &Agent,
    client: &Client,
    ns: &str,
    name: &str,
    resource: &str,
    attacks: Vec<Attack>,
) where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let intruder = PatchParams {
        field_manager: Some("intruder".to_string()),
        ..Default::default()
    };
    for a in attacks {
        let before = agent.metrics().await;
        let landed = if a.strategic {
            api.patch(name, &intruder, &Patch::Strategic(&a.patch))
                .await
        } else {
            api.patch(name, &intruder, &Patch::Merge(&a.patch)).await
        }
        .unwrap_or_else(|e| panic!("{resource}/{name}: foreign patch ({}) refused: {e}", a.what));
        let landed = serde_json::to_value(&landed).expect("json");
        assert!(
            (a.still)(&landed),
            "{}: the foreign change landed: {landed:#}",
            a.what
        );
        wait_for(
            &format!("{} removed from {resource}/{name}", a.what),
            Duration::from_secs(60),
            || {
                let api = api.clone();
                async move {
                    let v = serde_json::to_value(api.get(name).await.expect("get")).expect("json");
                    !(a.still)(&v)
                }
            },
        )
        .await;
        wait_reconciles(agent, 3.0).await;
        let after = agent.metrics().await;
        let sent = agent_writes_to(&after, resource) - agent_writes_to(&before, resource);
        assert_eq!(
            sent,
            1.0,
            "{}: one correcting write to {resource}/{name}, then quiet; log:\n{}",
            a.what,
            agent.log_text()
        );
        eprintln!("attack removed in one write: {resource}/{name}: {}", a.what);
    }
}

/// A client acting as user `tenant`, bound to the `edit` ClusterRole in
/// `ns` only (impersonated by the admin client's credentials).
pub(crate) async fn tenant_client(admin: &Client, ns: &str) -> Client {
    use k8s_openapi::api::rbac::v1::RoleBinding;
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "tenant-edit", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "tenant"}],
    }))
    .expect("binding");
    Api::<RoleBinding>::namespaced(admin.clone(), ns)
        .create(&Default::default(), &binding)
        .await
        .expect("bind edit");
    let kc = Kubeconfig::read_from(&harness::cluster().kubeconfig).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    config.auth_info.impersonate = Some("tenant".into());
    config.auth_info.impersonate_groups = Some(vec!["system:authenticated".into()]);
    Client::try_from(config).expect("tenant client")
}

fn pod(extra: Value) -> Value {
    json!({"spec": {"template": {"spec": extra}}})
}

fn app_container(extra: Value) -> Value {
    let mut c = json!({"name": "app"});
    if let (Some(c), Some(e)) = (c.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            c.insert(k.clone(), v.clone());
        }
    }
    pod(json!({"containers": [c]}))
}

fn template_spec(v: &Value) -> &Value {
    &v["spec"]["template"]["spec"]
}

fn app(v: &Value) -> &Value {
    &template_spec(v)["containers"][0]
}

fn has_entry(list: &Value, key: &str, value: &str) -> bool {
    list.as_array()
        .is_some_and(|l| l.iter().any(|e| e[key] == json!(value)))
}

#[tokio::test]
async fn contract_adversary_every_foreign_addition_is_removed_in_one_write() {
    let Granted { ns, bw, grants, .. } = setup_granted("contract-adv").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(&ns, "web", fullest(&bw)).await;
    // Another service behind a LoadBalancer (node ports, traffic policy:
    // more fields the apiserver fills in), on the default runtime.
    create_runtime(
        &ns,
        "edge",
        json!({"service": "edge", "replicas": 1, "expose": {"type": "LoadBalancer"}}),
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    wait_condition(&ns, "edge", "Ready", "True", None).await;
    rolled_out(&ns.client, &ns.name, "web", 2).await;
    rolled_out(&ns.client, &ns.name, "edge", 1).await;
    tokio::time::sleep(Duration::from_secs(11)).await;

    // At rest: the defaults the real apiserver filled in drew no correction,
    // and an idle window writes nothing.
    wait_reconciles(&agent, 4.0).await;
    let before = agent.metrics().await;
    wait_reconciles(&agent, 6.0).await;
    let after = agent.metrics().await;
    assert_eq!(
        correct_writes(&after),
        0.0,
        "the fullest Runtime's defaults are not drift; log:\n{}",
        agent.log_text()
    );
    assert!(!agent.log_text().contains(FORBIDS), "{}", agent.log_text());
    assert_eq!(
        writes(&after) - writes(&before),
        0.0,
        "an idle window writes nothing; log:\n{}",
        agent.log_text()
    );

    let c = &ns.client;
    let n = ns.name.as_str();
    play::<Deployment>(
        &agent,
        c,
        n,
        "web",
        "deployments",
        vec![
            attack(
                "seLinuxOptions",
                pod(json!({"securityContext": {"seLinuxOptions": {"type": "spc_t"}}})),
                |v| !template_spec(v)["securityContext"]["seLinuxOptions"].is_null(),
            ),
            attack(
                "sysctls",
                pod(json!({"securityContext": {"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "0"}]}})),
                |v| !template_spec(v)["securityContext"]["sysctls"].is_null(),
            ),
            attack(
                "appArmorProfile on the pod",
                pod(json!({"securityContext": {"appArmorProfile": {"type": "Unconfined"}}})),
                |v| !template_spec(v)["securityContext"]["appArmorProfile"].is_null(),
            ),
            attack(
                "appArmorProfile on the container",
                app_container(json!({"securityContext": {"appArmorProfile": {"type": "Unconfined"}}})),
                |v| !app(v)["securityContext"]["appArmorProfile"].is_null(),
            ),
            attack(
                "AppArmor annotation on the template",
                json!({"spec": {"template": {"metadata": {"annotations": {
                    "container.apparmor.security.beta.kubernetes.io/app": "unconfined"}}}}}),
                |v| {
                    !v["spec"]["template"]["metadata"]["annotations"]
                        ["container.apparmor.security.beta.kubernetes.io/app"]
                        .is_null()
                },
            ),
            attack(
                "LD_PRELOAD env entry",
                app_container(json!({"env": [{"name": "LD_PRELOAD", "value": "/tmp/evil.so"}]})),
                |v| has_entry(&app(v)["env"], "name", "LD_PRELOAD"),
            ),
            attack(
                "extra envFrom",
                app_container(json!({"envFrom": [{"secretRef": {"name": "stolen"}}]})),
                |v| {
                    app(v)["envFrom"]
                        .as_array()
                        .is_some_and(|l| l.iter().any(|e| e["secretRef"]["name"] == json!("stolen")))
                },
            ),
            attack(
                "extra volumeMount",
                app_container(json!({"volumeMounts": [{"name": "tmp", "mountPath": "/app"}]})),
                |v| has_entry(&app(v)["volumeMounts"], "mountPath", "/app"),
            ),
            attack(
                "foreign template label",
                json!({"spec": {"template": {"metadata": {"labels": {"role": "admin-api"}}}}}),
                |v| !v["spec"]["template"]["metadata"]["labels"]["role"].is_null(),
            ),
            attack(
                "dnsPolicy None with a foreign nameserver",
                pod(json!({"dnsPolicy": "None", "dnsConfig": {"nameservers": ["203.0.113.9"]}})),
                |v| !template_spec(v)["dnsConfig"].is_null(),
            ),
            attack(
                "rollout paused",
                json!({"spec": {"paused": true}}),
                |v| v["spec"]["paused"] == json!(true),
            ),
        ],
    )
    .await;
    play::<Service>(
        &agent,
        c,
        n,
        "web",
        "services",
        vec![
            attack(
                "extra selector key",
                json!({"spec": {"selector": {"extra": "x"}}}),
                |v| !v["spec"]["selector"]["extra"].is_null(),
            ),
            attack(
                "externalIPs",
                json!({"spec": {"externalIPs": ["203.0.113.10"]}}),
                |v| !v["spec"]["externalIPs"].is_null(),
            ),
        ],
    )
    .await;
    play::<NetworkPolicy>(
        &agent,
        c,
        n,
        "web",
        "networkpolicies",
        vec![
            attack(
                "extra podSelector key",
                json!({"spec": {"podSelector": {"matchLabels": {"extra": "x"}}}}),
                |v| !v["spec"]["podSelector"]["matchLabels"]["extra"].is_null(),
            ),
            Attack {
                what: "an ingress rule admitting everyone",
                patch: json!({"spec": {"ingress": [{}]}}),
                strategic: false,
                still: |v| {
                    v["spec"]["ingress"]
                        .as_array()
                        .is_some_and(|l| l.iter().any(|r| r.get("from").is_none()))
                },
            },
        ],
    )
    .await;
    play::<CronJob>(
        &agent,
        c,
        n,
        "web-cron-nightly",
        "cronjobs",
        vec![
            attack(
                "LD_PRELOAD in the job pods",
                json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [
                    {"name": "app", "env": [{"name": "LD_PRELOAD", "value": "/tmp/evil.so"}]}]}}}}}}),
                |v| {
                    has_entry(
                        &v["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"],
                        "name",
                        "LD_PRELOAD",
                    )
                },
            ),
            attack(
                "AppArmor annotation on the job pods",
                json!({"spec": {"jobTemplate": {"spec": {"template": {"metadata": {"annotations": {
                    "container.apparmor.security.beta.kubernetes.io/app": "unconfined"}}}}}}}),
                |v| {
                    !v["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["annotations"]
                        ["container.apparmor.security.beta.kubernetes.io/app"]
                        .is_null()
                },
            ),
            attack(
                "sysctls in the job pods",
                json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"securityContext":
                    {"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "0"}]}}}}}}}),
                |v| {
                    !v["spec"]["jobTemplate"]["spec"]["template"]["spec"]["securityContext"]["sysctls"]
                        .is_null()
                },
            ),
        ],
    )
    .await;
    play::<HorizontalPodAutoscaler>(
        &agent,
        c,
        n,
        "web",
        "horizontalpodautoscalers",
        vec![attack(
            "scale-up disabled by a foreign behavior",
            json!({"spec": {"behavior": {"scaleUp": {"selectPolicy": "Disabled"}}}}),
            |v| v["spec"]["behavior"]["scaleUp"]["selectPolicy"] == json!("Disabled"),
        )],
    )
    .await;
    play::<PodDisruptionBudget>(
        &agent,
        c,
        n,
        "web",
        "poddisruptionbudgets",
        vec![
            attack(
                "extra selector key (the budget covers no pod)",
                json!({"spec": {"selector": {"matchLabels": {"extra": "x"}}}}),
                |v| !v["spec"]["selector"]["matchLabels"]["extra"].is_null(),
            ),
            // Metadata only: no new generation, and the agent's store
            // keeps the labels as a digest (`reduce::managed`).
            attack(
                "berth's runtime label rewritten",
                json!({"metadata": {"labels": {"berth.dev/runtime": "other"}}}),
                |v| v["metadata"]["labels"]["berth.dev/runtime"] == json!("other"),
            ),
        ],
    )
    .await;
    play::<ConfigMap>(
        &agent,
        c,
        n,
        "web-config",
        "configmaps",
        vec![attack(
            "JAVA_TOOL_OPTIONS key",
            json!({"data": {"JAVA_TOOL_OPTIONS": "-javaagent:/tmp/evil.jar"}}),
            |v| !v["data"]["JAVA_TOOL_OPTIONS"].is_null(),
        )],
    )
    .await;
    play::<ServiceAccount>(
        &agent,
        c,
        n,
        "web",
        "serviceaccounts",
        vec![
            attack(
                "automountServiceAccountToken flipped",
                json!({"automountServiceAccountToken": true}),
                |v| v["automountServiceAccountToken"] == json!(true),
            ),
            attack(
                "foreign imagePullSecrets",
                json!({"imagePullSecrets": [{"name": "someone-elses-registry"}]}),
                |v| !v["imagePullSecrets"].is_null(),
            ),
            attack(
                "foreign secrets",
                json!({"secrets": [{"name": "admin-token"}]}),
                |v| !v["secrets"].is_null(),
            ),
        ],
    )
    .await;

    // A tenant with the namespace's `edit` role (impersonated): the same.
    let tenant = tenant_client(c, n).await;
    play::<NetworkPolicy>(
        &agent,
        &tenant,
        n,
        "web",
        "networkpolicies",
        vec![attack(
            "extra podSelector key, by a tenant",
            json!({"spec": {"podSelector": {"matchLabels": {"tenant": "x"}}}}),
            |v| !v["spec"]["podSelector"]["matchLabels"]["tenant"].is_null(),
        )],
    )
    .await;
    play::<Deployment>(
        &agent,
        &tenant,
        n,
        "web",
        "deployments",
        vec![attack(
            "LD_PRELOAD env entry, by a tenant",
            app_container(json!({"env": [{"name": "LD_PRELOAD", "value": "/tmp/evil.so"}]})),
            |v| has_entry(&app(v)["env"], "name", "LD_PRELOAD"),
        )],
    )
    .await;

    // A Job's pod template: the apiserver itself refuses the change.
    let jobs: Api<Job> = Api::namespaced(c.clone(), n);
    let refused = jobs
        .patch(
            "web-job-migrate",
            &PatchParams {
                field_manager: Some("intruder".to_string()),
                ..Default::default()
            },
            &Patch::Strategic(&json!({"spec": {"template": {"spec": {"hostNetwork": true}}}})),
        )
        .await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(s)) if s.code == 422),
        "a Job's pod template is immutable: {refused:?}"
    );

    // And quiet again.
    wait_condition(&ns, "web", "Ready", "True", None).await;
    assert!(
        !agent.log_text().contains("reconcile failed"),
        "no reconcile failed; log:\n{}",
        agent.log_text()
    );
}
