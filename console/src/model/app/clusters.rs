//! The fleet as the app reads it: whether more than one cluster is
//! shown, finding a cluster by its [`crate::model::ClusterId`], and each
//! cluster's agent and status (one [`crate::model::Cluster`] each).

use super::App;
use crate::model::data::LeaderState;
use crate::model::fleet::Cluster;
use crate::store::ClusterId;

/// The fleet.
impl App {
    /// Whether more than one cluster is shown (the `CLUSTER` column).
    pub fn fleet(&self) -> bool {
        self.clusters.len() > 1
    }

    /// The cluster `id`, if it is one of the fleet.
    pub fn cluster(&self, id: &ClusterId) -> Option<&Cluster> {
        self.clusters.iter().find(|c| c.id == *id)
    }

    /// The position of cluster `id`.
    pub fn cluster_index(&self, id: &ClusterId) -> Option<usize> {
        self.clusters.iter().position(|c| c.id == *id)
    }

    /// Every cluster's id, in order.
    pub fn cluster_ids(&self) -> Vec<ClusterId> {
        self.clusters.iter().map(|c| c.id.clone()).collect()
    }

    /// The one cluster, when there is exactly one (never a pick among
    /// several).
    pub fn single(&self) -> Option<&Cluster> {
        match self.clusters.as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }

    /// The contexts shown, as one line (`a,b,c`).
    pub fn contexts_label(&self) -> String {
        self.clusters
            .iter()
            .map(|c| c.id.shown())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// What the watchers of cluster `i` tag their events with now.
    pub fn origin_of(&self, i: usize) -> crate::model::Origin {
        crate::model::Origin {
            cluster: self.clusters[i].id.clone(),
            generation: self.session.generation,
        }
    }

    /// Whether the agent is known not to run in cluster `c`.
    pub fn stale_status(&self, c: &Cluster) -> bool {
        matches!(
            c.leader_state(&self.session.agent_lease, self.now),
            LeaderState::Expired(_) | LeaderState::NoLease
        )
    }
}
