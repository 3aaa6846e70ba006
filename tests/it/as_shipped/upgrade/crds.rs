//! The CRDs upgraded (and rolled back) in place, and the objects they
//! store still valid under the schema served.

use std::collections::BTreeMap;

use berth_shared::api::{Runtime, RuntimeGrant};
use berth_tests::harness::{TestNamespace, wait_for_value};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::real_node::WAIT;

/// The CRDs as the chart at `chart` ships them, by name.
fn chart_crds(chart: &std::path::Path) -> BTreeMap<String, CustomResourceDefinition> {
    let dir = chart.join("files/crds");
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = e.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("CRD file");
        let crd: CustomResourceDefinition =
            yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.insert(crd.metadata.name.clone().expect("named"), crd);
    }
    out
}

/// The schema of each version of a CRD, by version name.
fn schemas(crd: &CustomResourceDefinition) -> BTreeMap<String, Value> {
    crd.spec
        .versions
        .iter()
        .map(|v| {
            (
                v.name.clone(),
                serde_json::to_value(&v.schema).expect("schema"),
            )
        })
        .collect()
}

/// The CRDs in the cluster: each the one of `uids` (updated in place, never
/// re-created), with the schema of the chart at `chart`, and `v1alpha1`
/// the only stored version. Returns the uids.
pub(super) async fn crds_are(
    client: &Client,
    chart: &std::path::Path,
    uids: Option<&BTreeMap<String, String>>,
) -> BTreeMap<String, String> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut seen = BTreeMap::new();
    for (name, shipped) in chart_crds(chart) {
        // helm returns once it has sent them; the apiserver serves the new
        // schema once the CRD is Established again.
        let crd = wait_for_value(
            &format!("CRD {name} with the schema of {}", chart.display()),
            WAIT,
            || async {
                let crd = api.get(&name).await.ok()?;
                (schemas(&crd) == schemas(&shipped)).then_some(crd)
            },
        )
        .await;
        let stored = crd.status.as_ref().and_then(|s| s.stored_versions.clone());
        assert_eq!(stored, Some(vec!["v1alpha1".to_string()]), "{name}");
        let uid = crd.metadata.uid.clone().expect("uid");
        if let Some(before) = uids.and_then(|u| u.get(&name)) {
            assert_eq!(
                &uid, before,
                "CRD {name} was re-created, not upgraded in place"
            );
        }
        seen.insert(name, uid);
    }
    seen
}

/// Every stored Runtime and RuntimeGrant reads back into this tree's types,
/// and every Runtime passes the served schema: a dry-run create of a copy
/// (another name; its spec as stored) is validated in full (a create is
/// not ratcheted as an update is). Schema validation comes before the
/// validating webhooks, so the webhook's refusal of the copy (its identity
/// is the original's) also shows the copy valid; a 422 (Invalid) would
/// not.
pub(super) async fn stored_objects_valid(ns: &TestNamespace, runtimes_made: usize) {
    let runtimes = Api::<Runtime>::namespaced(ns.client.clone(), &ns.name);
    let listed = runtimes
        .list(&ListParams::default())
        .await
        .expect("Runtimes read back");
    assert_eq!(listed.items.len(), runtimes_made);
    let grants = Api::<RuntimeGrant>::all(ns.client.clone())
        .list(&ListParams::default())
        .await
        .expect("RuntimeGrants read back");
    assert!(
        grants.items.len() >= runtimes_made,
        "the agent's RuntimeGrants: {}",
        grants.items.len()
    );
    for rt in &listed.items {
        let name = rt.metadata.name.clone().unwrap_or_default();
        let copy: Runtime = serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1",
            "kind": "Runtime",
            "metadata": {"name": format!("{name}-copy"), "namespace": ns.name},
            "spec": rt.spec,
        }))
        .expect("copy");
        match runtimes
            .create(
                &PostParams {
                    dry_run: true,
                    ..Default::default()
                },
                &copy,
            )
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s))
                if s.code == 403 && s.message.contains("denied the request") => {}
            Err(e) => panic!("the stored Runtime {name} does not pass the served schema: {e}"),
        }
    }
}
