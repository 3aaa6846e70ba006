//! Step 5 (status): the Runtime's status from the reconcile's snapshot —
//! computed by the pure per-condition functions of `berth_shared::status`
//! — and the one place the agent writes any status: through the status
//! subresource with server-side apply, only when it differs from what is
//! stored (conditions keep their lastTransitionTime while their status does
//! not change). The grants publisher writes RuntimeGrant status through
//! [`write`] too.
//!
//! [`publish`] decides when a changed Runtime status is written (progress
//! paced, anything else at once) and raises the Events of its transitions.

use std::fmt::Debug;
use std::time::{Duration, Instant};

use berth_shared::api::condition::{self, merge_transition_times};
use berth_shared::api::{Runtime, RuntimeStatus};
use berth_shared::render::RenderError;
use berth_shared::status::{self as pure, Applied, ApplyFailure, Hold, Observed};
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::apply::ApplyOutcome;
use super::context::{self, Context, FIELD_MANAGER};
use super::events;
use super::read::Snapshot;

/// The status to write for `runtime`, transition times merged with the
/// stored status.
pub fn compute(
    runtime: &Runtime,
    snapshot: &Snapshot,
    hold: &Hold,
    applied: Option<&ApplyOutcome>,
    render_error: Option<&RenderError>,
) -> RuntimeStatus {
    // The condition shows the error's message; the error stays typed up to here.
    let render_error = render_error.map(ToString::to_string);
    let errors: Vec<ApplyFailure> = applied
        .map(|a| {
            a.errors
                .iter()
                .map(|e| ApplyFailure {
                    reason: e.reason(),
                    message: e.to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    let replica_sets: Vec<_> = snapshot.replica_sets.iter().map(|r| &**r).collect();
    let mut status = pure::compute(&Observed {
        runtime,
        identity: snapshot.identity.as_ref().ok(),
        decision: &snapshot.decision,
        hold,
        applied: applied.map(|a| Applied {
            conflicts: &a.conflicts,
            dependencies: &a.dependencies,
            errors: &errors,
            jobs: &a.jobs,
        }),
        render_error: render_error.as_deref(),
        deployment: snapshot.deployment.as_deref(),
        replica_sets: &replica_sets,
        nodes: &snapshot.nodes,
    });
    let old = runtime
        .status
        .as_ref()
        .map_or(&[][..], |s| s.conditions.as_slice());
    merge_transition_times(&mut status.conditions, old, &condition::now());
    status
}

/// Writes the status of the object `name` through `api` (server-side
/// apply, the agent's field manager, forced) and counts the write.
pub async fn write<K, S>(ctx: &Context, api: &Api<K>, name: &str, status: &S) -> kube::Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    S: Serialize,
{
    let body = condition::status_patch::<K, _>(status);
    api.patch_status(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&body),
    )
    .await?;
    ctx.metrics.write(&K::kind(&()), "status");
    Ok(())
}

/// Writes the status if it changed. A change that only moves counts waits
/// out the pacing interval: the wait is returned, and the requeue then
/// writes it; anything else is written at once.
pub async fn publish(
    ctx: &Context,
    runtime: &Runtime,
    new_status: &RuntimeStatus,
) -> kube::Result<Option<Duration>> {
    if runtime.status.as_ref() == Some(new_status) {
        return Ok(None);
    }
    let key = format!(
        "{}/{}",
        runtime.namespace().unwrap_or_default(),
        runtime.name_any()
    );
    let now = Instant::now();
    let progress_wait = runtime
        .status
        .as_ref()
        .filter(|old| berth_shared::status::progress_only(old, new_status))
        .and_then(|_| ctx.status_pacer.wait(&key, now, progress_interval(ctx)));
    if progress_wait.is_none() {
        write_status(ctx, runtime, new_status).await?;
        ctx.status_pacer.wrote(&key, now);
    }
    Ok(progress_wait)
}

/// How often a Runtime's progress may be written now: less often while
/// other Runtimes wait for their first reconcile (see
/// [`context::FIRST_PASS_PROGRESS_INTERVAL`]). A scan of the Runtime cache,
/// made only for a progress-only change.
fn progress_interval(ctx: &Context) -> Duration {
    let waiting = ctx
        .stores
        .runtimes
        .state()
        .iter()
        .any(|r| berth_shared::status::awaiting_first_pass(r));
    if waiting {
        context::FIRST_PASS_PROGRESS_INTERVAL
    } else {
        context::PROGRESS_INTERVAL
    }
}

/// Writes a changed status and raises the Events its transitions call for.
async fn write_status(ctx: &Context, runtime: &Runtime, new: &RuntimeStatus) -> kube::Result<()> {
    let ns = runtime.namespace().unwrap_or_default();
    let old = runtime.status.as_ref();
    let changed: Vec<&str> = new
        .conditions
        .iter()
        .filter(|c| old.is_none_or(|o| !o.conditions.contains(c)))
        .map(|c| c.type_.as_str())
        .collect();
    tracing::info!(
        runtime = %runtime.name_any(),
        namespace = %ns,
        changed_conditions = ?changed,
        "writing status"
    );
    let api: Api<Runtime> = Api::namespaced(ctx.client.clone(), &ns);
    write(ctx, &api, &runtime.name_any(), new).await?;
    events::publish(ctx, runtime, old, new).await;
    Ok(())
}
