//! [`App`], the state [`crate::model::update`] changes, and its methods
//! by concern, one file each: [`rows`] (the list views' rows: built,
//! counted, selected), [`clusters`] (the fleet), [`switching`] (contexts
//! and scope), [`navigation`] (the screen stack and selections) and
//! [`watching`] (which watches each cluster runs). The parts of the state
//! are the model's own modules (`fleet`, `derived`, `ui`, `session`); this
//! folder holds what joins them, so no part imports the app back.

mod clusters;
mod navigation;
mod rows;
mod switching;
mod watching;

use k8s_openapi::jiff::Timestamp;

use crate::model::{Cluster, ClusterId, Derived, LeaderState, Scope, Session, Ui};

/// The app state.
#[derive(Debug)]
pub struct App {
    /// The clusters shown, each with what its watches told and its rows;
    /// never empty.
    pub clusters: Vec<Cluster>,
    /// The list views' rows, merged over the clusters.
    pub derived: Derived,
    /// What the user sees and does.
    pub ui: Ui,
    /// Which contexts and scope, and which connection generation.
    pub session: Session,
    /// The clock (ages, the agent's Lease, watch grace periods).
    pub now: Timestamp,
}

impl App {
    /// A fresh state on one context.
    pub fn new(context: impl Into<String>, scope: Scope, now: Timestamp) -> Self {
        Self::of_fleet(vec![ClusterId::new(context.into())], scope, now)
    }

    /// A fresh state on these contexts (one or more; an empty list is one
    /// context without a name).
    pub fn of_fleet(clusters: Vec<ClusterId>, scope: Scope, now: Timestamp) -> Self {
        let clusters = if clusters.is_empty() {
            vec![ClusterId::new("")]
        } else {
            clusters
        };
        Self {
            derived: Derived::for_clusters(&clusters),
            clusters: clusters.into_iter().map(Cluster::new).collect(),
            ui: Ui::default(),
            session: Session::new(scope),
            now,
        }
    }

    /// The agent's live leader, with one cluster: the Lease holder while
    /// the lease has not expired (`renewTime + leaseDurationSeconds` is in
    /// the future). `None` in a fleet (each cluster has its own).
    pub fn leader(&self) -> Option<String> {
        match self
            .single()?
            .leader_state(&self.session.agent_lease, self.now)
        {
            LeaderState::Live(h) => Some(h),
            _ => None,
        }
    }

    /// The clusters whose agent is known not to run: what their status
    /// says may be out of date.
    pub fn stale_clusters(&self) -> Vec<&Cluster> {
        self.clusters
            .iter()
            .filter(|c| self.stale_status(c))
            .collect()
    }
}
