//! The connections as the model knows them: the kubeconfig contexts shown
//! (one cluster each, see [`super::fleet`]), the namespace scope, the
//! generation that tells current watch events from late ones, and a `:ctx`
//! switch in flight. Switching (contexts or scope) starts the data over;
//! the connections themselves live on the I/O side and pass through here
//! only as [`Handover`]s.

use crate::store::{ClusterId, ObjKey};

use super::screen::Scope;

/// Namespace and name of the agent's Lease unless configured otherwise.
pub const DEFAULT_AGENT_LEASE: (&str, &str) = ("berth-system", "berth-agent");

/// The connections' part of the app state.
#[derive(Debug)]
pub struct Session {
    /// Contexts of the kubeconfig (for `:ctx` completion).
    pub contexts: Vec<String>,
    pub scope: Scope,
    pub read_only: bool,
    /// `(namespace, name)` of the agent's leader-election Lease (the same
    /// in every cluster).
    pub agent_lease: ObjKey,
    /// A `:ctx` switch in flight (the contexts asked for).
    pub switching: Option<Vec<String>>,
    /// Bumped on every context/namespace switch: watch events of older
    /// connections still in flight are dropped.
    pub generation: u64,
    /// Groups of clusters the operator declared to run the same grants
    /// file (`--fleet-grants-same`, or a label on `--context`): a digest
    /// that differs within one is a finding.
    pub same_grants: Vec<Vec<ClusterId>>,
}

impl Session {
    /// Watching `scope`.
    pub fn new(scope: Scope) -> Self {
        Session {
            contexts: Vec::new(),
            scope,
            read_only: false,
            agent_lease: (
                DEFAULT_AGENT_LEASE.0.to_string(),
                DEFAULT_AGENT_LEASE.1.to_string(),
            ),
            switching: None,
            generation: 0,
            same_grants: Vec::new(),
        }
    }
}

/// `a,b,c` as contexts: trimmed, empty parts dropped.
pub fn context_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}
