//! The agent's caches (docs/architecture.md §5): one reflector per kind,
//! each reducing its objects before they enter the store, built from one
//! table ([`build`]: a row per cache), and the check that every cache has
//! listed ([`unsynced`]).

pub mod bodies;
pub mod list_progress;
pub mod list_strategy;
pub mod object_key;
pub mod owner_index;
pub mod reduce;
pub mod reflect;
pub mod stored;
pub mod taken_names;
pub mod watch_backoff;
pub mod watches;

use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use berth_shared::analysis::{NodeInfo, Workload};
use berth_shared::api::Runtime;
use berth_shared::api::meta::managed_selector;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{PredicateConfig, WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use self::bodies::Bodies;
pub use self::reflect::{Applied, Parsed};
use self::reflect::{Observe, Observer, cache, cache_storing_fn, in_place, stored_cache};
use self::stored::Stored;
use self::watches::Watches;
use super::context::{self, Stores};
use crate::controller::reconcile::exposure::{self, OrphanObserver, Surroundings};

use crate::grants_publisher::fingerprint;
use crate::grants_publisher::trigger::{Changes, Wake};

/// The caches built, with the streams the controller consumes.
pub struct Caches {
    /// Every store.
    pub stores: Stores,
    /// The Runtime store (also in `stores`), written by `runtime_events`.
    pub runtimes: Store<Runtime>,
    /// The Runtime watch, reflected into `runtimes`.
    pub runtime_events: BoxStream<'static, Result<watcher::Event<Runtime>, watcher::Error>>,
    /// The streams of the kinds a Runtime owns.
    pub owned: Owned,
    /// RuntimeClass changes.
    pub classes: Applied<RuntimeClass>,
    /// Node changes that matter (see `node_fingerprint`).
    pub nodes: Applied<Node>,
    /// Namespace metadata changes.
    pub namespaces: Applied<PartialObjectMeta<Namespace>>,
    /// Namespaces whose foreign objects or orphans changed (see
    /// `exposure`).
    pub exposure_wakes: futures::channel::mpsc::UnboundedReceiver<Box<str>>,
}

/// The streams of the kinds a Runtime owns.
pub struct Owned {
    /// ConfigMaps.
    pub config_maps: Applied<ConfigMap>,
    /// ServiceAccounts.
    pub service_accounts: Applied<ServiceAccount>,
    /// Services.
    pub services: Applied<Service>,
    /// Deployments.
    pub deployments: Applied<reduce::KeptDeployment>,
    /// PodDisruptionBudgets.
    pub pdbs: Applied<PodDisruptionBudget>,
    /// NetworkPolicies.
    pub network_policies: Applied<NetworkPolicy>,
    /// HorizontalPodAutoscalers.
    pub hpas: Applied<HorizontalPodAutoscaler>,
    /// Jobs.
    pub jobs: Applied<Job>,
    /// CronJobs.
    pub cron_jobs: Applied<CronJob>,
}

/// Builds every cache (each watch starts when its stream is first polled;
/// the ones nothing else consumes are drained here).
pub fn build(client: &Client, settings: &context::Settings, wake: &Wake) -> Caches {
    let ws = &settings.watches;
    let all = || ws.config();
    let c = client;
    let scope = settings.namespace.clone();
    // Owner indexes: a reconcile looks up what one Deployment or Runtime
    // controls instead of scanning the kind's whole cache.
    let owners = context::OwnerIndexes::default();
    let taken = context::TakenNames::default();
    let bodies = context::OwnedBodies::default();
    let o = &owners;
    let t = &taken;
    let b = &bodies;
    // What adds up around the pods: foreign Services, NetworkPolicies,
    // EndpointSlices and orphans (see `exposure`).
    let (surroundings, exposure_wakes) = Surroundings::new();
    let sr = &surroundings;

    // The table: one row per cache.
    // Label-filtered: berth's own objects, with every taken name indexed
    // (from a metadata-only watch of the kind, or, for Services and
    // NetworkPolicies, from the exposure check's watch of every object).
    let (config_maps, cm_s) = managed(ws, c, &scope, Some(&t.config_maps), &b.config_maps, None);
    let (service_accounts, sa_s) = managed(
        ws,
        c,
        &scope,
        Some(&t.service_accounts),
        &b.service_accounts,
        None,
    );
    let (services, svc_s) = managed(ws, c, &scope, None, &b.services, None);
    exposure::watch_services(ws, ns_api(c, &scope), t.services.clone(), sr.clone());
    let (pdbs, pdb_s) = managed(ws, c, &scope, Some(&t.pdbs), &b.pdbs, None);
    let (network_policies, np_s) = managed(
        ws,
        c,
        &scope,
        None,
        &b.network_policies,
        Some(o.network_policies.clone()),
    );
    exposure::watch_network_policies(
        ws,
        ns_api(c, &scope),
        t.network_policies.clone(),
        sr.clone(),
    );
    exposure::watch_slices(ws, ns_api(c, &scope), sr.clone());
    let (hpas, hpa_s) = managed(ws, c, &scope, Some(&t.hpas), &b.hpas, Some(o.hpas.clone()));
    // Workloads of every party: reduced to what reconcile and the analysis
    // read before they enter the caches (see `reduce`).
    // Each also wakes the grants publisher when what it reads changes.
    fn w<K: Resource + 'static>(wake: &Wake, f: fn(&K) -> Option<String>) -> Observer<K> {
        Some(Changes::new(wake, f))
    }
    // ... and, for the kinds berth makes, keeps their orphans.
    fn and_orphans<K: Resource + Send + Sync + 'static>(
        changes: Observer<K>,
        orphans: Arc<OrphanObserver<K>>,
    ) -> Observer<K> {
        match changes {
            Some(c) => Some(Arc::new((c, orphans))),
            None => Some(orphans),
        }
    }
    // The kinds berth renders workloads of: a Runtime's own objects are
    // kept whole, as the apiserver stores them, in `bodies` (the contract
    // compares those).
    let (deployments, dep_s) = stored_cache(
        ws.watch(ns_api::<Stored<Deployment>>(c, &scope), all()),
        reduce::KeptDeployment::from,
        b.deployments.clone(),
        None,
        and_orphans(
            w(wake, fingerprint::deployment),
            OrphanObserver::new(
                sr,
                |s| &s.orphans.deployments,
                |d: &reduce::KeptDeployment| Workload::from_deployment(&d.whole()),
            ),
        ),
        cache_storing_fn,
    );
    let (replica_sets, rs_s) = cache(
        ws.watch(ns_api::<ReplicaSet>(c, &scope), all()),
        reduce::KeptReplicaSet::from,
        Some(o.replica_sets.clone()),
        and_orphans(
            w(wake, fingerprint::replica_set),
            OrphanObserver::new(
                sr,
                |s| &s.orphans.replica_sets,
                |rs: &reduce::KeptReplicaSet| Workload::from_replica_set(&rs.whole(), None),
            ),
        ),
    );
    let (jobs, job_s) = stored_cache(
        ws.watch(ns_api(c, &scope), all()),
        in_place(reduce::job),
        b.jobs.clone(),
        Some(o.jobs.clone()),
        and_orphans(
            w(wake, fingerprint::job),
            OrphanObserver::new(sr, |s| &s.orphans.jobs, Workload::from_job),
        ),
        cache_storing_fn,
    );
    let (cron_jobs, cron_s) = stored_cache(
        ws.watch(ns_api(c, &scope), all()),
        in_place(reduce::cron_job),
        b.cron_jobs.clone(),
        Some(o.cron_jobs.clone()),
        and_orphans(
            w(wake, fingerprint::cron_job),
            OrphanObserver::new(sr, |s| &s.orphans.cron_jobs, Workload::from_cron_job),
        ),
        cache_storing_fn,
    );
    let (stateful_sets, sts_s) = cache(
        ws.watch(ns_api(c, &scope), all()),
        in_place(reduce::stateful_set),
        None,
        w(wake, fingerprint::stateful_set),
    );
    let (daemon_sets, ds_s) = cache(
        ws.watch(ns_api(c, &scope), all()),
        in_place(reduce::daemon_set),
        None,
        w(wake, fingerprint::daemon_set),
    );
    let (controller_revisions, cr_s) = cache(
        ws.watch(ns_api(c, &scope), all()),
        in_place(reduce::controller_revision),
        None,
        w(wake, fingerprint::controller_revision),
    );
    // Cluster-scoped.
    let (classes, class_s) = cache(
        ws.watch(Api::all(c.clone()), all()),
        in_place(reduce::strip),
        None,
        w(wake, fingerprint::runtime_class),
    );
    let (nodes, node_s) = cache(
        ws.watch(Api::all(c.clone()), all()),
        in_place(reduce::node),
        None,
        w(wake, fingerprint::node),
    );
    let node_s = node_s
        .predicate_filter(node_fingerprint, PredicateConfig::default())
        .boxed();
    let (namespaces, ns_s) = cache(
        ws.watch(Api::all(c.clone()), all()),
        in_place(reduce::strip),
        None,
        w(wake, fingerprint::namespace),
    );
    // Pods only with `--watch-bare-pods` (and the Pod RBAC overlay): the
    // contract gives berth no Pod permission. Without it the store is
    // empty and ready at once; `settings.watch_bare_pods` tells its readers
    // that empty means "not looked at", not "none".
    let pods = if settings.watch_bare_pods {
        let (reader, writer) = reflector::store();
        let changes = Changes::new(wake, fingerprint::pod);
        let orphans = OrphanObserver::new(sr, |s| &s.orphans.pods, Workload::from_pod);
        let stream = ws
            .watch(ns_api::<Pod>(c, &scope), all())
            .filter_map(|event| {
                futures::future::ready(match event {
                    Ok(e) => reduce::bare_pods_only(e).map(Ok),
                    Err(e) => Some(Err(e)),
                })
            })
            .modify(reduce::pod)
            .reflect(writer)
            .inspect(move |event| {
                if let Ok(event) = event {
                    changes.observe(event);
                    orphans.observe(event);
                }
            })
            .applied_objects();
        drain(stream);
        reader
    } else {
        reduce::unwatched_store()
    };
    drain(rs_s);
    drain(sts_s);
    drain(ds_s);
    drain(cr_s);

    // The Runtime watch feeds the controller's store and, through
    // `wake::rivals::with_rivals`, also wakes the next claimant of an identity
    // whose holder goes away.
    let (runtimes, runtime_writer) = reflector::store();
    // Without managedFields: the agent's status writes alone make them a
    // few kilobytes per Runtime, and nothing reads them.
    let runtime_changes = Changes::new(wake, fingerprint::runtime);
    let runtime_events = reflector::reflector(
        runtime_writer,
        ws.watch(ns_api::<Runtime>(c, &scope), all())
            .modify(reduce::strip),
    )
    .inspect(move |event| {
        if let Ok(event) = event {
            runtime_changes.observe(event);
        }
    })
    .boxed();
    let stores = Stores {
        runtimes: runtimes.clone(),
        namespaces,
        classes,
        nodes,
        config_maps,
        service_accounts,
        services,
        pdbs,
        network_policies,
        hpas,
        deployments,
        replica_sets,
        jobs,
        cron_jobs,
        stateful_sets,
        daemon_sets,
        pods,
        controller_revisions,
        owners,
        taken,
        bodies,
        surroundings,
    };
    Caches {
        stores,
        runtimes,
        runtime_events,
        owned: Owned {
            config_maps: cm_s,
            service_accounts: sa_s,
            services: svc_s,
            deployments: dep_s,
            pdbs: pdb_s,
            network_policies: np_s,
            hpas: hpa_s,
            jobs: job_s,
            cron_jobs: cron_s,
        },
        classes: class_s,
        nodes: node_s,
        namespaces: ns_s,
        exposure_wakes,
    }
}

/// A label-filtered kind (only berth's objects are cached): its cache, and
/// (with `taken`) the index of every name taken in the kind, from a
/// metadata-only watch of the whole kind (see `names`).
fn managed<K>(
    watches: &Watches,
    client: &Client,
    scope: &Option<String>,
    taken: Option<&taken_names::NameIndex>,
    bodies: &Bodies<K>,
    index: Option<owner_index::OwnerIndex<K>>,
) -> (Store<K>, Applied<K>)
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + Default
        + Serialize
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
{
    if let Some(taken) = taken {
        watch_names(
            watches,
            ns_api::<PartialObjectMeta<K>>(client, scope),
            taken.clone(),
        );
    }
    // A Runtime's own object is kept only as its body.
    stored_cache(
        watches.watch(
            ns_api::<Stored<K>>(client, scope),
            watches.config().labels(&managed_selector()),
        ),
        in_place(reduce::managed::<K>),
        bodies.clone(),
        index,
        None,
        bodies::for_store,
    )
}

/// Namespaced kinds: the whole cluster, or one namespace.
fn ns_api<K>(client: &Client, scope: &Option<String>) -> Api<K>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>,
{
    match scope {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Keeps `index` equal to the names taken in `api` (a metadata-only
/// watch: names, not bodies).
fn watch_names<K>(watches: &Watches, api: Api<PartialObjectMeta<K>>, index: taken_names::NameIndex)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let stream = watches.watch(api, watches.config()).inspect(move |event| {
        if let Ok(event) = event {
            index.apply(event);
        }
    });
    drain(stream);
}

/// Polls a stream that only feeds a store.
pub(super) fn drain<S, T, E>(stream: S)
where
    S: Stream<Item = Result<T, E>> + Send + 'static,
    E: std::fmt::Display,
{
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            if let Err(e) = item {
                tracing::warn!(error = %e, "watch error (retried)");
            }
        }
    });
}

fn node_fingerprint(node: &Node) -> Option<u64> {
    let info = NodeInfo::from_node(node);
    let mut h = std::collections::hash_map::DefaultHasher::new();
    info.name.hash(&mut h);
    info.ready.hash(&mut h);
    info.unschedulable.hash(&mut h);
    info.handlers.hash(&mut h);
    info.reports_handlers.hash(&mut h);
    info.labels.hash(&mut h);
    for t in &info.taints {
        t.key.hash(&mut h);
        t.value.hash(&mut h);
        t.effect.hash(&mut h);
    }
    Some(h.finish())
}

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
