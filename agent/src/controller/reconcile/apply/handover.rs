//! Autoscaling turned on: the replica count passes from the agent to the
//! HorizontalPodAutoscaler without the Deployment falling to one replica;
//! and while autoscaling is on, a Deployment someone scaled to 0 (where the
//! autoscaler does nothing) is raised back to minReplicas.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::Value;

use super::ApplyOutcome;
use super::diff::{contains, with_hash};
use crate::controller::context::{Context, FIELD_MANAGER};
use crate::controller::reconcile::apply_error::{ApplyError, Step};
use crate::controller::reconcile::cached_objects::Cached;
use berth_shared::api::meta::controlled_by_uid as owned_by;

/// Field manager that holds a Deployment's replica count while it passes
/// from the agent to the HorizontalPodAutoscaler.
pub const HANDOVER_MANAGER: &str = "berth-agent-hpa-handover";

/// Whether the `Apply` entry of the agent in `managed` owns spec.replicas.
fn agent_owns_replicas(managed: &[ManagedFieldsEntry]) -> bool {
    managed.iter().any(|m| {
        m.manager.as_deref() == Some(FIELD_MANAGER)
            && m.operation.as_deref() == Some("Apply")
            && m.fields_v1.as_ref().is_some_and(|f| {
                f.0.get("f:spec")
                    .and_then(|s| s.get("f:replicas"))
                    .is_some()
            })
    })
}

/// The Runtime's Deployment whose replica count the HorizontalPodAutoscaler
/// holds: what both steps below take.
#[derive(Clone, Copy)]
pub(super) struct Scaled<'a> {
    pub ctx: &'a Context,
    pub cached: &'a Cached<Deployment>,
    /// The rendered Deployment.
    pub desired: &'a Deployment,
    /// The Runtime's uid.
    pub uid: &'a str,
    /// Never fewer replicas than this (the HPA's minReplicas).
    pub min_replicas: i32,
}

/// The cached Deployment of a [`Scaled`], owned by the Runtime.
struct Target<'a> {
    name: String,
    ns: String,
    /// `Deployment/name`.
    label: String,
    live: &'a Deployment,
}

impl<'a> Scaled<'a> {
    /// The cached Deployment named like the rendered one, when this
    /// Runtime owns it (nothing else is ever changed).
    fn owned(&self) -> Option<Target<'a>> {
        let name = self.desired.name_any();
        // Whole or reduced: what is read here (owners, replicas) both have;
        // the whole one (when kept) also spares the GET below.
        let live = self.cached.any(&name)?;
        owned_by(live.meta(), self.uid).then(|| Target {
            ns: self.desired.namespace().unwrap_or_default(),
            label: format!("Deployment/{name}"),
            name,
            live,
        })
    }
}

/// Autoscaling turned on: the rendered Deployment no longer sets replicas.
/// Server-side apply would *remove* a field its only owner stops applying
/// (the Deployment would fall to the default of 1 replica until the HPA
/// acts). So before that apply, a second field manager applies the current
/// count, becoming co-owner; the agent's apply then only gives its share
/// up, and the HPA takes the count over from there (Kubernetes' documented
/// ownership transfer). Only when the agent still owns the field, i.e. once
/// per transition; the write is conditional on the resourceVersion read.
pub(super) async fn hand_over_replicas(scaled: &Scaled<'_>, out: &mut ApplyOutcome) {
    let Some(Target {
        name,
        ns,
        label,
        live: cached,
    }) = scaled.owned()
    else {
        return;
    };
    let Scaled {
        ctx,
        desired,
        uid,
        min_replicas,
        ..
    } = *scaled;
    if cached.spec.as_ref().and_then(|s| s.replicas).is_none() {
        return;
    }
    let Ok(desired_value) = with_hash(desired) else {
        return;
    };
    let cached_value = serde_json::to_value(cached).unwrap_or(Value::Null);
    if contains(Some(&cached_value), &desired_value) {
        // Nothing to apply, so nothing to hand over.
        return;
    }
    let api: Api<Deployment> = Api::namespaced(ctx.access.client.clone(), &ns);
    let live = match api.get(&name).await {
        Ok(d) => d,
        Err(source) => {
            out.errors.push(ApplyError::new(label, Step::Read, source));
            return;
        }
    };
    let live_replicas = live.spec.as_ref().and_then(|s| s.replicas);
    if !owned_by(live.meta(), uid)
        || live_replicas.is_none()
        || !agent_owns_replicas(live.metadata.managed_fields.as_deref().unwrap_or_default())
    {
        return;
    }
    // Never hand over fewer than minReplicas: coming back from suspend (or
    // turning autoscaling on at 0) the live count is 0, and the HPA does
    // nothing for a target at 0 replicas.
    let replicas = live_replicas.map(|r| r.max(min_replicas));
    tracing::info!(object = %label, namespace = %ns, ?replicas, "handing the replica count over to the HorizontalPodAutoscaler");
    let body = serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "resourceVersion": live.metadata.resource_version},
        "spec": {"replicas": replicas},
    });
    match api
        .patch(
            &name,
            // Forced: raising the count to minReplicas changes a value the
            // agent's own apply still owns (that would be a conflict).
            &PatchParams::apply(HANDOVER_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await
    {
        Ok(_) => {
            out.writes += 1;
            ctx.record.metrics.write("Deployment", "apply");
        }
        Err(source) => out
            .errors
            .push(ApplyError::new(label, Step::Handover, source)),
    }
}

/// Whether the agent raises a Deployment whose live count is `live` while
/// autoscaling is on: only from 0 (the autoscaler does nothing for a
/// target at 0 replicas, so nobody else would). Any other count is the
/// autoscaler's (or its bounds', which it enforces itself).
pub(super) fn raise_from(live: Option<i32>) -> bool {
    live == Some(0)
}

/// Autoscaling on (the rendered Deployment sets no replicas) and the live
/// Deployment at 0: one merge patch sets minReplicas, conditional on the
/// uid only. Not on the resourceVersion: a Deployment just scaled to 0
/// updates its status many times while its pods go, and every such
/// precondition would fail; the autoscaler never writes at 0, so only a
/// person scaling it in the same instant could be overwritten (and the
/// autoscaler owns the count again from there).
pub(super) async fn raise_from_zero(scaled: &Scaled<'_>, out: &mut ApplyOutcome) {
    let Some(Target {
        name,
        ns,
        label,
        live,
    }) = scaled.owned()
    else {
        return;
    };
    let Scaled {
        ctx, min_replicas, ..
    } = *scaled;
    if live.meta().deletion_timestamp.is_some()
        || !raise_from(live.spec.as_ref().and_then(|s| s.replicas))
    {
        return;
    }
    let version = live.meta().resource_version.clone();
    let memory_key = format!("{label}/{ns}/replicas");
    let body = serde_json::json!({
        "metadata": {"uid": live.meta().uid},
        "spec": {"replicas": min_replicas},
    });
    let sent = super::diff::hash(&body);
    if ctx
        .record
        .pacing
        .written
        .already_sent(&memory_key, version.as_deref(), &sent)
    {
        return;
    }
    tracing::warn!(object = %label, namespace = %ns, min_replicas, "autoscaling on and the Deployment at 0 replicas: raising it to minReplicas");
    let api: Api<Deployment> = Api::namespaced(ctx.access.client.clone(), &ns);
    let params = PatchParams {
        field_manager: Some(HANDOVER_MANAGER.to_string()),
        ..Default::default()
    };
    match api.patch(&name, &params, &Patch::Merge(&body)).await {
        Ok(raised) => {
            out.writes += 1;
            ctx.record.metrics.write("Deployment", "correct");
            ctx.record.pacing.written.sent(
                &memory_key,
                version.as_deref(),
                raised.meta().resource_version.as_deref(),
                &sent,
            );
        }
        Err(source) => out
            .errors
            .push(ApplyError::new(label, Step::Handover, source)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_zero_is_raised_under_the_autoscaler() {
        assert!(raise_from(Some(0)));
        for count in [None, Some(1), Some(2), Some(7)] {
            assert!(!raise_from(count), "{count:?} is the autoscaler's");
        }
    }

    #[test]
    fn replica_ownership_from_managed_fields() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
        let entry = |manager: &str, op: &str, fields: Value| ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(op.into()),
            fields_v1: Some(FieldsV1(fields)),
            ..Default::default()
        };
        let replicas = json!({"f:spec": {"f:replicas": {}}});
        assert!(agent_owns_replicas(&[entry(
            FIELD_MANAGER,
            "Apply",
            replicas.clone()
        )]));
        assert!(!agent_owns_replicas(&[entry(
            FIELD_MANAGER,
            "Update",
            replicas.clone()
        )]));
        assert!(!agent_owns_replicas(&[entry(
            "kube-controller-manager",
            "Apply",
            replicas
        )]));
        assert!(!agent_owns_replicas(&[entry(
            FIELD_MANAGER,
            "Apply",
            json!({"f:spec": {"f:template": {}}})
        )]));
    }
}
