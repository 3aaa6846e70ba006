//! The table of caches ([`build`]: a row per cache, read in groups),
//! and the streams of it the controller consumes ([`Caches`]).

use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use berth_shared::analysis::{NodeInfo, Workload};
use berth_shared::api::Runtime;
use berth_shared::api::meta::managed_selector;
use futures::StreamExt;
use futures::stream::BoxStream;
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
use kube::runtime::reflector::{self, Store};
use kube::runtime::{PredicateConfig, WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::bodies::Bodies;
use super::reflect::Applied;
use super::reflect::{Observe, Observer, cache, cache_storing_fn, in_place, stored_cache};
use super::stored::Stored;
use super::stores::{OwnedBodies, OwnerIndexes, Stores, TakenNames};
use super::surroundings::{self, OrphanObserver, Surroundings};
use super::watches::Watches;

use super::grant_fingerprint as fingerprint;
use super::reflect::drain;
use super::{bodies, owner_index, reduce, taken_names};
use crate::signals::publisher_triggers::{Changes, Wake};

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
/// the ones nothing else consumes are drained here). The table is read in
/// groups, one per kind of row: berth's own kinds, every party's
/// workloads, the cluster-scoped kinds, bare pods, Runtimes. Only
/// `namespace`'s objects are watched when it is set; bare pods only with
/// `watch_bare_pods`.
pub fn build(
    client: &Client,
    watches: &Watches,
    namespace: &Option<String>,
    watch_bare_pods: bool,
    wake: &Wake,
) -> Caches {
    // Owner indexes: a reconcile looks up what one Deployment or Runtime
    // controls instead of scanning the kind's whole cache.
    let owners = OwnerIndexes::default();
    let taken = TakenNames::default();
    let bodies = OwnedBodies::default();
    // What adds up around the pods: foreign Services, NetworkPolicies,
    // EndpointSlices and orphans (see `surroundings`).
    let (surroundings, exposure_wakes) = Surroundings::new();
    let rows = Rows {
        watches,
        client,
        scope: namespace,
        owners: &owners,
        taken: &taken,
        bodies: &bodies,
        surroundings: &surroundings,
        wake,
    };
    let OwnKinds {
        config_maps: (config_maps, cm_s),
        service_accounts: (service_accounts, sa_s),
        services: (services, svc_s),
        pdbs: (pdbs, pdb_s),
        network_policies: (network_policies, np_s),
        hpas: (hpas, hpa_s),
    } = rows.own_kinds();
    let Workloads {
        deployments: (deployments, dep_s),
        replica_sets,
        jobs: (jobs, job_s),
        cron_jobs: (cron_jobs, cron_s),
        stateful_sets,
        daemon_sets,
        controller_revisions,
    } = rows.workloads();
    let ClusterKinds {
        classes: (classes, class_s),
        nodes: (nodes, node_s),
        namespaces: (namespaces, ns_s),
    } = rows.cluster_kinds();
    let pods = rows.bare_pods(watch_bare_pods);
    let (runtimes, runtime_events) = rows.runtimes();
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

/// A cache whose changes the controller consumes: its store and stream.
type Cached<K> = (Store<K>, Applied<K>);

/// What every row of the table reads: where and how to watch, the indexes
/// the rows fill, and what their changes wake.
struct Rows<'a> {
    watches: &'a Watches,
    client: &'a Client,
    scope: &'a Option<String>,
    owners: &'a OwnerIndexes,
    taken: &'a TakenNames,
    bodies: &'a OwnedBodies,
    surroundings: &'a Arc<Surroundings>,
    wake: &'a Wake,
}

/// The label-filtered kinds: berth's own objects.
struct OwnKinds {
    config_maps: Cached<ConfigMap>,
    service_accounts: Cached<ServiceAccount>,
    services: Cached<Service>,
    pdbs: Cached<PodDisruptionBudget>,
    network_policies: Cached<NetworkPolicy>,
    hpas: Cached<HorizontalPodAutoscaler>,
}

/// Workloads of every party; the controller consumes the changes of the
/// kinds a Runtime owns.
struct Workloads {
    deployments: Cached<reduce::KeptDeployment>,
    replica_sets: Store<reduce::KeptReplicaSet>,
    jobs: Cached<Job>,
    cron_jobs: Cached<CronJob>,
    stateful_sets: Store<StatefulSet>,
    daemon_sets: Store<DaemonSet>,
    controller_revisions: Store<ControllerRevision>,
}

/// The cluster-scoped kinds.
struct ClusterKinds {
    classes: Cached<RuntimeClass>,
    nodes: Cached<Node>,
    namespaces: Cached<PartialObjectMeta<Namespace>>,
}

/// Wakes the grants publisher when what it reads of a kind changes.
fn w<K: Resource + 'static>(wake: &Wake, f: fn(&K) -> Option<String>) -> Observer<K> {
    Some(Changes::new(wake, f))
}

/// ... and, for the kinds berth makes, keeps their orphans.
fn and_orphans<K: Resource + Send + Sync + 'static>(
    changes: Observer<K>,
    orphans: Arc<OrphanObserver<K>>,
) -> Observer<K> {
    match changes {
        Some(c) => Some(Arc::new((c, orphans))),
        None => Some(orphans),
    }
}

impl Rows<'_> {
    /// Namespaced kinds: the whole cluster, or one namespace.
    fn api<K>(&self) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>,
    {
        ns_api(self.client, self.scope)
    }

    /// Label-filtered: berth's own objects, with every taken name indexed
    /// (from a metadata-only watch of the kind, or, for Services and
    /// NetworkPolicies, from the exposure check's watch of every object).
    fn own_kinds(&self) -> OwnKinds {
        let (ws, c, scope) = (self.watches, self.client, self.scope);
        let (t, b, o, sr) = (self.taken, self.bodies, self.owners, self.surroundings);
        let config_maps = managed(ws, c, scope, Some(&t.config_maps), &b.config_maps, None);
        let service_accounts = managed(
            ws,
            c,
            scope,
            Some(&t.service_accounts),
            &b.service_accounts,
            None,
        );
        let services = managed(ws, c, scope, None, &b.services, None);
        surroundings::watch_services(ws, self.api(), t.services.clone(), sr.clone());
        let pdbs = managed(ws, c, scope, Some(&t.pdbs), &b.pdbs, None);
        let network_policies = managed(
            ws,
            c,
            scope,
            None,
            &b.network_policies,
            Some(o.network_policies.clone()),
        );
        surroundings::watch_network_policies(
            ws,
            self.api(),
            t.network_policies.clone(),
            sr.clone(),
        );
        surroundings::watch_slices(ws, self.api(), sr.clone());
        let hpas = managed(ws, c, scope, Some(&t.hpas), &b.hpas, Some(o.hpas.clone()));
        OwnKinds {
            config_maps,
            service_accounts,
            services,
            pdbs,
            network_policies,
            hpas,
        }
    }

    /// Workloads of every party: reduced to what reconcile and the analysis
    /// read before they enter the caches (see `reduce`). Each also wakes the
    /// grants publisher when what it reads changes. The kinds berth renders
    /// workloads of: a Runtime's own objects are kept whole, as the
    /// apiserver stores them, in `bodies` (the contract compares those).
    fn workloads(&self) -> Workloads {
        let (ws, wake, sr) = (self.watches, self.wake, self.surroundings);
        let (o, b) = (self.owners, self.bodies);
        let all = || ws.config();
        let deployments = stored_cache(
            ws.watch(self.api::<Stored<Deployment>>(), all()),
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
            ws.watch(self.api::<ReplicaSet>(), all()),
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
        let jobs = stored_cache(
            ws.watch(self.api(), all()),
            in_place(reduce::job),
            b.jobs.clone(),
            Some(o.jobs.clone()),
            and_orphans(
                w(wake, fingerprint::job),
                OrphanObserver::new(sr, |s| &s.orphans.jobs, Workload::from_job),
            ),
            cache_storing_fn,
        );
        let cron_jobs = stored_cache(
            ws.watch(self.api(), all()),
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
            ws.watch(self.api(), all()),
            in_place(reduce::stateful_set),
            None,
            w(wake, fingerprint::stateful_set),
        );
        let (daemon_sets, ds_s) = cache(
            ws.watch(self.api(), all()),
            in_place(reduce::daemon_set),
            None,
            w(wake, fingerprint::daemon_set),
        );
        let (controller_revisions, cr_s) = cache(
            ws.watch(self.api(), all()),
            in_place(reduce::controller_revision),
            None,
            w(wake, fingerprint::controller_revision),
        );
        // Nothing else consumes these: only their stores are read.
        drain(rs_s);
        drain(sts_s);
        drain(ds_s);
        drain(cr_s);
        Workloads {
            deployments,
            replica_sets,
            jobs,
            cron_jobs,
            stateful_sets,
            daemon_sets,
            controller_revisions,
        }
    }

    /// The cluster-scoped kinds; a Node wakes the controller only when
    /// what it reads of it changes (`node_fingerprint`).
    fn cluster_kinds(&self) -> ClusterKinds {
        let (ws, c, wake) = (self.watches, self.client, self.wake);
        let all = || ws.config();
        let classes = cache(
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
        let namespaces = cache(
            ws.watch(Api::all(c.clone()), all()),
            in_place(reduce::strip),
            None,
            w(wake, fingerprint::namespace),
        );
        ClusterKinds {
            classes,
            nodes: (nodes, node_s),
            namespaces,
        }
    }

    /// Pods only with `--watch-bare-pods` (and the Pod RBAC overlay): the
    /// contract gives berth no Pod permission. Without it the store is
    /// empty and ready at once; `settings.watch_bare_pods` tells its readers
    /// that empty means "not looked at", not "none".
    fn bare_pods(&self, watch_bare_pods: bool) -> Store<Pod> {
        if !watch_bare_pods {
            return reduce::unwatched_store();
        }
        let (reader, writer) = reflector::store();
        let changes = Changes::new(self.wake, fingerprint::pod);
        let orphans =
            OrphanObserver::new(self.surroundings, |s| &s.orphans.pods, Workload::from_pod);
        let stream = self
            .watches
            .watch(self.api::<Pod>(), self.watches.config())
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
    }

    /// The Runtime watch feeds the controller's store and, through
    /// `wake::rivals::with_rivals`, also wakes the next claimant of an
    /// identity whose holder goes away. Without managedFields: the agent's
    /// status writes alone make them a few kilobytes per Runtime, and
    /// nothing reads them.
    fn runtimes(
        &self,
    ) -> (
        Store<Runtime>,
        BoxStream<'static, Result<watcher::Event<Runtime>, watcher::Error>>,
    ) {
        let (runtimes, runtime_writer) = reflector::store();
        let runtime_changes = Changes::new(self.wake, fingerprint::runtime);
        let runtime_events = reflector::reflector(
            runtime_writer,
            self.watches
                .watch(self.api::<Runtime>(), self.watches.config())
                .modify(reduce::strip),
        )
        .inspect(move |event| {
            if let Ok(event) = event {
                runtime_changes.observe(event);
            }
        })
        .boxed();
        (runtimes, runtime_events)
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

fn node_fingerprint(node: &Node) -> Option<u64> {
    let info = NodeInfo::from_node(node);
    let mut h = std::collections::hash_map::DefaultHasher::new();
    info.name.hash(&mut h);
    info.ready.hash(&mut h);
    info.unschedulable.hash(&mut h);
    info.handlers.hash(&mut h);
    info.reports_handlers.hash(&mut h);
    info.labels.hash(&mut h);
    // A deleted Node (marked by `reflect::touched`) is a change.
    node.metadata
        .deletion_timestamp
        .as_ref()
        .map(|t| t.0)
        .hash(&mut h);
    for t in &info.taints {
        t.key.hash(&mut h);
        t.value.hash(&mut h);
        t.effect.hash(&mut h);
    }
    Some(h.finish())
}
