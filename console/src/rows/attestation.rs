//! One (class, node) cell of the handler matrix opened (Enter): what the
//! agent's canary saw there (the grant's `status.attestation`) and the
//! node's failing sandboxes of the class — its pods of the class that are
//! not running, with their Warning events (`FailedCreatePodSandBox` …),
//! read with the operator's own rights.

use berth_shared::api::{HandlerAttestation, NodeAttestation};
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::rollout::{EventEntry, events_for};
use crate::store::{ObjKey, Store};

/// Most failing pods shown, and events per pod.
const MAX_PODS: usize = 8;
const MAX_EVENTS: usize = 5;

/// One pod of the class on the node that is not running.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailingSandbox {
    pub namespace: String,
    pub pod: String,
    pub phase: String,
    pub events: Vec<EventEntry>,
}

/// The cell opened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttestationDetail {
    pub class: String,
    pub handler: String,
    pub node: String,
    /// The grant's attestation of the class (none: no grant names it).
    pub attestation: Option<HandlerAttestation>,
    /// The node's evidence (none: not listed).
    pub verdict: Option<NodeAttestation>,
    pub sandboxes: Vec<FailingSandbox>,
}

/// The detail of `class` on `node`.
pub fn attestation_detail(
    store: &Store,
    class: &str,
    node: &str,
    now: Timestamp,
) -> AttestationDetail {
    let attestation = super::handlers::attestations(store).remove(class);
    let verdict = attestation.as_ref().and_then(|a| a.node(node).cloned());
    let handler = store
        .classes
        .get(&(String::new(), class.to_string()))
        .map(|c| c.handler.clone())
        .unwrap_or_default();
    let mut pods: Vec<(&ObjKey, i64, String)> = store
        .pods
        .iter()
        .filter(|(_, p)| p.node_name() == Some(node) && p.runtime_class_name() == Some(class))
        .filter(|(_, p)| !matches!(p.phase(), Some("Running" | "Succeeded")))
        .map(|(k, p)| {
            (
                k,
                p.metadata
                    .creation_timestamp
                    .as_ref()
                    .map_or(0, |t| t.0.as_second()),
                p.phase().unwrap_or("Unknown").to_string(),
            )
        })
        .collect();
    pods.sort_by_key(|(k, created, _)| (std::cmp::Reverse(*created), (*k).clone()));
    let sandboxes = pods
        .into_iter()
        .take(MAX_PODS)
        .map(|((ns, name), _, phase)| FailingSandbox {
            namespace: ns.clone(),
            pod: name.clone(),
            phase,
            events: events_for(
                store,
                ns,
                &[("Pod".to_string(), name.clone())],
                now,
                MAX_EVENTS,
            ),
        })
        .collect();
    AttestationDetail {
        class: class.to_string(),
        handler,
        node: node.to_string(),
        attestation,
        verdict,
        sandboxes,
    }
}
