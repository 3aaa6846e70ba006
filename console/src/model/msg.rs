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
use crate::store::{ClusterId, Kind, ObjKey, Object};

use super::screen::Scope;
use super::viewport::Viewport;
use super::watches::WatchKey;

/// Where an answer of the I/O side comes from: a cluster, and the
/// connection generation its watchers or request were started under
/// (bumped on every context or namespace switch, so that late answers of
/// an older connection are dropped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub cluster: ClusterId,
    pub generation: u64,
}

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
    /// The contexts asked for with `:ctx` answered (at least one did),
    /// with their connections (made off the UI task); the model adopts
    /// them unless a later `:ctx` superseded the switch.
    Connected {
        /// The contexts asked for, in order.
        asked: Vec<String>,
        /// Every context of the kubeconfig.
        contexts: Vec<String>,
        /// The connections made, each with its context (one that did not
        /// answer yet is among them: its watches retry on their own).
        conns: Vec<(ClusterId, Handover)>,
        /// Contexts that did not answer, or could not be connected at all,
        /// with why.
        problems: Vec<(String, String)>,
    },
    /// No context asked for with `:ctx` could be used; the old ones stay.
    SwitchFailed { asked: Vec<String>, error: String },
    /// Terminal resized.
    Resize,
    /// A frame was drawn: what fitted (page height, scroll limits, list
    /// offsets), for paging and scrolling keys.
    Drawn(Viewport),
    /// Time passed (ages).
    Tick(Timestamp),
    /// A watch event of the whole kind, for the first cluster (fixtures
    /// and tests of one cluster).
    Watch(Kind, WatchEvent),
    /// A watch event from a cluster's watchers; ignored once the app has
    /// switched context or namespace since, once that cluster is no longer
    /// shown, or once that watch was stopped.
    Watched(Origin, WatchKey, WatchEvent),
    /// The retirement review asked for as number `id` finished.
    Reviewed {
        id: u64,
        result: Box<Result<Review, RetireError>>,
    },
    /// A confirmed retirement was carried out (or failed).
    Executed(Box<Result<Outcome, RetireError>>),
    /// The whole object asked for with [`Effect::Fetch`] (`Ok(None)`: it
    /// does not exist).
    Fetched(Origin, Kind, ObjKey, Result<Option<Object>, String>),
}

/// What the I/O side must do after an update.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Review a retirement (permission, reads, dry-run) in `cluster`, with
    /// that cluster's connection and no other; answers with
    /// [`Msg::Reviewed`] of the same `id`.
    Review {
        id: u64,
        cluster: ClusterId,
        action: Action,
        namespace: String,
        name: String,
    },
    /// Carry out a confirmed review in the cluster it was made in
    /// ([`Review::cluster`]), with the connection of `generation` only:
    /// after a switch, nothing is sent. Answers with [`Msg::Executed`].
    Execute {
        generation: u64,
        review: Box<Review>,
    },
    /// Exactly these watches must run in `cluster`: start the missing
    /// ones, stop the others (the app has dropped their data).
    Watch(ClusterId, Vec<WatchKey>),
    /// Drop every watch of every cluster and watch `scope` with the same
    /// clients, as connection `generation`.
    Rescope { scope: Scope, generation: u64 },
    /// Connect to other kubeconfig contexts off the UI task (exec auth
    /// plugins run there too) and check that they answer; reply with
    /// [`Msg::Connected`] or [`Msg::SwitchFailed`].
    Connect { contexts: Vec<String> },
    /// Drop every watch and connection and use those of a
    /// [`Msg::Connected`] from now on, one per cluster, watching `scope` as
    /// connection `generation`.
    Adopt {
        conns: Vec<(ClusterId, Handover)>,
        scope: Scope,
        generation: u64,
    },
    /// Read one whole object of a cluster (the store keeps some kinds
    /// reduced: see [`crate::store::compact`]); answers with
    /// [`Msg::Fetched`].
    Fetch(Origin, Kind, ObjKey),
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
