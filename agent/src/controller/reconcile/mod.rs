//! One reconcile of a Runtime (docs/architecture.md §5): the pipeline
//! read (caches only, one [`read::Snapshot`]) → decide and hold (pure,
//! `berth_shared`) → render (pure) → apply (the only step besides status
//! that writes; in protect mode while the Runtime is held) → exposure
//! (what reaches its pods from outside, from the caches) → status (pure
//! computation, one write when it changed).

pub mod apply;
pub mod apply_error;
pub mod cached_objects;
pub mod events;
pub mod exposure;
pub mod read;
pub mod status;

use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_shared::api::Runtime;
use berth_shared::decide::Identity;
use berth_shared::render;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use tracing::Instrument;

use super::context::Context;
use super::wake::triggers;

/// Reconcile errors (each retried with per-object exponential backoff).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Applying managed objects failed.
    #[error("applying managed objects: {0}")]
    Apply(#[source] apply_error::ApplyErrors),
    /// Writing status failed.
    #[error("writing status: {0}")]
    Status(#[source] kube::Error),
}

/// One reconcile: read → decide → render → apply → status, in a tracing
/// span naming the Runtime (namespace, name, generation) and, once done,
/// its outcome: every log line inside carries them, and with
/// `OTEL_EXPORTER_OTLP_ENDPOINT` set the span is exported (`crate::otel`).
pub async fn reconcile(runtime: Arc<Runtime>, ctx: Arc<Context>) -> Result<Action, Error> {
    let span = tracing::info_span!(
        "reconcile",
        namespace = %runtime.namespace().unwrap_or_default(),
        runtime = %runtime.name_any(),
        generation = runtime.meta().generation.unwrap_or_default(),
        outcome = tracing::field::Empty,
    );
    async move {
        ctx.view.synced.wait().await;
        let started = Instant::now();
        let in_flight = ctx.record.metrics.in_flight();
        let result = reconcile_inner(&runtime, &ctx).await;
        drop(in_flight);
        let label = match &result {
            Ok((_, true)) => "blocked",
            Ok((_, false)) => "ok",
            Err(_) => "error",
        };
        ctx.record
            .metrics
            .reconciled(label, started.elapsed().as_secs_f64());
        if let Err(e) = &result {
            ctx.record.metrics.reconcile_failed(match e {
                Error::Apply(_) => "apply",
                Error::Status(_) => "status",
            });
        }
        tracing::Span::current().record("outcome", label);
        tracing::debug!("reconciled");
        result.map(|(action, _)| action)
    }
    .instrument(span)
    .await
}

/// The pipeline; `Ok((action, blocked))`.
async fn reconcile_inner(runtime: &Runtime, ctx: &Context) -> Result<(Action, bool), Error> {
    // 1–2. read + decide (caches only)
    let snapshot = read::read(ctx, runtime);
    let hold = berth_shared::status::hold(
        runtime,
        snapshot.identity.as_ref(),
        &snapshot.decision,
        snapshot.identity_taken.as_deref(),
    );

    // 3–4. render + apply. A held Runtime is rendered and applied too, in
    // protect mode: Blocked stops the tenant's changes, not the protection
    // (see `apply::apply_all`).
    let mut applied = None;
    // Without the namespace labels the identity labels are empty.
    let identity = snapshot.identity.clone().unwrap_or_else(|_| Identity {
        project: String::new(),
        environment: String::new(),
        application: runtime.spec.application.clone(),
        service: runtime.spec.service.clone(),
    });
    let rendered = render::render(runtime, &identity, &snapshot.decision);
    if let Ok(rendered) = &rendered {
        // Being deleted is held too (issue 52): the protection runs
        // until the Runtime is gone, without recreating what the
        // garbage collector is removing.
        let protection = match berth_shared::status::deletion(runtime) {
            Some(d) if d.collecting => apply::Protection::CorrectOnly,
            _ if hold.is_blocked() => apply::Protection::Protect,
            _ => apply::Protection::Converge,
        };
        applied = Some(apply::apply_all(ctx, runtime, rendered, &snapshot.live, protection).await);
    }
    let render_error = rendered.as_ref().err();

    // An apiserver that could not be reached (or asked to be retried) says
    // nothing about this Runtime: retry with backoff, and leave its status
    // as it was rather than show `Degraded` and raise a Warning Event for
    // a restart or a cut connection. (Any failure that is the Runtime's
    // own shows on the retry, once the apiserver answers.)
    if let Some(a) = applied
        .as_mut()
        .filter(|a| a.errors.iter().any(apply_error::ApplyError::is_unavailable))
    {
        return Err(failed(ctx, runtime, std::mem::take(&mut a.errors)));
    }

    // What is not the Runtime's own and yet reaches or runs as its pods:
    // judged in every state, held and deleting included.
    let exposure = exposure::check(ctx, runtime, rendered.as_ref().ok(), &snapshot);

    // 5. status
    let stored = status::stored(ctx, runtime);
    let attested = ctx.view.attestations.snapshot();
    let new_status = status::compute(
        runtime,
        stored.as_deref(),
        &snapshot,
        &hold,
        applied.as_ref(),
        render_error,
        status::Beyond {
            exposure: &exposure,
            attestation: attested.for_decision(&snapshot.decision),
        },
    );
    let progress_wait = status::publish(ctx, runtime, stored.as_deref(), &new_status)
        .await
        .map_err(Error::Status)?;

    if let Some(a) = applied.as_ref().filter(|a| !a.planted.is_empty()) {
        events::planted_jobs(ctx, runtime, &a.planted).await;
    }
    let conflicts = applied.as_ref().is_some_and(|a| !a.conflicts.is_empty());
    if let Some(a) = applied.filter(|a| !a.errors.is_empty()) {
        return Err(failed(ctx, runtime, a.errors));
    }
    let action = if let Some(wait) = progress_wait {
        Action::requeue(wait)
    } else if conflicts {
        // An unowned object may go away; look again soon.
        Action::requeue(Duration::from_secs(30).min(ctx.config.settings.resync))
    } else {
        Action::requeue(triggers::resync_after(
            ctx.config.settings.resync,
            runtime.uid().as_deref().unwrap_or_default(),
        ))
    };
    Ok((action, hold.is_blocked()))
}

/// Logs and counts each apply failure; the reconcile's error.
fn failed(ctx: &Context, runtime: &Runtime, errors: Vec<apply_error::ApplyError>) -> Error {
    for e in &errors {
        tracing::warn!(
            runtime = %runtime.name_any(),
            error = %e,
            reason = e.reason(),
            unavailable = e.is_unavailable(),
            "apply failed"
        );
        ctx.record.metrics.apply_failed(e.kind(), e.reason());
    }
    Error::Apply(apply_error::ApplyErrors(errors))
}
