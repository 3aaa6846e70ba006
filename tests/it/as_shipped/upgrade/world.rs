//! What the upgrade and the rollback must leave as it was: each Runtime's
//! status, each Deployment's generation and pod template, every pod's and
//! Job's uid.

use std::collections::BTreeMap;

use berth_shared::api::Runtime;
use berth_tests::harness::TestNamespace;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;
use serde_json::Value;

/// What must not change across the upgrade and the rollback.
#[derive(Debug, PartialEq)]
pub(super) struct World {
    /// Each Runtime's status, as the agent wrote it.
    pub(super) statuses: BTreeMap<String, Value>,
    /// Each Deployment's generation and pod template.
    pub(super) deployments: BTreeMap<String, (Option<i64>, Value)>,
    /// Every pod of the namespace (servers and the Job's), by uid.
    pub(super) pods: BTreeMap<String, String>,
    /// Every Job of the namespace, by uid.
    pub(super) jobs: BTreeMap<String, String>,
}

pub(super) async fn world(ns: &TestNamespace) -> World {
    let runtimes = Api::<Runtime>::namespaced(ns.client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .expect("Runtimes")
        .items;
    let statuses = runtimes
        .iter()
        .map(|r| {
            (
                r.metadata.name.clone().unwrap_or_default(),
                serde_json::to_value(&r.status).expect("status"),
            )
        })
        .collect();
    let deployments = Api::<Deployment>::namespaced(ns.client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .expect("Deployments")
        .items
        .into_iter()
        .map(|d| {
            let template = serde_json::to_value(d.spec.map(|s| s.template)).expect("template");
            (
                d.metadata.name.unwrap_or_default(),
                (d.metadata.generation, template),
            )
        })
        .collect();
    let pods = uids::<Pod>(ns).await;
    let jobs = uids::<Job>(ns).await;
    World {
        statuses,
        deployments,
        pods,
        jobs,
    }
}

/// Every object of kind `K` in the namespace: its name and uid.
async fn uids<K>(ns: &TestNamespace) -> BTreeMap<String, String>
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    Api::<K>::namespaced(ns.client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("listing {}: {e}", K::kind(&())))
        .items
        .into_iter()
        .map(|o| {
            let meta = o.meta();
            (
                meta.name.clone().unwrap_or_default(),
                meta.uid.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// Panics, naming what differs, unless `now` is `before`.
pub(super) fn assert_same(before: &World, now: &World, after: &str) {
    let mut diffs = Vec::new();
    for (name, status) in &before.statuses {
        let other = now.statuses.get(name);
        if other != Some(status) {
            diffs.push(format!(
                "Runtime {name}'s status:\n  before: {status}\n  after:  {}",
                other.map(Value::to_string).unwrap_or_default()
            ));
        }
    }
    for (name, (generation, template)) in &before.deployments {
        match now.deployments.get(name) {
            Some((g, t)) if g == generation && t == template => {}
            Some((g, t)) => diffs.push(format!(
                "Deployment {name}: generation {generation:?} → {g:?}; template\n  before: {template}\n  after:  {t}"
            )),
            None => diffs.push(format!("Deployment {name} is gone")),
        }
    }
    if now.deployments.len() != before.deployments.len() {
        diffs.push(format!(
            "Deployments: {:?} → {:?}",
            before.deployments.keys().collect::<Vec<_>>(),
            now.deployments.keys().collect::<Vec<_>>()
        ));
    }
    if now.pods != before.pods {
        diffs.push(format!("pods: {:?} → {:?}", before.pods, now.pods));
    }
    if now.jobs != before.jobs {
        diffs.push(format!("Jobs: {:?} → {:?}", before.jobs, now.jobs));
    }
    assert!(
        diffs.is_empty(),
        "after {after}, the Runtimes' world changed:\n{}",
        diffs.join("\n")
    );
}
