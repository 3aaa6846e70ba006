//! An object nobody can change any more: a ConfigMap someone else made
//! `immutable: true`. The apiserver refuses every patch to it, berth's
//! correction included, so the contract's removal would fail on every
//! reconcile and the foreign value would stay for good (the schema-driven
//! adversary found it, issue 52). The only correction is a new object:
//! delete the frozen one (preconditions: its uid and the version read, so
//! nothing changed since is lost) and create the rendering in its place.
//!
//! Pods already running keep the data they started with (environment from
//! a ConfigMap is read at container start); one starting between the
//! delete and the create waits and retries, as for any missing ConfigMap.

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::Value;

use super::{ApplyOutcome, Managed};
use crate::controller::cache::stored::Stored;
use crate::controller::context::{Context, FIELD_MANAGER};
use crate::controller::reconcile::apply_error::{ApplyError, Step};

/// Whether the live object is frozen where the rendering is not.
pub(super) fn frozen(live: &Value, desired: &Value) -> bool {
    let is_frozen = |v: &Value| v.get("immutable") == Some(&Value::Bool(true));
    is_frozen(live) && !is_frozen(desired)
}

/// Deletes the frozen object and creates the rendering in its place (two
/// writes); the new object's resourceVersion, when it was created.
pub(super) async fn recreate<K: Managed>(
    ctx: &Context,
    label: &str,
    live: &Stored<K>,
    desired: &Value,
    out: &mut ApplyOutcome,
) -> Option<String> {
    let kind = K::kind(&());
    let name = live.typed.name_any();
    let ns = live.typed.namespace().unwrap_or_default();
    let api: Api<K> = Api::namespaced(ctx.access.client.clone(), &ns);
    tracing::warn!(object = %label, namespace = %ns, "an immutable object differs from the contract: recreating it");
    let version = live.meta().resource_version.clone();
    if !super::delete::delete_exactly(ctx, &live.typed, version, out).await {
        return None;
    }
    match api
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(desired),
        )
        .await
    {
        Ok(created) => {
            out.writes += 1;
            ctx.record.metrics.write(&kind, "apply");
            created.meta().resource_version.clone()
        }
        Err(source) => {
            out.errors
                .push(ApplyError::new(label.to_string(), Step::Apply, source));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::frozen;
    use serde_json::json;

    #[test]
    fn only_a_frozen_live_object_against_an_unfrozen_rendering_is_recreated() {
        let rendered = json!({"data": {"a": "1"}});
        assert!(frozen(&json!({"immutable": true}), &rendered));
        assert!(!frozen(&json!({"immutable": false}), &rendered));
        assert!(!frozen(&json!({}), &rendered));
        assert!(!frozen(
            &json!({"immutable": true}),
            &json!({"immutable": true})
        ));
    }
}
