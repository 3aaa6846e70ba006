//! Prometheus metrics (`/metrics`): reconciles by result, reconcile
//! duration, writes by kind and verb, API requests by verb and resource (as
//! counted by the client's transport layer), apply failures by kind and
//! failed step, runtimes by grant state, grants
//! loaded, grants file stale, leadership, grants digest not the leader's.

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// `result` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// `ok`, `blocked` or `error`.
    pub result: String,
}

/// `kind` + `verb` labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WriteLabels {
    /// Object kind.
    pub kind: String,
    /// `apply`, `delete`, `status`, `event`.
    pub verb: String,
}

/// `kind` + `reason` labels of apply failures.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApplyErrorLabels {
    /// Object kind.
    pub kind: String,
    /// The failed step's reason (`ApplyFailed`, `CorrectionFailed`, …), the
    /// same word as the `Degraded` reason and the Warning Event's.
    pub reason: String,
}

/// `method` + `resource` labels of raw API requests.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// HTTP method.
    pub method: String,
    /// Resource plural from the path (`leases`, `deployments`, …).
    pub resource: String,
}

/// `state` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    /// Profile state.
    pub state: String,
}

/// `runtime_class` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClassLabels {
    /// RuntimeClass name.
    pub runtime_class: String,
}

/// Every metric the agent exports.
pub struct Metrics {
    registry: Registry,
    /// Reconciles by result.
    pub reconciles: Family<ResultLabels, Counter>,
    /// Reconcile duration.
    pub reconcile_duration: Histogram,
    /// Writes the agent decided to make, by kind and verb.
    pub writes: Family<WriteLabels, Counter>,
    /// Raw API requests sent, by method and resource.
    pub requests: Family<RequestLabels, Counter>,
    /// Apply failures, by object kind and failed step.
    pub apply_errors: Family<ApplyErrorLabels, Counter>,
    /// Runtimes by grant state.
    pub runtimes: Family<StateLabels, Gauge>,
    /// Blocked runtimes.
    pub blocked_runtimes: Gauge,
    /// Workloads that still need a RuntimeClass's handler though no
    /// current grant covers them, by class.
    pub retained_workloads: Family<ClassLabels, Gauge>,
    /// Bindings loaded from the grants file.
    pub grants_loaded: Gauge,
    /// 1 when the grants file on disk differs from what was loaded.
    pub grants_file_stale: Gauge,
    /// 1 while this process holds the lease.
    pub leader: Gauge,
    /// 1 while this replica's grants digest is not confirmed as the
    /// leader's (its webhook then refuses what depends on the grants).
    pub grants_digest_mismatch: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// Creates and registers every metric.
    pub fn new() -> Arc<Self> {
        let mut registry = Registry::with_prefix("berth_agent");
        let reconciles = Family::<ResultLabels, Counter>::default();
        registry.register(
            "reconciles",
            "Runtime reconciles by result",
            reconciles.clone(),
        );
        let reconcile_duration = Histogram::new(exponential_buckets(0.005, 2.0, 12));
        registry.register(
            "reconcile_duration_seconds",
            "Duration of one Runtime reconcile",
            reconcile_duration.clone(),
        );
        let writes = Family::<WriteLabels, Counter>::default();
        registry.register("writes", "Writes by object kind and verb", writes.clone());
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "api_requests",
            "Kubernetes API requests sent, by method and resource",
            requests.clone(),
        );
        let apply_errors = Family::<ApplyErrorLabels, Counter>::default();
        registry.register(
            "apply_errors",
            "Failures to apply a managed object, by kind and failed step (the Degraded reason)",
            apply_errors.clone(),
        );
        let runtimes = Family::<StateLabels, Gauge>::default();
        registry.register("runtimes", "Runtimes by grant state", runtimes.clone());
        let blocked_runtimes = Gauge::default();
        registry.register(
            "blocked_runtimes",
            "Runtimes whose managed objects are left unchanged",
            blocked_runtimes.clone(),
        );
        let retained_workloads = Family::<ClassLabels, Gauge>::default();
        registry.register(
            "retained_workloads",
            "Workloads (pods, revisions, jobs …) that still need a RuntimeClass's handler without a current grant, by class",
            retained_workloads.clone(),
        );
        let grants_loaded = Gauge::default();
        registry.register(
            "grants_loaded",
            "Bindings loaded from the grants file",
            grants_loaded.clone(),
        );
        let grants_file_stale = Gauge::default();
        registry.register(
            "grants_file_stale",
            "1 when the grants file on disk changed since it was loaded (restart required)",
            grants_file_stale.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this agent holds the lease",
            leader.clone(),
        );
        let grants_digest_mismatch = Gauge::default();
        registry.register(
            "grants_digest_mismatch",
            "1 while this replica's grants file is not confirmed as the one the leader published (differs, or no leader published one): its webhook refuses admissions that depend on the grants with 'grants are being reloaded, retry'",
            grants_digest_mismatch.clone(),
        );
        Arc::new(Self {
            registry,
            reconciles,
            reconcile_duration,
            writes,
            requests,
            apply_errors,
            runtimes,
            blocked_runtimes,
            retained_workloads,
            grants_loaded,
            grants_file_stale,
            leader,
            grants_digest_mismatch,
        })
    }

    /// Counts one write.
    pub fn write(&self, kind: &str, verb: &str) {
        self.writes
            .get_or_create(&WriteLabels {
                kind: kind.to_string(),
                verb: verb.to_string(),
            })
            .inc();
    }

    /// Counts one apply failure.
    pub fn apply_failed(&self, kind: &str, reason: &str) {
        self.apply_errors
            .get_or_create(&ApplyErrorLabels {
                kind: kind.to_string(),
                reason: reason.to_string(),
            })
            .inc();
    }

    /// Counts one reconcile.
    pub fn reconciled(&self, result: &str, seconds: f64) {
        self.reconciles
            .get_or_create(&ResultLabels {
                result: result.to_string(),
            })
            .inc();
        self.reconcile_duration.observe(seconds);
    }

    /// The text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}
