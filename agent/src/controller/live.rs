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

use super::bodies::Bodies;
use super::context::Stores;
use super::index::OwnerIndex;
use super::names::NameIndex;
use super::reduce::{KeptDeployment, owned_by_runtime};

/// The cached objects of one kind that matter to one Runtime, by name.
#[derive(Debug)]
pub struct Cached<K> {
    by_name: BTreeMap<String, Arc<K>>,
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
pub trait Held<K> {
    /// The object as a `K`.
    fn held(obj: &Arc<Self>) -> Arc<K>;
}

impl<K> Held<K> for K {
    fn held(obj: &Arc<K>) -> Arc<K> {
        obj.clone()
    }
}

impl Held<Deployment> for KeptDeployment {
    fn held(obj: &Arc<Self>) -> Arc<Deployment> {
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
        S: Resource<DynamicType = ()> + Clone + Held<K> + 'static,
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
        self.by_name.insert(name.to_string(), Arc::new(whole));
        true
    }

    /// A store's object at `name`: a Runtime's own one (when bodies are
    /// kept) is never compared in its reduced form, only read first.
    fn put<S: Held<K> + Resource>(
        &mut self,
        bodies: Option<&Bodies<K>>,
        name: String,
        obj: &Arc<S>,
    ) {
        if bodies.is_some() && owned_by_runtime(obj.meta()) {
            self.unread.insert(name.clone());
        }
        self.by_name.insert(name, S::held(obj));
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
            None,
            &ns,
            &uid,
            &jobs,
            Some(&o.jobs),
            Absence::Cache,
        ),
        cron_jobs: Cached::read(
            &stores.cron_jobs,
            None,
            &ns,
            &uid,
            &crons,
            Some(&o.cron_jobs),
            Absence::Cache,
        ),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
    use kube::runtime::watcher::Event;

    /// A ConfigMap in `ns` controlled by the Runtime with `controller_uid`
    /// (none: nobody's), optionally being deleted.
    pub(crate) fn owned_cm(
        ns: &str,
        name: &str,
        controller_uid: Option<&str>,
        deleting: bool,
    ) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                owner_references: controller_uid.map(|uid| {
                    vec![OwnerReference {
                        kind: "Runtime".into(),
                        name: "web".into(),
                        uid: uid.into(),
                        controller: Some(true),
                        ..Default::default()
                    }]
                }),
                deletion_timestamp: deleting
                    .then_some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn cm(ns: &str, name: &str, controller_uid: Option<&str>) -> ConfigMap {
        owned_cm(ns, name, controller_uid, false)
    }

    #[test]
    fn reads_the_named_objects_and_with_owned_too_every_owned_one() {
        let (store, mut writer) = kube::runtime::reflector::store::<ConfigMap>();
        let index = OwnerIndex::<ConfigMap>::default();
        for obj in [
            cm("team", "web", Some("other")),    // at a rendered name, not ours
            cm("team", "web-np-old", Some("u")), // ours, no longer rendered
            cm("team", "unrelated", None),
            cm("elsewhere", "web-x", Some("u")),
        ] {
            let event = Event::Apply(obj);
            writer.apply_watcher_event(&event);
            index.apply(&event);
        }
        let names = vec!["web".to_string(), "web-missing".to_string()];
        let named = Cached::read(&store, None, "team", "u", &names, None, Absence::Cache);
        let got: Vec<String> = named.all().map(|o| o.name_any()).collect();
        assert_eq!(got, ["web"], "the object at the name, whoever owns it");
        assert!(named.get("web-missing").is_none());

        let with_owned = Cached::read(
            &store,
            None,
            "team",
            "u",
            &names,
            Some(&index),
            Absence::Cache,
        );
        let got: Vec<String> = with_owned.all().map(|o| o.name_any()).collect();
        assert_eq!(
            got,
            ["web", "web-np-old"],
            "plus what it owns in its namespace"
        );
    }

    #[test]
    fn a_missing_name_is_free_only_when_its_authority_says_so() {
        let (store, mut writer) = kube::runtime::reflector::store::<ConfigMap>();
        writer.apply_watcher_event(&Event::Apply(cm("team", "web", Some("u"))));
        let names = vec![
            "web".to_string(),
            "web-unlabeled".to_string(),
            "web-new".to_string(),
        ];
        // An unfiltered cache: what it lacks is free; what it has is not.
        let all = Cached::read(&store, None, "team", "u", &names, None, Absence::Cache);
        assert!(!all.is_free("web"));
        assert!(all.is_free("web-unlabeled") && all.is_free("web-new"));

        // A label-filtered cache: the names index decides, and before its
        // first list nothing is free.
        let taken = NameIndex::default();
        let filtered = Cached::read(
            &store,
            None,
            "team",
            "u",
            &names,
            None,
            Absence::Names(&taken),
        );
        assert!(names.iter().all(|n| !filtered.is_free(n)), "not listed yet");
        taken.apply(&Event::<ConfigMap>::Init);
        for n in ["web", "web-unlabeled"] {
            taken.apply(&Event::InitApply(cm("team", n, None)));
        }
        taken.apply(&Event::<ConfigMap>::InitDone);
        let filtered = Cached::read(
            &store,
            None,
            "team",
            "u",
            &names,
            None,
            Absence::Names(&taken),
        );
        assert!(!filtered.is_free("web"));
        assert!(!filtered.is_free("web-unlabeled"), "someone else's object");
        assert!(filtered.is_free("web-new"));
    }

    /// A Runtime's own object is compared whole: from its body, or, when
    /// the body is not kept, not from the cache at all (read first).
    #[test]
    fn a_runtimes_own_object_is_read_whole_from_its_body_or_not_at_all() {
        let bodies = Bodies::<ConfigMap>::default();
        let (store, mut writer) = kube::runtime::reflector::store::<ConfigMap>();
        let mut ours = cm("team", "web", Some("u"));
        for r in ours.metadata.owner_references.iter_mut().flatten() {
            r.api_version = berth_shared::api::API_VERSION.into();
        }
        ours.data = Some([("LD_PRELOAD".to_string(), "/evil.so".to_string())].into());
        // The cache's order: the body, then the reduced copy in the store.
        let event = Event::Apply(ours.clone());
        bodies.observe(&event);
        let mut reduced = ours.clone();
        super::super::reduce::managed(&mut reduced);
        assert_eq!(reduced.data, None, "the store keeps the metadata only");
        writer.apply_watcher_event(&Event::Apply(reduced));
        let names = vec!["web".to_string()];
        let read = |b| Cached::read(&store, b, "team", "u", &names, None, Absence::Cache);

        let whole = read(Some(&bodies));
        assert_eq!(whole.get("web").map(|o| (**o).clone()), Some(ours.clone()));
        assert!(!whole.unread("web"));

        // No body (not kept yet, or gone first): never the reduced copy.
        let without = Bodies::<ConfigMap>::default();
        let unread = read(Some(&without));
        assert!(unread.get("web").is_none());
        assert!(unread.unread("web") && !unread.is_free("web"));
        assert_eq!(
            unread.any("web").map(|o| o.name_any()).as_deref(),
            Some("web")
        );
    }

    /// A ConfigMap a Runtime (`uid`) controls, as `owned_by_runtime` sees it.
    fn ours(name: &str, uid: &str) -> ConfigMap {
        let mut cm = cm("team", name, Some(uid));
        for r in cm.metadata.owner_references.iter_mut().flatten() {
            r.api_version = berth_shared::api::API_VERSION.into();
        }
        cm.data = Some([("LD_PRELOAD".to_string(), "/evil.so".to_string())].into());
        cm
    }

    /// A label-filtered kind's store holds no Runtime's own object
    /// (`bodies::for_store`): each is read whole from its body, by name and
    /// through the owner index; anyone else's comes from the store; and a
    /// body that does not expand is read from the apiserver first.
    #[test]
    fn a_label_filtered_kinds_own_objects_are_read_from_their_bodies_alone() {
        let bodies = Bodies::<ConfigMap>::default();
        let (store, mut writer) = kube::runtime::reflector::store::<ConfigMap>();
        let index = OwnerIndex::<ConfigMap>::default();
        let taken = NameIndex::default();
        let (web, old, theirs) = (
            ours("web", "u"),
            ours("web-old", "u"),
            cm("team", "web-x", None),
        );
        taken.apply(&Event::<ConfigMap>::Init);
        // The cache's order (`caches::cache_storing`): the body, then the
        // reduced object to the store (as `for_store` says) and the index.
        for obj in [web.clone(), old.clone(), theirs.clone()] {
            taken.apply(&Event::InitApply(obj.clone()));
            bodies.observe(&Event::Apply(obj.clone()));
            let mut reduced = obj;
            super::super::reduce::managed(&mut reduced);
            let event = Event::Apply(reduced);
            if let Some(stored) = super::super::bodies::for_store(&event) {
                writer.apply_watcher_event(&stored);
            }
            index.apply(&event);
        }
        taken.apply(&Event::<ConfigMap>::InitDone);
        let names: Vec<String> = ["web", "web-x", "web-new"].map(String::from).to_vec();
        let read = || {
            Cached::read(
                &store,
                Some(&bodies),
                "team",
                "u",
                &names,
                Some(&index),
                Absence::Names(&taken),
            )
        };
        assert_eq!(
            store.state().len(),
            1,
            "only someone else's object is stored"
        );

        let got = read();
        assert_eq!(got.get("web").map(|o| (**o).clone()), Some(web.clone()));
        assert_eq!(got.get("web-old").map(|o| (**o).clone()), Some(old));
        assert_eq!(got.get("web-x").map(|o| (**o).clone()), Some(theirs));
        assert!(got.is_free("web-new") && !got.is_free("web"));
        assert!(!got.unread("web") && !got.unread("web-old"));

        // A body that does not expand: never guessed at, read first.
        bodies.corrupt("team", "web");
        let got = read();
        assert!(got.get("web").is_none());
        assert!(got.unread("web") && !got.is_free("web"));
        assert_eq!(got.any("web").map(|o| o.name_any()).as_deref(), Some("web"));
    }
}
