//! Publishes the pending grants file (issue 18): when the file on disk
//! differs from the loaded one, the agent validates it with the same
//! strict loader, never applies it, and publishes the verdict and bindings
//! as its `PendingGrantsFile` (named after its Lease), so that a grants
//! change can be planned in the cluster without access to the file. When
//! the file matches again (after the restart that applies it, or a revert)
//! the object is deleted.
//!
//! Zero writes at rest: the last published content is remembered, and a
//! write happens only when the pending content (or verdict) changes.

use std::time::SystemTime;

use berth_shared::api::{API_VERSION, PendingGrantsFile, PendingGrantsFileSpec};
use berth_shared::grants;
use berth_shared::plan::pending_spec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};

use crate::controller::context::{Context, FIELD_MANAGER};
use berth_shared::api::meta::{MANAGED_BY_LABEL, PUBLISHED_BY_LABEL};

/// What this agent last made true in the cluster.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Published {
    /// Not known yet (just started): look once.
    #[default]
    Unknown,
    /// No object.
    Absent,
    /// The object, with this spec (without `observedAt`).
    Present(PendingGrantsFileSpec),
}

/// The pending file's spec, or `None` when the file on disk is the one
/// loaded (or no file is configured).
fn observe(ctx: &Context) -> Option<PendingGrantsFileSpec> {
    let loaded = ctx.config.grants.loaded.as_ref()?;
    if matches!(loaded.changed_on_disk(), Ok(false)) {
        return None;
    }
    let result = grants::load(&loaded.path);
    let sha = grants::current_sha256(&loaded.path).ok();
    if let Ok(l) = &result
        && l.sha256 == loaded.sha256
    {
        return None;
    }
    Some(pending_spec(Some(&loaded.sha256), &result, sha))
}

fn now() -> Time {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(0))
        .unwrap_or(0);
    Time(Timestamp::from_second(secs).unwrap_or(Timestamp::UNIX_EPOCH))
}

/// The verdict as the metric labels it (the CRD's word).
fn pending_verdict(v: berth_shared::api::PendingVerdict) -> &'static str {
    use berth_shared::api::PendingVerdict;
    match v {
        PendingVerdict::Valid => "Valid",
        PendingVerdict::Invalid => "Invalid",
        PendingVerdict::Unreadable => "Unreadable",
    }
}

/// One pass: publish, update or delete the PendingGrantsFile. Returns the
/// writes sent.
pub async fn sync_once(ctx: &Context, published: &mut Published) -> usize {
    let api: Api<PendingGrantsFile> = Api::all(ctx.access.client.clone());
    let name = ctx.config.settings.publisher.as_str();
    let want = observe(ctx);
    ctx.record.metrics.pending_grants(want.as_ref().map(|s| {
        (
            pending_verdict(s.verdict),
            s.sha256.as_deref().unwrap_or_default(),
        )
    }));
    if *published == Published::Unknown {
        *published = match api.get_opt(name).await {
            Ok(Some(o)) => {
                let mut spec = o.spec;
                spec.observed_at = None;
                Published::Present(spec)
            }
            Ok(None) => Published::Absent,
            Err(e) => {
                tracing::warn!(error = %e, "reading PendingGrantsFile failed");
                return 0;
            }
        };
    }
    match (want, &*published) {
        (None, Published::Absent) => 0,
        (None, _) => match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                ctx.record.metrics.write("PendingGrantsFile", "delete");
                tracing::info!(
                    "the grants file on disk is the one loaded: PendingGrantsFile deleted"
                );
                *published = Published::Absent;
                1
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {
                *published = Published::Absent;
                0
            }
            Err(e) => {
                tracing::warn!(error = %e, "deleting PendingGrantsFile failed");
                0
            }
        },
        (Some(spec), Published::Present(old)) if *old == spec => 0,
        (Some(spec), _) => {
            let mut body_spec = spec.clone();
            body_spec.observed_at = Some(now());
            let body = serde_json::json!({
                "apiVersion": API_VERSION,
                "kind": "PendingGrantsFile",
                "metadata": {"name": name, "labels": {
                    MANAGED_BY_LABEL: "berth-agent",
                    PUBLISHED_BY_LABEL: name,
                }},
                "spec": body_spec,
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
                    ctx.record.metrics.write("PendingGrantsFile", "apply");
                    tracing::info!(verdict = ?spec.verdict, bindings = spec.bindings.len(), "published the pending grants file (not applied: restart the agent to apply it)");
                    *published = Published::Present(spec);
                    1
                }
                Err(e) => {
                    tracing::warn!(error = %e, "publishing PendingGrantsFile failed");
                    0
                }
            }
        }
    }
}
