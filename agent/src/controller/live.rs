//! Part of step 1 (read): the cached copies of what one Runtime's apply
//! step compares against — the objects at the names it renders (its own or
//! not: another party's object there is a conflict) and, for the kinds a
//! Runtime has zero or more of, every object it owns (what is no longer
//! desired is deleted). Read once, from the caches only, so the apply step
//! reads no cache itself.

use std::collections::BTreeMap;
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

use super::context::Stores;
use super::index::OwnerIndex;

/// The cached objects of one kind that matter to one Runtime, by name.
#[derive(Debug)]
pub struct Cached<K> {
    by_name: BTreeMap<String, Arc<K>>,
}

impl<K> Default for Cached<K> {
    fn default() -> Self {
        Self {
            by_name: BTreeMap::new(),
        }
    }
}

impl<K> Cached<K>
where
    K: Resource<DynamicType = ()> + Clone,
{
    /// The objects at `names` in `ns`, plus, with an owner index, every
    /// object in `ns` controlled by `uid` (looked up, not scanned).
    fn read(
        store: &Store<K>,
        ns: &str,
        uid: &str,
        names: &[String],
        owned: Option<&OwnerIndex<K>>,
    ) -> Self {
        let mut by_name = BTreeMap::new();
        for name in names {
            if let Some(obj) = store.get(&ObjectRef::new(name).within(ns)) {
                by_name.insert(name.clone(), obj);
            }
        }
        for obj in owned
            .map(|i| i.controlled_by(store, uid))
            .unwrap_or_default()
        {
            if obj.meta().namespace.as_deref() == Some(ns) && controlled_by_uid(obj.meta(), uid) {
                by_name.insert(obj.name_any(), obj);
            }
        }
        Self { by_name }
    }

    /// The cached object called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<K>> {
        self.by_name.get(name)
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
    Live {
        config_maps: Cached::read(
            &stores.config_maps,
            &ns,
            &uid,
            std::slice::from_ref(&n.config_map),
            None,
        ),
        service_accounts: Cached::read(&stores.service_accounts, &ns, &uid, workload, None),
        services: Cached::read(&stores.services, &ns, &uid, workload, None),
        deployments: Cached::read(&stores.deployments, &ns, &uid, workload, None),
        pdbs: Cached::read(&stores.pdbs, &ns, &uid, workload, None),
        network_policies: Cached::read(
            &stores.network_policies,
            &ns,
            &uid,
            workload,
            Some(&o.network_policies),
        ),
        hpas: Cached::read(&stores.hpas, &ns, &uid, workload, Some(&o.hpas)),
        jobs: Cached::read(&stores.jobs, &ns, &uid, &jobs, Some(&o.jobs)),
        cron_jobs: Cached::read(&stores.cron_jobs, &ns, &uid, &crons, Some(&o.cron_jobs)),
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
        let named = Cached::read(&store, "team", "u", &names, None);
        let got: Vec<String> = named.all().map(|o| o.name_any()).collect();
        assert_eq!(got, ["web"], "the object at the name, whoever owns it");
        assert!(named.get("web-missing").is_none());

        let with_owned = Cached::read(&store, "team", "u", &names, Some(&index));
        let got: Vec<String> = with_owned.all().map(|o| o.name_any()).collect();
        assert_eq!(
            got,
            ["web", "web-np-old"],
            "plus what it owns in its namespace"
        );
    }
}
