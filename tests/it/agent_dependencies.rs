//! Issue 27, point 2 on the real control plane: berth never consumes what
//! it does not own. A ConfigMap `<name>-config` or a ServiceAccount
//! `<name>` planted by someone else (another field manager) — before the
//! Runtime exists, or while the agent is away after deleting berth's own —
//! holds the Deployment, Jobs and CronJobs back: none is created or
//! changed, the status names the object and the way out, and the phase
//! never says Complete. Once the planted object is gone the agent creates
//! its own and rolls out.

use std::collections::BTreeMap;
use std::time::Duration;

use berth_shared::api::Runtime;
use berth_tests::harness::{TestNamespace, wait_for_value};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, condition, create_runtime, setup, wait_condition, wait_reconciles,
};

const WAIT: Duration = Duration::from_secs(120);
/// The adversary: another field manager than the agent's.
const INTRUDER: &str = "intruder";
const EVIL: &str = "-javaagent:/evil.jar";

/// Plants a ConfigMap with a key the pods would load as an env var.
async fn plant_config_map(ns: &TestNamespace, name: &str) {
    Api::<ConfigMap>::namespaced(ns.client.clone(), &ns.name)
        .patch(
            name,
            &PatchParams::apply(INTRUDER),
            &Patch::Apply(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name},
                "data": {"JAVA_TOOL_OPTIONS": EVIL},
            })),
        )
        .await
        .expect("plant ConfigMap");
}

async fn plant_service_account(ns: &TestNamespace, name: &str) {
    Api::<ServiceAccount>::namespaced(ns.client.clone(), &ns.name)
        .patch(
            name,
            &PatchParams::apply(INTRUDER),
            &Patch::Apply(json!({
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": name},
                "automountServiceAccountToken": true,
            })),
        )
        .await
        .expect("plant ServiceAccount");
}

/// Waits for Degraded=True DependencyNotOwned naming `object`; checks the
/// message says how to resolve it and that Ready agrees.
async fn wait_held_by(ns: &TestNamespace, name: &str, object: &str) -> Runtime {
    let rt = wait_condition(ns, name, "Degraded", "True", Some("DependencyNotOwned")).await;
    let msg = &condition(&rt, "Degraded").expect("Degraded").message;
    assert!(msg.contains(object), "{msg}");
    assert!(
        msg.contains("delete it (berth recreates the Runtime's own) or rename the Runtime"),
        "{msg}"
    );
    let ready = condition(&rt, "Ready").expect("Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "DependencyNotOwned")
    );
    rt
}

fn phase(rt: &Runtime) -> Option<&'static str> {
    rt.status
        .as_ref()
        .and_then(|s| s.rollout.as_ref())
        .map(|r| r.phase.as_str())
}

async fn exists<K>(ns: &TestNamespace, name: &str) -> bool
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    crate::agent_support::get::<K>(ns, name).await.is_some()
}

/// Waits until the object at `name` is the Runtime's own (a controller
/// reference to it).
async fn wait_owned<K>(ns: &TestNamespace, name: &str, runtime: &str) -> K
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(ns.client.clone(), &ns.name);
    wait_for_value(&format!("{name} owned by {runtime}"), WAIT, || {
        let api = api.clone();
        async move {
            let obj = api.get_opt(name).await.ok().flatten()?;
            obj.meta()
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == "Runtime" && o.name == runtime && o.controller == Some(true))
                .then_some(obj)
        }
    })
    .await
}

#[tokio::test]
async fn agent_dependencies_planted_before_the_runtime_hold_every_workload_back() {
    let (ns, _class) = setup("agent-deps").await;
    // Two Runtimes, two identities: `web`'s ConfigMap and `api`'s
    // ServiceAccount are planted before either Runtime exists.
    plant_config_map(&ns, "web-config").await;
    plant_service_account(&ns, "api").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, None)).await;
    let workloads = json!({
        "replicas": 1,
        "jobs": [{"name": "migrate"}],
        "schedules": [{"name": "nightly", "schedule": "0 3 * * *"}],
    });
    create_runtime(&ns, "web", workloads.clone()).await;
    let mut api_spec = workloads;
    api_spec["service"] = json!("api");
    create_runtime(&ns, "api", api_spec).await;

    let web = wait_held_by(&ns, "web", "ConfigMap/web-config").await;
    let api = wait_held_by(&ns, "api", "ServiceAccount/api").await;
    // The agent looks again a few times: still nothing.
    wait_reconciles(&agent, 4.0).await;
    for name in ["web", "api"] {
        assert!(
            !exists::<Deployment>(&ns, name).await,
            "Deployment {name} created"
        );
        assert!(
            !exists::<Job>(&ns, &format!("{name}-job-migrate")).await,
            "Job of {name} created"
        );
        assert!(
            !exists::<CronJob>(&ns, &format!("{name}-cron-nightly")).await,
            "CronJob of {name} created"
        );
    }
    for rt in [&web, &api] {
        assert_ne!(phase(rt), Some("Complete"));
    }
    // The other dependency of each was created (it is free and berth's).
    wait_owned::<ServiceAccount>(&ns, "web", "web").await;
    wait_owned::<ConfigMap>(&ns, "api-config", "api").await;
    // The planted objects are untouched.
    let cm = Api::<ConfigMap>::namespaced(ns.client.clone(), &ns.name)
        .get("web-config")
        .await
        .expect("planted cm");
    assert!(cm.metadata.owner_references.is_none(), "not adopted");
    assert_eq!(
        cm.data,
        Some(BTreeMap::from([(
            "JAVA_TOOL_OPTIONS".to_string(),
            EVIL.to_string()
        )]))
    );

    // Gone: the agent creates its own and rolls out.
    Api::<ConfigMap>::namespaced(ns.client.clone(), &ns.name)
        .delete("web-config", &DeleteParams::default())
        .await
        .expect("delete planted cm");
    Api::<ServiceAccount>::namespaced(ns.client.clone(), &ns.name)
        .delete("api", &DeleteParams::default())
        .await
        .expect("delete planted sa");
    for name in ["web", "api"] {
        let rt = wait_condition(&ns, name, "Ready", "True", None).await;
        assert_eq!(phase(&rt), Some("Complete"));
        assert!(exists::<Job>(&ns, &format!("{name}-job-migrate")).await);
        assert!(exists::<CronJob>(&ns, &format!("{name}-cron-nightly")).await);
    }
    let cm: ConfigMap = wait_owned(&ns, "web-config", "web").await;
    assert!(
        !cm.data
            .unwrap_or_default()
            .contains_key("JAVA_TOOL_OPTIONS"),
        "berth's own ConfigMap"
    );
    let sa: ServiceAccount = wait_owned(&ns, "api", "api").await;
    assert_eq!(sa.automount_service_account_token, Some(false));
}

#[tokio::test]
async fn agent_dependencies_replanted_while_the_agent_is_away_freeze_the_workloads() {
    let (ns, _class) = setup("agent-deps-run").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, None)).await;
    create_runtime(
        &ns,
        "web",
        json!({
            "replicas": 1,
            "schedules": [{"name": "nightly", "schedule": "0 3 * * *"}],
        }),
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    let deps: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    let crons: Api<CronJob> = Api::namespaced(ns.client.clone(), &ns.name);
    let before = deps.get("web").await.expect("deployment");
    let cron_before = crons.get("web-cron-nightly").await.expect("cronjob");

    // The agent is away (killed): berth's ConfigMap is deleted and
    // another party's takes its name before the agent could recreate it;
    // the tenant changes the image.
    let mut agent = agent;
    agent.kill();
    Api::<ConfigMap>::namespaced(ns.client.clone(), &ns.name)
        .delete("web-config", &DeleteParams::default())
        .await
        .expect("delete berth's cm");
    plant_config_map(&ns, "web-config").await;
    Api::<Runtime>::namespaced(ns.client.clone(), &ns.name)
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": {"tag": "2"}}})),
        )
        .await
        .expect("new image");
    let mut opts = AgentOpts::new(&ns.name, None);
    opts.identity = format!("{}-b", ns.name);
    let agent = Agent::start(opts).await;

    wait_held_by(&ns, "web", "ConfigMap/web-config").await;
    wait_reconciles(&agent, 4.0).await;
    let after = deps.get("web").await.expect("deployment");
    assert_eq!(
        before.metadata.generation, after.metadata.generation,
        "the Deployment was changed while a foreign ConfigMap is in the way"
    );
    let cron_after = crons.get("web-cron-nightly").await.expect("cronjob");
    assert_eq!(
        cron_before.metadata.generation,
        cron_after.metadata.generation
    );
    // Rolled out (the old template), not Ready: the phase says so.
    let rt = wait_held_by(&ns, "web", "ConfigMap/web-config").await;
    assert_eq!(phase(&rt), Some("Degraded"));

    Api::<ConfigMap>::namespaced(ns.client.clone(), &ns.name)
        .delete("web-config", &DeleteParams::default())
        .await
        .expect("delete planted cm");
    let cm: ConfigMap = wait_owned(&ns, "web-config", "web").await;
    assert!(
        !cm.data
            .unwrap_or_default()
            .contains_key("JAVA_TOOL_OPTIONS")
    );
    wait_for_value("the new image rolled out", WAIT, || {
        let deps = deps.clone();
        async move {
            let d = deps.get("web").await.ok()?;
            let image = d.spec?.template.spec?.containers.first()?.image.clone()?;
            image.ends_with(":2").then_some(())
        }
    })
    .await;
    let rt = wait_condition(&ns, "web", "Ready", "True", None).await;
    assert_eq!(phase(&rt), Some("Complete"));
}
