//! The clusters the console shows (issue 56): one [`Cluster`] per
//! kubeconfig context, each with its own copy of the cluster, its own
//! watches and its own rows, so that each degrades on its own. One
//! cluster is the console as it always was; with more (`--context a,b`,
//! `--all-contexts`, `:ctx a,b`) the list views merge them with a
//! `CLUSTER` column ([`crate::rows::Merged`]).
//!
//! A cluster is found by its [`ClusterId`], which every row, screen and
//! request carries from where it was made; there is no "current cluster".

use k8s_openapi::jiff::Timestamp;

use crate::store::ClusterId;

use super::data::{Data, LeaderState, WatchState};
use super::derived::ClusterRows;
use super::screen::ListView;

/// One cluster of the fleet.
#[derive(Debug)]
pub struct Cluster {
    pub id: ClusterId,
    /// What its watches told.
    pub data: Data,
    /// Its rows of each list view.
    pub rows: ClusterRows,
    /// When its watches last told anything (the model's clock): the age
    /// of its data while it is unreachable.
    pub heard: Option<Timestamp>,
}

impl Cluster {
    /// A cluster nothing is known of yet.
    pub fn new(id: ClusterId) -> Self {
        Cluster {
            id,
            data: Data::default(),
            rows: ClusterRows::default(),
            heard: None,
        }
    }

    /// Notes when its data last changed or was confirmed current: any
    /// event but a failure (a connection that keeps failing must not look
    /// fresh).
    pub fn heard_from(&mut self, ev: &super::WatchEvent, now: Timestamp) {
        if !matches!(
            ev,
            super::WatchEvent::Error(_) | super::WatchEvent::Denied(_)
        ) {
            self.heard = Some(now);
        }
    }

    /// Whether one of its watches is failing: its rows are the last data
    /// known.
    pub fn failing(&self) -> bool {
        self.data
            .watches
            .values()
            .any(|s| matches!(s, WatchState::Reconnecting(_)))
    }

    /// Whether a view's kinds have listed here, or (in a fleet) failed
    /// before they could: a cluster that does not answer must not keep
    /// the others' rows from being shown.
    pub fn settled(&self, v: ListView, fleet: bool) -> bool {
        self.data.loaded(v) || (fleet && self.data.reconnecting(v))
    }

    /// What its agent's Lease says at `now` (`lease` as configured).
    pub fn leader_state(&self, lease: &crate::store::ObjKey, now: Timestamp) -> LeaderState {
        self.data.leader_state(lease, now)
    }
}
