//! The exposure check's watches and observers: every Service and
//! NetworkPolicy (each also keeping the kind's taken names), the
//! EndpointSlices the EndpointSlice controller does not manage, and the
//! orphans among the workloads the caches already watch.

use std::sync::Arc;

use berth_shared::analysis::Workload;
use berth_shared::api::meta::controller_of;
use berth_shared::exposure::endpoint_slice::{self, ForeignSlice};
use berth_shared::exposure::network_policy::ForeignPolicy;
use berth_shared::exposure::service::ForeignService;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::runtime::watcher;
use kube::{Api, Resource};

use super::{KeptSlice, Mirror, Orphan, Surroundings};
use crate::controller::cache::reduce::owned_by_runtime;
use crate::controller::cache::reflect::{Observe, drain};
use crate::controller::cache::taken_names::NameIndex;
use crate::controller::cache::watches::Watches;

/// Every Service: its name into `taken`, and, unless a Runtime owns it,
/// its selector into the surroundings.
pub fn watch_services(
    watches: &Watches,
    api: Api<Service>,
    taken: NameIndex,
    s: Arc<Surroundings>,
) {
    let stream = watches.watch(api, watches.config()).inspect(move |event| {
        if let Ok(event) = event {
            taken.apply(event);
            let changed = s.services.apply(event, |svc: &Service| {
                if owned_by_runtime(&svc.metadata) {
                    return None;
                }
                Some(ForeignService::of(svc.spec.as_ref(), &s.hashes))
                    .filter(ForeignService::selects_anything)
            });
            s.woke(changed);
        }
    });
    drain(stream);
}

/// Every NetworkPolicy: its name into `taken`, and, unless a Runtime
/// owns it, what it selects and admits into the surroundings.
pub fn watch_network_policies(
    watches: &Watches,
    api: Api<NetworkPolicy>,
    taken: NameIndex,
    s: Arc<Surroundings>,
) {
    let stream = watches.watch(api, watches.config()).inspect(move |event| {
        if let Ok(event) = event {
            taken.apply(event);
            let changed = s.policies.apply(event, |np: &NetworkPolicy| {
                if owned_by_runtime(&np.metadata) {
                    return None;
                }
                Some(ForeignPolicy::of(np.spec.as_ref(), &s.hashes))
                    .filter(ForeignPolicy::admits_anything)
            });
            s.woke(changed);
        }
    });
    drain(stream);
}

/// The EndpointSlices the EndpointSlice controller does not manage (a
/// server-side label filter: the controller's slices change with every pod
/// and follow a Service's selector), those naming pods kept.
pub fn watch_slices(watches: &Watches, api: Api<EndpointSlice>, s: Arc<Surroundings>) {
    let config = watches.config().labels(&endpoint_slice::watch_selector());
    let stream = watches.watch(api, config).inspect(move |event| {
        if let Ok(event) = event {
            let changed = s.slices.apply(event, |slice: &EndpointSlice| {
                Some(KeptSlice {
                    slice: ForeignSlice::of(slice, &s.hashes)?,
                    service: slice
                        .metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(endpoint_slice::SERVICE_NAME_LABEL))
                        .map(|n| n.as_str().into()),
                })
            });
            s.woke(changed);
        }
    });
    drain(stream);
}

/// Keeps one workload kind's orphans in the surroundings from its cache's
/// events.
pub struct OrphanObserver<K> {
    surroundings: Arc<Surroundings>,
    mirror: fn(&Surroundings) -> &Mirror<Orphan>,
    workload: fn(&K) -> Workload,
}

impl<K: Resource> OrphanObserver<K> {
    /// Observes the kind into `mirror`, each object seen as `workload`
    /// gives it (asked only of an object without a controller).
    pub fn new(
        surroundings: &Arc<Surroundings>,
        mirror: fn(&Surroundings) -> &Mirror<Orphan>,
        workload: fn(&K) -> Workload,
    ) -> Arc<Self> {
        Arc::new(OrphanObserver {
            surroundings: surroundings.clone(),
            mirror,
            workload,
        })
    }
}

impl<K: Resource + Send + Sync> Observe<K> for OrphanObserver<K> {
    fn observe(&self, event: &watcher::Event<K>) {
        let s = &self.surroundings;
        let changed = (self.mirror)(s).apply(event, |obj: &K| {
            // Nearly every workload has a controller: only the others are
            // converted and looked at.
            if controller_of(obj.meta()).is_some() {
                return None;
            }
            Orphan::of(&(self.workload)(obj))
        });
        s.woke(changed);
    }
}
