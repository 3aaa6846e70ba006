//! Issue 52, item 6: labels in the Kubernetes domains on a Runtime's own
//! objects. `service.kubernetes.io/service-proxy-name` on its Service
//! makes kube-proxy drop the Service (no node routes to it) while the
//! Runtime stayed Ready; any `*.kubernetes.io/` or `*.k8s.io/` label is
//! read by some component. Each is set by the tenant (a user bound to
//! `edit` in the namespace, impersonated) and must be removed; a foreign
//! label outside those domains stays (tools tag objects). On the main of
//! 2026-12-05 the labels stayed: the contract left the objects' own
//! labels alone.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, binding_for_service, create_runtime, setup, wait_condition, write_grants,
};
use crate::contract_adversary::tenant_client;

const UNDONE_WITHIN: Duration = Duration::from_secs(45);

/// Labels `name` with `labels` as the tenant; whether, within
/// [`UNDONE_WITHIN`], each key is gone (true) or stayed (false).
async fn label<K>(
    tenant: &Client,
    admin: &Client,
    ns: &str,
    name: &str,
    labels: &[(&str, &str)],
) -> Vec<(String, bool)>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let map: serde_json::Map<_, _> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    Api::<K>::namespaced(tenant.clone(), ns)
        .patch(
            name,
            &PatchParams {
                field_manager: Some("kubectl-label".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"metadata": {"labels": map}})),
        )
        .await
        .unwrap_or_else(|e| {
            panic!(
                "{} {name}: the tenant's label was refused: {e}",
                K::kind(&())
            )
        });
    let admin = Api::<K>::namespaced(admin.clone(), ns);
    let present = |o: &K, k: &str| o.meta().labels.as_ref().is_some_and(|l| l.contains_key(k));
    let deadline = tokio::time::Instant::now() + UNDONE_WITHIN;
    loop {
        let o = admin.get(name).await.expect("get");
        let gone: Vec<(String, bool)> = labels
            .iter()
            .map(|(k, _)| (k.to_string(), !present(&o, k)))
            .collect();
        if gone.iter().all(|(_, g)| *g) || tokio::time::Instant::now() > deadline {
            return gone;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test]
async fn kubernetes_labels_on_managed_objects_are_removed_others_stay() {
    let (ns, class) = setup("rsv-lbl").await;
    let profile = format!("{}-worker", ns.name);
    let grants = write_grants(&[binding_for_service(
        &profile,
        &class,
        "bounded-runc",
        "worker",
    )]);
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": profile, "replicas": 1}),
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    let tenant = tenant_client(&ns.client, &ns.name).await;
    let (c, n) = (&ns.client, ns.name.as_str());

    let mut stayed = Vec::new();
    let mut record = |kind: &str, found: Vec<(String, bool)>| {
        for (key, gone) in found {
            eprintln!("{kind}: {key}: {}", if gone { "removed" } else { "STAYED" });
            if !gone {
                stayed.push(format!("{kind} {key}"));
            }
        }
    };
    record(
        "Service",
        label::<Service>(
            &tenant,
            c,
            n,
            "web",
            &[
                ("service.kubernetes.io/service-proxy-name", "nowhere"),
                ("service.kubernetes.io/headless", ""),
            ],
        )
        .await,
    );
    record(
        "Deployment",
        label::<Deployment>(&tenant, c, n, "web", &[("example.k8s.io/x", "y")]).await,
    );
    record(
        "PodDisruptionBudget",
        label::<PodDisruptionBudget>(&tenant, c, n, "web", &[("kubernetes.io/x", "y")]).await,
    );
    record(
        "ConfigMap",
        label::<ConfigMap>(
            &tenant,
            c,
            n,
            "web-config",
            &[("node.kubernetes.io/x", "y")],
        )
        .await,
    );
    assert!(
        stayed.is_empty(),
        "these Kubernetes-domain labels stayed: {stayed:#?}\nagent log:\n{}",
        agent.log_text()
    );

    // A tool's label stays, and berth's own are kept.
    let kept = label::<Service>(
        &tenant,
        c,
        n,
        "web",
        &[("policy.example.com/checked", "yes")],
    )
    .await;
    assert_eq!(
        kept,
        vec![("policy.example.com/checked".to_string(), false)]
    );
    let svc = Api::<Service>::namespaced(c.clone(), n)
        .get("web")
        .await
        .expect("service");
    let labels = svc.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("berth")
    );
    assert_eq!(
        labels.get("policy.example.com/checked").map(String::as_str),
        Some("yes")
    );
    wait_condition(&ns, "web", "Ready", "True", None).await;
}
