//! The model's inputs and outputs: every [`Msg`] that can change the state
//! (keys, watch events, answers of the I/O side, layout measured by
//! drawing) and every [`Effect`] the I/O side carries out for it
//! (`run::Effects::perform`).

use std::any::Any;
use std::sync::Arc;

use crossterm::event::KeyEvent;
use k8s_openapi::jiff::Timestamp;

use crate::retire::execute::Outcome;
use crate::retire::{Action, RetireError, Review};
use crate::store::{Kind, ObjKey, Object};

use super::screen::Scope;
use super::viewport::Viewport;
use super::watches::WatchKey;

/// A watch event for one kind (what the watcher task sends).
#[derive(Clone, Debug)]
pub enum WatchEvent {
    /// A (re)list starts.
    Init,
    /// An object of the (re)list.
    InitApply(Object),
    /// The (re)list is complete: it replaces what was known.
    InitDone,
    /// Added or modified.
    Apply(Object),
    /// Deleted.
    Delete(Object),
    /// The watch failed; it retries with backoff.
    Error(String),
    /// After an error, the watch runs again, resumed from the last
    /// resourceVersion seen: what is known is current again (no relist).
    Resumed,
    /// The apiserver refused the watch (403) or does not serve the
    /// resource (404); retried slowly.
    Denied(String),
}

/// Everything that can change the state.
#[derive(Clone, Debug)]
pub enum Msg {
    /// A key press.
    Key(KeyEvent),
    /// Text pasted into the terminal (bracketed paste).
    Paste(String),
    /// The context asked for with `:ctx` answered, with its connection
    /// (made off the UI task); the model adopts it unless a later `:ctx`
    /// superseded it.
    Connected {
        context: String,
        /// Every context of the kubeconfig.
        contexts: Vec<String>,
        conn: Handover,
    },
    /// The context asked for with `:ctx` could not be used; the old one
    /// stays.
    SwitchFailed { context: String, error: String },
    /// Terminal resized.
    Resize,
    /// A frame was drawn: what fitted (page height, scroll limits, list
    /// offsets), for paging and scrolling keys.
    Drawn(Viewport),
    /// Time passed (ages).
    Tick(Timestamp),
    /// A watch event of the whole kind (for the current connection).
    Watch(Kind, WatchEvent),
    /// A watch event from the watchers of connection `generation`; ignored
    /// once the app has switched context or namespace since, or once that
    /// watch was stopped.
    Watched(u64, WatchKey, WatchEvent),
    /// A retirement review finished.
    Reviewed(Box<Result<Review, RetireError>>),
    /// A confirmed retirement was carried out (or failed).
    Executed(Box<Result<Outcome, RetireError>>),
    /// The whole object asked for with [`Effect::Fetch`] (`Ok(None)`: it
    /// does not exist), for the connection of generation `u64`.
    Fetched(u64, Kind, ObjKey, Result<Option<Object>, String>),
}

/// What the I/O side must do after an update.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Review a retirement (permission, reads, dry-run); answers with
    /// [`Msg::Reviewed`].
    Review {
        action: Action,
        namespace: String,
        name: String,
    },
    /// Carry out a confirmed review; answers with [`Msg::Executed`].
    Execute(Box<Review>),
    /// Exactly these watches must run: start the missing ones, stop the
    /// others (the app has dropped their data).
    Watch(Vec<WatchKey>),
    /// Drop every watch and watch `scope` with the same client, as
    /// connection `generation`.
    Rescope { scope: Scope, generation: u64 },
    /// Connect to another kubeconfig context off the UI task (exec auth
    /// plugins run there too) and check that it answers; reply with
    /// [`Msg::Connected`] or [`Msg::SwitchFailed`].
    Connect { context: String },
    /// Drop every watch and use the connection of a [`Msg::Connected`]
    /// from now on, watching `scope` as connection `generation`.
    Adopt {
        conn: Handover,
        scope: Scope,
        generation: u64,
    },
    /// Read one whole object (the store keeps some kinds reduced: see
    /// [`crate::store::compact`]) for connection `u64`; answers with
    /// [`Msg::Fetched`].
    Fetch(u64, Kind, ObjKey),
    /// Leave the app.
    Quit,
}

/// A connection passed through the model untouched: the model decides
/// whether it is adopted ([`Effect::Adopt`]), only the I/O side, which
/// made it, can use it. Opaque because the model sits below the client
/// code (the watch layer) and must not name its types.
#[derive(Clone)]
pub struct Handover(Arc<dyn Any + Send + Sync>);

impl Handover {
    /// Wraps what the I/O side will take back.
    pub fn new<T: Any + Send + Sync>(value: T) -> Self {
        Handover(Arc::new(value))
    }

    /// The wrapped value, if it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

impl std::fmt::Debug for Handover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Handover(..)")
    }
}

impl PartialEq for Handover {
    /// The same handover (a connection has no other identity).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
