//! A RuntimeGrant's status from one snapshot (docs/architecture.md §4):
//! class present, handler match, overhead/scheduling, deleting, nodes
//! reporting the handler, Runtimes using the grant, retained workloads,
//! the file's source and `RestartRequired`. Pure: the agent's grants
//! publisher reads its caches into a [`GrantSnapshot`] and writes the
//! result (lastTransitionTimes merged afterwards, as for Runtimes).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::analysis::{self, NodeInfo};
use crate::api::{
    GrantSource, HandlerAttestation, NodeCoverage, ObjectRef, RuntimeGrantStatus, WorkloadRef,
    condition, grant_condition_types as gct, reasons,
};
use crate::decide::{GrantBinding, Identity, ObservedClass};

/// Most retained workloads listed per grant.
pub const MAX_RETAINED: usize = 100;

/// What an agent without Pod access says about bare pods.
pub const BARE_PODS_NOT_CHECKED: &str = "bare pods not checked (agent has no Pod access): retained lists controllers and rollback revisions only; start the agent with --watch-bare-pods and the Pod RBAC overlay to count bare pods, or look with your own rights (berth console, Retained view)";

/// Whether the grants file on disk differs (or can no longer be read
/// safely) from the one loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileState {
    /// No file configured.
    None,
    /// Same content as loaded.
    Current,
    /// Changed or unreadable: restart required.
    Stale(String),
}

/// A Runtime as a grant sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantUser {
    /// Where it is.
    pub at: ObjectRef,
    /// The profile it asks for (`spec.runtimeProfile`).
    pub profile: Option<String>,
    /// Its identity; `None` while its namespace lacks the identity labels.
    pub identity: Option<Identity>,
}

/// Everything one grant's status is computed from.
#[derive(Clone, Copy, Debug)]
pub struct GrantSnapshot<'a> {
    /// The binding the grant publishes.
    pub binding: &'a GrantBinding,
    /// The grant's `metadata.generation`.
    pub generation: Option<i64>,
    /// The binding's RuntimeClass, if it exists.
    pub class: Option<&'a ObservedClass>,
    /// Every Node.
    pub nodes: &'a [NodeInfo],
    /// Every Runtime.
    pub users: &'a [GrantUser],
    /// The workloads that need the class and no grant covers, sorted.
    pub retained: &'a [WorkloadRef],
    /// Where the bindings came from.
    pub source: Option<&'a GrantSource>,
    /// The file on disk against the one loaded.
    pub file: &'a FileState,
    /// Whether bare pods are watched (counted in `retained`).
    pub pods_watched: bool,
    /// What the agent's canaries saw of the class's handler (`None`: the
    /// class cannot be attested: missing, another handler, unsupported).
    pub attestation: Option<&'a HandlerAttestation>,
}

fn cond(
    type_: &str,
    ok: bool,
    reason: &str,
    message: String,
    generation: Option<i64>,
) -> Condition {
    Condition {
        observed_generation: generation,
        ..condition::build(type_, ok, reason, message)
    }
}

/// The status of one published grant (lastTransitionTimes not merged).
pub fn grant(s: &GrantSnapshot<'_>) -> RuntimeGrantStatus {
    let binding = s.binding;
    let generation = s.generation;
    let class = s.class;
    let cov = analysis::coverage(s.nodes, &binding.handler);
    let mut runtimes: Vec<ObjectRef> = s
        .users
        .iter()
        .filter(|u| u.profile.as_deref() == Some(binding.name.as_str()))
        .filter(|u| u.identity.as_ref().is_some_and(|id| binding.matches(id)))
        .map(|u| u.at.clone())
        .collect();
    runtimes.sort();
    let mut retained = s.retained.to_vec();
    retained.truncate(MAX_RETAINED);

    let (class_ok, reason, message) = match class {
        None => (
            false,
            reasons::CLASS_MISSING,
            format!("RuntimeClass {} does not exist", binding.runtime_class),
        ),
        Some(c) if c.deleting => (
            false,
            reasons::CLASS_DELETING,
            format!("RuntimeClass {} is being deleted", c.name),
        ),
        Some(c) if c.handler != binding.handler => (
            false,
            reasons::HANDLER_MISMATCH,
            format!(
                "RuntimeClass {} names handler {}, the grant expects {}",
                c.name, c.handler, binding.handler
            ),
        ),
        Some(c) if c.has_overhead || c.has_scheduling => (
            false,
            reasons::CLASS_UNSUPPORTED,
            format!(
                "RuntimeClass {} sets overhead or scheduling, which berth does not support",
                c.name
            ),
        ),
        Some(c) => (
            true,
            reasons::CLASS_READY,
            format!(
                "RuntimeClass {} names handler {}; {} Ready nodes report it",
                c.name,
                c.handler,
                cov.summary()
            ),
        ),
    };
    let (stale, stale_reason, stale_message) = match s.file {
        FileState::Stale(why) => (
            true,
            reasons::FILE_CHANGED,
            format!(
                "the grants file changed on disk since it was loaded; restart the agent to apply it ({why})"
            ),
        ),
        _ => (
            false,
            reasons::FILE_CURRENT,
            "the grants file on disk is the one loaded".to_string(),
        ),
    };
    RuntimeGrantStatus {
        observed_generation: generation,
        class_present: class.is_some(),
        class_handler: class.map(|c| c.handler.clone()),
        handler_matches: class.is_some_and(|c| c.handler == binding.handler),
        class_has_overhead: class.is_some_and(|c| c.has_overhead),
        class_has_scheduling: class.is_some_and(|c| c.has_scheduling),
        class_deleting: class.is_some_and(|c| c.deleting),
        nodes: Some(NodeCoverage::new(
            i32::try_from(cov.with_handler).unwrap_or(i32::MAX),
            i32::try_from(cov.total).unwrap_or(i32::MAX),
            i32::try_from(cov.unknown).unwrap_or(i32::MAX),
        )),
        attestation: s.attestation.cloned(),
        runtimes,
        retained,
        source: s.source.cloned(),
        conditions: vec![
            cond(gct::CLASS_READY, class_ok, reason, message, generation),
            cond(
                gct::RESTART_REQUIRED,
                stale,
                stale_reason,
                stale_message,
                generation,
            ),
            bare_pods_condition(s.pods_watched, generation),
        ],
    }
}

/// The status of a grant whose binding left the file while `retained`
/// still need its class's handler: the stored status with no Runtimes,
/// the retained workloads, and `Retired` (lastTransitionTimes not merged).
pub fn retired(
    stored: Option<&RuntimeGrantStatus>,
    generation: Option<i64>,
    handler: &str,
    class: &str,
    retained: &[WorkloadRef],
    pods_watched: bool,
) -> RuntimeGrantStatus {
    let mut status = stored.cloned().unwrap_or_default();
    status.observed_generation = generation;
    status.runtimes.clear();
    // Nothing grants the class any more: no canary runs for it.
    status.attestation = None;
    let mut listed = retained.to_vec();
    listed.truncate(MAX_RETAINED);
    status.retained = listed;
    let message = retired_message(retained.len(), handler, class, pods_watched);
    status
        .conditions
        .retain(|c| c.type_ != gct::RETIRED && c.type_ != gct::BARE_PODS_CHECKED);
    status.conditions.push(cond(
        gct::RETIRED,
        true,
        reasons::BINDING_REMOVED,
        message,
        generation,
    ));
    status
        .conditions
        .push(bare_pods_condition(pods_watched, generation));
    status
}

/// `BarePodsChecked`: whether `retained` can list bare pods at all. An
/// agent without `--watch-bare-pods` reads no Pod, so an empty list says
/// nothing about them, and the condition says so.
pub fn bare_pods_condition(watched: bool, generation: Option<i64>) -> Condition {
    if watched {
        cond(
            gct::BARE_PODS_CHECKED,
            true,
            reasons::PODS_WATCHED,
            "bare pods (pods without a controller) that use the class are listed in retained"
                .into(),
            generation,
        )
    } else {
        cond(
            gct::BARE_PODS_CHECKED,
            false,
            reasons::NO_POD_ACCESS,
            BARE_PODS_NOT_CHECKED.into(),
            generation,
        )
    }
}

/// The `Retired` message: what still needs the handler, and, without Pod
/// access, that bare pods were not looked at (so "nothing" is never
/// claimed from missing data).
pub fn retired_message(retained: usize, handler: &str, class: &str, pods_watched: bool) -> String {
    match (retained, pods_watched) {
        (0, false) => format!(
            "the binding left the grants file; no controller or rollback revision still needs handler {handler} of RuntimeClass {class}, but bare pods were not checked (agent has no Pod access): delete this RuntimeGrant once no bare pod uses RuntimeClass {class}"
        ),
        (n, true) => format!(
            "the binding left the grants file; {n} workload(s) still need handler {handler} of RuntimeClass {class}: keep it installed until they are retired"
        ),
        (n, false) => format!(
            "the binding left the grants file; {n} workload(s) still need handler {handler} of RuntimeClass {class}: keep it installed until they are retired (bare pods not checked: agent has no Pod access)"
        ),
    }
}

#[cfg(test)]
mod tests;
