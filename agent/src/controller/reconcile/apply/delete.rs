//! Deleting an owned object: only the very object read (its uid, and its
//! version where nothing may have changed since), never one recreated at
//! the name meanwhile.

use kube::api::{DeleteParams, Preconditions, PropagationPolicy};
use kube::{Api, ResourceExt};

use super::{ApplyOutcome, Managed};
use crate::controller::context::Context;
use crate::controller::reconcile::apply_error::{ApplyError, Step};

/// Deletes one owned object (uid precondition, background propagation).
pub(super) async fn delete_owned<K: Managed>(ctx: &Context, obj: &K, out: &mut ApplyOutcome) {
    delete_exactly(ctx, obj, None, out).await;
}

/// Deletes `obj` if it is still the object with its uid (and, given
/// `version`, still at that version: nothing changed since it was read),
/// background propagation; whether it is gone (deleted, or already).
pub(super) async fn delete_exactly<K: Managed>(
    ctx: &Context,
    obj: &K,
    version: Option<String>,
    out: &mut ApplyOutcome,
) -> bool {
    let kind = K::kind(&());
    let name = obj.name_any();
    let ns = obj.namespace().unwrap_or_default();
    let api: Api<K> = Api::namespaced(ctx.access.client.clone(), &ns);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: obj.meta().uid.clone(),
            resource_version: version,
        }),
        propagation_policy: Some(PropagationPolicy::Background),
        ..Default::default()
    };
    match api.delete(&name, &params).await {
        Ok(_) => {
            out.writes += 1;
            ctx.record.metrics.write(&kind, "delete");
            true
        }
        Err(kube::Error::Api(s)) if s.code == 404 => true,
        Err(source) => {
            out.errors.push(ApplyError::new(
                format!("{kind}/{name}"),
                Step::Delete,
                source,
            ));
            false
        }
    }
}
