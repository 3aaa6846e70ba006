//! The agent once started: connect, serve, stand by, lead, keep leading, stop
//! (the order `super` gives).

use std::sync::Arc;
use std::time::Duration;

use berth_shared::api::RuntimeGrant;
use color_eyre::eyre::{WrapErr, eyre};
use kube::Api;
use kube::runtime::events::{Recorder, Reporter};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::args::{LeaseTiming, RunArgs};
use crate::admission;
use crate::controller::{self, context};
use crate::grants_publisher;
use crate::http::{self, Readiness};
use crate::kube_client::{self, WriteGate};
use crate::leader::{Elector, LeaseConfig};
use crate::metrics::Metrics;

/// The agent once started: the steps below run in this order, each with
/// one purpose, so that the start-up order the module doc gives reads off
/// this function (connect → serve → stand by → lead → keep leading → stop).
pub(super) async fn run_async(
    args: RunArgs,
    grants: Arc<context::Grants>,
) -> color_eyre::Result<()> {
    #[cfg(feature = "profile")]
    crate::profile::start();
    let agent = Agent::connect(&args, &grants).await?;
    agent.serve_operations(&args);
    agent.serve_webhook(&args, &grants).await?;
    // Grants loaded (before the client existed) and the webhook, if any,
    // listening: this replica can take its share of traffic.
    agent.readiness.set(true);
    // Asked while standing by, so that a failover does not wait for it.
    let streaming_lists = controller::cache::list_strategy::resolve(
        &agent.client,
        args.namespace.as_deref(),
        args.streaming_lists,
    )
    .await;
    let Some(elector) = agent.stand_by(&args).await else {
        tracing::info!("stopped while standing by");
        return Ok(());
    };
    agent.metrics.leader.set(1);
    // Readiness stays as it is: it says the webhook serves, which holds
    // whether or not this replica leads, so the Service in front of the
    // webhook keeps this endpoint while the caches sync. `/health/leader`
    // reports leading with synced caches.
    let leading = agent.lead(&args, grants, streaming_lists);
    let sync_failed = agent.watch_first_sync(&args, &leading);
    let result = agent
        .keep_leading(&elector, leading, sync_failed, sync_timeout(&args))
        .await;
    // Everything tracked stops with `stop`. Only a graceful stop waits for
    // the servers to drain; a lost lease or a failed sync exits at once.
    agent.stop.cancel();
    agent.tasks.close();
    if result.is_ok() {
        let _ = tokio::time::timeout(Duration::from_secs(5), agent.tasks.wait()).await;
    }
    result
}

/// What every step of a running agent shares: the client and its write
/// gate, the metrics, the health flags, and the shutdown.
struct Agent {
    metrics: Arc<Metrics>,
    /// One grant set per cluster: the elector publishes this digest while
    /// leading and learns the leader's; the webhook asks it per request.
    grant_set: admission::grant_set::GrantSet,
    gate: WriteGate,
    lease: LeaseTiming,
    identity: String,
    client: kube::Client,
    /// Shutdown: the signal cancels `stop`; every long-lived task is
    /// spawned on `tasks`, which the graceful path waits for (bounded).
    stop: CancellationToken,
    tasks: TaskTracker,
    /// `/health/ready`: the webhook serves.
    readiness: Readiness,
    /// `/health/leader`: leading with synced caches.
    leading: Readiness,
}

/// What the leader started: the controller's task and what the first-sync
/// check reads.
struct Leading {
    controller_task: tokio::task::JoinHandle<()>,
    stores: crate::controller::cache::Stores,
    synced: context::Synced,
    watches: controller::cache::watches::Watches,
}

impl Agent {
    /// Metrics, grant set, lease timing and the Kubernetes client: nothing
    /// runs yet.
    async fn connect(args: &RunArgs, grants: &context::Grants) -> color_eyre::Result<Self> {
        let metrics = Metrics::new();
        metrics.grants_file_loaded(
            grants.bindings.len(),
            grants.loaded.as_ref().map(|l| l.sha256.as_str()),
        );
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
        // An admission that finds this replica unconfirmed reads the Lease
        // once more before refusing (a Ready standby right after a leader
        // took it: CI of 2026-12-06 met it 30 ms after the install).
        grant_set.read_lease_from(Box::new(admission::lease_reader::LeaseReader::new(
            client.clone(),
            &args.lease_namespace,
            &args.lease_name,
        )));
        Ok(Self {
            metrics,
            grant_set,
            gate,
            lease,
            identity,
            client,
            stop: CancellationToken::new(),
            tasks: TaskTracker::new(),
            readiness: Readiness::default(),
            leading: Readiness::default(),
        })
    }

    /// Resolves when the agent is told to stop.
    fn stopped(&self) -> tokio_util::sync::WaitForCancellationFutureOwned {
        self.stop.clone().cancelled_owned()
    }

    /// The operations endpoints, and the signal that stops everything.
    fn serve_operations(&self, args: &RunArgs) {
        self.tasks.spawn(http::serve(
            args.http_addr,
            self.readiness.clone(),
            self.leading.clone(),
            self.metrics.clone(),
            self.stopped(),
        ));
        let stop = self.stop.clone();
        // Not tracked: it ends only with the signal.
        tokio::spawn(async move {
            terminate_signal().await;
            tracing::info!("shutdown signal received");
            stop.cancel();
        });
    }

    /// admission: started here, on every replica (leader or standby): it
    /// only reads, so a standby can share the webhook traffic, and the
    /// Service keeps an endpoint through a leader failover. Each replica
    /// merges its CA into the managed configuration's bundle. Returns once
    /// the webhook listens (bounded), so readiness follows it.
    async fn serve_webhook(
        &self,
        args: &RunArgs,
        grants: &context::Grants,
    ) -> color_eyre::Result<()> {
        let Some(listen) = args.webhook_listen else {
            return Ok(());
        };
        let mut config = args
            .admission
            .to_config(listen)
            .map_err(|e| eyre!("admission webhook: {e}"))?;
        config.cert_expiry = Some(self.metrics.webhook_certificate_expiry.clone());
        let bindings: Arc<[berth_shared::decide::GrantBinding]> = grants.bindings.clone().into();
        // Started means this replica's CA is stored in the webhook
        // configuration: only then may it report ready and join the
        // Service, or the apiserver routed here could not verify it. A
        // webhook that cannot start stops the agent with the reason.
        let started = admission::start(
            config,
            bindings,
            self.grant_set.clone(),
            self.client.clone(),
        )
        .await
        .map_err(|e| eyre!("admission webhook on {listen}: {e}"))?;
        let stop = self.stopped();
        let serving = self.readiness.clone();
        self.tasks.spawn(async move {
            started.serve(stop).await;
            serving.set(false);
        });
        Ok(())
    }

    /// Waits for the lease: the elector, once this replica leads, or
    /// `None` when stopped first. The elector opens the write gate itself,
    /// only until a margin before the lease taken could expire, and moves
    /// it on with each renewal.
    async fn stand_by(&self, args: &RunArgs) -> Option<Elector> {
        let elector = Elector::new(
            self.client.clone(),
            LeaseConfig {
                namespace: args.lease_namespace.clone(),
                name: args.lease_name.clone(),
                identity: self.identity.clone(),
                duration: self.lease.duration,
                renew: self.lease.retry,
                renew_deadline: self.lease.renew_deadline,
            },
            self.gate.clone(),
        )
        .with_grant_set(self.grant_set.clone());
        tokio::select! {
            _ = elector.acquire() => Some(elector),
            () = self.stopped() => None,
        }
    }

    /// The leader's work: the controller, the RuntimeGrants' cache, the
    /// canaries and the grants publisher.
    fn lead(&self, args: &RunArgs, grants: Arc<context::Grants>, streaming_lists: bool) -> Leading {
        // What wakes the grants publisher (fed by the caches, and the
        // RuntimeGrant watch below).
        let wake = crate::signals::publisher_triggers::Wake::default();
        let recorder = Recorder::new(
            self.client.clone(),
            Reporter {
                controller: "berth-agent".to_string(),
                instance: Some(self.identity.clone()),
            },
        );
        // How every cache watches, and what their first lists received (the
        // controller's caches, the grants' and the canaries').
        let watches = controller::cache::watches::Watches::new(streaming_lists);
        let attestations = crate::signals::attestations::Attestations::new();
        let started = controller::start(
            self.client.clone(),
            grants,
            self.metrics.clone(),
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
            self.stopped(),
        );
        let controller_task = self.tasks.spawn(started.run);
        // RuntimeGrants: their own cache, then the publisher loop.
        let grant_store = watch_grants(&self.client, &watches, &wake);
        {
            // Canaries: the leader's, like the publisher (crate::canary).
            let canaries = crate::canary::scheduler::run(
                started.context.clone(),
                args.canaries.clone(),
                attestations,
                wake.clone(),
            );
            let stop = self.stop.clone();
            self.tasks
                .spawn(async move { stop.run_until_cancelled(canaries).await });
        }
        let publisher = grants_publisher::run(
            started.context.clone(),
            grant_store,
            Duration::from_secs(args.grants_interval_seconds.max(1)),
            wake,
        );
        let stop = self.stop.clone();
        self.tasks
            .spawn(async move { stop.run_until_cancelled(publisher).await });
        Leading {
            controller_task,
            stores: started.stores,
            synced: started.context.view.synced.clone(),
            watches,
        }
    }

    /// Sets `/health/leader` once every cache has listed; sends the caches
    /// that stalled instead (the receiver ends the agent, `keep_leading`).
    fn watch_first_sync(
        &self,
        args: &RunArgs,
        leading: &Leading,
    ) -> tokio::sync::oneshot::Receiver<Vec<&'static str>> {
        let stores = leading.stores.clone();
        let synced = leading.synced.clone();
        let leading_flag = self.leading.clone();
        let sync_timeout = sync_timeout(args);
        let (sync_failed_tx, sync_failed_rx) = tokio::sync::oneshot::channel();
        let progress = leading.watches.progress().clone();
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
        sync_failed_rx
    }

    /// Leads until the lease is lost, a cache's first list stalls or the
    /// agent is stopped: what ends the agent, and how.
    async fn keep_leading(
        &self,
        elector: &Elector,
        leading: Leading,
        sync_failed: tokio::sync::oneshot::Receiver<Vec<&'static str>>,
        sync_timeout: Duration,
    ) -> color_eyre::Result<()> {
        tokio::select! {
            lost = elector.hold() => {
                self.gate.close();
                self.readiness.set(false);
                self.leading.set(false);
                self.metrics.leader.set(0);
                tracing::error!(reason = %lost, "leadership lost: writes stopped, exiting");
                Err(eyre!("leadership lost: {lost}"))
            }
            Ok(pending) = sync_failed => {
                self.gate.close();
                self.readiness.set(false);
                self.metrics.leader.set(0);
                elector.release().await;
                tracing::error!(?pending, timeout = ?sync_timeout, "caches received nothing while listing: exiting so that a restart starts the watches afresh");
                Err(eyre!("caches did not sync: nothing received for {sync_timeout:?} while listing {pending:?}"))
            }
            () = self.stopped() => {
                self.readiness.set(false);
                self.leading.set(false);
                tracing::info!("stopping the controller");
                // Renewals go on while the controller drains (the gate would
                // close by itself otherwise); bounded by the same 20 s.
                let _ = tokio::time::timeout(Duration::from_secs(20), async {
                    tokio::select! {
                        _ = leading.controller_task => {}
                        _ = elector.hold() => {}
                    }
                })
                .await;
                self.gate.close();
                elector.release().await;
                self.metrics.leader.set(0);
                Ok(())
            }
        }
    }
}

/// How long a cache's first list may receive nothing.
fn sync_timeout(args: &RunArgs) -> Duration {
    Duration::from_secs(args.cache_sync_timeout_seconds.max(1))
}

/// The RuntimeGrants' own cache, for the publisher: every change of a
/// grant wakes it (its own status writes too: the pass they wake computes
/// the same status and writes nothing). Without managedFields, like every
/// cache: nothing reads them, and the publisher's status writes make them
/// most of a grant's size.
fn watch_grants(
    client: &kube::Client,
    watches: &controller::cache::watches::Watches,
    wake: &crate::signals::publisher_triggers::Wake,
) -> kube::runtime::reflector::Store<RuntimeGrant> {
    use futures::StreamExt;
    use kube::runtime::WatchStreamExt;
    let (grant_store, grant_writer) = kube::runtime::reflector::store();
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
    grant_store
}

fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "agent".to_string());
    format!("{host}-{}", std::process::id())
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
