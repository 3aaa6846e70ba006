//! The leader's canary loop: read → verdicts → publish → start what is due.
//!
//! Every few seconds (and whenever a canary Job changes) it reads the
//! granted classes, the nodes and the canary Jobs of its namespace from
//! caches, computes every (class, node) verdict
//! (`berth_shared::attest::attest_class`), publishes them to the reconcile
//! and the grants publisher ([`Attestations`]), and creates the
//! canary Jobs that are due (`berth_shared::attest::due`: never run, what
//! they check changed, or an effective period since the last; one per
//! (class, node), within `--canary-max-active` and
//! `--canary-budget-per-hour`). Between periods it sends nothing: the
//! reads are caches, and a pass that decides nothing new writes nothing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_shared::api::AttestationState;
use berth_shared::attest::job::{job_name, render};
use berth_shared::attest::plan::BUDGET_WINDOW_SECONDS;
use berth_shared::attest::{
    CANARY_LABEL, Cadence, CanaryClass, CanaryJob, CanaryNode, CanaryRecord, Launch, Outcome,
    Started, attest_class, due,
};
use berth_shared::decide::ObservedClass;
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store};
use tokio::sync::Notify;

use super::Flags;
use crate::controller::context::Context;
use crate::metrics::HandlerNodeLabels;
use crate::signals::attestations::{Attestations, Published};
use crate::signals::publisher_triggers::Wake;

/// How often the loop looks, when no canary Job changed.
const TICK: Duration = Duration::from_secs(5);

/// How long a created Job counts as running before the cache shows it.
const LAUNCH_MEMORY: Duration = Duration::from_secs(120);

/// The granted classes that can be attested (they exist, name the
/// binding's handler, are supported and not being deleted), once each.
fn granted_classes(ctx: &Context) -> Vec<CanaryClass> {
    let mut out: BTreeMap<String, CanaryClass> = BTreeMap::new();
    for b in &ctx.config.grants.bindings {
        let Some(class) = ctx
            .view
            .stores
            .classes
            .get(&ObjectRef::new(&b.runtime_class))
        else {
            continue;
        };
        let observed = ObservedClass::from_runtime_class(&class);
        if observed.handler == b.handler
            && !observed.deleting
            && !observed.has_overhead
            && !observed.has_scheduling
        {
            out.entry(b.runtime_class.clone())
                .or_insert_with(|| CanaryClass::from_runtime_class(&class));
        }
    }
    out.into_values().collect()
}

/// The canary Jobs of the namespace, cached (label-selected: a few per
/// (class, node)), cut down to what a [`CanaryRecord`] reads.
fn watch_jobs(ctx: &Context, namespace: &str, notify: Arc<Notify>) -> Store<Job> {
    let (store, writer) = reflector::store();
    let api: Api<Job> = Api::namespaced(ctx.access.client.clone(), namespace);
    let watches = &ctx.config.settings.watches;
    let config = watches.config().labels(&format!("{CANARY_LABEL}=true"));
    let stream = watches
        .watch(api, config)
        // Only what a record reads is kept: every pair's last few Jobs stay
        // for three effective periods, thousands of them at S.
        .modify(berth_shared::attest::keep_what_the_record_reads)
        .reflect(writer)
        .inspect(move |_| notify.notify_one())
        .applied_objects();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while stream.next().await.is_some() {}
    });
    store
}

/// The per-class gauges: nodes verified, failing, unverified.
fn metrics(ctx: &Context, published: &Published) {
    let family = &ctx.record.metrics.handler_nodes;
    family.clear();
    for v in published.classes.values() {
        let (verified, failing, unverified) = v.counts();
        for (state, n) in [
            (AttestationState::Verified, verified),
            (AttestationState::Failing, failing),
            (AttestationState::Unverified, unverified),
        ] {
            family
                .get_or_create(&HandlerNodeLabels {
                    runtime_class: v.class.clone(),
                    handler: v.handler.clone(),
                    state: state.word().to_string(),
                })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }
    let on = published.policy.as_ref().is_some_and(|p| p.off.is_none());
    ctx.record.metrics.canaries_enabled.set(i64::from(on));
    let cadence = if on {
        published.cadence
    } else {
        Cadence::default()
    };
    ctx.record
        .metrics
        .canary_effective_period
        .set(cadence.effective_period_seconds);
    ctx.record
        .metrics
        .canary_pairs
        .set(i64::try_from(cadence.pairs).unwrap_or(i64::MAX));
}

/// Creates one canary Job, expiring `ttl_seconds` after it finishes;
/// returns its record as running.
async fn launch(
    ctx: &Context,
    flags: &Flags,
    l: &Launch,
    ttl_seconds: i64,
    now: Timestamp,
) -> Option<CanaryRecord> {
    let name = job_name(&l.class.name, l.node.name(), now.as_second());
    let image = flags.canary_image.as_deref().unwrap_or_default();
    let job = render(&CanaryJob {
        name: &name,
        namespace: &flags.canary_namespace,
        class: &l.class,
        node: &l.node,
        image,
        subject: &l.subject,
        ttl_seconds: i32::try_from(ttl_seconds).unwrap_or(i32::MAX),
        deadline_seconds: i64::try_from(flags.canary_deadline_seconds).unwrap_or(i64::MAX),
    });
    let api: Api<Job> = Api::namespaced(ctx.access.client.clone(), &flags.canary_namespace);
    match api.create(&PostParams::default(), &job).await {
        Ok(_) => {
            ctx.record.metrics.write("Job", "create");
            ctx.record.metrics.canaries_started.inc();
            tracing::info!(class = %l.class.name, node = %l.node.name(), job = %name, "canary started");
        }
        // Another leader's (or this one's, unseen yet): one per pair all the same.
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => {
            tracing::warn!(class = %l.class.name, node = %l.node.name(), error = %e, "starting a canary failed");
            return None;
        }
    }
    Some(CanaryRecord {
        job: name,
        class: l.class.name.clone(),
        node: l.node.name().to_string(),
        subject: l.subject.clone(),
        created: Some(now),
        outcome: Outcome::Running,
    })
}

/// Publishes a pass's verdicts: the metrics, the grants' status (when
/// anything changed) and a reconcile of every Runtime on a class whose
/// failing nodes changed (its HandlerReady reads them).
fn publish(ctx: &Context, attestations: &Attestations, publisher: &Wake, published: Published) {
    metrics(ctx, &published);
    let (changed, failing) = attestations.publish(published);
    if changed {
        publisher.wake();
    }
    if failing.is_empty() {
        return;
    }
    tracing::info!(classes = ?failing, "failing canaries changed: reconciling the Runtimes on those classes");
    for rt in ctx.view.stores.runtimes.state().iter() {
        let class = rt
            .status
            .as_ref()
            .and_then(|s| s.profile.as_ref())
            .and_then(|p| p.class.as_ref());
        if class.is_some_and(|c| failing.contains(c)) {
            attestations.wake(ObjectRef::from_obj(&**rt));
        }
    }
}

/// Runs until the process ends (the leader only).
pub async fn run(
    ctx: Arc<Context>,
    flags: Flags,
    attestations: Arc<Attestations>,
    publisher: Wake,
) {
    let policy = flags.policy();
    let notify = Arc::new(Notify::new());
    let jobs = policy
        .off
        .is_none()
        .then(|| watch_jobs(&ctx, &flags.canary_namespace, notify.clone()));
    // Verdicts from caches that have not listed would be "not run yet"
    // everywhere, and every canary would look due.
    ctx.view.synced.wait().await;
    if let Some(jobs) = &jobs
        && jobs.wait_until_ready().await.is_err()
    {
        return;
    }
    match &policy.off {
        Some(why) => tracing::info!(reason = %why, "canaries are off"),
        None => tracing::info!(
            namespace = %flags.canary_namespace,
            period = flags.canary_period_seconds,
            budget_per_hour = ?policy.budget_per_hour,
            "canaries on"
        ),
    }
    if flags.canary_attest_simulated_nodes_for_benchmark {
        tracing::warn!(
            "--canary-attest-simulated-nodes-for-benchmark: canaries run on simulated (kwok) nodes, whose verdicts prove nothing; for the benchmark only, never in production"
        );
    }
    let mut launched: Vec<(CanaryRecord, Instant)> = Vec::new();
    // This agent's launches of the budget's window, whether or not their
    // Jobs are still to be seen.
    let mut started: Vec<Started> = Vec::new();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = notify.notified() => {}
        }
        let classes = granted_classes(&ctx);
        let nodes: Vec<CanaryNode> = ctx
            .view
            .stores
            .nodes
            .state()
            .iter()
            .map(|n| {
                let mut node = CanaryNode::from_node(n);
                node.simulated &= !flags.canary_attest_simulated_nodes_for_benchmark;
                node
            })
            .collect();
        let mut records: Vec<CanaryRecord> = jobs
            .as_ref()
            .map(|s| {
                s.state()
                    .iter()
                    .filter_map(|j| CanaryRecord::from_job(j))
                    .collect()
            })
            .unwrap_or_default();
        // A Job created here counts as running until the cache shows it.
        launched.retain(|(r, at)| {
            at.elapsed() < LAUNCH_MEMORY && !records.iter().any(|x| x.job == r.job)
        });
        records.extend(launched.iter().map(|(r, _)| r.clone()));

        let cadence = policy.cadence(&classes, &nodes);
        let published = Published {
            policy: Some(policy.clone()),
            cadence,
            classes: classes
                .iter()
                .map(|c| (c.name.clone(), attest_class(c, &nodes, &records, &policy)))
                .collect(),
        };
        publish(&ctx, &attestations, &publisher, published);
        if policy.off.is_some() {
            continue;
        }
        let now = Timestamp::now();
        let since = now.as_second() - BUDGET_WINDOW_SECONDS;
        started.retain(|s| s.at.as_second() > since);
        let ttl = policy.ttl_seconds(&cadence);
        for l in due(&classes, &nodes, &records, &started, &policy, now) {
            if let Some(r) = launch(&ctx, &flags, &l, ttl, now).await {
                started.push(Started {
                    job: r.job.clone(),
                    at: now,
                });
                launched.push((r, Instant::now()));
            }
        }
    }
}
