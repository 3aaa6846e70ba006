//! The standalone webhook (`berth-agent webhook --follow-lease`) takes no
//! part in the election but follows the leader's grants digest, reading
//! its Lease now and then, so that it refuses what depends on the grants
//! while its file differs from the leader's (`super::grant_set`).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};

use super::grant_set::{GrantSet, Leader, leader_of};

/// Follows the leader's grants digest without taking part in the election
/// (the standalone `webhook` command): reads the Lease every `every`.
pub async fn follow(client: Client, namespace: &str, name: &str, set: GrantSet, every: Duration) {
    let api: Api<Lease> = Api::namespaced(client, namespace);
    loop {
        match tokio::time::timeout(every.max(Duration::from_secs(1)), api.get_opt(name)).await {
            Ok(Ok(Some(lease))) => set.observe(leader_of(&lease)),
            Ok(Ok(None)) => set.observe(Leader::Nobody),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, lease = name, "reading the leader's Lease failed")
            }
            Err(_) => tracing::warn!(
                lease = name,
                "reading the leader's Lease did not answer in time"
            ),
        }
        tokio::time::sleep(every).await;
    }
}
