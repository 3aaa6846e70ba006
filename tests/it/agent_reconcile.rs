//! The agent's reconcile on a real control plane: a granted Runtime gets
//! every object with its RuntimeClass and rolls out on kwok nodes; an idle
//! agent sends no writes; drift is reverted, deleted objects come back; an
//! unowned same-name object is a Conflict and left alone.

use std::collections::BTreeMap;
use std::time::Duration;

use berth_shared::api::RuntimeGrant;
use berth_tests::harness::{wait_for, wait_for_value};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, Granted, create_runtime, grant_status_writes, reconciles, setup_granted,
    wait_condition, writes,
};
use crate::support::at_rest::NodeChanges;

const WAIT: Duration = Duration::from_secs(120);

#[tokio::test]
async fn agent_granted_runtime_rolls_out_and_idles_without_writes() {
    let Granted {
        ns,
        class,
        bw,
        grants,
    } = setup_granted("agent-ok").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(
        &ns,
        "web",
        json!({
            "runtimeProfile": bw,
            "jobs": [{"name": "migrate"}],
            "schedules": [{"name": "nightly", "schedule": "0 3 * * *"}],
            "config": {"env": {"MODE": "prod"}},
        }),
    )
    .await;
    let rt = wait_condition(&ns, "web", "Ready", "True", None).await;
    let status = rt.status.clone().expect("status");
    let rollout = status.rollout.expect("rollout");
    assert_eq!(rollout.phase.as_str(), "Complete");
    assert_eq!((rollout.desired, rollout.ready), (2, 2));
    let profile = status.profile.expect("profile");
    assert_eq!(profile.state.as_str(), "Granted");
    assert_eq!(profile.class.as_deref(), Some(class.as_str()));

    let c = &ns.client;
    let d = Api::<Deployment>::namespaced(c.clone(), &ns.name)
        .get("web")
        .await
        .expect("deployment");
    let tpl = d.spec.expect("spec").template.spec.expect("pod spec");
    assert_eq!(tpl.runtime_class_name.as_deref(), Some(class.as_str()));
    let job = Api::<Job>::namespaced(c.clone(), &ns.name)
        .get("web-job-migrate")
        .await
        .expect("job");
    assert_eq!(
        job.spec
            .expect("spec")
            .template
            .spec
            .expect("pod")
            .runtime_class_name
            .as_deref(),
        Some(class.as_str())
    );
    let cron = Api::<CronJob>::namespaced(c.clone(), &ns.name)
        .get("web-cron-nightly")
        .await
        .expect("cronjob");
    let cron_tpl = cron
        .spec
        .expect("spec")
        .job_template
        .spec
        .expect("job")
        .template;
    assert_eq!(
        cron_tpl.spec.expect("pod").runtime_class_name.as_deref(),
        Some(class.as_str())
    );
    Api::<ConfigMap>::namespaced(c.clone(), &ns.name)
        .get("web-config")
        .await
        .expect("configmap");
    let sa = Api::<ServiceAccount>::namespaced(c.clone(), &ns.name)
        .get("web")
        .await
        .expect("sa");
    assert_eq!(sa.automount_service_account_token, Some(false));
    Api::<Service>::namespaced(c.clone(), &ns.name)
        .get("web")
        .await
        .expect("service");
    Api::<PodDisruptionBudget>::namespaced(c.clone(), &ns.name)
        .get("web")
        .await
        .expect("pdb");

    // Zero writes while nothing changes: several resyncs (every 2 s) and
    // publisher passes (every 1 s) later, the agent has sent no write
    // request besides Lease renewals. Counted at the agent's transport layer.
    tokio::time::sleep(Duration::from_secs(3)).await;
    // The grant's node coverage counts every Node, and other tests add
    // Nodes to the shared cluster: a coverage that changed meanwhile, or a
    // Node that came and went, is a change, and its grant status write is
    // not a write at rest (crate::support::at_rest).
    let nodes = NodeChanges::watch(c).await;
    let grants_api = Api::<RuntimeGrant>::all(c.clone());
    let coverage = || async {
        let grant = grants_api.get(&bw).await.expect("the grant");
        grant.status.and_then(|s| s.nodes)
    };
    let coverage_before = coverage().await;
    let before = agent.metrics().await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    let after = agent.metrics().await;
    let coverage_changed = coverage().await != coverage_before;
    let nodes_changed = nodes.seen();
    assert!(
        reconciles(&after) >= reconciles(&before) + 3.0,
        "resyncs happened: {} → {}",
        reconciles(&before),
        reconciles(&after)
    );
    let write_lines = |m: &str| -> Vec<String> {
        m.lines()
            .filter(|l| {
                l.starts_with("berth_agent_writes_total")
                    || l.starts_with("berth_agent_api_requests_total")
            })
            .map(str::to_string)
            .collect()
    };
    let others = |m: &str| writes(m) - grant_status_writes(m);
    assert!(
        coverage_changed
            || nodes_changed
            || grant_status_writes(&before) == grant_status_writes(&after),
        "no Node changed, yet the grant's status was written again: {} → {}",
        grant_status_writes(&before),
        grant_status_writes(&after)
    );
    assert_eq!(
        others(&before),
        others(&after),
        "an idle reconcile must not write;\nbefore: {:#?}\nafter: {:#?}\nagent log:\n{}",
        write_lines(&before),
        write_lines(&after),
        agent.log_text()
    );
}

#[tokio::test]
async fn agent_reverts_drift_and_recreates_deleted_objects() {
    let Granted { ns, bw, grants, .. } = setup_granted("agent-drift").await;
    let _agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": bw})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    let c = &ns.client;
    let pp = PatchParams::apply("someone-else").force();
    let deps: Api<Deployment> = Api::namespaced(c.clone(), &ns.name);
    deps.patch(
        "web",
        &pp,
        &Patch::Apply(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 5}}),
        ),
    )
    .await
    .expect("drift deployment");
    let svcs: Api<Service> = Api::namespaced(c.clone(), &ns.name);
    let port = svcs
        .get("web")
        .await
        .expect("service")
        .spec
        .expect("spec")
        .ports
        .expect("ports")[0]
        .port;
    assert_ne!(port, 9999);
    svcs.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"ports": [{"name": "http", "port": 9999, "targetPort": "http"}]}}),
        ),
    )
    .await
    .expect("drift service");
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(c.clone(), &ns.name);
    pdbs.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"maxUnavailable": 2}})),
    )
    .await
    .expect("drift pdb");
    wait_for("drift reverted", WAIT, || {
        let (deps, svcs, pdbs) = (deps.clone(), svcs.clone(), pdbs.clone());
        async move {
            let d = deps.get("web").await.ok();
            let s = svcs.get("web").await.ok();
            let p = pdbs.get("web").await.ok();
            let replicas = d.and_then(|d| d.spec).and_then(|s| s.replicas);
            let spec = s.and_then(|s| s.spec).unwrap_or_default();
            let selector_ok = spec
                .selector
                .is_some_and(|sel| sel.get("berth.dev/runtime").map(String::as_str) == Some("web"));
            // The foreign port is gone and only berth's is left.
            let ports_ok = spec.ports.is_some_and(|ps| {
                ps.len() == 1 && ps[0].port == port && ps[0].name.as_deref() == Some("http")
            });
            let mu = p
                .and_then(|p| p.spec)
                .and_then(|s| s.max_unavailable)
                .map(|m| serde_json::to_value(m).unwrap_or_default());
            replicas == Some(2) && selector_ok && ports_ok && mu == Some(json!(1))
        }
    })
    .await;

    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), &ns.name);
    let old_uid = cms.get("web-config").await.expect("cm").metadata.uid;
    cms.delete("web-config", &DeleteParams::default())
        .await
        .expect("delete cm");
    wait_for_value("ConfigMap recreated", WAIT, || {
        let cms = cms.clone();
        let old_uid = old_uid.clone();
        async move {
            cms.get_opt("web-config")
                .await
                .ok()
                .flatten()
                .filter(|cm| cm.metadata.uid != old_uid)
        }
    })
    .await;
}

#[tokio::test]
async fn agent_unowned_object_is_a_conflict_and_untouched() {
    let Granted { ns, bw, grants, .. } = setup_granted("agent-conflict").await;
    let cms: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &ns.name);
    let theirs = ConfigMap {
        metadata: ObjectMeta {
            name: Some("web-config".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("theirs".to_string(), "yes".to_string())])),
        ..Default::default()
    };
    cms.create(&PostParams::default(), &theirs)
        .await
        .expect("create unowned cm");
    let _agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": bw})).await;
    // The pods would load this ConfigMap: a dependency not owned (issue
    // 27), which also holds the Deployment back (agent_dependencies).
    let rt = wait_condition(&ns, "web", "Degraded", "True", Some("DependencyNotOwned")).await;
    let msg = &crate::agent_support::condition(&rt, "Degraded")
        .expect("degraded")
        .message;
    assert!(msg.contains("ConfigMap/web-config"), "{msg}");
    let cm = cms.get("web-config").await.expect("cm");
    assert!(cm.metadata.owner_references.is_none(), "not adopted");
    assert_eq!(
        cm.data,
        Some(BTreeMap::from([("theirs".to_string(), "yes".to_string())]))
    );
    assert!(
        !cm.metadata
            .managed_fields
            .unwrap_or_default()
            .iter()
            .any(|m| m.manager.as_deref() == Some("berth-agent")),
        "the agent never wrote to it"
    );
}
