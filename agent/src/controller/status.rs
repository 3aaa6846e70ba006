//! Step 5 (status): the Runtime's status from the reconcile's snapshot —
//! computed by the pure per-condition functions of `berth_shared::status`
//! — and the one place the agent writes any status: through the status
//! subresource with server-side apply, only when it differs from what is
//! stored (conditions keep their lastTransitionTime while their status does
//! not change). The grants publisher writes RuntimeGrant status through
//! [`write`] too.

use std::fmt::Debug;

use berth_shared::api::condition::{self, merge_transition_times};
use berth_shared::api::{Runtime, RuntimeStatus};
use berth_shared::status::{self as pure, Applied, ApplyFailure, Hold, Observed};
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::apply::ApplyOutcome;
use super::context::{Context, FIELD_MANAGER};
use super::read::Snapshot;

/// The status to write for `runtime`, transition times merged with the
/// stored status.
pub fn compute(
    runtime: &Runtime,
    snapshot: &Snapshot,
    hold: &Hold,
    applied: Option<&ApplyOutcome>,
    render_error: Option<&str>,
) -> RuntimeStatus {
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
        render_error,
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
