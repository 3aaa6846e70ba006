//! The app state, owned by one task and changed only by [`update`], a pure
//! function of the state and one [`Msg`] (a key, a paste, a watch event, a
//! tick, a connection made, the layout of a frame drawn). It returns
//! [`Effect`]s the I/O side carries out (start watches, connect, quit). It
//! builds its tables from [`crate::rows`] and the [`crate::store`]; it
//! knows nothing of drawing.
//!
//! The state has five parts, each in its own file: [`fleet`] (the
//! clusters shown, each with its [`data`] — the reflector-like copy of the
//! cluster and its watches — and its rows), [`derived`] (the rows of each
//! list view, merged over the clusters), [`ui`] (navigation, input,
//! overlays, layout) and [`session`] (contexts, scope, generation). [`msg`]
//! holds what comes in and goes out, [`screen`] what can be shown,
//! [`viewport`] what the last frame measured; [`keys`] handles keys by
//! mode through the one table of [`keymap`]; [`commands`] lists the `:`
//! commands.

pub mod commands;
pub mod data;
pub mod derived;
pub mod fleet;
pub mod keymap;
pub mod keys;
pub mod msg;
pub mod screen;
pub mod session;
pub mod ui;
mod update;
pub mod viewport;
pub mod watches;
mod watching;

#[cfg(test)]
mod fleet_tests;
#[cfg(test)]
mod switch_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod watch_tests;

use k8s_openapi::jiff::Timestamp;

pub use crate::rows::{Located, Merged, RowId, RowRef, RowTone, TableData};
pub use crate::store::{ClusterId, Kind, ObjKey, Object, Store};
pub use data::{Data, LeaderState, WatchState};
pub use derived::{ClusterRows, Completion, Derived};
pub use fleet::Cluster;
pub use msg::{Effect, Handover, Msg, Origin, WatchEvent};
pub use screen::{ListView, Scope, Screen};
pub use session::{DEFAULT_AGENT_LEASE, Session};
pub use ui::{ListState, Mode, ReviewState, Ui};
pub use update::update;
pub use viewport::Viewport;
pub use watches::{Filter, WatchKey, WatchSet};

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
