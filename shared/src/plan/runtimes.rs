//! Per-Runtime transitions: the agent's own decision under the loaded and
//! the candidate bindings, and where the pods that would roll may land.

use std::collections::BTreeMap;

use kube::ResourceExt as _;

use crate::analysis::{Placement, placement_coverage};
use crate::api::{ProfileState, Runtime};
use crate::decide::{self, DecideInput, Decision, GrantBinding, Identity, IdentityError};

use super::Cluster;
use super::types::{Effect, GrantState, RuntimeChange};

fn state_of(d: &Decision) -> GrantState {
    let p = d.profile_status();
    GrantState {
        state: d.state(),
        runtime_class: p.as_ref().and_then(|p| p.class.clone()),
        handler: p.and_then(|p| p.handler),
    }
}

fn decision(
    bindings: &[GrantBinding],
    identity: Result<&Identity, &IdentityError>,
    rt: &Runtime,
    cluster: &Cluster<'_>,
) -> Decision {
    let alias = rt.spec.runtime_profile.as_deref();
    let class = identity
        .ok()
        .zip(alias)
        .and_then(|(id, a)| decide::binding_for(bindings, id, a))
        .and_then(|b| cluster.classes.iter().find(|c| c.name == b.runtime_class));
    decide::decide(DecideInput {
        bindings,
        identity,
        requested: alias,
        class,
        previous: rt.status.as_ref().and_then(|s| s.profile.as_ref()),
    })
}

fn effect(before: &GrantState, after: &GrantState) -> Effect {
    let granted = |s: &GrantState| s.state == ProfileState::Granted;
    match (granted(before), granted(after)) {
        (true, false) if after.state == ProfileState::Revoked => Effect::Revoke,
        (true, false) => Effect::Refuse,
        (false, true) => Effect::Grant,
        (true, true) => Effect::Roll,
        (false, false) => Effect::Other,
    }
}

/// Every Runtime whose decision differs between `current` and `next`,
/// revocations first, then by namespace and name.
pub fn transitions(
    current: &[GrantBinding],
    next: &[GrantBinding],
    cluster: &Cluster<'_>,
) -> Vec<RuntimeChange> {
    let ns_labels: BTreeMap<String, BTreeMap<String, String>> = cluster
        .namespaces
        .iter()
        .map(|n| (n.name_any(), n.metadata.labels.clone().unwrap_or_default()))
        .collect();
    let empty = BTreeMap::new();
    let mut out: Vec<RuntimeChange> = Vec::new();
    for rt in cluster.runtimes {
        let Some(alias) = rt.spec.runtime_profile.clone().filter(|a| !a.is_empty()) else {
            continue;
        };
        let ns = rt.namespace().unwrap_or_default();
        let identity = decide::namespace_scope(&ns, ns_labels.get(&ns).unwrap_or(&empty)).map(
            |(project, environment)| Identity {
                project,
                environment,
                application: rt.spec.application.clone(),
                service: rt.spec.service.clone(),
            },
        );
        let before_d = decision(current, identity.as_ref(), rt, cluster);
        let after_d = decision(next, identity.as_ref(), rt, cluster);
        let (before, after) = (state_of(&before_d), state_of(&after_d));
        if before == after {
            continue;
        }
        let effect = effect(&before, &after);
        let mut change = RuntimeChange {
            namespace: ns,
            name: rt.name_any(),
            alias,
            effect,
            replicas: rt.spec.wanted_replicas(),
            ready: rt
                .status
                .as_ref()
                .and_then(|s| s.rollout.as_ref())
                .map_or(0, |r| r.ready),
            eligible_nodes: 0,
            stall_nodes: Vec::new(),
            unknown_nodes: 0,
            message: after_d.message(),
            batch: Vec::new(),
            before,
            after,
        };
        change.batch = super::batch::effects(rt, &change);
        if let (true, Some(handler)) = (effect.rolls(), change.after.handler.as_deref()) {
            let sched = rt.spec.scheduling.as_ref();
            let placement = Placement {
                node_selector: sched.map(|s| &s.node_selector),
                affinity: sched.and_then(|s| s.affinity.as_ref()),
                tolerations: sched.map_or(&[], |s| s.tolerations.as_slice()),
            };
            let cov = placement_coverage(cluster.nodes, &placement, handler);
            change.eligible_nodes = cov.eligible;
            change.stall_nodes = cov.missing;
            change.stall_nodes.sort();
            change.unknown_nodes = cov.unknown;
        }
        out.push(change);
    }
    out.sort_by(|a, b| {
        (a.effect.rank(), &a.namespace, &a.name).cmp(&(b.effect.rank(), &b.namespace, &b.name))
    });
    out
}
