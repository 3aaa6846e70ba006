//! `berth get`'s reads on the real control plane: every page of a
//! paginated LIST is read, and a kind the user may not list is named on
//! stderr while the rows of the rest are printed.

use std::path::PathBuf;
use std::time::Duration;

use berth_console::model::{Kind, Scope};
use berth_console::watch::{ConnectOptions, connect, load_paged};
use berth_tests::harness::{self, TestNamespace, wait_for_value};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

use crate::agent_support::create_runtime;

const WAIT: Duration = Duration::from_secs(60);

async fn kubeconfig(restricted: bool) -> PathBuf {
    tokio::task::spawn_blocking(move || {
        let c = harness::cluster();
        if restricted {
            c.restricted_kubeconfig.clone()
        } else {
            c.kubeconfig.clone()
        }
    })
    .await
    .expect("cluster")
}

/// Seven Deployments listed two per page: all seven are read (a LIST that
/// ignored the continue token would stop at two). Seven Runtimes, which
/// are listed in one request (`watch::lists_whole`), are read too.
#[tokio::test]
async fn every_page_is_read() {
    let ns = TestNamespace::new("get-pages").await;
    harness::install_crds(&ns.client).await;
    let deployments = Api::<Deployment>::namespaced(ns.client.clone(), &ns.name);
    for i in 0..7 {
        create_runtime(&ns, &format!("rt-{i}"), json!({"service": format!("s{i}")})).await;
        let d: Deployment = serde_json::from_value(json!({
            "metadata": {"name": format!("d-{i}")},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": format!("d-{i}")}},
                "template": {
                    "metadata": {"labels": {"app": format!("d-{i}")}},
                    "spec": {"containers": [{"name": "app", "image": "example/app:1"}]},
                },
            },
        }))
        .expect("a Deployment");
        deployments
            .create(&PostParams::default(), &d)
            .await
            .expect("create the Deployment");
    }
    let conn = connect(&ConnectOptions {
        kubeconfig: Some(kubeconfig(false).await),
        context: None,
    })
    .await
    .expect("connect");
    let lease = ("none".to_string(), "none".to_string());
    let scope = Scope::Namespace(ns.name.clone());
    let loaded = load_paged(&conn, &scope, &lease, &[Kind::Runtime, Kind::Deployment], 2)
        .await
        .expect("load");
    assert_eq!(loaded.store.runtimes.len(), 7);
    assert_eq!(loaded.store.deployments.len(), 7);
    assert!(loaded.refused.is_empty(), "{:?}", loaded.refused);
}

/// A user who may list Runtimes and Deployments but not ReplicaSets, Pods
/// or Events: `berth get rollouts` prints the Runtime's row and names the
/// three kinds it could not read.
#[tokio::test]
async fn a_kind_that_may_not_be_listed_is_reported_and_the_rest_printed() {
    let ns = TestNamespace::new("get-403").await;
    harness::install_crds(&ns.client).await;
    create_runtime(&ns, "web", json!({})).await;
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "get-some"},
        "rules": [
            {"apiGroups": ["berth.dev"], "resources": ["runtimes"], "verbs": ["get", "list"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]}
        ]
    }))
    .expect("role");
    Api::<Role>::namespaced(ns.client.clone(), &ns.name)
        .create(&PostParams::default(), &role)
        .await
        .expect("create role");
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "get-some"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "get-some"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "berth:restricted"}]
    }))
    .expect("binding");
    Api::<RoleBinding>::namespaced(ns.client.clone(), &ns.name)
        .create(&PostParams::default(), &binding)
        .await
        .expect("create binding");

    let bin = tokio::task::spawn_blocking(|| {
        harness::workspace_binary("berth-console", "berth", "BERTH_BIN")
    })
    .await
    .expect("build");
    let restricted = kubeconfig(true).await;
    // RBAC reaches the authorizer's cache within moments.
    let (out, err) = wait_for_value("berth get with the Role in effect", WAIT, || {
        let (bin, restricted, ns) = (bin.clone(), restricted.clone(), ns.name.clone());
        async move {
            let out = tokio::process::Command::new(bin)
                .arg("--kubeconfig")
                .arg(&restricted)
                .args(["-n", &ns, "get", "rollouts", "-o", "json"])
                .output()
                .await
                .expect("run berth");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            (out.status.success() && stdout.contains("\"web\"")).then_some((stdout, stderr))
        }
    })
    .await;
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON on stdout alone");
    assert_eq!(doc["items"].as_array().map(Vec::len), Some(1), "{out}");
    for kind in ["ReplicaSet", "Pod", "Event"] {
        assert!(err.contains(&format!("cannot list {kind}")), "{err}");
    }
    for kind in ["Runtime:", "Deployment:"] {
        assert!(!err.contains(&format!("cannot list {kind}")), "{err}");
    }
}
