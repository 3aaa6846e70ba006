//! The app state, owned by one task and changed only by [`update`], a pure
//! function of the state and one [`Msg`] (a key, a paste, a watch event, a
//! tick, a connection made, the layout of a frame drawn). It returns
//! [`Effect`]s the I/O side carries out (start watches, connect, quit). It
//! builds its tables from [`crate::rows`] and the [`crate::store`]; it
//! knows nothing of drawing.
//!
//! The state has four parts, each in its own file: [`data`] (the
//! reflector-like copy of the cluster and its watches), [`derived`] (the
//! rows of each list view), [`ui`] (navigation, input, overlays, layout)
//! and [`session`] (context, scope, generation). [`msg`] holds what comes
//! in and goes out, [`screen`] what can be shown, [`viewport`] what the
//! last frame measured; [`keys`] handles keys by
//! mode through the one table of [`keymap`]; [`commands`] lists the `:`
//! commands.

pub mod commands;
pub mod data;
pub mod derived;
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
mod switch_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod watch_tests;

use k8s_openapi::jiff::Timestamp;

pub use crate::rows::{RowRef, RowTone, TableData};
pub use crate::store::{Kind, ObjKey, Object, Store};
pub use data::{Data, LeaderState, WatchState};
pub use derived::{Completion, Derived};
pub use msg::{Effect, Handover, Msg, WatchEvent};
pub use screen::{ListView, Scope, Screen};
pub use session::{DEFAULT_AGENT_LEASE, Session};
pub use ui::{ListState, Mode, ReviewState, Ui};
pub use update::update;
pub use viewport::Viewport;
pub use watches::{Filter, WatchKey, WatchSet};

/// The app state.
#[derive(Debug)]
pub struct App {
    /// What the watches told.
    pub data: Data,
    /// Rows built from `data` for the list views.
    pub derived: Derived,
    /// What the user sees and does.
    pub ui: Ui,
    /// Which context and scope, and which connection generation.
    pub session: Session,
    /// The clock (ages, the agent's Lease, watch grace periods).
    pub now: Timestamp,
}

impl App {
    /// A fresh state.
    pub fn new(context: impl Into<String>, scope: Scope, now: Timestamp) -> Self {
        Self {
            data: Data::default(),
            derived: Derived::default(),
            ui: Ui::default(),
            session: Session::new(context.into(), scope),
            now,
        }
    }

    /// The agent's live leader: the Lease holder while the lease has not
    /// expired (`renewTime + leaseDurationSeconds` is in the future).
    pub fn leader(&self) -> Option<String> {
        match self.leader_state() {
            LeaderState::Live(h) => Some(h),
            _ => None,
        }
    }

    /// What the agent's Lease says about its leader.
    pub fn leader_state(&self) -> LeaderState {
        self.data.leader_state(&self.session.agent_lease, self.now)
    }

    /// The agent is known not to be running: what its status says may be
    /// out of date.
    pub fn status_may_be_stale(&self) -> bool {
        matches!(
            self.leader_state(),
            LeaderState::Expired(_) | LeaderState::NoLease
        )
    }
}
