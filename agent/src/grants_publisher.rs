//! Publishes one `RuntimeGrant` per loaded binding (docs/architecture.md
//! §4) as a pipeline, like a Runtime's reconcile:
//!
//! read (one [`Snapshot`] of the caches) → compute (pure: the desired
//! grants, each status from `berth_shared::status::grant`, the retired
//! and the pruned) → apply (the published set: each desired grant applied
//! where its spec or labels differ, the rest retired or pruned) → status
//! (written only where it differs).
//!
//! A pass runs when something it reads changed ([`crate::signals::publisher_triggers`]: grants,
//! RuntimeClasses, Nodes, Namespaces' identity labels, Runtimes' profiles
//! and states, workloads' RuntimeClasses), when the grants file on disk
//! changed (checked every `--grants-interval-seconds`: the file has no
//! watch), and otherwise only on a slow backstop timer. At rest it writes
//! nothing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_shared::api::condition;
use berth_shared::api::meta::{MANAGED_BY_AGENT, MANAGED_BY_LABEL};
use berth_shared::api::{API_VERSION, RuntimeGrant, RuntimeGrantSpec, RuntimeGrantStatus};
use berth_shared::decide::GrantBinding;
use berth_shared::status::{self as pure, FileState, GrantSnapshot};
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::reflector::Store;
use kube::{Api, ResourceExt};

use crate::controller::context::{Context, FIELD_MANAGER};
use crate::controller::reconcile::status;

use self::read::{Snapshot, file_state, read};

mod read;

pub use berth_shared::api::meta::PUBLISHED_BY_LABEL;

/// The backstop: a pass at least this many `--grants-interval-seconds`
/// apart even when nothing woke the publisher (a missed event, a
/// rollback revision whose Deployment's revision moved).
const BACKSTOP_INTERVALS: u32 = 6;

/// A burst of changes (a rollout, a relist) is one pass: the publisher
/// waits this long after being woken.
const SETTLE: Duration = Duration::from_millis(500);

/// One grant of the published set, as the pass wants it.
struct Desired<'a> {
    binding: &'a GrantBinding,
    spec: RuntimeGrantSpec,
    /// The stored grant, if any.
    existing: Option<Arc<RuntimeGrant>>,
    /// Its spec or labels differ: apply.
    apply: bool,
    /// The status to hold (for a stored grant; a new one gets its status
    /// in the pass its creation wakes).
    status: Option<RuntimeGrantStatus>,
}

/// A grant whose binding left the file.
enum Leaving {
    /// Kept while workloads still need its class: this status.
    Retired(Arc<RuntimeGrant>, Box<RuntimeGrantStatus>),
    /// Nothing needs it: deleted.
    Pruned(Arc<RuntimeGrant>),
}

/// Step 2, compute (pure): the published set and every status.
fn compute<'a>(ctx: &'a Context, snap: &Snapshot) -> (Vec<Desired<'a>>, Vec<Leaving>) {
    let publisher = ctx.config.settings.publisher.as_str();
    let pods_watched = ctx.config.settings.watch_bare_pods;
    let bindings = &ctx.config.grants.bindings;
    // What the canaries saw (`crate::canary`), as last published.
    let attested = ctx.view.attestations.snapshot();
    let ours = |g: &RuntimeGrant| {
        g.labels().get(PUBLISHED_BY_LABEL).map(String::as_str) == Some(publisher)
    };
    let desired = bindings
        .iter()
        .map(|binding| {
            let existing = snap
                .grants
                .iter()
                .find(|g| g.name_any() == binding.name)
                .cloned();
            let spec = RuntimeGrantSpec::of(binding);
            let labelled = existing.as_ref().is_some_and(|g| {
                ours(g)
                    && g.labels().get(MANAGED_BY_LABEL).map(String::as_str)
                        == Some(MANAGED_BY_AGENT)
            });
            let apply = existing
                .as_ref()
                .is_none_or(|g| g.spec != spec || !labelled);
            let status = existing.as_ref().map(|g| {
                let attestation = attested.status_of(&binding.runtime_class);
                let mut status = pure::grant(&GrantSnapshot {
                    binding,
                    generation: g.metadata.generation,
                    class: snap.classes.get(&binding.runtime_class),
                    nodes: &snap.nodes,
                    users: &snap.users,
                    retained: snap
                        .retained
                        .get(&binding.runtime_class)
                        .map_or(&[][..], Vec::as_slice),
                    source: snap.source.as_ref(),
                    file: &snap.file,
                    pods_watched,
                    attestation: attestation.as_ref(),
                });
                merge_times(&mut status, g.status.as_ref());
                status
            });
            Desired {
                binding,
                spec,
                existing,
                apply,
                status,
            }
        })
        .collect();

    // Grants whose binding left the file: kept, marked Retired, while
    // workloads still need their class's handler ("keep a handler
    // installed while any retained workload or rollback revision needs
    // it"); pruned once none does.
    let leaving = snap
        .grants
        .iter()
        .filter(|g| {
            ours(g)
                && !bindings.iter().any(|b| b.name == g.name_any())
                && g.metadata.deletion_timestamp.is_none()
        })
        .map(|g| {
            // A class another current binding grants is published there.
            let class_granted = bindings
                .iter()
                .any(|b| b.runtime_class == g.spec.runtime_class);
            let still = snap
                .retained
                .get(&g.spec.runtime_class)
                .filter(|r| !r.is_empty() && !class_granted);
            // Pruning says "nothing needs this handler any more". Without
            // Pod access a bare pod may still use the class: the grant
            // stays Retired, saying what was not checked, until the
            // operator (who can see pods) deletes it.
            let retained = match still {
                Some(still) => still.as_slice(),
                None if !class_granted && !pods_watched => &[],
                None => return Leaving::Pruned(g.clone()),
            };
            let mut status = pure::retired(
                g.status.as_ref(),
                g.metadata.generation,
                &g.spec.handler,
                &g.spec.runtime_class,
                retained,
                pods_watched,
            );
            merge_times(&mut status, g.status.as_ref());
            Leaving::Retired(g.clone(), Box::new(status))
        })
        .collect();
    (desired, leaving)
}

fn merge_times(new: &mut RuntimeGrantStatus, old: Option<&RuntimeGrantStatus>) {
    let old = old.map_or(&[][..], |o| o.conditions.as_slice());
    condition::merge_transition_times(&mut new.conditions, old, &condition::now());
}

/// Step 3, apply: each desired grant whose spec or labels differ
/// (server-side apply), and the pruned deleted (uid-preconditioned).
/// Returns writes sent, and the grants whose apply failed (their status
/// waits).
async fn apply(
    ctx: &Context,
    api: &Api<RuntimeGrant>,
    desired: &[Desired<'_>],
    leaving: &[Leaving],
) -> (usize, Vec<String>) {
    let publisher = ctx.config.settings.publisher.as_str();
    let mut writes = 0;
    let mut failed = Vec::new();
    for d in desired.iter().filter(|d| d.apply) {
        let name = &d.binding.name;
        let body = serde_json::json!({
            "apiVersion": API_VERSION,
            "kind": "RuntimeGrant",
            "metadata": {"name": name, "labels": {
                MANAGED_BY_LABEL: MANAGED_BY_AGENT,
                PUBLISHED_BY_LABEL: publisher,
            }},
            "spec": d.spec,
        });
        match api
            .patch(
                name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&body),
            )
            .await
        {
            Ok(_) => {
                writes += 1;
                ctx.record.metrics.write("RuntimeGrant", "apply");
            }
            Err(e) => {
                tracing::warn!(grant = %name, error = %e, "publishing RuntimeGrant failed");
                failed.push(name.clone());
            }
        }
    }
    for l in leaving {
        let Leaving::Pruned(g) = l else { continue };
        let name = g.name_any();
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: g.metadata.uid.clone(),
                resource_version: None,
            }),
            ..Default::default()
        };
        match api.delete(&name, &params).await {
            Ok(_) => {
                writes += 1;
                ctx.record.metrics.write("RuntimeGrant", "delete");
                tracing::info!(grant = %name, "pruned RuntimeGrant whose binding left the grants file");
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => tracing::warn!(grant = %name, error = %e, "pruning RuntimeGrant failed"),
        }
    }
    (writes, failed)
}

/// Step 4, status: written where it differs from the stored one.
async fn publish_status(
    ctx: &Context,
    api: &Api<RuntimeGrant>,
    desired: &[Desired<'_>],
    leaving: &[Leaving],
    failed: &[String],
) -> usize {
    let current = desired.iter().filter_map(|d| {
        let g = d.existing.as_ref()?;
        let status = d.status.as_ref()?;
        (!failed.contains(&d.binding.name)).then_some((g, status, "writing RuntimeGrant status"))
    });
    let retired = leaving.iter().filter_map(|l| match l {
        Leaving::Retired(g, status) => Some((
            g,
            &**status,
            "RuntimeGrant retired: its class is still needed",
        )),
        Leaving::Pruned(_) => None,
    });
    let mut writes = 0;
    for (g, status, why) in current.chain(retired) {
        if g.status.as_ref() == Some(status) {
            continue;
        }
        let name = g.name_any();
        tracing::info!(grant = %name, retained = status.retained.len(), "{why}");
        match status::write(ctx, api, &name, status).await {
            Ok(_) => writes += 1,
            Err(e) => tracing::warn!(grant = %name, error = %e, "RuntimeGrant status failed"),
        }
    }
    writes
}

/// The publisher's gauges: the file, Runtimes and grants by state,
/// retained workloads by class.
fn metrics(ctx: &Context, snap: &Snapshot, grants: &Store<RuntimeGrant>) {
    ctx.record
        .metrics
        .grants_file_stale
        .set(i64::from(matches!(snap.file, FileState::Stale(_))));
    crate::metrics::state::runtimes(&ctx.record.metrics, &ctx.view.stores.runtimes.state());
    crate::metrics::state::grants(
        &ctx.record.metrics,
        &grants.state(),
        &ctx.config.settings.publisher,
    );
    ctx.record.metrics.retained_workloads.clear();
    for (class, refs) in &snap.retained {
        ctx.record
            .metrics
            .retained_workloads
            .get_or_create(&crate::metrics::ClassLabels {
                runtime_class: class.clone(),
            })
            .set(i64::try_from(refs.len()).unwrap_or(i64::MAX));
    }
}

/// One pass: read → compute → apply → status. Returns writes sent.
pub async fn sync_once(ctx: &Context, grants: &Store<RuntimeGrant>) -> usize {
    let snap = read(ctx, grants, file_state(ctx));
    metrics(ctx, &snap, grants);
    let (desired, leaving) = compute(ctx, &snap);
    drop(snap);
    let api: Api<RuntimeGrant> = Api::all(ctx.access.client.clone());
    let (applied, failed) = apply(ctx, &api, &desired, &leaving).await;
    applied + publish_status(ctx, &api, &desired, &leaving, &failed).await
}

/// Runs the publisher until the process ends: a pass when `wake` says
/// something it reads changed, when the grants file on disk changed
/// (looked at every `interval`), and every [`BACKSTOP_INTERVALS`]
/// intervals regardless. The pending grants file is looked at every
/// `interval` (it writes only when it changes).
pub async fn run(
    ctx: Arc<Context>,
    grants: Store<RuntimeGrant>,
    interval: Duration,
    wake: crate::signals::publisher_triggers::Wake,
) {
    if grants.wait_until_ready().await.is_err() {
        return;
    }
    // A status computed from a cache that has not listed yet would say
    // "class missing" or "no node reports the handler" for nothing.
    ctx.view.synced.wait().await;
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let backstop = interval * BACKSTOP_INTERVALS;
    let mut pending = crate::pending_grants::Published::default();
    let mut last: Option<(Instant, FileState)> = None;
    loop {
        let woken = tokio::select! {
            () = wake.changed() => true,
            _ = tick.tick() => false,
        };
        if woken {
            tokio::time::sleep(SETTLE).await;
        }
        let file = file_state(&ctx);
        let due = woken
            || last
                .as_ref()
                .is_none_or(|(at, seen)| *seen != file || at.elapsed() >= backstop);
        if due {
            let writes = sync_once(&ctx, &grants).await;
            tracing::debug!(writes, woken, "grants publishing pass");
            last = Some((Instant::now(), file));
        }
        if !woken {
            crate::pending_grants::sync_once(&ctx, &mut pending).await;
        }
    }
}
