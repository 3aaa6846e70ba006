//! Step 1 (read) and 2 (decide): everything a reconcile needs, from the
//! caches only — no API request.

use berth_shared::api::Runtime;
use berth_shared::decide::{self, DecideInput, Decision, Identity, IdentityError, ObservedClass};
use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use super::context::Context;

/// What was read and decided for one Runtime.
#[derive(Debug)]
pub struct Snapshot {
    /// The identity, or why there is none.
    pub identity: Result<Identity, IdentityError>,
    /// The decision.
    pub decision: Decision,
}

/// Reads and decides.
pub fn read(ctx: &Context, runtime: &Runtime) -> Snapshot {
    let ns_name = runtime.namespace().unwrap_or_default();
    let identity = match ctx.stores.namespaces.get(&ObjectRef::new(&ns_name)) {
        Some(meta) => {
            let ns = Namespace {
                metadata: meta.metadata.clone(),
                ..Default::default()
            };
            decide::identity(&ns, runtime)
        }
        None => Err(IdentityError::MissingLabels {
            namespace: ns_name.clone(),
            missing: vec![decide::PROJECT_LABEL, decide::ENVIRONMENT_LABEL],
        }),
    };
    let bindings = &ctx.grants.bindings;
    let requested = runtime.spec.runtime_profile.as_deref();
    let binding = match (&identity, requested) {
        (Ok(id), Some(alias)) => decide::binding_for(bindings, id, alias).cloned(),
        _ => None,
    };
    let class = binding.as_ref().and_then(|b| {
        ctx.stores
            .classes
            .get(&ObjectRef::new(&b.runtime_class))
            .map(|c| ObservedClass::from_runtime_class(&c))
    });
    let previous = runtime.status.as_ref().and_then(|s| s.profile.as_ref());
    let decision = decide::decide(DecideInput {
        bindings,
        identity: identity.as_ref(),
        requested,
        class: class.as_ref(),
        previous,
    });
    Snapshot { identity, decision }
}
