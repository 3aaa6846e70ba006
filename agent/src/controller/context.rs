//! What every reconcile shares ([`Context`]): how it reaches the
//! apiserver, what it knows of the cluster (the caches), what the operator
//! configured (the grants file and the flags), and its record of its own
//! work (metrics and the pacing memories).

use std::sync::Arc;
use std::time::Duration;

use berth_shared::decide::GrantBinding;
use berth_shared::grants::LoadedGrants;
use kube::Client;
use kube::runtime::events::Recorder;

use crate::controller::cache::Stores;
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

/// The reconcile context, in four parts by what each is for: how the
/// agent reaches the apiserver, what it knows of the cluster, what the
/// operator configured, and its record of its own work. Every reconcile,
/// the grants publisher and the canary scheduler share one.
pub struct Context {
    /// How the agent reaches the apiserver.
    pub access: Access,
    /// What the agent knows of the cluster.
    pub view: View,
    /// What the operator configured.
    pub config: Config,
    /// The agent's record of its own work.
    pub record: Record,
}

/// How the agent reaches the apiserver: the only parts of the context a
/// write goes through (the reconcile's apply and status ends).
pub struct Access {
    /// The API client (with the counting/gating layer).
    pub client: Client,
    /// Event recorder.
    pub recorder: Recorder,
}

/// What the agent knows of the cluster, read without a request.
pub struct View {
    /// Caches.
    pub stores: Stores,
    /// Set once every cache has completed its first list.
    pub synced: Synced,
    /// What the canaries saw of each granted handler (`crate::canary`):
    /// `HandlerReady` and the grants' `status.attestation` read it.
    pub attestations: Arc<crate::signals::attestations::Attestations>,
}

/// What the operator configured: the grants file and the flags.
pub struct Config {
    /// Loaded grants.
    pub grants: Arc<Grants>,
    /// Settings.
    pub settings: Settings,
}

/// The agent's record of its own work.
pub struct Record {
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// What the agent remembers of its own writes, to pace them.
    pub pacing: Arc<super::pacing::Memories>,
}

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
