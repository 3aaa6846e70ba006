//! What every reconcile shares: the client, the caches (reflector stores),
//! the loaded grants, metrics and settings.

use std::sync::Arc;
use std::time::Duration;

use berth_shared::api::Runtime;
use berth_shared::decide::GrantBinding;
use berth_shared::grants::LoadedGrants;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Client;
use kube::core::PartialObjectMeta;
use kube::runtime::events::Recorder;
use kube::runtime::reflector::Store;

use crate::controller::cache::bodies::Bodies;
use crate::controller::cache::owner_index::OwnerIndex;
use crate::controller::cache::reduce::{KeptDeployment, KeptReplicaSet};
use crate::controller::cache::taken_names::NameIndex;
use crate::metrics::Metrics;

/// The field manager of every write.
pub const FIELD_MANAGER: &str = "berth-agent";

/// The grants as loaded at start (never reloaded).
#[derive(Debug, Default)]
pub struct Grants {
    /// The loaded file, `None` when none is configured.
    pub loaded: Option<LoadedGrants>,
    /// Its bindings in the form `decide` takes.
    pub bindings: Vec<GrantBinding>,
}

impl Grants {
    /// Wraps what the loader returned.
    pub fn new(loaded: Option<LoadedGrants>) -> Self {
        let bindings = loaded
            .as_ref()
            .map(|l| l.bindings.clone())
            .unwrap_or_default();
        Self { loaded, bindings }
    }
}

/// Every cache the agent reads from.
#[derive(Clone)]
pub struct Stores {
    /// Runtimes (the controller's own store).
    pub runtimes: Store<Runtime>,
    /// Namespace metadata (identity labels).
    pub namespaces: Store<PartialObjectMeta<Namespace>>,
    /// RuntimeClasses.
    pub classes: Store<RuntimeClass>,
    /// Nodes (handlers, readiness, labels, taints).
    pub nodes: Store<Node>,
    /// Managed ConfigMaps (label-filtered).
    pub config_maps: Store<ConfigMap>,
    /// Managed ServiceAccounts (label-filtered).
    pub service_accounts: Store<ServiceAccount>,
    /// Managed Services (label-filtered).
    pub services: Store<Service>,
    /// Managed PDBs (label-filtered).
    pub pdbs: Store<PodDisruptionBudget>,
    /// Managed NetworkPolicies (label-filtered).
    pub network_policies: Store<NetworkPolicy>,
    /// Managed HPAs (label-filtered).
    pub hpas: Store<HorizontalPodAutoscaler>,
    /// Every Deployment (retained analysis needs unmanaged ones too).
    pub deployments: Store<KeptDeployment>,
    /// Every ReplicaSet, in the form the cache keeps it.
    pub replica_sets: Store<KeptReplicaSet>,
    /// Every Job.
    pub jobs: Store<Job>,
    /// Every CronJob.
    pub cron_jobs: Store<CronJob>,
    /// Every StatefulSet (analysis only).
    pub stateful_sets: Store<StatefulSet>,
    /// Every DaemonSet (analysis only).
    pub daemon_sets: Store<DaemonSet>,
    /// Every bare Pod, reduced to what the retained analysis reads; empty
    /// (and ready) unless `--watch-bare-pods` (see `Settings`).
    pub pods: Store<Pod>,
    /// Every ControllerRevision, reduced to its template's class.
    pub controller_revisions: Store<ControllerRevision>,
    /// Who controls what, for the kinds a reconcile looks up by owner.
    pub owners: OwnerIndexes,
    /// Which names are taken, for the label-filtered kinds.
    pub taken: TakenNames,
    /// The whole bodies of the Runtimes' own objects, whose stores hold
    /// them reduced (see `bodies`).
    pub bodies: OwnedBodies,
    /// What adds up around the Runtimes' pods (see `exposure`).
    pub surroundings: Arc<crate::controller::reconcile::exposure::Surroundings>,
}

/// The compact whole bodies of the Runtimes' own objects, as the apiserver
/// stores them, per kind the contract governs (see `bodies`, `stored`).
#[derive(Clone, Default)]
pub struct OwnedBodies {
    /// ConfigMaps.
    pub config_maps: Bodies<ConfigMap>,
    /// ServiceAccounts.
    pub service_accounts: Bodies<ServiceAccount>,
    /// Services.
    pub services: Bodies<Service>,
    /// PodDisruptionBudgets.
    pub pdbs: Bodies<PodDisruptionBudget>,
    /// NetworkPolicies.
    pub network_policies: Bodies<NetworkPolicy>,
    /// HorizontalPodAutoscalers.
    pub hpas: Bodies<HorizontalPodAutoscaler>,
    /// Deployments.
    pub deployments: Bodies<Deployment>,
    /// Jobs (the store keeps them whole too; the contract compares these).
    pub jobs: Bodies<Job>,
    /// CronJobs (the store keeps them whole too; the contract compares these).
    pub cron_jobs: Bodies<CronJob>,
}

/// The names taken by any object (labelled or not) of each kind whose
/// cache is label-filtered: a name not in the cache and free here can be
/// created without reading it first (see `names`).
#[derive(Clone, Default)]
pub struct TakenNames {
    /// ConfigMaps.
    pub config_maps: NameIndex,
    /// ServiceAccounts.
    pub service_accounts: NameIndex,
    /// Services.
    pub services: NameIndex,
    /// PodDisruptionBudgets.
    pub pdbs: NameIndex,
    /// NetworkPolicies.
    pub network_policies: NameIndex,
    /// HorizontalPodAutoscalers.
    pub hpas: NameIndex,
}

/// The owner indexes over [`Stores`] (each fed by its store's events).
#[derive(Clone, Default)]
pub struct OwnerIndexes {
    /// ReplicaSets by Deployment uid.
    pub replica_sets: OwnerIndex<KeptReplicaSet>,
    /// Jobs by controller uid (a Runtime's own one-time Jobs).
    pub jobs: OwnerIndex<Job>,
    /// CronJobs by Runtime uid.
    pub cron_jobs: OwnerIndex<CronJob>,
    /// NetworkPolicies by Runtime uid.
    pub network_policies: OwnerIndex<NetworkPolicy>,
    /// HPAs by Runtime uid.
    pub hpas: OwnerIndex<HorizontalPodAutoscaler>,
}

impl Stores {
    /// The ReplicaSets the Deployment with `uid` controls.
    pub fn replica_sets_of(&self, deployment_uid: &str) -> Vec<Arc<KeptReplicaSet>> {
        self.owners
            .replica_sets
            .controlled_by(&self.replica_sets, deployment_uid)
    }
}

/// Agent settings that reconciles need.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Requeue interval of a settled Runtime.
    pub resync: Duration,
    /// Only this namespace's Runtimes and workloads (tests, single-tenant
    /// installs); `None` = the whole cluster.
    pub namespace: Option<String>,
    /// Value of the `berth.dev/published-by` label on RuntimeGrants this
    /// agent publishes; only those are pruned.
    pub publisher: String,
    /// Runtimes reconciled at the same time.
    pub concurrency: usize,
    /// Whether the Pod cache is fed (`--watch-bare-pods`); without it the
    /// agent reads no Pod and says so wherever bare pods would count.
    pub watch_bare_pods: bool,
    /// How every cache watches (`--streaming-lists`), and what their first
    /// lists received.
    pub watches: super::cache::watches::Watches,
}

/// The reconcile context.
pub struct Context {
    /// The API client (with the counting/gating layer).
    pub client: Client,
    /// Caches.
    pub stores: Stores,
    /// Loaded grants.
    pub grants: Arc<Grants>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Event recorder.
    pub recorder: Recorder,
    /// Settings.
    pub settings: Settings,
    /// Set once every cache has completed its first list.
    pub synced: Synced,
    /// What the agent remembers of its own writes, to pace them.
    pub pacing: super::pacing::Memories,
    /// What the canaries saw of each granted handler (`crate::canary`):
    /// `HandlerReady` and the grants' `status.attestation` read it.
    pub attestations: Arc<crate::signals::attestations::Attestations>,
}

/// How long a status change that only moves counts or messages may wait
/// after the previous status write of the same Runtime (see
/// `berth_shared::status::progress_only`): pods coming up one by one then
/// cost one write per interval, not one per pod.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(5);

/// Progress-only status writes per second the agent aims at across all
/// Runtimes: when many roll out at once, each Runtime's progress interval
/// stretches so that together they stay near this rate
/// ([`LastStatusWrites::progress_interval`](super::pacing::last_status_writes::LastStatusWrites::progress_interval)). One Runtime rolling out is still
/// written every [`PROGRESS_INTERVAL`]. At S/4 (issue 32) 500 Runtimes
/// rolling out together wrote 2,333 progress-only statuses in 200 s,
/// each an 8 kB object the apiserver stores and sends to every watcher,
/// on a control plane whose apiserver was the busiest process while the
/// same pods came up.
pub const PROGRESS_WRITES_PER_SECOND: u32 = 5;

/// The longest such a wait lasts while other Runtimes still wait for their
/// first reconcile at their generation
/// (`berth_shared::status::awaiting_first_pass`): many Runtimes created or
/// changed at once. kube-runtime picks the next reconcile from a set in no
/// order, so a Runtime never reconciled waits behind others' progress
/// writes; deferring those gives the apiserver to the first passes. A
/// deferred write is woken as soon as no Runtime waits any more
/// ([`DeferredStatusWrites`](super::pacing::deferred_status::DeferredStatusWrites)), and is at most this late while they keep coming.
/// Transitions an operator acts on are still written at once (issues 14
/// and 32).
pub const FIRST_PASS_PROGRESS_INTERVAL: Duration = Duration::from_secs(120);

/// Whether every cache has completed its first list (once set, stays set:
/// a later relist keeps serving the previous contents until it completes).
#[derive(Clone, Debug)]
pub struct Synced(tokio::sync::watch::Sender<bool>);

impl Default for Synced {
    fn default() -> Self {
        Self(tokio::sync::watch::Sender::new(false))
    }
}

impl Synced {
    /// Marks every cache synced.
    pub fn set(&self) {
        self.0.send_replace(true);
    }

    /// Resolves once every cache is synced.
    pub async fn wait(&self) {
        let mut rx = self.0.subscribe();
        let _ = rx.wait_for(|v| *v).await;
    }
}
