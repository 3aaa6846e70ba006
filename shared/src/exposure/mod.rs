//! What adds up around a Runtime's pods (issue 52, docs/architecture.md
//! §5 "Exposure"): objects that are not the Runtime's own and yet reach
//! or run as its pods — a NetworkPolicy admitting more than the Runtime's
//! own (policies add up), a Service selecting its pods, an EndpointSlice
//! naming them, and orphans (a workload with berth's labels for the
//! Runtime, no controller, on a granted class: the contract no longer
//! governs it). Each found object is an [`Exposing`]; the Runtime's
//! `Exposed` condition (`status::exposed`) and the `runtime-exposed`
//! finding name them.
//!
//! Pure: the agent reduces each foreign object as its watch delivers it
//! ([`network_policy::ForeignPolicy`], [`service::ForeignService`],
//! [`endpoint_slice::ForeignSlice`]: keyed hashes in a fixed budget, see
//! [`hashed`]) and asks these functions about one Runtime at a time.

pub mod endpoint_slice;
pub mod hashed;
pub mod network_policy;
pub mod service;

pub use hashed::PodLabels;

use crate::api::ExposureRef;
use crate::api::reasons;

/// What kind of thing reaches or runs as the pods, most urgent first (the
/// first found is the condition's reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExposureKind {
    /// A workload with the Runtime's labels, no controller, on a granted
    /// class: pods outside the contract.
    Orphan,
    /// A NetworkPolicy admitting more than the Runtime's own.
    NetworkPolicy,
    /// A Service selecting the pods.
    Service,
    /// An EndpointSlice naming the pods.
    EndpointSlice,
}

impl ExposureKind {
    /// The `Exposed` condition's reason.
    pub fn reason(self) -> &'static str {
        match self {
            ExposureKind::Orphan => reasons::ORPHANED,
            ExposureKind::NetworkPolicy => reasons::FOREIGN_NETWORK_POLICY,
            ExposureKind::Service => reasons::FOREIGN_SERVICE,
            ExposureKind::EndpointSlice => reasons::FOREIGN_ENDPOINT_SLICE,
        }
    }

    /// The kind back from a reason.
    pub fn of_reason(reason: &str) -> Option<Self> {
        [
            ExposureKind::Orphan,
            ExposureKind::NetworkPolicy,
            ExposureKind::Service,
            ExposureKind::EndpointSlice,
        ]
        .into_iter()
        .find(|k| k.reason() == reason)
    }

    /// What to do about one, in one sentence.
    pub fn fix(self) -> &'static str {
        match self {
            ExposureKind::Orphan => {
                "delete the orphan (its pods run outside the Runtime and the contract), or give it back to its controller"
            }
            ExposureKind::NetworkPolicy => {
                "delete the policy or narrow it (podSelector or ingress) so that it admits to the Runtime's pods no more than spec.networkPolicy.ingress; to admit more, add the peer to the Runtime"
            }
            ExposureKind::Service => {
                "delete the Service or change its selector so that it no longer selects the Runtime's pods; expose the Runtime through spec.expose"
            }
            ExposureKind::EndpointSlice => {
                "delete the EndpointSlice or remove the Runtime's pods from it; expose the Runtime through spec.expose"
            }
        }
    }
}

/// One object that reaches or runs as a Runtime's pods.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Exposing {
    /// What it is.
    pub kind: ExposureKind,
    /// Its Kubernetes kind (`ReplicaSet`, `NetworkPolicy`, …).
    pub object_kind: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Why it counts, one clause.
    pub why: String,
}

impl Exposing {
    /// `Kind/namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}/{}", self.object_kind, self.namespace, self.name)
    }

    /// A NetworkPolicy admitting `beyond`.
    pub fn policy(namespace: &str, name: &str, beyond: &network_policy::Beyond) -> Self {
        Exposing {
            kind: ExposureKind::NetworkPolicy,
            object_kind: "NetworkPolicy".into(),
            namespace: namespace.into(),
            name: name.into(),
            why: format!("selects the pods and {beyond}"),
        }
    }

    /// A Service selecting the pods.
    pub fn service(namespace: &str, name: &str) -> Self {
        Exposing {
            kind: ExposureKind::Service,
            object_kind: "Service".into(),
            namespace: namespace.into(),
            name: name.into(),
            why: "selects the pods".into(),
        }
    }

    /// An EndpointSlice naming the pods (of Service `service`, if it says).
    pub fn slice(namespace: &str, name: &str, service: Option<&str>) -> Self {
        Exposing {
            kind: ExposureKind::EndpointSlice,
            object_kind: "EndpointSlice".into(),
            namespace: namespace.into(),
            name: name.into(),
            why: match service {
                Some(s) => format!("lists the pods as endpoints of Service {s}"),
                None => "lists the pods as endpoints".into(),
            },
        }
    }

    /// A workload of `object_kind` with the Runtime's labels and no
    /// controller, running RuntimeClass `class`.
    pub fn orphan(object_kind: &str, namespace: &str, name: &str, class: &str) -> Self {
        Exposing {
            kind: ExposureKind::Orphan,
            object_kind: object_kind.into(),
            namespace: namespace.into(),
            name: name.into(),
            why: format!(
                "carries the Runtime's labels, runs granted RuntimeClass {class} and has no controller"
            ),
        }
    }

    /// The status entry.
    pub fn reference(&self) -> ExposureRef {
        ExposureRef {
            kind: self.object_kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            reason: self.kind.reason().to_string(),
        }
    }
}

/// What was found around one Runtime's pods.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exposure {
    /// Every object found, sorted (most urgent kind first).
    pub found: Vec<Exposing>,
    /// Whether foreign NetworkPolicies were judged: only when the
    /// Runtime's own policy is on (without it nothing isolates the pods,
    /// and no other policy can admit more than everything).
    pub policies_checked: bool,
}

impl Exposure {
    /// `found` sorted, with whether policies were judged.
    pub fn new(mut found: Vec<Exposing>, policies_checked: bool) -> Self {
        found.sort();
        found.dedup();
        Exposure {
            found,
            policies_checked,
        }
    }
}

#[cfg(test)]
mod tests;
