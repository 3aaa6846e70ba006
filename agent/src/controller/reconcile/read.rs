//! Step 1 (read) and 2 (decide): everything a reconcile needs, from the
//! caches only — no API request. The snapshot holds every read the decide,
//! apply and status steps use: apply compares against the cached copies
//! read here ([`Live`]) and only reads the API itself as a precondition of
//! a write (an object missing from the label-filtered cache before a
//! create, a fresh copy before a replace).

use std::collections::HashMap;
use std::sync::Arc;

use berth_shared::analysis::NodeInfo;
use berth_shared::api::Runtime;
use berth_shared::api::meta::controlled_by_uid;
use berth_shared::claims::{self, Claim};
use berth_shared::decide::{self, DecideInput, Decision, Identity, IdentityError, ObservedClass};
use berth_shared::render::Names;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};

use super::cached_objects::{self, Live};
use crate::controller::cache::reduce::KeptReplicaSet;
use crate::controller::context::Context;

/// What was read and decided for one Runtime.
#[derive(Debug)]
pub struct Snapshot {
    /// The identity, or why there is none.
    pub identity: Result<Identity, IdentityError>,
    /// The decision.
    pub decision: Decision,
    /// Another, older Runtime holds the same identity: the message naming
    /// it (one Runtime per identity).
    pub identity_taken: Option<String>,
    /// The Runtime's Deployment, if it exists and is the Runtime's own.
    pub deployment: Option<Arc<Deployment>>,
    /// The ReplicaSets that Deployment controls.
    pub replica_sets: Vec<Arc<KeptReplicaSet>>,
    /// Every node, reduced to what placement reads.
    pub nodes: Vec<NodeInfo>,
    /// The cached objects the apply step compares against.
    pub live: Live,
}

/// Reads and decides.
pub fn read(ctx: &Context, runtime: &Runtime) -> Snapshot {
    let ns_name = runtime.namespace().unwrap_or_default();
    let identity = match ctx.view.stores.namespaces.get(&ObjectRef::new(&ns_name)) {
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
    let bindings = &ctx.config.grants.bindings;
    let requested = runtime.spec.runtime_profile.as_deref();
    let binding = match (&identity, requested) {
        (Ok(id), Some(alias)) => decide::binding_for(bindings, id, alias).cloned(),
        _ => None,
    };
    let class = binding.as_ref().and_then(|b| {
        ctx.view
            .stores
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
    let identity_taken = identity.as_ref().ok().and_then(|id| {
        identity_taken(
            &ctx.view.stores.runtimes,
            &ctx.view.stores.namespaces,
            runtime,
            id,
        )
    });
    let (deployment, replica_sets) = workload(ctx, runtime);
    let nodes = ctx
        .view
        .stores
        .nodes
        .state()
        .iter()
        .map(|n| NodeInfo::from_node(n))
        .collect();
    Snapshot {
        identity,
        decision,
        identity_taken,
        deployment,
        replica_sets,
        nodes,
        live: cached_objects::read(&ctx.view.stores, runtime),
    }
}

/// The Runtime's own Deployment and the ReplicaSets it controls.
fn workload(
    ctx: &Context,
    runtime: &Runtime,
) -> (Option<Arc<Deployment>>, Vec<Arc<KeptReplicaSet>>) {
    let ns = runtime.namespace().unwrap_or_default();
    let uid = runtime.uid().unwrap_or_default();
    let names = Names::for_runtime(&runtime.name_any());
    let deployment = ctx
        .view
        .stores
        .deployments
        .get(&ObjectRef::new(&names.workload).within(&ns))
        .filter(|d| controlled_by_uid(d.meta(), &uid))
        .map(|d| Arc::new(d.whole()));
    let replica_sets = match &deployment {
        Some(d) => ctx
            .view
            .stores
            .replica_sets_of(&d.uid().unwrap_or_default()),
        None => Vec::new(),
    };
    (deployment, replica_sets)
}

/// The claim a Runtime makes on its identity.
pub fn claim_of(runtime: &Runtime) -> Claim {
    Claim {
        namespace: runtime.namespace().unwrap_or_default(),
        name: runtime.name_any(),
        created: runtime.metadata.creation_timestamp.clone(),
        deleting: runtime.metadata.deletion_timestamp.is_some(),
    }
}

/// Whether an older Runtime in the cache holds `identity`. Reads only the
/// Runtime and Namespace caches; only Runtimes with the same application
/// and service are looked at, so their namespaces' labels are the only ones
/// read.
fn identity_taken(
    runtimes: &Store<Runtime>,
    namespaces: &Store<PartialObjectMeta<Namespace>>,
    runtime: &Runtime,
    identity: &Identity,
) -> Option<String> {
    let mut scopes: HashMap<String, Option<(String, String)>> = HashMap::new();
    let mut scope_of = |ns: &str| {
        scopes
            .entry(ns.to_string())
            .or_insert_with(|| {
                let meta = namespaces.get(&ObjectRef::new(ns))?;
                let labels = meta.metadata.labels.clone().unwrap_or_default();
                decide::namespace_scope(ns, &labels).ok()
            })
            .clone()
    };
    let wanted = (identity.project.clone(), identity.environment.clone());
    let rivals: Vec<Claim> = runtimes
        .state()
        .iter()
        .filter(|r| {
            r.spec.application == identity.application && r.spec.service == identity.service
        })
        .filter(|r| scope_of(&r.namespace().unwrap_or_default()).as_ref() == Some(&wanted))
        .map(|r| claim_of(r))
        .collect();
    let me = claim_of(runtime);
    let holder = claims::taken_by(&me, &rivals)?;
    Some(claims::taken_message(&me, identity, holder))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_shared::api::RuntimeSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::runtime::{reflector, watcher};

    fn rt(ns: &str, name: &str, service: &str, created: i64) -> Runtime {
        let mut r = Runtime::new(
            name,
            RuntimeSpec {
                application: "analytics".into(),
                service: service.into(),
                ..Default::default()
            },
        );
        r.metadata.namespace = Some(ns.into());
        r.metadata.creation_timestamp = Some(Time(
            k8s_openapi::jiff::Timestamp::from_second(created).expect("time"),
        ));
        r
    }

    fn ns(name: &str, scope: Option<(&str, &str)>) -> PartialObjectMeta<Namespace> {
        let labels = scope.map(|(p, e)| {
            std::collections::BTreeMap::from([
                (decide::PROJECT_LABEL.to_string(), p.to_string()),
                (decide::ENVIRONMENT_LABEL.to_string(), e.to_string()),
            ])
        });
        PartialObjectMeta {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                labels,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn id(service: &str) -> Identity {
        Identity {
            project: "demo".into(),
            environment: "production".into(),
            application: "analytics".into(),
            service: service.into(),
        }
    }

    #[test]
    fn only_older_runtimes_with_the_same_full_identity_hold_it() {
        let (runtimes, mut rw) = reflector::store();
        let (namespaces, mut nw) = reflector::store();
        for n in [
            ns("team-a", Some(("demo", "production"))),
            ns("team-b", Some(("demo", "production"))),
            ns("staging", Some(("demo", "staging"))),
            ns("bare", None),
        ] {
            nw.apply_watcher_event(&watcher::Event::Apply(n));
        }
        let me = rt("team-b", "copy", "worker", 200);
        // Older, but another environment, no identity, or another service.
        for r in [
            me.clone(),
            rt("staging", "web", "worker", 10),
            rt("bare", "web", "worker", 20),
            rt("gone", "web", "worker", 30),
            rt("team-a", "api", "api", 40),
        ] {
            rw.apply_watcher_event(&watcher::Event::Apply(r));
        }
        assert_eq!(
            identity_taken(&runtimes, &namespaces, &me, &id("worker")),
            None
        );

        // Another namespace with the same labels, older: it holds.
        rw.apply_watcher_event(&watcher::Event::Apply(rt("team-a", "web", "worker", 100)));
        let msg = identity_taken(&runtimes, &namespaces, &me, &id("worker")).expect("taken");
        assert!(msg.contains("Runtime team-a/web already holds"), "{msg}");
        // The holder itself is not held back.
        let holder = rt("team-a", "web", "worker", 100);
        assert_eq!(
            identity_taken(&runtimes, &namespaces, &holder, &id("worker")),
            None
        );
    }
}
