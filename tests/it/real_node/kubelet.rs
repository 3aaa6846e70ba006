//! The real node's kubelet as a real cluster's (issue 55, item 5): its API
//! (`https://NODE_IP:PORT`) refuses an anonymous client (401), authorizes
//! every client by a SubjectAccessReview to the apiserver (a certificate of
//! the cluster's CA with no RBAC rights gets 403; under `AlwaysAllow` it got
//! 200), and authenticates a ServiceAccount token by a TokenReview (401
//! without the webhook), which RBAC then lets through; and its pods get the
//! cluster's DNS configuration (no `MissingClusterDNS` Event).

use std::path::Path;
use std::time::Duration;

use berth_tests::harness::wait_for_value;
use berth_tests::localcluster::health::client_from_kubeconfig;
use berth_tests::localcluster::realnode::RealNodesInfo;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Event, Node, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::config::AuthInfo;
use kube::{Api, Client, Config};
use serde_json::json;

use super::{NODE, WAIT, namespace, on_real_node, real};
use crate::agent_support::{Agent, create_runtime, wait_condition, write_grants};

/// The kubelet's API address (its InternalIP and the port it reports).
async fn kubelet_url(client: &Client, info: &RealNodesInfo) -> String {
    let node = Api::<Node>::all(client.clone())
        .get(&info.nodes[0].name)
        .await
        .expect("node");
    let port = node
        .status
        .and_then(|s| s.daemon_endpoints)
        .and_then(|d| d.kubelet_endpoint)
        .map(|e| e.port)
        .expect("the kubelet's port in the node's status");
    format!("https://{}:{port}", info.nodes[0].ip)
}

/// A client of the kubelet's API that trusts the cluster's CA and presents
/// `auth` (empty: anonymous).
fn kubelet_client(url: &str, pki: &Path, auth: serde_json::Value) -> Client {
    let mut config = Config::new(url.parse().expect("kubelet url"));
    config.root_cert_file = Some(pki.join("ca.crt"));
    config.auth_info = serde_json::from_value::<AuthInfo>(auth).expect("auth info");
    config.default_retry = false;
    Client::try_from(config).expect("kubelet client")
}

/// The HTTP status of `GET /pods` (the kubelet's pod list: `nodes/proxy`).
async fn pods_status(client: &Client) -> u16 {
    let req = http::Request::get("/pods")
        .body(kube::client::Body::from(Vec::new()))
        .expect("request");
    client
        .send(req)
        .await
        .expect("the kubelet answers")
        .status()
        .as_u16()
}

fn cert_auth(pki: &Path, user: &str) -> serde_json::Value {
    json!({
        "client-certificate": pki.join(format!("{user}.crt")).display().to_string(),
        "client-key": pki.join(format!("{user}.key")).display().to_string(),
    })
}

#[tokio::test]
async fn real_node_kubelet_authenticates_and_authorizes_through_the_apiserver() {
    let Some((cluster, info)) = real().await else {
        return;
    };
    let _shared = NODE.read().await;
    let admin = client_from_kubeconfig(&cluster.kubeconfig)
        .await
        .expect("client");
    let url = kubelet_url(&admin, &info).await;
    let pki = cluster.dir.join("pki");

    let anonymous = kubelet_client(&url, &pki, json!({}));
    assert_eq!(pods_status(&anonymous).await, 401, "anonymous: {url}/pods");
    // A certificate of the cluster's CA is an identity, not a right: the
    // restricted user has no RBAC rights on nodes/proxy.
    let restricted = kubelet_client(&url, &pki, cert_auth(&pki, "restricted"));
    assert_eq!(
        pods_status(&restricted).await,
        403,
        "berth-restricted (no RBAC rights): {url}/pods"
    );
    let masters = kubelet_client(&url, &pki, cert_auth(&pki, "admin"));
    assert_eq!(pods_status(&masters).await, 200, "system:masters");

    // A ServiceAccount's token (what an in-cluster Prometheus presents):
    // vouched for by the apiserver (TokenReview), then authorized by RBAC.
    let ns = namespace(cluster, "real-kubelet").await;
    let sa_name = "scraper";
    let sas: Api<ServiceAccount> = Api::namespaced(ns.client.clone(), &ns.name);
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": sa_name}})).expect("sa"),
    )
    .await
    .expect("create ServiceAccount");
    let token = sas
        .create_token_request(
            sa_name,
            &PostParams::default(),
            &serde_json::from_value::<TokenRequest>(json!({"spec": {"audiences": []}}))
                .expect("token request"),
        )
        .await
        .expect("token")
        .status
        .expect("token status")
        .token;
    let bearer = kubelet_client(&url, &pki, json!({"token": token}));
    assert_eq!(
        pods_status(&bearer).await,
        403,
        "a ServiceAccount token, authenticated but without RBAC rights"
    );
    let name = format!("{}-nodes-proxy", ns.name);
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": name},
        "rules": [{"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]}],
    }))
    .expect("role");
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": sa_name, "namespace": ns.name}],
    }))
    .expect("binding");
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    roles
        .create(&PostParams::default(), &role)
        .await
        .expect("role");
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding");
    // The kubelet caches a refusal for 10 s (cacheUnauthorizedTTL).
    wait_for_value(
        "the bound token let through",
        Duration::from_secs(60),
        || {
            let bearer = bearer.clone();
            async move { (pods_status(&bearer).await == 200).then_some(()) }
        },
    )
    .await;
    let _ = bindings.delete(&name, &DeleteParams::default()).await;
    let _ = roles.delete(&name, &DeleteParams::default()).await;
}

/// A pod on the real node gets the cluster's nameserver and search path
/// from the kubelet: no `MissingClusterDNS` Event (the kubelet's warning
/// when it has no cluster DNS and a pod asks for `ClusterFirst`, the
/// default).
#[tokio::test]
async fn real_node_pods_get_cluster_dns_without_missing_cluster_dns() {
    let Some((cluster, info)) = real().await else {
        return;
    };
    let _shared = NODE.read().await;
    let ns = namespace(cluster, "real-dns").await;
    let grants = write_grants(&[]);
    let _agent = Agent::start(super::agent_opts(cluster, &ns, &grants)).await;
    create_runtime(&ns, "named", on_real_node(&info, "named", json!({}))).await;
    wait_condition(&ns, "named", "Ready", "True", None).await;
    let events: Api<Event> = Api::namespaced(ns.client.clone(), &ns.name);
    // The kubelet's events of the pod's start (Pulled, Created, Started)
    // are in by now; MissingClusterDNS comes with the first of them.
    let seen = wait_for_value("the kubelet's Started event", WAIT, || {
        let events = events.clone();
        async move {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .iter()
                .any(|e| e.reason.as_deref() == Some("Started"))
                .then_some(list.items)
        }
    })
    .await;
    let missing: Vec<String> = seen
        .iter()
        .filter(|e| e.reason.as_deref() == Some("MissingClusterDNS"))
        .map(|e| e.message.clone().unwrap_or_default())
        .collect();
    assert!(missing.is_empty(), "MissingClusterDNS: {missing:?}");
}
