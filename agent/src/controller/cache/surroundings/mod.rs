//! What adds up around the Runtimes' pods, as the agent keeps it for the
//! exposure check (`reconcile::exposure`, docs/architecture.md §5
//! "Exposure"): the foreign NetworkPolicies, Services and EndpointSlices
//! of each namespace, reduced as they arrive to what the check reads
//! (`berth_shared::exposure`: keyed hashes in a fixed budget, so a foreign
//! object costs the same few bytes whatever it holds), and the orphans
//! (berth's labels, no controller) of the workload kinds berth makes, fed
//! by their caches. A change of what is kept wakes the Runtimes of its
//! namespace (the receiver [`Surroundings::new`] returns).
//!
//! The watches: every Service and every NetworkPolicy (one watch each,
//! which also keeps the kind's taken names, `taken_names::NameIndex`, in
//! place of a metadata-only watch), and the EndpointSlices the
//! EndpointSlice controller does not manage (filtered by label on the
//! server: the controller's own slices follow their Service's selector,
//! which is judged as the Service). A Runtime's own Service or
//! NetworkPolicy is not kept: the contract keeps its selector on the
//! Runtime's own pods.

mod mirror;
mod watch;

use std::sync::Arc;

use berth_shared::analysis::{Workload, WorkloadKind};
use berth_shared::exposure::endpoint_slice::ForeignSlice;
use berth_shared::exposure::hashed::LabelHashes;
use berth_shared::exposure::network_policy::ForeignPolicy;
use berth_shared::exposure::service::ForeignService;
use futures::channel::mpsc;

pub use self::mirror::Mirror;
pub use self::watch::{OrphanObserver, watch_network_policies, watch_services, watch_slices};

/// An EndpointSlice as kept: the pods it names, and its Service.
#[derive(Debug, PartialEq, Eq)]
pub struct KeptSlice {
    /// The pods it names.
    pub slice: ForeignSlice,
    /// Its Service (`kubernetes.io/service-name`), if it names one.
    pub service: Option<Box<str>>,
}

/// An orphan as kept: the Runtime its labels name and its class.
#[derive(Debug, PartialEq, Eq)]
pub struct Orphan {
    /// The Runtime its `berth.dev/runtime` label names.
    pub runtime: Box<str>,
    /// Its pod template's RuntimeClass.
    pub class: Box<str>,
}

impl Orphan {
    /// The orphan `w` is, if it is one (berth's labels naming a Runtime,
    /// no controller, a class).
    pub fn of(w: &Workload) -> Option<Orphan> {
        if !w.is_orphan() {
            return None;
        }
        Some(Orphan {
            runtime: w.runtime_label()?.into(),
            class: w.runtime_class.as_deref()?.into(),
        })
    }
}

/// The orphans of each workload kind berth makes.
#[derive(Debug, Default)]
pub struct Orphans {
    /// Deployments.
    pub deployments: Mirror<Orphan>,
    /// ReplicaSets.
    pub replica_sets: Mirror<Orphan>,
    /// Jobs.
    pub jobs: Mirror<Orphan>,
    /// CronJobs.
    pub cron_jobs: Mirror<Orphan>,
    /// Pods (bare pods, with `--watch-bare-pods`).
    pub pods: Mirror<Orphan>,
}

impl Orphans {
    /// Each kind's orphans.
    pub fn each(&self) -> [(WorkloadKind, &Mirror<Orphan>); 5] {
        [
            (WorkloadKind::Deployment, &self.deployments),
            (WorkloadKind::ReplicaSet, &self.replica_sets),
            (WorkloadKind::Job, &self.jobs),
            (WorkloadKind::CronJob, &self.cron_jobs),
            (WorkloadKind::Pod, &self.pods),
        ]
    }
}

/// What the exposure check keeps of the cluster around the Runtimes.
#[derive(Debug)]
pub struct Surroundings {
    /// The one keyed hash both the kept objects and the check use.
    pub hashes: LabelHashes,
    /// Foreign Services that select some pod.
    pub services: Mirror<ForeignService>,
    /// Foreign NetworkPolicies that admit something.
    pub policies: Mirror<ForeignPolicy>,
    /// EndpointSlices the EndpointSlice controller does not manage, that
    /// name pods.
    pub slices: Mirror<KeptSlice>,
    /// Orphans.
    pub orphans: Orphans,
    /// Namespaces whose kept contents changed.
    wake: mpsc::UnboundedSender<Box<str>>,
}

impl Surroundings {
    /// Empty surroundings and the stream of namespaces to wake.
    pub fn new() -> (Arc<Self>, mpsc::UnboundedReceiver<Box<str>>) {
        let (wake, woken) = mpsc::unbounded();
        (
            Arc::new(Surroundings {
                hashes: LabelHashes::default(),
                services: Mirror::default(),
                policies: Mirror::default(),
                slices: Mirror::default(),
                orphans: Orphans::default(),
                wake,
            }),
            woken,
        )
    }

    /// Wakes the Runtimes of each namespace in `changed`.
    fn woke(&self, changed: Vec<Box<str>>) {
        for ns in changed {
            // Closed only when the controller is gone.
            let _ = self.wake.unbounded_send(ns);
        }
    }

    /// The watches that have not completed their first list.
    pub fn unsynced(&self) -> Vec<&'static str> {
        [
            ("services (exposure)", self.services.listed()),
            ("networkpolicies (exposure)", self.policies.listed()),
            ("endpointslices (exposure)", self.slices.listed()),
        ]
        .into_iter()
        .filter(|(_, listed)| !listed)
        .map(|(name, _)| name)
        .collect()
    }
}

#[cfg(test)]
mod tests;
