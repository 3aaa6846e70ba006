//! The Runtime controller (docs/architecture.md §5): a kube-runtime
//! `Controller` for Runtime that owns every managed kind and watches
//! RuntimeClasses, Namespaces (metadata only) and Nodes (filtered to the
//! fields that matter). Each reconcile is the pipeline in [`reconcile`].
//!
//! Laid out by what each part does; this module only wires them:
//! - [`reconcile`]: the pipeline's steps — read (one snapshot from the
//!   caches), apply, exposure, status and its Events;
//! - [`cache`]: the watches and their stores — what each keeps of an
//!   object, the owner and taken-name indexes, the compact bodies, how the
//!   lists fill and how a failing watch retries;
//! - [`wake`]: what wakes a reconcile and how often;
//! - [`pacing`]: what the status step remembers to pace its writes;
//! - [`context`]: what every reconcile shares.

pub mod cache;
pub mod context;
pub mod pacing;
pub mod reconcile;
pub mod wake;

use std::sync::Arc;

use berth_shared::api::Runtime;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, PredicateConfig, WatchStreamExt};
use kube::{Client, ResourceExt};

use self::cache::Stores;
pub use self::cache::reduce::strip;
pub use self::cache::{unsynced, wait_synced};
use self::context::Context;
use self::reconcile::reconcile;
use self::wake::triggers::spec_fingerprint;

/// Everything started: the stores (for the grants publisher and health) and
/// the controller future.
pub struct Started {
    /// Caches.
    pub stores: Stores,
    /// The reconcile context.
    pub context: Arc<Context>,
    /// Runs the controller until `shutdown` resolves.
    pub run: futures::future::BoxFuture<'static, ()>,
}

/// What the controller shares with the rest of the agent.
pub struct Shared<'a> {
    /// Wakes the grants publisher (the caches feed it).
    pub wake: &'a crate::signals::publisher_triggers::Wake,
    /// What the canaries saw (`crate::canary`): `HandlerReady` reads it,
    /// and its changes wake the Runtimes of the classes concerned.
    pub attestations: Arc<crate::signals::attestations::Attestations>,
}

/// Builds caches and the controller: the caches, the context every
/// reconcile shares, the context's upkeep tasks, then the controller.
pub fn start(
    client: Client,
    grants: Arc<context::Grants>,
    metrics: Arc<crate::metrics::Metrics>,
    settings: context::Settings,
    recorder: kube::runtime::events::Recorder,
    shared: Shared<'_>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) -> Started {
    let Shared { wake, attestations } = shared;
    let attestation_changed = attestations
        .woken()
        .unwrap_or_else(|| futures::channel::mpsc::unbounded().1);
    let caches = cache::build(
        &client,
        &settings.watches,
        &settings.namespace,
        settings.watch_bare_pods,
        wake,
    );
    let stores = caches.stores.clone();
    let context = Arc::new(Context {
        access: context::Access {
            client: client.clone(),
            recorder,
        },
        view: context::View {
            stores: stores.clone(),
            synced: context::Synced::default(),
            attestations,
        },
        config: context::Config { grants, settings },
        record: context::Record {
            metrics,
            pacing: Arc::default(),
        },
    });
    let deferred_woken = spawn_upkeep(&context, &caches.runtimes);
    let run = run_controller(
        caches,
        context.clone(),
        Wakes {
            deferred_woken,
            attestation_changed,
        },
        shutdown,
    );
    Started {
        stores,
        context,
        run,
    }
}

/// What wakes a Runtime besides its own objects' changes.
struct Wakes {
    /// Status writes deferred behind the first-pass backlog, once it clears.
    deferred_woken: futures::channel::mpsc::UnboundedReceiver<ObjectRef<Runtime>>,
    /// A class's canary starting or stopping to fail on some node: its
    /// Runtimes' HandlerReady (see `crate::canary`).
    attestation_changed: futures::channel::mpsc::UnboundedReceiver<ObjectRef<Runtime>>,
}

/// The context's tasks beside the reconciles: releasing deferred status
/// writes, forgetting old writes, and marking the caches synced. Returns
/// what the released writes wake.
fn spawn_upkeep(
    context: &Arc<Context>,
    runtimes: &Store<Runtime>,
) -> futures::channel::mpsc::UnboundedReceiver<ObjectRef<Runtime>> {
    // Status writes deferred behind the first-pass backlog are woken when it
    // clears (see `pacing::deferred_status`).
    let (wake_deferred, deferred_woken) = futures::channel::mpsc::unbounded();
    {
        let context = context.clone();
        let runtimes = runtimes.clone();
        tokio::spawn(async move {
            let backlog = {
                let context = context.clone();
                move || {
                    reconcile::status::any_awaiting_first_pass(
                        &runtimes,
                        &context.record.pacing.failed_first_passes,
                    )
                }
            };
            context
                .record
                .pacing
                .deferred_status
                .release(
                    backlog,
                    pacing::deferred_status::BACKLOG_POLL,
                    wake_deferred,
                )
                .await;
        });
    }
    // What was written is remembered while the caches may lag behind it,
    // then forgotten (see `pacing::write_memory`).
    tokio::spawn(context.record.pacing.clone().forget_old_writes());
    // Reconciles (and the grants publisher) wait for this: a cache that
    // has not listed yet reads as "absent" (no namespace labels, no class,
    // no node), which would block or revoke a granted Runtime for nothing.
    let stores = context.view.stores.clone();
    let synced = context.view.synced.clone();
    tokio::spawn(async move {
        wait_synced(&stores).await;
        synced.set();
    });
    deferred_woken
}

/// Every Runtime in the store, to wake them all (a class or node change).
fn all_runtimes(runtimes: Store<Runtime>) -> impl Fn() -> Vec<ObjectRef<Runtime>> + Clone {
    move || {
        runtimes
            .state()
            .iter()
            .map(|r| ObjectRef::from_obj(&**r))
            .collect::<Vec<_>>()
    }
}

/// The controller over the caches' streams: what wakes a Runtime, and
/// the reconcile with its per-Runtime failure backoff.
fn run_controller(
    caches: cache::Caches,
    context: Arc<Context>,
    wakes: Wakes,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) -> futures::future::BoxFuture<'static, ()> {
    let cache::Caches {
        runtimes,
        runtime_events,
        owned,
        classes: class_s,
        nodes: node_s,
        namespaces: ns_s,
        exposure_wakes,
        ..
    } = caches;
    let cache::Owned {
        config_maps: cm_s,
        service_accounts: sa_s,
        services: svc_s,
        deployments: dep_s,
        pdbs: pdb_s,
        network_policies: np_s,
        hpas: hpa_s,
        jobs: job_s,
        cron_jobs: cron_s,
    } = owned;
    let controller = Controller::for_stream(
        wake::rivals::with_rivals(runtime_events, runtimes.clone()),
        runtimes.clone(),
    )
    .with_config(
        kube::runtime::controller::Config::default()
            .concurrency(u16::try_from(context.config.settings.concurrency).unwrap_or(u16::MAX)),
    )
    // Each watch backs off alone (see `wake::triggers::NoSharedBackoff`).
    .trigger_backoff(wake::triggers::NoSharedBackoff);
    let on_class = all_runtimes(runtimes.clone());
    let on_node = all_runtimes(runtimes.clone());
    let in_namespace = {
        let runtimes = runtimes.clone();
        move |ns: PartialObjectMeta<Namespace>| wake::rivals::on_namespace(&runtimes, &ns)
    };
    // A change around the pods (see `reconcile::exposure`) wakes its namespace's
    // Runtimes.
    let exposed = exposure_wakes.flat_map(move |ns| {
        futures::stream::iter(reconcile::exposure::runtimes_in(&runtimes, &ns))
    });
    let backoff = Arc::new(wake::retry::Backoff::default());
    let backoff_err = backoff.clone();
    controller
        .reconcile_on(wakes.deferred_woken)
        .reconcile_on(exposed)
        // A class's canary starting or stopping to fail on some node:
        // its Runtimes' HandlerReady (see `crate::canary`).
        .reconcile_on(wakes.attestation_changed)
        .owns_stream(cm_s)
        .owns_stream(sa_s)
        .owns_stream(svc_s)
        // Status-only updates paced per Deployment (see `wake::deployment_status`).
        .owns_stream(wake::deployment_status::throttled(dep_s, pacing::PROGRESS_INTERVAL))
        // Their status is not read: a status-only update wakes nothing.
        .owns_stream(pdb_s.predicate_filter(spec_fingerprint, PredicateConfig::default()))
        .owns_stream(np_s.predicate_filter(spec_fingerprint, PredicateConfig::default()))
        .owns_stream(hpa_s.predicate_filter(spec_fingerprint, PredicateConfig::default()))
        .owns_stream(job_s.predicate_filter(spec_fingerprint, PredicateConfig::default()))
        .owns_stream(cron_s.predicate_filter(spec_fingerprint, PredicateConfig::default()))
        .watches_stream(class_s, move |_| on_class())
        .watches_stream(node_s, move |_| on_node())
        .watches_stream(ns_s, in_namespace)
        .graceful_shutdown_on(shutdown)
        .run(
            move |rt, ctx| {
                let backoff = backoff.clone();
                async move {
                    let key = ObjectRef::from_obj(&*rt);
                    let result = reconcile(rt, ctx).await;
                    if result.is_ok() {
                        backoff.reset(&key);
                    }
                    result
                }
            },
            move |rt, err, _ctx| {
                let delay = backoff_err.fail(ObjectRef::from_obj(&*rt));
                tracing::warn!(runtime = %rt.name_any(), namespace = ?rt.namespace(), error = %err, retry_in = ?delay, "reconcile failed");
                Action::requeue(delay)
            },
            context,
        )
        .for_each(|res| async move {
            if let Err(e) = res {
                tracing::warn!(error = %e, "controller stream error");
            }
        })
        .boxed()
}
