//! Clients of the shared cluster: one with cluster-admin rights and one
//! for the restricted user, which has none until a test binds some.

use kube::Client;

use berth_localcluster::health::client_from_kubeconfig;

use super::clusters::cluster;

/// A client with cluster-admin rights.
pub async fn admin_client() -> Client {
    let path = tokio::task::spawn_blocking(|| cluster().kubeconfig.clone())
        .await
        .expect("cluster start-up thread");
    client_from_kubeconfig(&path)
        .await
        .expect("admin client from kubeconfig")
}

/// A client for `berth-restricted` (group `berth:restricted`), which has no
/// rights until a test binds some.
pub async fn restricted_client() -> Client {
    let path = tokio::task::spawn_blocking(|| cluster().restricted_kubeconfig.clone())
        .await
        .expect("cluster start-up thread");
    client_from_kubeconfig(&path)
        .await
        .expect("restricted client from kubeconfig")
}
