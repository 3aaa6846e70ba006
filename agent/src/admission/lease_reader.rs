//! Reads the leader-election Lease for a replica's grant set: every
//! `interval` in the standalone webhook (`berth-agent webhook
//! --follow-lease`, which takes no part in the election), and on demand
//! when an admission finds the replica unconfirmed
//! (`super::grant_set::GrantSet::confirmed`).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};

use super::grant_set::{GrantSet, Leader, LeaseSource, leader_of};

/// A read that does not answer within this is given up (the API server's
/// call to the webhook has its own timeout of a few seconds).
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// The Lease `name` in `namespace` (a clone shares the client).
#[derive(Clone)]
pub struct LeaseReader {
    api: Api<Lease>,
    name: String,
}

impl LeaseReader {
    pub fn new(client: Client, namespace: &str, name: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            name: name.to_string(),
        }
    }

    /// What the Lease says now (`Nobody` when it does not exist), or
    /// `None` when the read failed or timed out (logged).
    pub async fn leader(&self, within: Duration) -> Option<Leader> {
        match tokio::time::timeout(within, self.api.get_opt(&self.name)).await {
            Ok(Ok(Some(lease))) => Some(leader_of(&lease)),
            Ok(Ok(None)) => Some(Leader::Nobody),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, lease = %self.name, "reading the leader's Lease failed");
                None
            }
            Err(_) => {
                tracing::warn!(lease = %self.name, "reading the leader's Lease did not answer in time");
                None
            }
        }
    }
}

impl LeaseSource for LeaseReader {
    fn read(&self) -> Pin<Box<dyn Future<Output = Option<Leader>> + Send + '_>> {
        Box::pin(self.leader(READ_TIMEOUT))
    }
}

/// Follows the leader's grants digest without taking part in the election
/// (the standalone `webhook` command): reads the Lease every `every`.
pub async fn follow(reader: &LeaseReader, set: GrantSet, every: Duration) {
    loop {
        if let Some(leader) = reader.leader(every.max(Duration::from_secs(1))).await {
            set.observe(leader);
        }
        tokio::time::sleep(every).await;
    }
}
