//! Every cache the agent reads from, as one value the reconcile context
//! holds ([`Stores`]), with the indexes and whole bodies kept beside the
//! stores.

use std::sync::Arc;

use berth_shared::api::Runtime;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::Store;

use super::bodies::Bodies;
use super::owner_index::OwnerIndex;
use super::reduce::{KeptDeployment, KeptReplicaSet};
use super::taken_names::NameIndex;

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
    pub surroundings: Arc<super::surroundings::Surroundings>,
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
