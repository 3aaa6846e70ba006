//! The Runtime controller (docs/architecture.md §5): a kube-runtime
//! `Controller` for Runtime that owns every managed kind and watches
//! RuntimeClasses, Namespaces (metadata only) and Nodes (filtered to the
//! fields that matter). Each reconcile is the pipeline in [`reconcile`].

pub mod apply;
pub mod apply_error;
pub mod context;
pub mod events;
pub mod identity;
pub mod index;
pub mod list_progress;
pub mod live;
pub mod names;
pub mod pace;
pub mod read;
pub mod reconcile;
pub mod reduce;
pub mod status;
pub mod triggers;
pub mod watch_backoff;

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use berth_shared::analysis::NodeInfo;
use berth_shared::api::Runtime;
use berth_shared::api::meta::managed_selector;
use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Controller, PredicateConfig, WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use self::reconcile::reconcile;

use self::context::{Context, Stores};
use self::triggers::spec_fingerprint;
use self::watch_backoff::WatchBackoff;

/// Keeps of a ControllerRevision only its template's class and profile.
fn strip_revision(rev: &mut ControllerRevision) {
    reduce::strip(rev);
    rev.metadata.annotations = None;
    if let Some(data) = rev.data.as_mut() {
        let template = data.0.pointer("/spec/template");
        let class = template
            .and_then(|t| t.pointer("/spec/runtimeClassName"))
            .cloned();
        let annotations = template
            .and_then(|t| t.pointer("/metadata/annotations"))
            .cloned();
        let labels = template
            .and_then(|t| t.pointer("/metadata/labels"))
            .cloned();
        data.0 = serde_json::json!({"spec": {"template": {
            "metadata": {"annotations": annotations, "labels": labels},
            "spec": {"runtimeClassName": class, "containers": []},
        }}});
    }
}

/// A reflector with a custom reduction of each object.
fn reflect_with<K>(
    api: Api<K>,
    config: watcher::Config,
    reduce: fn(&mut K),
) -> (
    Store<K>,
    impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let stream = cache_watch(api, config)
        .modify(reduce)
        .reflect(writer)
        .applied_objects();
    (reader, stream)
}

/// [`reflect_with`], also feeding an owner index from the same events,
/// right after the store applied each.
fn reflect_indexed<K>(
    api: Api<K>,
    config: watcher::Config,
    reduce: fn(&mut K),
    index: index::OwnerIndex<K>,
) -> (
    Store<K>,
    impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let stream = cache_watch(api, config)
        .modify(reduce)
        .reflect(writer)
        .inspect(move |event| {
            if let Ok(event) = event {
                index.apply(event);
            }
        })
        .applied_objects();
    (reader, stream)
}

/// A reflector: its store and its (to be polled) stream of applied objects.
fn reflect<K>(
    api: Api<K>,
    config: watcher::Config,
) -> (
    Store<K>,
    impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    reflect_with(api, config, reduce::strip::<K>)
}

/// Keeps `index` equal to the names taken in `api` (a metadata-only
/// watch: names, not bodies).
fn watch_names<K>(api: Api<PartialObjectMeta<K>>, index: names::NameIndex)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let stream = cache_watch(api, watch_config()).inspect(move |event| {
        if let Ok(event) = event {
            index.apply(event);
        }
    });
    drain(stream);
}

/// Polls a stream that only feeds a store.
fn drain<S, T, E>(stream: S)
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

/// The watch of every cache: `watcher` with this agent's own backoff
/// ([`WatchBackoff`]; the controller shares none, see
/// [`triggers::NoSharedBackoff`]).
pub fn cache_watch<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    K::DynamicType: Default,
{
    // What the kind's first list received counts as its progress (see
    // `list_progress`).
    let received = list_progress::counter(&K::plural(&K::DynamicType::default()));
    watcher(api, config)
        .backoff(WatchBackoff::default())
        .inspect(move |event| {
            if list_progress::is_progress(event) {
                received.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        })
}

/// The watch settings of every cache: the server ends each watch well
/// inside the client's read timeout (see [`crate::kube_client::READ_TIMEOUT`]),
/// and lists come in pages of [`LIST_PAGE_SIZE`].
pub fn watch_config() -> watcher::Config {
    watcher::Config::default()
        .timeout(crate::kube_client::WATCH_TIMEOUT_SECONDS)
        .page_size(LIST_PAGE_SIZE)
}

/// Objects per page of a cache's (re)list. Every page is parsed whole,
/// managedFields included, before the reduction drops most of it, and the
/// ~18 caches list at once when the agent starts: the parsed pages, not
/// the caches, set the agent's peak heap (issue 14, heaptrack at 500
/// Runtimes: 71 MB peak, 24 MB live; a page of 500 Pods with their
/// managedFields is several MB parsed). kube's default is 500; at 100
/// the pages cost a fifth, for more requests of the same total size.
pub const LIST_PAGE_SIZE: u32 = 100;

/// Everything started: the stores (for the grants publisher and health) and
/// the controller future.
pub struct Started {
    /// Caches.
    pub stores: Stores,
    /// The reconcile context.
    pub context: Arc<Context>,
    /// Runs the controller until `shutdown` resolves.
    pub run: futures::future::BoxFuture<'static, ()>,
}

/// Per-object failure counts for exponential backoff.
#[derive(Default)]
struct Backoff(Mutex<HashMap<ObjectRef<Runtime>, u32>>);

impl Backoff {
    fn fail(&self, key: ObjectRef<Runtime>) -> Duration {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = map.entry(key).or_insert(0);
        *n = n.saturating_add(1);
        let secs = 2u64.saturating_pow((*n).min(8)).min(300);
        Duration::from_secs(secs)
    }
    fn reset(&self, key: &ObjectRef<Runtime>) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(key);
    }
}

/// Builds caches and the controller.
pub fn start(
    client: Client,
    grants: Arc<context::Grants>,
    metrics: Arc<crate::metrics::Metrics>,
    settings: context::Settings,
    recorder: kube::runtime::events::Recorder,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) -> Started {
    let managed = || watch_config().labels(&managed_selector());
    let all = watch_config;
    let c = &client;
    let scope = settings.namespace.clone();
    // Namespaced kinds: the whole cluster, or one namespace.
    fn ns_api<K>(client: &Client, scope: &Option<String>) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>,
    {
        match scope {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        }
    }

    let (config_maps, cm_s) = reflect(ns_api::<ConfigMap>(c, &scope), managed());
    let (service_accounts, sa_s) = reflect(ns_api::<ServiceAccount>(c, &scope), managed());
    let (services, svc_s) = reflect(ns_api::<Service>(c, &scope), managed());
    let (pdbs, pdb_s) = reflect(ns_api::<PodDisruptionBudget>(c, &scope), managed());
    // Owner indexes: a reconcile looks up what one Deployment or Runtime
    // controls instead of scanning the kind's whole cache.
    let owners = context::OwnerIndexes::default();
    let (network_policies, np_s) = reflect_indexed(
        ns_api::<NetworkPolicy>(c, &scope),
        managed(),
        reduce::strip,
        owners.network_policies.clone(),
    );
    let (hpas, hpa_s) = reflect_indexed(
        ns_api::<HorizontalPodAutoscaler>(c, &scope),
        managed(),
        reduce::strip,
        owners.hpas.clone(),
    );
    // Workloads of every party: reduced to what reconcile and the analysis
    // read before they enter the caches (see `reduce`).
    let (deployments, dep_s) =
        reflect_with(ns_api::<Deployment>(c, &scope), all(), reduce::deployment);
    let (replica_sets, rs_s) = reflect_indexed(
        ns_api::<ReplicaSet>(c, &scope),
        all(),
        reduce::replica_set,
        owners.replica_sets.clone(),
    );
    let (jobs, job_s) = reflect_indexed(
        ns_api::<Job>(c, &scope),
        all(),
        reduce::job,
        owners.jobs.clone(),
    );
    let (cron_jobs, cron_s) = reflect_indexed(
        ns_api::<CronJob>(c, &scope),
        all(),
        reduce::cron_job,
        owners.cron_jobs.clone(),
    );
    let (stateful_sets, sts_s) = reflect_with(
        ns_api::<StatefulSet>(c, &scope),
        all(),
        reduce::stateful_set,
    );
    let (daemon_sets, ds_s) =
        reflect_with(ns_api::<DaemonSet>(c, &scope), all(), reduce::daemon_set);
    let (classes, class_s) = reflect(Api::<RuntimeClass>::all(c.clone()), all());
    let (nodes, node_s) = reflect_with(Api::<Node>::all(c.clone()), all(), reduce::node);
    let node_s = node_s.predicate_filter(node_fingerprint, PredicateConfig::default());
    let (namespaces, ns_s) = reflect(Api::<PartialObjectMeta<Namespace>>::all(c.clone()), all());
    // Pods only with `--watch-bare-pods` (and the Pod RBAC overlay): the
    // contract gives berth no Pod permission. Without it the store is
    // empty and ready at once; `settings.watch_bare_pods` tells its readers
    // that empty means "not looked at", not "none".
    let pods = if settings.watch_bare_pods {
        let (reader, writer) = reflector::store();
        let stream = cache_watch(ns_api::<Pod>(c, &scope), all())
            .filter_map(|event| {
                futures::future::ready(match event {
                    Ok(e) => reduce::bare_pods_only(e).map(Ok),
                    Err(e) => Some(Err(e)),
                })
            })
            .modify(reduce::pod)
            .reflect(writer)
            .applied_objects();
        drain(stream);
        reader
    } else {
        reduce::unwatched_store()
    };
    let (controller_revisions, cr_s) = reflect_with(
        ns_api::<ControllerRevision>(c, &scope),
        all(),
        strip_revision,
    );
    let taken = context::TakenNames::default();
    watch_names(
        ns_api::<PartialObjectMeta<ConfigMap>>(c, &scope),
        taken.config_maps.clone(),
    );
    watch_names(
        ns_api::<PartialObjectMeta<ServiceAccount>>(c, &scope),
        taken.service_accounts.clone(),
    );
    watch_names(
        ns_api::<PartialObjectMeta<Service>>(c, &scope),
        taken.services.clone(),
    );
    watch_names(
        ns_api::<PartialObjectMeta<PodDisruptionBudget>>(c, &scope),
        taken.pdbs.clone(),
    );
    watch_names(
        ns_api::<PartialObjectMeta<NetworkPolicy>>(c, &scope),
        taken.network_policies.clone(),
    );
    watch_names(
        ns_api::<PartialObjectMeta<HorizontalPodAutoscaler>>(c, &scope),
        taken.hpas.clone(),
    );
    drain(rs_s);
    drain(sts_s);
    drain(ds_s);
    drain(cr_s);

    // The Runtime watch feeds the controller's store and, through
    // `identity::with_rivals`, also wakes the next claimant of an identity
    // whose holder goes away.
    let (runtimes, runtime_writer) = reflector::store();
    // Without managedFields: the agent's status writes alone make them a
    // few kilobytes per Runtime, and nothing reads them.
    let runtime_events = reflector::reflector(
        runtime_writer,
        cache_watch(ns_api::<Runtime>(c, &scope), all()).modify(reduce::strip),
    );
    let controller = Controller::for_stream(
        identity::with_rivals(runtime_events, runtimes.clone()),
        runtimes.clone(),
    )
    .with_config(
        kube::runtime::controller::Config::default()
            .concurrency(u16::try_from(settings.concurrency).unwrap_or(u16::MAX)),
    )
    // Each watch backs off alone (see `triggers::NoSharedBackoff`).
    .trigger_backoff(triggers::NoSharedBackoff);
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
    };
    let context = Arc::new(Context {
        client: client.clone(),
        stores: stores.clone(),
        grants,
        metrics,
        recorder,
        settings,
        written: context::WriteMemory::default(),
        synced: context::Synced::default(),
        status_pacer: context::StatusPacer::default(),
    });
    // Reconciles (and the grants publisher) wait for this: a cache that
    // has not listed yet reads as "absent" (no namespace labels, no class,
    // no node), which would block or revoke a granted Runtime for nothing.
    {
        let stores = stores.clone();
        let synced = context.synced.clone();
        tokio::spawn(async move {
            wait_synced(&stores).await;
            synced.set();
        });
    }
    let all_runtimes = {
        let runtimes = runtimes.clone();
        move || {
            runtimes
                .state()
                .iter()
                .map(|r| ObjectRef::from_obj(&**r))
                .collect::<Vec<_>>()
        }
    };
    let on_class = all_runtimes.clone();
    let on_node = all_runtimes;
    let in_namespace = {
        let runtimes = runtimes.clone();
        move |ns: PartialObjectMeta<Namespace>| identity::on_namespace(&runtimes, &ns)
    };
    let backoff = Arc::new(Backoff::default());
    let backoff_err = backoff.clone();
    let ctx = context.clone();
    let run = controller
        .owns_stream(cm_s)
        .owns_stream(sa_s)
        .owns_stream(svc_s)
        // Status-only updates paced per Deployment (see `pace`).
        .owns_stream(pace::paced(dep_s, context::PROGRESS_INTERVAL))
        // Their status is not read: a status-only update wakes nothing.
        .owns_stream(pdb_s.predicate_filter(spec_fingerprint, PredicateConfig::default()))
        .owns_stream(np_s.predicate_filter(spec_fingerprint, PredicateConfig::default()))
        .owns_stream(hpa_s.predicate_filter(spec_fingerprint, PredicateConfig::default()))
        .owns_stream(job_s.predicate_filter(spec_fingerprint, PredicateConfig::default()))
        .owns_stream(cron_s.predicate_filter(spec_fingerprint, PredicateConfig::default()))
        .watches_stream(class_s, move |_| on_class())
        .watches_stream(node_s, move |_| on_node())
        .watches_stream(ns_s, in_namespace)
        .graceful_shutdown_on(shutdown)
        .run(
            move |rt, ctx| {
                let backoff = backoff.clone();
                async move {
                    let key = ObjectRef::from_obj(&*rt);
                    let result = reconcile(rt, ctx).await;
                    if result.is_ok() {
                        backoff.reset(&key);
                    }
                    result
                }
            },
            move |rt, err, _ctx| {
                let delay = backoff_err.fail(ObjectRef::from_obj(&*rt));
                tracing::warn!(runtime = %rt.name_any(), namespace = ?rt.namespace(), error = %err, retry_in = ?delay, "reconcile failed");
                Action::requeue(delay)
            },
            ctx,
        )
        .for_each(|res| async move {
            if let Err(e) = res {
                tracing::warn!(error = %e, "controller stream error");
            }
        })
        .boxed();
    Started {
        stores,
        context,
        run,
    }
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
    checks
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(name, _)| name)
        .collect()
}
