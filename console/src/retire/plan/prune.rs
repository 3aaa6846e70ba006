//! Planning the pruning of a Deployment's rollback ReplicaSets that still
//! name a class.

use berth_shared::api::{Runtime, meta};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::diff::DiffLine;
use super::{
    Action, Change, EventTarget, Plan, clean, or_default, runtime_event_target, template_class,
};

fn revision(m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta::revision(m).map_or_else(|| "-".into(), clean)
}

/// Plans pruning the rollback ReplicaSets of `deployment` that reference
/// `class`: owned by it, not its current revision, scaled to zero. The
/// Event goes to the owning Runtime when there is one.
pub fn plan_prune(
    class: &str,
    deployment: &Deployment,
    replica_sets: &[ReplicaSet],
    owner_runtime: Option<&Runtime>,
) -> Plan {
    let namespace = clean(deployment.metadata.namespace.as_deref().unwrap_or_default());
    let name = clean(deployment.metadata.name.as_deref().unwrap_or_default());
    let raw_name = deployment.metadata.name.clone().unwrap_or_default();
    let current = meta::revision(&deployment.metadata).map(String::from);
    let mut owned: Vec<&ReplicaSet> = replica_sets
        .iter()
        .filter(|rs| meta::controlled_by(&rs.metadata, "Deployment", &raw_name))
        .collect();
    owned.sort_by_key(|rs| std::cmp::Reverse(revision(&rs.metadata).parse::<i64>().unwrap_or(0)));
    let mut diff = Vec::new();
    let mut effects = Vec::new();
    let mut sets = Vec::new();
    let mut kept_using = Vec::new();
    for rs in owned {
        let rs_name = rs.metadata.name.clone().unwrap_or_default();
        let rev = revision(&rs.metadata);
        let rs_class = template_class(rs.spec.as_ref().and_then(|s| s.template.as_ref()));
        let replicas = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let is_current = current.as_deref().map(clean) == Some(rev.clone());
        let uses = rs_class.as_deref() == Some(class);
        if uses && !is_current && replicas == 0 {
            diff.push(DiffLine::Removed(format!(
                "ReplicaSet {} (revision {rev}): template.spec.runtimeClassName: {}",
                clean(&rs_name),
                clean(class)
            )));
            sets.push((
                rs_name,
                rs.metadata.uid.clone().unwrap_or_default(),
                rs.metadata.resource_version.clone().unwrap_or_default(),
            ));
        } else {
            let why = if is_current {
                "current revision, never pruned"
            } else if replicas > 0 {
                "still scaled up"
            } else {
                "other class"
            };
            if uses {
                kept_using.push(format!("{} ({why})", clean(&rs_name)));
            }
            diff.push(DiffLine::Same(format!(
                "ReplicaSet {} (revision {rev}, {}, {replicas} replica(s)): kept, {why}",
                clean(&rs_name),
                or_default(rs_class.as_deref()),
            )));
        }
    }
    let nothing = sets.is_empty().then(|| {
        format!(
            "no rollback ReplicaSet of Deployment {namespace}/{name} references {}",
            clean(class)
        )
    });
    effects.extend(prune_effects(class, &name, sets.len(), &kept_using));
    let event_on = event_target(deployment, owner_runtime);
    Plan {
        action: Action::Prune {
            class: class.to_string(),
        },
        kind: "Deployment",
        confirm_word: name.clone(),
        change: if sets.is_empty() {
            Change::Nothing
        } else {
            Change::DeleteReplicaSets {
                namespace: deployment.metadata.namespace.clone().unwrap_or_default(),
                sets,
            }
        },
        namespace,
        name,
        diff,
        effects,
        pods: Vec::new(),
        nothing,
        event_on,
    }
}

/// What pruning `pruned` ReplicaSets does, and which kept ones still use
/// the class.
fn prune_effects(class: &str, name: &str, pruned: usize, kept_using: &[String]) -> Vec<String> {
    let mut effects = Vec::new();
    if pruned > 0 {
        effects.push(format!(
            "{pruned} rollback ReplicaSet(s) deleted; they run no pods (scaled to zero), so no pod stops"
        ));
        effects.push(format!(
            "`kubectl rollout undo` can no longer return Deployment {name} to {}",
            clean(class)
        ));
    }
    if !kept_using.is_empty() {
        effects.push(format!(
            "still using {}: {}",
            clean(class),
            kept_using.join(", ")
        ));
    }
    effects
}

/// Where the prune's Event goes: the owning Runtime, else the Deployment.
fn event_target(deployment: &Deployment, owner_runtime: Option<&Runtime>) -> EventTarget {
    match owner_runtime {
        Some(rt) => runtime_event_target(rt),
        None => EventTarget {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: deployment.metadata.namespace.clone().unwrap_or_default(),
            name: deployment.metadata.name.clone().unwrap_or_default(),
            uid: deployment.metadata.uid.clone().unwrap_or_default(),
        },
    }
}

/// The Runtime owning a Deployment (controller reference), by name.
pub fn runtime_owner(deployment: &Deployment) -> Option<String> {
    meta::controller_of(&deployment.metadata)
        .filter(|r| r.kind == "Runtime")
        .map(|r| r.name.clone())
}
