//! Part of step 1 (read): the cached copies of what one Runtime's apply
//! step compares against — the objects at the names it renders (its own or
//! not: another party's object there is a conflict) and, for the kinds a
//! Runtime has zero or more of, every object it owns (what is no longer
//! desired is deleted). Read once, from the caches only, so the apply step
//! reads no cache itself.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use berth_shared::api::Runtime;
use berth_shared::api::meta::controlled_by_uid;
use berth_shared::render::{Names, names};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::controller::cache::Stores;
use crate::controller::cache::bodies::Bodies;
use crate::controller::cache::owner_index::OwnerIndex;
use crate::controller::cache::reduce::{KeptDeployment, owned_by_runtime};
use crate::controller::cache::stored::Stored;
use crate::controller::cache::taken_names::NameIndex;

/// The cached objects of one kind that matter to one Runtime, by name.
#[derive(Debug)]
pub struct Cached<K> {
    by_name: BTreeMap<String, Arc<K>>,
    /// Of the names in `by_name`, the JSON of those read whole from their
    /// bodies: each object exactly as the apiserver stores it, what the
    /// contract compares (`stored`).
    json: BTreeMap<String, Arc<serde_json::Value>>,
    /// Of the names in `by_name`, those held only in reduced form: a
    /// Runtime's own object whose whole body is not (yet) kept (see
    /// `bodies`). Never compared as cached: the apply step reads it.
    unread: BTreeSet<String>,
    /// Of the names asked for and not in the cache, those known to be free
    /// (no object of any owner there).
    free: BTreeSet<String>,
}

impl<K> Default for Cached<K> {
    fn default() -> Self {
        Self {
            by_name: BTreeMap::new(),
            json: BTreeMap::new(),
            unread: BTreeSet::new(),
            free: BTreeSet::new(),
        }
    }
}

/// What says that a name missing from a cache is free.
#[derive(Clone, Copy, Debug)]
enum Absence<'a> {
    /// The cache holds every object of the kind (not label-filtered), and
    /// reconciles start only once it has listed.
    Cache,
    /// The cache is label-filtered: the kind's names index knows.
    Names(&'a NameIndex),
}

/// What a store holds, as the apply step reads it: the kind itself, or a
/// kept form of it (`reduce::KeptDeployment`) made whole.
pub trait MadeWhole<K> {
    /// The object as a `K`.
    fn made_whole(obj: &Arc<Self>) -> Arc<K>;
}

impl<K> MadeWhole<K> for K {
    fn made_whole(obj: &Arc<K>) -> Arc<K> {
        obj.clone()
    }
}

impl MadeWhole<Deployment> for KeptDeployment {
    fn made_whole(obj: &Arc<Self>) -> Arc<Deployment> {
        Arc::new(obj.whole())
    }
}

impl<K> Cached<K>
where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned,
{
    /// The objects at `names` in `ns`, plus, with an owner index, every
    /// object in `ns` controlled by `uid` (looked up, not scanned). With
    /// `bodies`, a Runtime's own objects are the whole ones from there:
    /// the store holds them reduced (Deployments) or not at all (the
    /// label-filtered kinds, `bodies::for_store`).
    fn read<S>(
        store: &Store<S>,
        bodies: Option<&Bodies<K>>,
        ns: &str,
        uid: &str,
        names: &[String],
        owned: Option<&OwnerIndex<S>>,
        absence: Absence<'_>,
    ) -> Self
    where
        S: Resource<DynamicType = ()> + Clone + MadeWhole<K> + 'static,
        K: Default,
    {
        let mut read = Self::default();
        for name in names {
            if read.put_body(bodies, ns, name, None) {
                continue;
            }
            if let Some(obj) = store.get(&ObjectRef::new(name).within(ns)) {
                read.put(bodies, name.clone(), &obj);
            } else if bodies.is_some_and(|b| b.holds(ns, name)) {
                // Kept only as a body that does not expand: read it whole.
                read.unread_placeholder(ns, name);
            } else if match absence {
                Absence::Cache => true,
                Absence::Names(index) => index.is_free(ns, name),
            } {
                read.free.insert(name.clone());
            }
        }
        for key in owned.map(|i| i.keys_of(uid)).unwrap_or_default() {
            let name = key.name();
            if key.namespace() != ns || read.by_name.contains_key(name) {
                continue;
            }
            if read.put_body(bodies, ns, name, Some(uid)) {
                continue;
            }
            if let Some(obj) = store.get(&key.object_ref())
                && controlled_by_uid(obj.meta(), uid)
            {
                read.put(bodies, name.to_string(), &obj);
            }
        }
        let by_name = &read.by_name;
        read.free.retain(|n| !by_name.contains_key(n));
        read
    }

    /// The whole object at `name` from its body, if one is kept and (with
    /// `controller`) that Runtime controls it; whether it was.
    fn put_body(
        &mut self,
        bodies: Option<&Bodies<K>>,
        ns: &str,
        name: &str,
        controller: Option<&str>,
    ) -> bool {
        let Some(whole) = bodies.and_then(|b| b.get(ns, name)) else {
            return false;
        };
        if controller.is_some_and(|uid| !controlled_by_uid(whole.meta(), uid)) {
            return false;
        }
        self.json.insert(name.to_string(), Arc::new(whole.json));
        self.by_name.insert(name.to_string(), Arc::new(whole.typed));
        true
    }

    /// A store's object at `name`: a Runtime's own one (when bodies are
    /// kept) is never compared in its reduced form, only read first.
    fn put<S: MadeWhole<K> + Resource>(
        &mut self,
        bodies: Option<&Bodies<K>>,
        name: String,
        obj: &Arc<S>,
    ) {
        if bodies.is_some() && owned_by_runtime(obj.meta()) {
            self.unread.insert(name.clone());
        }
        self.by_name.insert(name, S::made_whole(obj));
    }

    /// An object kept only as a corrupt body: its name and namespace, to
    /// be read whole before anything is compared.
    fn unread_placeholder(&mut self, ns: &str, name: &str)
    where
        K: Default,
    {
        let mut obj = K::default();
        obj.meta_mut().namespace = Some(ns.to_string());
        obj.meta_mut().name = Some(name.to_string());
        self.unread.insert(name.to_string());
        self.by_name.insert(name.to_string(), Arc::new(obj));
    }

    /// Whether no object at all (berth's or anyone's) is at `name`, as far
    /// as the caches know: it can be created without reading it first.
    pub fn is_free(&self, name: &str) -> bool {
        self.free.contains(name)
    }

    /// The cached object called `name`, whole (`None` for one held only
    /// reduced: see [`Cached::unread`]).
    pub fn get(&self, name: &str) -> Option<&Arc<K>> {
        self.by_name
            .get(name)
            .filter(|_| !self.unread.contains(name))
    }

    /// The object called `name` exactly as the apiserver stores it, if it
    /// was read whole from its body (a Runtime's own object); with its
    /// typed form ([`Cached::get`]).
    pub fn stored(&self, name: &str) -> Option<Stored<K>>
    where
        K: Clone,
    {
        let typed = self.get(name)?;
        let json = self.json.get(name)?;
        Some(Stored {
            typed: (**typed).clone(),
            json: (**json).clone(),
        })
    }

    /// The cached object called `name`, whole or reduced: for what the
    /// reduction keeps (metadata, replicas).
    pub fn any(&self, name: &str) -> Option<&Arc<K>> {
        self.by_name.get(name)
    }

    /// Whether an object is at `name` that the cache holds only reduced:
    /// the apply step reads it before comparing.
    pub fn unread(&self, name: &str) -> bool {
        self.unread.contains(name)
    }

    /// Every object read, in name order.
    pub fn all(&self) -> impl Iterator<Item = &Arc<K>> {
        self.by_name.values()
    }
}

/// Everything one Runtime's apply step compares against.
#[derive(Debug, Default)]
pub struct Live {
    /// The ConfigMap.
    pub config_maps: Cached<ConfigMap>,
    /// The ServiceAccount.
    pub service_accounts: Cached<ServiceAccount>,
    /// The Service.
    pub services: Cached<Service>,
    /// The Deployment.
    pub deployments: Cached<Deployment>,
    /// The PodDisruptionBudget.
    pub pdbs: Cached<PodDisruptionBudget>,
    /// The NetworkPolicy, and any the Runtime owns.
    pub network_policies: Cached<NetworkPolicy>,
    /// The HorizontalPodAutoscaler, and any the Runtime owns.
    pub hpas: Cached<HorizontalPodAutoscaler>,
    /// The one-time Jobs of `spec.jobs`, and any the Runtime owns.
    pub jobs: Cached<Job>,
    /// The CronJobs of `spec.schedules`, and any the Runtime owns.
    pub cron_jobs: Cached<CronJob>,
}

/// Reads what `runtime`'s apply step compares against.
///
/// Long on purpose: a flat table, one read per managed kind with its own
/// names, bodies, owner index and way of knowing a name is free, side by
/// side so that a kind's row can be checked against the others'.
pub fn read(stores: &Stores, runtime: &Runtime) -> Live {
    let ns = runtime.namespace().unwrap_or_default();
    let uid = runtime.uid().unwrap_or_default();
    let name = runtime.name_any();
    let n = Names::for_runtime(&name);
    let workload = std::slice::from_ref(&n.workload);
    let jobs: Vec<String> = runtime
        .spec
        .jobs
        .iter()
        .map(|j| names::job_name(&name, &j.name))
        .collect();
    let crons: Vec<String> = runtime
        .spec
        .schedules
        .iter()
        .map(|s| names::cronjob_name(&name, &s.name))
        .collect();
    let o = &stores.owners;
    let t = &stores.taken;
    Live {
        config_maps: Cached::read(
            &stores.config_maps,
            Some(&stores.bodies.config_maps),
            &ns,
            &uid,
            std::slice::from_ref(&n.config_map),
            None,
            Absence::Names(&t.config_maps),
        ),
        service_accounts: Cached::read(
            &stores.service_accounts,
            Some(&stores.bodies.service_accounts),
            &ns,
            &uid,
            workload,
            None,
            Absence::Names(&t.service_accounts),
        ),
        services: Cached::read(
            &stores.services,
            Some(&stores.bodies.services),
            &ns,
            &uid,
            workload,
            None,
            Absence::Names(&t.services),
        ),
        deployments: Cached::read(
            &stores.deployments,
            Some(&stores.bodies.deployments),
            &ns,
            &uid,
            workload,
            None,
            Absence::Cache,
        ),
        pdbs: Cached::read(
            &stores.pdbs,
            Some(&stores.bodies.pdbs),
            &ns,
            &uid,
            workload,
            None,
            Absence::Names(&t.pdbs),
        ),
        network_policies: Cached::read(
            &stores.network_policies,
            Some(&stores.bodies.network_policies),
            &ns,
            &uid,
            workload,
            Some(&o.network_policies),
            Absence::Names(&t.network_policies),
        ),
        hpas: Cached::read(
            &stores.hpas,
            Some(&stores.bodies.hpas),
            &ns,
            &uid,
            workload,
            Some(&o.hpas),
            Absence::Names(&t.hpas),
        ),
        jobs: Cached::read(
            &stores.jobs,
            Some(&stores.bodies.jobs),
            &ns,
            &uid,
            &jobs,
            Some(&o.jobs),
            Absence::Cache,
        ),
        cron_jobs: Cached::read(
            &stores.cron_jobs,
            Some(&stores.bodies.cron_jobs),
            &ns,
            &uid,
            &crons,
            Some(&o.cron_jobs),
            Absence::Cache,
        ),
    }
}

#[cfg(test)]
pub(crate) mod tests;
