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

use std::borrow::Cow;
use std::fmt::Debug;
use std::time::{Duration, Instant};

use berth_shared::api::condition::{self, merge_transition_times};
use berth_shared::api::{Runtime, RuntimeStatus};
use berth_shared::exposure::Exposure;
use berth_shared::render::RenderError;
use berth_shared::status::{self as pure, Applied, ApplyFailure, Hold, Observed};
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::apply::ApplyOutcome;
use super::events;
use super::read::Snapshot;
use crate::controller::context::{Context, FIELD_MANAGER};
use crate::controller::pacing::first_passes::FailedFirstPasses;
use crate::controller::pacing::{self, key};

/// The status the apiserver holds for `runtime` as far as the agent knows:
/// the one it last wrote while the cache does not show that write yet (see
/// [`crate::controller::pacing::last_status_writes`]), else the cached one.
/// Borrowed from the cache in the common case: this runs on every
/// reconcile.
pub fn stored<'a>(ctx: &Context, runtime: &'a Runtime) -> Option<Cow<'a, RuntimeStatus>> {
    match ctx.record.pacing.last_status_writes.stored(
        &key(runtime),
        runtime.resource_version().as_deref(),
        cached_last_applied(runtime),
    ) {
        Some(sent) => Some(Cow::Owned(sent)),
        None => runtime.status.as_ref().map(Cow::Borrowed),
    }
}

/// The `lastApplied` the cached `runtime` shows.
fn cached_last_applied(runtime: &Runtime) -> Option<&berth_shared::api::LastApplied> {
    runtime
        .status
        .as_ref()
        .and_then(|s| s.last_applied.as_ref())
}

/// What the status reads beyond the Runtime and its own objects: what
/// else reaches or runs as its pods, and what its class's canaries saw.
pub struct Beyond<'a> {
    pub exposure: &'a Exposure,
    pub attestation: Option<&'a berth_shared::attest::ClassVerdicts>,
}

/// The status to write for `runtime`, transition times merged with the
/// `stored` status ([`stored`]).
pub fn compute(
    runtime: &Runtime,
    stored: Option<&RuntimeStatus>,
    snapshot: &Snapshot,
    hold: &Hold,
    applied: Option<&ApplyOutcome>,
    render_error: Option<&RenderError>,
    beyond: Beyond<'_>,
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
    let whole: Vec<_> = snapshot.replica_sets.iter().map(|r| r.whole()).collect();
    let replica_sets: Vec<_> = whole.iter().collect();
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
            last_applied: a.last_applied.as_ref(),
        }),
        render_error: render_error.as_deref(),
        deployment: snapshot.deployment.as_deref(),
        replica_sets: &replica_sets,
        nodes: &snapshot.nodes,
        exposure: beyond.exposure,
        attestation: beyond.attestation,
    });
    let old = stored.map_or(&[][..], |s| s.conditions.as_slice());
    merge_transition_times(&mut status.conditions, old, &condition::now());
    status
}

/// Writes the status of the object `name` through `api` (server-side
/// apply, the agent's field manager, forced) and counts the write. Returns
/// the resourceVersion the write produced.
pub async fn write<K, S>(
    ctx: &Context,
    api: &Api<K>,
    name: &str,
    status: &S,
) -> kube::Result<Option<String>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    S: Serialize,
{
    let body = condition::status_patch::<K, _>(status);
    let written = api
        .patch_status(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await?;
    ctx.record.metrics.write(&K::kind(&()), "status");
    Ok(written.resource_version())
}

/// Writes the status if it differs from the `stored` one ([`stored`]). A
/// change that only moves counts waits out the pacing interval: the wait is
/// returned, and the requeue then writes it; anything else is written at
/// once.
pub async fn publish(
    ctx: &Context,
    runtime: &Runtime,
    stored: Option<&RuntimeStatus>,
    new_status: &RuntimeStatus,
) -> kube::Result<Option<Duration>> {
    if stored == Some(new_status) {
        return Ok(None);
    }
    let key = key(runtime);
    let now = Instant::now();
    let pacing = stored.map_or(Pacing::AtOnce, |old| {
        pacing(old, new_status, || first_pass_backlog(ctx))
    });
    let wait = pacing
        .interval(|| ctx.record.pacing.last_status_writes.progress_interval(now))
        .and_then(|interval| {
            ctx.record
                .pacing
                .last_status_writes
                .wait(&key, now, interval)
        });
    if wait.is_some() && pacing == Pacing::BehindBacklog {
        // Woken as soon as the backlog clears, not only at the interval's end.
        ctx.record
            .pacing
            .deferred_status
            .defer(ObjectRef::from_obj(runtime));
    }
    if wait.is_none() {
        let produced = write_status(ctx, runtime, stored, new_status)
            .await
            .inspect_err(|_| ctx.record.pacing.failed_first_passes.failed(runtime))?;
        let from = runtime.resource_version();
        ctx.record.pacing.last_status_writes.wrote(
            &key,
            now,
            from.as_deref(),
            produced.as_deref(),
            new_status,
            cached_last_applied(runtime),
        );
    }
    Ok(wait)
}

/// How a status change may be paced ([`pacing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pacing {
    /// Written at once.
    AtOnce,
    /// Progress: at most once per [`pacing::PROGRESS_INTERVAL`], longer
    /// while many Runtimes roll out at once
    /// ([`crate::controller::pacing::last_status_writes::LastStatusWrites::progress_interval`]).
    Progress,
    /// Progress or a rollout transition while other Runtimes wait for
    /// their first pass: at most once per
    /// [`pacing::FIRST_PASS_PROGRESS_INTERVAL`], and woken when the
    /// backlog clears ([`crate::controller::pacing::deferred_status`]).
    BehindBacklog,
}

impl Pacing {
    /// At most how often such a change is written (`None`: at once);
    /// `progress` gives the current progress interval.
    fn interval(self, progress: impl FnOnce() -> Duration) -> Option<Duration> {
        match self {
            Pacing::AtOnce => None,
            Pacing::Progress => Some(progress()),
            Pacing::BehindBacklog => Some(pacing::FIRST_PASS_PROGRESS_INTERVAL),
        }
    }
}

/// How a change from `old` to `new` is paced. Progress (counts, messages)
/// waits [`pacing::PROGRESS_INTERVAL`] after the previous write. While
/// other Runtimes wait for their first pass (`backlog`, asked only when it
/// matters: a scan of the Runtime cache), progress and the rollout's own
/// transitions wait [`pacing::FIRST_PASS_PROGRESS_INTERVAL`]: at S every
/// Runtime was written three times before the last was first seen, and
/// those writes share the apiserver with the first passes (issue 32). A new
/// generation, a grant decision, a handler, Degraded, Blocked, an upgrade
/// or a job is written at once.
fn pacing(old: &RuntimeStatus, new: &RuntimeStatus, backlog: impl FnOnce() -> bool) -> Pacing {
    if berth_shared::status::progress_only(old, new) {
        if backlog() {
            Pacing::BehindBacklog
        } else {
            Pacing::Progress
        }
    } else if berth_shared::status::rollout_only(old, new) && backlog() {
        Pacing::BehindBacklog
    } else {
        Pacing::AtOnce
    }
}

/// Whether any Runtime in the cache still waits for its first reconcile at
/// its generation.
fn first_pass_backlog(ctx: &Context) -> bool {
    any_awaiting_first_pass(
        &ctx.view.stores.runtimes,
        &ctx.record.pacing.failed_first_passes,
    )
}

/// Whether any Runtime in `runtimes` still waits for its first reconcile at
/// its generation (a scan of the cache); one whose status write failed
/// there does not ([`FailedFirstPasses`]).
pub fn any_awaiting_first_pass(
    runtimes: &kube::runtime::reflector::Store<Runtime>,
    failed: &FailedFirstPasses,
) -> bool {
    let state = runtimes.state();
    failed.any_awaiting(state.iter().map(AsRef::as_ref))
}

/// Writes a changed status and raises the Events its transitions (from
/// `old`, the stored status) call for. Returns the resourceVersion written.
async fn write_status(
    ctx: &Context,
    runtime: &Runtime,
    old: Option<&RuntimeStatus>,
    new: &RuntimeStatus,
) -> kube::Result<Option<String>> {
    let ns = runtime.namespace().unwrap_or_default();
    let changed: Vec<&str> = new
        .conditions
        .iter()
        .filter(|c| old.is_none_or(|o| !o.conditions.contains(c)))
        .map(|c| c.type_.as_str())
        .collect();
    // Why it is written now: what changed beyond progress ("first": no
    // status known; empty: progress whose wait is over).
    let why = old.map_or_else(
        || vec!["first".to_string()],
        |o| {
            berth_shared::status::changes(o, new)
                .iter()
                .map(ToString::to_string)
                .collect()
        },
    );
    tracing::info!(
        runtime = %runtime.name_any(),
        namespace = %ns,
        changed_conditions = ?changed,
        changes = ?why,
        "writing status"
    );
    let api: Api<Runtime> = Api::namespaced(ctx.access.client.clone(), &ns);
    let produced = write(ctx, &api, &runtime.name_any(), new).await?;
    events::publish(ctx, runtime, old, new).await;
    Ok(produced)
}

#[cfg(test)]
mod tests {
    use super::{Pacing, pacing};
    use berth_shared::api::RuntimeStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

    fn status(ready: &str, message: &str) -> RuntimeStatus {
        let cond = |type_: &str, status: &str| Condition {
            type_: type_.into(),
            status: status.into(),
            reason: format!("{type_}{status}"),
            message: message.into(),
            observed_generation: Some(1),
            last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
        };
        RuntimeStatus {
            observed_generation: Some(1),
            conditions: vec![cond("ProfileGranted", "True"), cond("Ready", ready)],
            ..Default::default()
        }
    }

    #[test]
    fn progress_waits_and_rollout_transitions_wait_only_behind_first_passes() {
        let (one, four) = (status("False", "1/10"), status("False", "4/10"));
        let ready = status("True", "10/10");
        assert_eq!(pacing(&one, &four, || false), Pacing::Progress);
        assert_eq!(pacing(&one, &four, || true), Pacing::BehindBacklog);
        assert_eq!(pacing(&one, &ready, || false), Pacing::AtOnce);
        assert_eq!(pacing(&one, &ready, || true), Pacing::BehindBacklog);
        let progress = || pacing::PROGRESS_INTERVAL * 3;
        assert_eq!(
            Pacing::Progress.interval(progress),
            Some(pacing::PROGRESS_INTERVAL * 3)
        );
        assert_eq!(
            Pacing::BehindBacklog.interval(|| panic!("not asked")),
            Some(pacing::FIRST_PASS_PROGRESS_INTERVAL)
        );
        assert_eq!(Pacing::AtOnce.interval(|| panic!("not asked")), None);
        let mut revoked = ready.clone();
        revoked.conditions[0].status = "False".into();
        revoked.conditions[0].reason = "NotGranted".into();
        assert_eq!(
            pacing(&ready, &revoked, || true),
            Pacing::AtOnce,
            "a grant decision is written at once, backlog or not"
        );
        let mut next = ready.clone();
        next.observed_generation = Some(2);
        assert_eq!(
            pacing(&ready, &next, || panic!("not asked")),
            Pacing::AtOnce
        );
    }
}
