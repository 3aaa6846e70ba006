//! `berth-agent run`: the in-cluster agent.
//!
//! Start-up order matters: the grants file is loaded first, before any
//! Kubernetes client exists (an invalid file stops the agent); then the
//! client, the operations endpoints, leader election; only the leader
//! starts the controller, the grants publisher and (with
//! `--webhook-listen`) the admission webhook. Losing the lease closes the
//! write gate at once and exits non-zero; SIGTERM/SIGINT stop gracefully
//! and release the lease.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use berth_shared::api::RuntimeGrant;
use color_eyre::eyre::{WrapErr, eyre};
use kube::Api;
use kube::runtime::events::{Recorder, Reporter};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::admission;
use crate::controller::{self, context};
use crate::grants_config::GrantsFileArgs;
use crate::grants_publisher;
use crate::http::{self, Readiness};
use crate::kube_client::{self, WriteGate};
use crate::leader::{Elector, LeaseConfig};
use crate::lease_timing;
use crate::metrics::Metrics;
use crate::otel;

/// Log output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One JSON object per line.
    Json,
    /// Human-readable text.
    Text,
}

/// Options of `berth-agent run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub grants: GrantsFileArgs,
    /// Address of /health/live, /health/ready and /metrics.
    #[arg(long, env = "BERTH_HTTP_ADDR", default_value = "0.0.0.0:8080")]
    pub http_addr: SocketAddr,
    /// Namespace of the leader-election Lease.
    #[arg(long, env = "BERTH_LEASE_NAMESPACE", default_value = "berth-system")]
    pub lease_namespace: String,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "berth-agent")]
    pub lease_name: String,
    /// This agent's identity in the Lease (default: POD_NAME, else host name + pid).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// Seconds a lease is valid without renewal: how long a standby waits
    /// before taking over from a leader that stopped renewing (client-go's
    /// leaseDuration; see docs/install.md "Leader election").
    #[arg(long, env = "BERTH_LEASE_DURATION_SECONDS", default_value_t = lease_timing::DEFAULT_LEASE_DURATION_SECONDS)]
    pub lease_duration_seconds: u64,
    /// Seconds the leader keeps trying to renew before it stops writing and
    /// exits (client-go's renewDeadline; default: two thirds of the lease
    /// duration). Must be shorter than the lease duration.
    #[arg(long, env = "BERTH_LEASE_RENEW_DEADLINE_SECONDS")]
    pub lease_renew_deadline_seconds: Option<u64>,
    /// Seconds between renewals, and between a standby's looks at the
    /// Lease (client-go's retryPeriod). Must be shorter than the renew
    /// deadline.
    #[arg(long, alias = "lease-renew-seconds", env = "BERTH_LEASE_RETRY_PERIOD_SECONDS", default_value_t = lease_timing::DEFAULT_RETRY_PERIOD_SECONDS)]
    pub lease_retry_period_seconds: u64,
    /// Seconds between full reconciles of a settled Runtime.
    #[arg(long, default_value_t = 300)]
    pub resync_seconds: u64,
    /// Runtimes reconciled at the same time: bounds the agent's concurrent
    /// writes. Each reconcile applies its objects in two phases (ConfigMap,
    /// ServiceAccount and Service, then the Deployment and the rest), the
    /// objects of a phase concurrently.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// Seconds a cache's first list may go without receiving anything
    /// before the leader gives up the lease and exits non-zero (to be
    /// restarted with fresh watches). A list still receiving objects is
    /// waited for, however long the cluster takes to send it.
    #[arg(long, default_value_t = 60)]
    pub cache_sync_timeout_seconds: u64,
    /// Seconds between looks at the grants file on disk (RestartRequired,
    /// the PendingGrantsFile). RuntimeGrants are published when what they
    /// read changes, and at least every six intervals as a backstop.
    #[arg(long, default_value_t = 10)]
    pub grants_interval_seconds: u64,
    /// Log format.
    #[arg(long, value_enum, default_value = "json", env = "BERTH_LOG_FORMAT")]
    pub log_format: LogFormat,
    /// Reconcile only Runtimes in this namespace (default: every namespace).
    #[arg(long, env = "BERTH_WATCH_NAMESPACE")]
    pub namespace: Option<String>,
    /// Also list and watch Pods, so that bare pods (pods without a
    /// controller) using a RuntimeClass count as retained workloads of its
    /// handler. Off by default: without it the agent reads no Pod and needs
    /// no Pod permission (the RBAC overlay `assets/rbac/pods` or the chart
    /// value `barePods.watch` grants list/watch); RuntimeGrants then say
    /// that bare pods were not checked.
    #[arg(long, env = "BERTH_WATCH_BARE_PODS")]
    pub watch_bare_pods: bool,
    /// Fill the caches with streaming lists (watches with
    /// `sendInitialEvents`: the apiserver's WatchList feature) instead of
    /// paged lists, so that no list page is parsed whole (docs/bench-runs.md
    /// "How the memory grows"). `auto` probes the apiserver once at start
    /// and falls back to paged lists where it does not serve them; a bare
    /// `--streaming-lists` means `true`.
    #[arg(
        long,
        env = "BERTH_STREAMING_LISTS",
        value_enum,
        default_value = "auto",
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub streaming_lists: controller::cache::list_strategy::StreamingLists,
    /// Serve the validating admission webhook (HTTPS) on this address.
    #[arg(long, value_name = "ADDR")]
    pub webhook_listen: Option<SocketAddr>,
    #[command(flatten)]
    pub admission: admission::AdmissionArgs,
    #[command(flatten)]
    pub canaries: crate::canary::Flags,
}

/// Logs to stderr; with `OTEL_EXPORTER_OTLP_ENDPOINT`, spans also go to an
/// OTLP collector (`crate::otel`) until the returned guard is dropped.
fn init_logging(format: LogFormat) -> otel::Guard {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("info,kube=warn,tower=warn,hyper=warn")
    });
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    // JSON: each line carries the fields of every span it is in ("spans"),
    // e.g. a reconcile's Runtime namespace, name, generation and outcome.
    let fmt = match format {
        LogFormat::Json => fmt
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .boxed(),
        LogFormat::Text => fmt.boxed(),
    };
    otel::init(tracing_subscriber::registry().with(filter).with(fmt))
}

fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "agent".to_string());
    format!("{host}-{}", std::process::id())
}

/// Waits (bounded) until something accepts connections on `addr`, so the
/// replica reports ready only once the webhook listens.
async fn wait_for_port(addr: SocketAddr) {
    let probe = if addr.ip().is_unspecified() {
        SocketAddr::from(([127, 0, 0, 1], addr.port()))
    } else {
        addr
    };
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(probe).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tracing::warn!(%addr, "the admission webhook is not listening yet");
}

/// Resolves when SIGTERM or SIGINT arrives.
async fn terminate_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        if let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = ctrl_c.await;
}

/// The leader-election timing the flags give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LeaseTiming {
    duration: Duration,
    renew_deadline: Duration,
    retry: Duration,
}

impl RunArgs {
    /// The three leader-election durations, checked against each other.
    fn lease_timing(&self) -> Result<LeaseTiming, lease_timing::TimingError> {
        let duration = Duration::from_secs(self.lease_duration_seconds.max(2));
        let renew_deadline = self.lease_renew_deadline_seconds.map_or_else(
            || lease_timing::default_renew_deadline(duration),
            Duration::from_secs,
        );
        let retry = Duration::from_secs(self.lease_retry_period_seconds.max(1));
        lease_timing::validate(duration, renew_deadline, retry)?;
        Ok(LeaseTiming {
            duration,
            renew_deadline,
            retry,
        })
    }
}

/// Entry point of the `run` subcommand.
pub fn run(args: RunArgs) -> color_eyre::Result<()> {
    // Held until the agent returns: dropping it flushes exported spans.
    let _traces = init_logging(args.log_format);
    // Checked before anything starts: a timing that cannot work is a usage error.
    args.lease_timing().wrap_err("leader election")?;
    // Grants first: an invalid file stops the agent before any client exists.
    let loaded = args
        .grants
        .load()
        .wrap_err("the grants file is invalid; the agent does not start")?;
    match &loaded {
        Some(l) => {
            tracing::info!(path = %l.path.display(), bindings = l.bindings.len(), sha256 = %l.sha256, "grants file loaded")
        }
        None => tracing::warn!("no grants file configured: no service is granted any RuntimeClass"),
    }
    let grants = Arc::new(context::Grants::new(loaded));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .wrap_err("starting the async runtime")?;
    runtime.block_on(run_async(args, grants))
}

async fn run_async(args: RunArgs, grants: Arc<context::Grants>) -> color_eyre::Result<()> {
    #[cfg(feature = "profile")]
    crate::profile::start();
    let metrics = Metrics::new();
    metrics.grants_file_loaded(
        grants.bindings.len(),
        grants.loaded.as_ref().map(|l| l.sha256.as_str()),
    );
    // One grant set per cluster: the elector publishes this digest while
    // leading and learns the leader's; the webhook asks it per request.
    let grant_set = admission::grant_set::GrantSet::following(
        admission::grant_set::own_digest(grants.loaded.as_ref()),
        metrics.grants_digest_mismatch.clone(),
    );
    let gate = WriteGate::default();
    let lease = args.lease_timing().wrap_err("leader election")?;
    let identity = args.identity.clone().unwrap_or_else(default_identity);
    let client = kube_client::client(metrics.clone(), gate.clone(), &identity)
        .await
        .wrap_err("creating the Kubernetes client")?;

    // Shutdown: the signal cancels `stop`; every long-lived task is
    // spawned on `tasks`, which the graceful path waits for (bounded).
    let stop = CancellationToken::new();
    let tasks = TaskTracker::new();
    let stopped = {
        let stop = stop.clone();
        move || stop.clone().cancelled_owned()
    };
    let readiness = Readiness::default();
    let leading = Readiness::default();
    tasks.spawn(http::serve(
        args.http_addr,
        readiness.clone(),
        leading.clone(),
        metrics.clone(),
        stopped(),
    ));
    {
        let stop = stop.clone();
        // Not tracked: it ends only with the signal.
        tokio::spawn(async move {
            terminate_signal().await;
            tracing::info!("shutdown signal received");
            stop.cancel();
        });
    }

    // admission: started here, on every replica (leader or standby): it
    // only reads, so a standby can share the webhook traffic, and the
    // Service keeps an endpoint through a leader failover. Each replica
    // merges its CA into the managed configuration's bundle.
    if let Some(listen) = args.webhook_listen {
        let mut config = args
            .admission
            .to_config(listen)
            .map_err(|e| eyre!("admission webhook: {e}"))?;
        config.cert_expiry = Some(metrics.webhook_certificate_expiry.clone());
        let bindings: Arc<[berth_shared::decide::GrantBinding]> = grants.bindings.clone().into();
        let client = client.clone();
        let stop = stopped();
        let serving = readiness.clone();
        let grant_set = grant_set.clone();
        tasks.spawn(async move {
            if let Err(e) = admission::serve(config, bindings, grant_set, client, stop).await {
                serving.set(false);
                tracing::error!(error = %e, "admission webhook stopped");
            }
        });
        wait_for_port(listen).await;
    }
    // Grants loaded (before the client existed) and the webhook, if any,
    // listening: this replica can take its share of traffic.
    readiness.set(true);
    // Asked while standing by, so that a failover does not wait for it.
    let streaming_lists = controller::cache::list_strategy::resolve(
        &client,
        args.namespace.as_deref(),
        args.streaming_lists,
    )
    .await;

    let elector = Elector::new(
        client.clone(),
        LeaseConfig {
            namespace: args.lease_namespace.clone(),
            name: args.lease_name.clone(),
            identity: identity.clone(),
            duration: lease.duration,
            renew: lease.retry,
            renew_deadline: lease.renew_deadline,
        },
        gate.clone(),
    )
    .with_grant_set(grant_set);
    // The elector opens the write gate itself, only until a margin before
    // the lease taken could expire, and moves it on with each renewal.
    tokio::select! {
        _ = elector.acquire() => {}
        () = stopped() => {
            tracing::info!("stopped while standing by");
            return Ok(());
        }
    };
    metrics.leader.set(1);
    // Readiness stays as it is: it says the webhook serves, which holds
    // whether or not this replica leads, so the Service in front of the
    // webhook keeps this endpoint while the caches sync. `/health/leader`
    // reports leading with synced caches.

    // What wakes the grants publisher (fed by the caches, and the
    // RuntimeGrant watch below).
    let wake = grants_publisher::trigger::Wake::default();
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "berth-agent".to_string(),
            instance: Some(identity.clone()),
        },
    );
    // How every cache watches, and what their first lists received (the
    // controller's caches, the grants' and the canaries').
    let watches = controller::cache::watches::Watches::new(streaming_lists);
    let attestations = crate::canary::Attestations::new();
    let started = controller::start(
        client.clone(),
        grants.clone(),
        metrics.clone(),
        context::Settings {
            resync: Duration::from_secs(args.resync_seconds.max(1)),
            namespace: args.namespace.clone(),
            publisher: args.lease_name.clone(),
            concurrency: usize::from(args.concurrency),
            watch_bare_pods: args.watch_bare_pods,
            watches: watches.clone(),
        },
        recorder,
        controller::Shared {
            wake: &wake,
            attestations: attestations.clone(),
        },
        stopped(),
    );
    let controller_task = tasks.spawn(started.run);

    // RuntimeGrants: their own cache, then the publisher loop.
    let (grant_store, grant_writer) = kube::runtime::reflector::store();
    {
        use futures::StreamExt;
        use kube::runtime::WatchStreamExt;
        // Every change of a grant (its own status writes too: the pass
        // they wake computes the same status and writes nothing). Without
        // managedFields, like every cache: nothing reads them, and the
        // publisher's status writes make them most of a grant's size.
        let woken = wake.clone();
        let stream = watches
            .watch(Api::<RuntimeGrant>::all(client.clone()), watches.config())
            .modify(controller::strip)
            .reflect(grant_writer)
            .inspect(move |_| woken.wake())
            .applied_objects();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while stream.next().await.is_some() {}
        });
    }
    {
        // Canaries: the leader's, like the publisher (crate::canary).
        let canaries = crate::canary::scheduler::run(
            started.context.clone(),
            args.canaries.clone(),
            attestations,
            wake.clone(),
        );
        let stop = stop.clone();
        tasks.spawn(async move { stop.run_until_cancelled(canaries).await });
    }
    {
        let publisher = grants_publisher::run(
            started.context.clone(),
            grant_store,
            Duration::from_secs(args.grants_interval_seconds.max(1)),
            wake,
        );
        let stop = stop.clone();
        tasks.spawn(async move { stop.run_until_cancelled(publisher).await });
    }

    let stores = started.stores.clone();
    let synced = started.context.synced.clone();
    let leading_flag = leading.clone();
    let sync_timeout = Duration::from_secs(args.cache_sync_timeout_seconds.max(1));
    let (sync_failed_tx, sync_failed_rx) = tokio::sync::oneshot::channel::<Vec<&'static str>>();
    let progress = watches.progress().clone();
    tokio::spawn(async move {
        let mut before = progress.snapshot();
        while tokio::time::timeout(sync_timeout, synced.wait())
            .await
            .is_err()
        {
            // A cache that never completes its first list leaves the
            // leader holding the lease without reconciling. Exiting hands
            // the lease on and lets the restart start every watch afresh;
            // a cache whose list is still arriving (a big cluster, a busy
            // apiserver) is waited for (`list_progress`).
            let pending = controller::unsynced(&stores).await;
            let now = progress.snapshot();
            let stalled = controller::cache::list_progress::stalled(&pending, &before, &now);
            if !stalled.is_empty() {
                let _ = sync_failed_tx.send(stalled);
                return;
            }
            tracing::info!(
                ?pending,
                "caches still listing, and each received objects in the last {sync_timeout:?}: waiting"
            );
            before = now;
        }
        leading_flag.set(true);
        tracing::info!("caches synced; leading");
    });

    let result = tokio::select! {
        lost = elector.hold() => {
            gate.close();
            readiness.set(false);
            leading.set(false);
            metrics.leader.set(0);
            tracing::error!(reason = %lost, "leadership lost: writes stopped, exiting");
            Err(eyre!("leadership lost: {lost}"))
        }
        Ok(pending) = sync_failed_rx => {
            gate.close();
            readiness.set(false);
            metrics.leader.set(0);
            elector.release().await;
            tracing::error!(?pending, timeout = ?sync_timeout, "caches received nothing while listing: exiting so that a restart starts the watches afresh");
            Err(eyre!("caches did not sync: nothing received for {sync_timeout:?} while listing {pending:?}"))
        }
        () = stopped() => {
            readiness.set(false);
            leading.set(false);
            tracing::info!("stopping the controller");
            // Renewals go on while the controller drains (the gate would
            // close by itself otherwise); bounded by the same 20 s.
            let _ = tokio::time::timeout(Duration::from_secs(20), async {
                tokio::select! {
                    _ = controller_task => {}
                    _ = elector.hold() => {}
                }
            })
            .await;
            gate.close();
            elector.release().await;
            metrics.leader.set(0);
            Ok(())
        }
    };
    // Everything tracked stops with `stop`. Only a graceful stop waits for
    // the servers to drain; a lost lease or a failed sync exits at once.
    stop.cancel();
    tasks.close();
    if result.is_ok() {
        let _ = tokio::time::timeout(Duration::from_secs(5), tasks.wait()).await;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: RunArgs,
    }

    #[test]
    fn bare_pods_are_opt_in() {
        // Only meaningful when the variable is not set around the test run.
        if std::env::var_os("BERTH_WATCH_BARE_PODS").is_some() {
            return;
        }
        let off = Cli::try_parse_from(["t"]).expect("parse");
        assert!(!off.args.watch_bare_pods);
        let on = Cli::try_parse_from(["t", "--watch-bare-pods"]).expect("parse");
        assert!(on.args.watch_bare_pods);
    }

    #[test]
    fn lease_timing_defaults_flags_and_refusals() {
        let parse = |extra: &[&str]| {
            let mut argv = vec!["t"];
            argv.extend_from_slice(extra);
            Cli::try_parse_from(argv)
                .expect("parse")
                .args
                .lease_timing()
        };
        let s = Duration::from_secs;
        // Only meaningful when the variables are not set around the test run.
        if std::env::vars().all(|(k, _)| !k.starts_with("BERTH_LEASE_")) {
            assert_eq!(
                parse(&[]).expect("defaults"),
                LeaseTiming {
                    duration: s(60),
                    renew_deadline: s(40),
                    retry: s(5)
                }
            );
        }
        // client-go's numbers; the old flag name still names the retry period.
        assert_eq!(
            parse(&[
                "--lease-duration-seconds=15",
                "--lease-renew-deadline-seconds=10",
                "--lease-renew-seconds=2"
            ])
            .expect("client-go's"),
            LeaseTiming {
                duration: s(15),
                renew_deadline: s(10),
                retry: s(2)
            }
        );
        // A short lease alone gets two thirds of it as its deadline.
        let short = parse(&[
            "--lease-duration-seconds=4",
            "--lease-retry-period-seconds=1",
        ])
        .expect("short");
        assert!(
            short.renew_deadline > s(2) && short.renew_deadline < s(3),
            "{short:?}"
        );
        assert!(
            parse(&[
                "--lease-duration-seconds=30",
                "--lease-renew-deadline-seconds=30"
            ])
            .is_err()
        );
        assert!(
            parse(&[
                "--lease-renew-deadline-seconds=5",
                "--lease-retry-period-seconds=5"
            ])
            .is_err()
        );
    }
}
