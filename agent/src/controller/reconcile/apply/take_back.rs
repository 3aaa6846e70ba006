//! Taking back an object that is berth's by name, labels and content but
//! lost its owner reference (issue 52, point 3: a dependency that is no
//! longer the Runtime's own must not switch its enforcement off).

use berth_shared::contract;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource};
use serde_json::Value;

use super::{ApplyOutcome, Governed, Managed};
use crate::controller::cache::stored::Stored;
use crate::controller::context::{Context, FIELD_MANAGER};
use crate::controller::reconcile::apply_error::{ApplyError, Step};

/// Whether an object at a managed name that the Runtime does not own is
/// berth's all the same, and is taken back (issue 52: a dependency whose
/// owner reference was removed, or that was replaced by a copy, must not
/// switch the Runtime's enforcement off): no controller at all, every
/// label the rendering sets with its value, and its governed parts
/// exactly the rendered ones (the contract finds nothing). Anything else
/// is someone else's object, a conflict reported with its fix.
pub(super) fn take_back<K: Resource + Governed>(
    live: &Stored<K>,
    rendered: &K,
    desired: &Value,
) -> bool {
    let rendered_labels = rendered.meta().labels.as_ref();
    let live_labels = live.meta().labels.as_ref();
    berth_shared::api::meta::controller_of(live.meta()).is_none()
        && rendered_labels.is_some_and(|want| {
            !want.is_empty()
                && want
                    .iter()
                    .all(|(k, v)| live_labels.and_then(|l| l.get(k)) == Some(v))
        })
        && contract::violations(K::KIND, &live.json, desired).is_empty()
}

/// Gives `live` back its controller reference (the rendered one, beside
/// any other owner it has), conditional on its uid and resourceVersion.
pub(super) async fn take<K: Managed>(
    ctx: &Context,
    label: &str,
    live: &Stored<K>,
    rendered: &K,
    out: &mut ApplyOutcome,
) {
    let mut owners = live.meta().owner_references.clone().unwrap_or_default();
    owners.extend(rendered.meta().owner_references.iter().flatten().cloned());
    let patch = serde_json::json!({"metadata": {
        "uid": live.meta().uid,
        "resourceVersion": live.meta().resource_version,
        "ownerReferences": owners,
    }});
    let ns = live.meta().namespace.clone().unwrap_or_default();
    let name = live.meta().name.clone().unwrap_or_default();
    tracing::warn!(object = %label, namespace = %ns, "taking back an object that is berth's by name, labels and content but lost its owner reference");
    let api: Api<K> = Api::namespaced(ctx.access.client.clone(), &ns);
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..Default::default()
    };
    match api.patch(&name, &params, &Patch::Merge(&patch)).await {
        Ok(_) => {
            out.writes += 1;
            ctx.record.metrics.write(&K::kind(&()), "take-back");
        }
        Err(source) => out
            .errors
            .push(ApplyError::new(label.to_string(), Step::Correct, source)),
    }
}
