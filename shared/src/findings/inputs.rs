//! What the findings are computed from ([`Inputs`]): plain values the
//! console reads from the cluster. Its own module, so that every check
//! (`check`, `attested`) reads it without reaching into another check.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;

use crate::analysis::{NodeInfo, Workload};
use crate::api::{HandlerAttestation, PendingGrantsFileSpec, Runtime};
use crate::decide::{GrantBinding, ObservedClass};

/// What the agent's Lease says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Leader {
    /// Held and renewed in time, by this identity.
    Live(String),
    /// No Lease, or it expired: the detail says which.
    Missing(String),
    /// The Lease could not be read (reported as [`FindingKind::Unreadable`]).
    Unknown,
}

/// The webhook's serving certificate, as far as the caller could tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CertExpiry {
    /// It expires at this time.
    NotAfter(Timestamp),
    /// It could not be read, and why.
    NotRead(String),
}

/// How long before something counts as "for long" or "soon".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// A Runtime Blocked or Degraded for longer than this (seconds).
    pub stuck_seconds: i64,
    /// A pending grants file older than this (seconds).
    pub pending_seconds: i64,
    /// A certificate expiring within this (seconds).
    pub cert_seconds: i64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            stuck_seconds: 15 * 60,
            pending_seconds: 60 * 60,
            cert_seconds: 14 * 24 * 60 * 60,
        }
    }
}

/// Everything the findings are computed from.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// Now.
    pub now: Timestamp,
    /// Every Runtime read.
    pub runtimes: &'a [Runtime],
    /// Namespace name → its labels (identity labels among them).
    pub namespace_labels: &'a BTreeMap<String, BTreeMap<String, String>>,
    /// The grants (the published RuntimeGrants as bindings).
    pub bindings: &'a [GrantBinding],
    /// Every RuntimeClass.
    pub classes: &'a [ObservedClass],
    /// Every node.
    pub nodes: &'a [NodeInfo],
    /// Every workload and pod.
    pub workloads: &'a [Workload],
    /// The agent's PendingGrantsFile, if one exists.
    pub pending: Option<&'a PendingGrantsFileSpec>,
    /// The agent's leadership.
    pub leader: &'a Leader,
    /// The webhook certificate.
    pub cert: &'a CertExpiry,
    /// Kinds the operator may not read, with the apiserver's message.
    pub unreadable: &'a [(String, String)],
    /// What the agent's canaries saw, by RuntimeClass (the grants'
    /// `status.attestation`).
    pub attestations: &'a BTreeMap<String, HandlerAttestation>,
    /// The thresholds.
    pub thresholds: Thresholds,
}
