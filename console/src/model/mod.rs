//! The app state, owned by one task and changed only by [`update`], a pure
//! function of the state and one [`Msg`] (a key, a paste, a watch event, a
//! tick, a connection made, the layout of a frame drawn). It returns
//! [`Effect`]s the I/O side carries out (start watches, connect, quit). It
//! builds its tables from [`crate::rows`] and the [`crate::store`]; it
//! knows nothing of drawing.
//!
//! The state, [`App`], has four parts, each in its own file, and the
//! clock: [`fleet`] (the clusters shown, each with its [`data`] — the
//! reflector-like copy of the cluster and its watches — and its rows),
//! [`derived`] (the rows of each list view, merged over the clusters),
//! [`ui`] (navigation, input, overlays, layout) and [`session`] (contexts,
//! scope, generation). `App` and its methods live in `app/`, which joins
//! the parts: no part names the app, so none imports it back. [`msg`]
//! holds what comes in and goes out, [`screen`] what can be shown,
//! [`viewport`] what the last frame measured; [`keys`] handles keys by
//! mode through the one table of [`keymap`]; [`commands`] lists the `:`
//! commands.

mod app;
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

#[cfg(test)]
mod fleet_tests;
#[cfg(test)]
mod switch_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod watch_tests;

pub use crate::rows::{Located, Merged, RowId, RowRef, RowTone, TableData};
pub use crate::store::{ClusterId, Kind, ObjKey, Object, Store};
pub use app::App;
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
