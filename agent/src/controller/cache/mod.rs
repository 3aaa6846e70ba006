//! The agent's caches (docs/architecture.md §5): one reflector per kind,
//! each reducing its objects before they enter the store, built from one
//! table ([`build`]: a row per cache), and the check that every cache has
//! listed ([`unsynced`]).

pub mod bodies;
mod grant_fingerprint;
pub mod list_progress;
pub mod list_strategy;
pub mod object_key;
pub mod owner_index;
pub mod reduce;
pub mod reflect;
pub mod stored;
pub mod stores;
pub mod surroundings;
mod table;
pub mod taken_names;
pub mod watch_backoff;
pub mod watches;

use std::time::Duration;

use kube::runtime::reflector::Store;

pub use self::reflect::Parsed;
pub use self::stores::Stores;
pub use self::table::{Caches, Owned, build};

/// Waits until every cache has its initial list.
pub async fn wait_synced(s: &Stores) {
    loop {
        let pending = unsynced(s).await;
        if pending.is_empty() {
            return;
        }
        // Say which caches hold readiness back: a cache that never syncs
        // (RBAC, a failing watch) is otherwise invisible.
        tracing::info!(?pending, "waiting for caches to sync");
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// The names of the caches that have not completed their first list yet.
pub async fn unsynced(s: &Stores) -> Vec<&'static str> {
    async fn ready<K>(store: &Store<K>) -> bool
    where
        K: kube::Resource + Clone + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone,
    {
        tokio::time::timeout(Duration::from_millis(200), store.wait_until_ready())
            .await
            .is_ok_and(|r| r.is_ok())
    }
    let checks = [
        ("runtimes", ready(&s.runtimes).await),
        ("namespaces", ready(&s.namespaces).await),
        ("runtimeclasses", ready(&s.classes).await),
        ("nodes", ready(&s.nodes).await),
        ("configmaps", ready(&s.config_maps).await),
        ("serviceaccounts", ready(&s.service_accounts).await),
        ("services", ready(&s.services).await),
        ("poddisruptionbudgets", ready(&s.pdbs).await),
        ("networkpolicies", ready(&s.network_policies).await),
        ("horizontalpodautoscalers", ready(&s.hpas).await),
        ("deployments", ready(&s.deployments).await),
        ("replicasets", ready(&s.replica_sets).await),
        ("jobs", ready(&s.jobs).await),
        ("cronjobs", ready(&s.cron_jobs).await),
        ("statefulsets", ready(&s.stateful_sets).await),
        ("daemonsets", ready(&s.daemon_sets).await),
        ("pods", ready(&s.pods).await),
        ("controllerrevisions", ready(&s.controller_revisions).await),
    ];
    let mut pending: Vec<&'static str> = checks
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(name, _)| name)
        .collect();
    pending.extend(s.surroundings.unsynced());
    pending
}
