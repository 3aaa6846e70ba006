//! Prometheus metrics (`/metrics`), every one documented in
//! `docs/metrics.md` (generated from the registrations below by
//! `berth-agent metrics-doc`). Names keep the `berth_agent_` prefix; where
//! controller-runtime has a metric for the same thing the suffix follows
//! it: reconcile_errors_total, reconcile_active (its active_workers),
//! queue_depth (its workqueue_depth), leader (its
//! leader_election_master_status), and cert-manager's
//! certmanager_certificate_expiration_timestamp_seconds for the webhook
//! certificate. `docs/metrics.md` says why the prefix is not
//! controller-runtime's.

mod allocator;
mod catalog;
mod labels;
pub mod state;

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

pub use catalog::{Kind, MetricDoc, markdown};
pub use labels::*;

/// Every metric the agent exports.
pub struct Metrics {
    catalog: catalog::Catalog,
    /// Reconciles by result.
    pub reconciles: Family<ResultLabels, Counter>,
    /// Failed reconciles, by failed stage.
    pub reconcile_errors: Family<ErrorLabels, Counter>,
    /// Reconcile duration.
    pub reconcile_duration: Histogram,
    /// Reconciles running now.
    pub reconcile_active: Gauge,
    /// Runtimes whose current generation is not reconciled yet.
    pub queue_depth: Gauge,
    /// Writes the agent decided to make, by kind and verb.
    pub writes: Family<WriteLabels, Counter>,
    /// Raw API requests sent, by method and resource.
    pub requests: Family<RequestLabels, Counter>,
    /// Apply failures, by object kind and failed step.
    pub apply_errors: Family<ApplyErrorLabels, Counter>,
    /// Runtimes by grant state.
    pub runtimes: Family<StateLabels, Gauge>,
    /// Runtimes by rollout phase.
    pub runtimes_by_phase: Family<PhaseLabels, Gauge>,
    /// Blocked runtimes.
    pub blocked_runtimes: Gauge,
    /// Per Runtime and condition in its problem status: since when.
    pub runtime_problems: Family<ProblemLabels, Gauge>,
    /// RuntimeGrants by state.
    pub grants: Family<StateLabels, Gauge>,
    /// Runtimes holding each RuntimeGrant.
    pub grant_runtimes: Family<GrantLabels, Gauge>,
    /// Nodes by handler coverage, per RuntimeGrant.
    pub grant_nodes: Family<CoverageLabels, Gauge>,
    /// Workloads that still need a RuntimeClass's handler though no
    /// current grant covers them, by class.
    pub retained_workloads: Family<ClassLabels, Gauge>,
    /// Nodes reporting each granted class's handler, by what its canaries
    /// saw.
    pub handler_nodes: Family<HandlerNodeLabels, Gauge>,
    /// 1 while canaries run.
    pub canaries_enabled: Gauge,
    /// Canary Jobs created.
    pub canaries_started: Counter,
    /// Seconds between two canaries of one pair, the budget's stretch
    /// included.
    pub canary_effective_period: Gauge,
    /// The (class, node) pairs canaries attest.
    pub canary_pairs: Gauge,
    /// Bindings loaded from the grants file.
    pub grants_loaded: Gauge,
    /// When the grants file was loaded.
    pub grants_loaded_timestamp: Gauge,
    /// The loaded grants file's digest (value 1).
    pub grants_info: Family<DigestLabels, Gauge>,
    /// 1 when the grants file on disk differs from what was loaded.
    pub grants_file_stale: Gauge,
    /// The pending grants file: since when, by verdict.
    pub pending_grants_file: Family<VerdictLabels, Gauge>,
    /// 1 while this process holds the lease.
    pub leader: Gauge,
    /// 1 while this replica's grants digest is not confirmed as the
    /// leader's (its webhook then refuses what depends on the grants).
    pub grants_digest_mismatch: Gauge,
    /// When the served webhook certificate expires.
    pub webhook_certificate_expiry: Gauge,
    /// Build information (value 1).
    pub build_info: Family<BuildLabels, Gauge>,
    /// The allocator's account of the process's memory, read at scrape.
    pub allocator: Family<AllocatorLabels, Gauge>,
    /// The pending file's content key and when it was first seen.
    pending_seen: Mutex<Option<(String, i64)>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Counts a reconcile as running until dropped.
#[derive(Debug)]
pub struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl Metrics {
    /// Creates and registers every metric.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::registered())
    }

    /// Every metric, one catalog entry each (name, kind, labels, help).
    /// Long on purpose: a flat table, one row per metric, read top to
    /// bottom against the `/metrics` output and docs/metrics; split, a
    /// metric's name and help would sit away from its field.
    fn registered() -> Self {
        use Kind::{Counter as C, Gauge as G, Histogram as H};
        let mut c = catalog::Catalog::new();
        let m = Self {
            reconciles: c.add("reconciles", C, &["result"],
                "Runtime reconciles by result: ok, blocked (the Runtime is held: Blocked=True) or error",
                Family::default()),
            reconcile_errors: c.add("reconcile_errors", C, &["error"],
                "Runtime reconciles that failed (retried with per-Runtime exponential backoff), by failed stage: apply or status",
                Family::default()),
            reconcile_duration: c.add("reconcile_duration_seconds", H, &[],
                "Duration of one Runtime reconcile (read, decide, render, apply, status)",
                Histogram::new(exponential_buckets(0.005, 2.0, 12))),
            reconcile_active: c.add("reconcile_active", G, &[],
                "Runtime reconciles running now (at most --concurrency)",
                Gauge::default()),
            queue_depth: c.add("queue_depth", G, &[],
                "Runtimes whose current generation the agent has not reconciled yet (metadata.generation above status.observedGeneration): the work queued for the controller",
                Gauge::default()),
            writes: c.add("writes", C, &["kind", "verb"],
                "Writes the agent decided to make, by object kind and verb (apply, correct, replace, delete, status, create, take-back: an object berth's by name, labels and content given back its owner reference)",
                Family::default()),
            requests: c.add("api_requests", C, &["method", "resource"],
                "Kubernetes API requests sent, by HTTP method and resource, as counted by the client's transport layer",
                Family::default()),
            apply_errors: c.add("apply_errors", C, &["kind", "reason"],
                "Failures to apply a managed object, by kind and failed step (the Degraded reason)",
                Family::default()),
            runtimes: c.add("runtimes", G, &["state"],
                "Runtimes by grant (profile) state: NotRequested, Granted, NotGranted, Revoked, ClassMissing, HandlerMismatch, ClassUnsupported, ClassDeleting",
                Family::default()),
            runtimes_by_phase: c.add("runtimes_by_phase", G, &["phase"],
                "Runtimes by rollout phase (status.rollout.phase): Pending, Progressing, Complete, Failed, Suspended, Blocked, Degraded",
                Family::default()),
            blocked_runtimes: c.add("blocked_runtimes", G, &[],
                "Runtimes whose managed objects are left unchanged (Blocked=True)",
                Gauge::default()),
            runtime_problems: c.add("runtime_problem_since_timestamp_seconds", G,
                &["runtime_namespace", "runtime", "condition", "reason"],
                "Per Runtime with a condition in its problem status (Blocked=True, Degraded=True, HandlerReady=False, Exposed=True): the Unix time it entered it (lastTransitionTime); no series for a healthy Runtime",
                Family::default()),
            grants: c.add("grants", G, &["state"],
                "RuntimeGrants published by this agent, by state: Ready (ClassReady=True), NotReady, Retired (binding removed, kept while workloads need the class)",
                Family::default()),
            grant_runtimes: c.add("grant_runtimes", G, &["grant", "runtime_class"],
                "Runtimes holding each RuntimeGrant (status.runtimes)",
                Family::default()),
            grant_nodes: c.add("grant_nodes", G, &["grant", "handler", "coverage"],
                "Nodes by coverage of each RuntimeGrant's handler (status.nodes): with_handler, without_handler, unknown (the node reports no handler list)",
                Family::default()),
            retained_workloads: c.add("retained_workloads", G, &["runtime_class"],
                "Workloads (pods, revisions, jobs …) that still need a RuntimeClass's handler without a current grant, by class",
                Family::default()),
            handler_nodes: c.add("handler_nodes", G, &["runtime_class", "handler", "state"],
                "Nodes reporting each granted class's handler, by what its canary Jobs showed (leader only): verified (the last canary started a sandbox of the claimed kind under the contract), failing (it did not: the grant's status.attestation says why), unverified (not run yet, skipped: cordoned, NotReady, full or simulated, or canaries off)",
                Family::default()),
            canaries_enabled: c.add("canaries_enabled", G, &[],
                "1 while this agent runs canary Jobs (leader, --canaries=on with --canary-image), 0 otherwise",
                Gauge::default()),
            canaries_started: c.add("canaries_started", C, &[],
                "Canary Jobs this agent created (one per granted class and node per effective period, and on a change; at most --canary-budget-per-hour in any hour)",
                Counter::default()),
            canary_effective_period: c.add("canary_effective_period_seconds", G, &[],
                "Seconds between two canaries of one (class, node) pair (leader only): --canary-period-seconds, stretched to pairs × 3600 / --canary-budget-per-hour when every pair does not fit the budget; 0 while canaries are off",
                Gauge::default()),
            canary_pairs: c.add("canary_pairs", G, &[],
                "(class, node) pairs the canaries attest (leader only): granted classes on the nodes that report their handler and are not skipped",
                Gauge::default()),
            grants_loaded: c.add("grants_loaded", G, &[],
                "Bindings loaded from the grants file",
                Gauge::default()),
            grants_loaded_timestamp: c.add("grants_loaded_timestamp_seconds", G, &[],
                "Unix time this agent loaded its grants file (0 without a file)",
                Gauge::default()),
            grants_info: c.add("grants_info", G, &["sha256"],
                "Value 1, labelled with the sha256 of the grants file this agent loaded (no series without a file)",
                Family::default()),
            grants_file_stale: c.add("grants_file_stale", G, &[],
                "1 when the grants file on disk changed since it was loaded (restart required)",
                Gauge::default()),
            pending_grants_file: c.add("pending_grants_file_observed_timestamp_seconds", G, &["verdict"],
                "While the grants file on disk differs from the loaded one (leader only): the Unix time this content was first seen, labelled with the loader's verdict (Valid, Invalid, Unreadable); no series otherwise",
                Family::default()),
            leader: c.add("leader", G, &[],
                "1 while this agent holds the lease",
                Gauge::default()),
            grants_digest_mismatch: c.add("grants_digest_mismatch", G, &[],
                "1 while this replica's grants file is not confirmed as the one the leader published (differs, or no leader published one): its webhook refuses admissions that depend on the grants with 'grants are being reloaded, retry'",
                Gauge::default()),
            webhook_certificate_expiry: c.add("webhook_certificate_expiry_timestamp_seconds", G, &[],
                "Unix time the webhook serving certificate this replica serves expires (0 without a webhook)",
                Gauge::default()),
            build_info: c.add("build_info", G, &["version", "commit"],
                "Value 1, labelled with the agent's version and git commit",
                Family::default()),
            allocator: c.add("allocator_bytes", G, &["state"],
                "jemalloc's account of the agent's memory, read at each scrape: allocated (live objects), active (the pages holding them; active minus allocated is fragmentation), resident (active plus jemalloc's metadata and freed pages not yet handed back), metadata, mapped, retained (address space kept, not resident)",
                Family::default()),
            pending_seen: Mutex::new(None),
            catalog: c,
        };
        // Known label values start at zero: `rate()` and `increase()` need
        // a series before the first event, and an alert on errors must not
        // wait for the first one to exist.
        for result in ["ok", "blocked", "error"] {
            m.reconciles
                .get_or_create(&ResultLabels {
                    result: result.to_string(),
                })
                .inc_by(0);
        }
        for error in ["apply", "status"] {
            m.reconcile_errors
                .get_or_create(&ErrorLabels {
                    error: error.to_string(),
                })
                .inc_by(0);
        }
        m.build_info
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION").to_string(),
                commit: env!("BERTH_GIT_COMMIT").to_string(),
            })
            .set(1);
        m
    }

    /// What `docs/metrics.md` documents: every registered metric.
    pub fn docs(&self) -> &[MetricDoc] {
        &self.catalog.docs
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

    /// Counts one failed reconcile, by the stage that failed.
    pub fn reconcile_failed(&self, stage: &str) {
        self.reconcile_errors
            .get_or_create(&ErrorLabels {
                error: stage.to_string(),
            })
            .inc();
    }

    /// Marks a reconcile as running until the guard is dropped.
    pub fn in_flight(&self) -> InFlight {
        self.reconcile_active.inc();
        InFlight(self.reconcile_active.clone())
    }

    /// Records the grants file this process loaded (`sha256` is `None`
    /// without a file).
    pub fn grants_file_loaded(&self, bindings: usize, sha256: Option<&str>) {
        self.grants_loaded
            .set(i64::try_from(bindings).unwrap_or(i64::MAX));
        if let Some(sha256) = sha256 {
            self.grants_loaded_timestamp.set(unix_now());
            self.grants_info
                .get_or_create(&DigestLabels {
                    sha256: sha256.to_string(),
                })
                .set(1);
        }
    }

    /// Records the pending grants file: `Some((verdict, content key))`
    /// while one differs from the loaded file, `None` otherwise. The time
    /// is kept while the content stays the same.
    pub fn pending_grants(&self, pending: Option<(&str, &str)>) {
        let mut seen = berth_shared::sync::lock(&self.pending_seen);
        self.pending_grants_file.clear();
        let Some((verdict, key)) = pending else {
            *seen = None;
            return;
        };
        let since = match &*seen {
            Some((k, since)) if k == key => *since,
            _ => unix_now(),
        };
        *seen = Some((key.to_string(), since));
        self.pending_grants_file
            .get_or_create(&VerdictLabels {
                verdict: verdict.to_string(),
            })
            .set(since);
    }

    /// The text exposition (the allocator's figures read now).
    pub fn encode(&self) -> String {
        for figure in allocator::figures() {
            self.allocator
                .get_or_create(&AllocatorLabels {
                    state: figure.state.to_string(),
                })
                .set(i64::try_from(figure.bytes).unwrap_or(i64::MAX));
        }
        let mut out = String::new();
        if encode(&mut out, &self.catalog.registry).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests;
