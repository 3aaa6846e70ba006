//! The app state, owned by one task and changed only by [`update`], a pure
//! function of the state and one [`Msg`] (a key, a paste, a watch event, a
//! tick, a connection result). It returns [`Effect`]s the I/O side carries
//! out (start watches, connect, quit). It builds its tables from
//! [`crate::rows`] and the [`crate::store`]; it knows nothing of drawing.

pub mod keymap;
pub mod keys;
pub mod watches;
mod watching;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod watch_tests;

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

use crossterm::event::KeyEvent;
use k8s_openapi::jiff::Timestamp;

pub use crate::rows::{RowRef, RowTone, TableData};
use crate::store::{ANALYSIS_KINDS, Stored, WORKLOAD_KINDS};
pub use crate::store::{Kind, ObjKey, Object, Store};
pub use watches::{Filter, WatchKey, WatchSet};

use crate::rows::{self, GrantRow, HandlerRow, NamespaceRow, RetainedRow, RuntimeRow};

use crate::retire::execute::Outcome;
use crate::retire::{Action, RetireError, Review};

/// A retirement review open in the TUI.
#[derive(Clone, Debug)]
pub enum ReviewState {
    /// Permission check, reads and dry-run in flight.
    Loading {
        /// The action's title.
        title: String,
        /// `NAMESPACE/NAME`.
        target: String,
    },
    /// Shown; the user types the confirmation.
    Ready {
        review: Box<Review>,
        /// Typed so far.
        typed: String,
    },
    /// Confirmed; being sent.
    Running { review: Box<Review>, typed: String },
    /// The review could not be made (RBAC, not found, …).
    Failed {
        title: String,
        target: String,
        error: String,
    },
}

/// Which namespaces are watched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every namespace (`-A`).
    All,
    /// One namespace.
    Namespace(String),
}

impl Scope {
    /// `all` or the namespace name.
    pub fn label(&self) -> &str {
        match self {
            Scope::All => "all",
            Scope::Namespace(n) => n,
        }
    }
}

/// The list views: four tabs and the namespace picker of `:ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ListView {
    Runtimes,
    Grants,
    Handlers,
    Retained,
    Namespaces,
}

impl ListView {
    /// Every list view.
    pub const ALL: [ListView; 5] = [
        ListView::Runtimes,
        ListView::Grants,
        ListView::Handlers,
        ListView::Retained,
        ListView::Namespaces,
    ];

    /// The views with a tab, in tab order (`1`–`4`).
    pub const TABS: [ListView; 4] = [
        ListView::Runtimes,
        ListView::Grants,
        ListView::Handlers,
        ListView::Retained,
    ];

    /// The title.
    pub fn title(self) -> &'static str {
        match self {
            ListView::Runtimes => "Runtimes",
            ListView::Grants => "Grants",
            ListView::Handlers => "Handlers",
            ListView::Retained => "Retained",
            ListView::Namespaces => "Namespaces",
        }
    }

    /// Whether the rows are status the agent writes (stale without it).
    pub fn agent_status(self) -> bool {
        matches!(self, ListView::Runtimes | ListView::Grants)
    }

    /// Index into per-view arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The kinds its rows are built from: a change of any other kind
    /// leaves them as they are.
    pub fn inputs(self) -> &'static [Kind] {
        match self {
            ListView::Runtimes => &[Kind::Runtime],
            // Namespaces: the warning about shared project/environment.
            ListView::Grants => &[Kind::RuntimeGrant, Kind::Namespace],
            ListView::Handlers | ListView::Retained => ANALYSIS_KINDS,
            ListView::Namespaces => &[Kind::Namespace],
        }
    }

    /// Whether its rows are rebuilt even while it is not shown: one row per
    /// object, cheap, and read by the tab bar and the status bar. Handlers
    /// and Retained run the analysis over every workload and are rebuilt
    /// only on screen.
    pub fn always_live(self) -> bool {
        matches!(self, ListView::Runtimes | ListView::Grants)
    }
}

/// One screen of the navigation stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Screen {
    /// A table.
    List(ListView),
    /// The live rollout of one Runtime.
    Rollout(ObjKey),
    /// YAML and events of one object.
    Details(Kind, ObjKey),
    /// The plan of the agent's pending grants file (`:plan`).
    Plan,
}

impl Screen {
    /// The kinds this screen needs watched.
    pub fn kinds(&self) -> Vec<Kind> {
        match self {
            Screen::List(ListView::Runtimes) => vec![Kind::Runtime],
            Screen::List(ListView::Grants) => vec![Kind::RuntimeGrant],
            Screen::List(ListView::Namespaces) => vec![Kind::Namespace],
            Screen::List(ListView::Handlers | ListView::Retained) => ANALYSIS_KINDS.to_vec(),
            Screen::Rollout(_) => vec![
                Kind::Runtime,
                Kind::Deployment,
                Kind::ReplicaSet,
                Kind::Pod,
                Kind::Event,
            ],
            Screen::Details(kind, _) => {
                let mut v = vec![*kind, Kind::Event];
                if *kind == Kind::RuntimeClass {
                    v.extend_from_slice(WORKLOAD_KINDS);
                }
                v
            }
            Screen::Plan => {
                let mut v = vec![Kind::PendingGrantsFile, Kind::Runtime, Kind::Namespace];
                v.extend_from_slice(ANALYSIS_KINDS);
                v
            }
        }
    }
}

impl Screen {
    /// The watches this screen needs in `scope`: the whole kinds of
    /// [`Screen::kinds`], except that a Rollout and a Details screen watch
    /// only their object (see [`watches`]).
    pub fn watches(&self, scope: &Scope) -> Vec<WatchKey> {
        match self {
            Screen::Rollout((ns, name)) => {
                // The agent's selector of the Runtime's server pods: on its
                // Deployment, copied to the ReplicaSets and their Pods.
                let labels = berth_shared::render::labels::selector(name)
                    .into_iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",");
                let mut v = vec![WatchKey::all(Kind::Runtime)];
                for kind in [Kind::Deployment, Kind::ReplicaSet, Kind::Pod] {
                    v.push(WatchKey::select(kind, ns, &labels, ""));
                }
                // Events about any of them: no selector names a set of
                // objects, so the namespace's (the whole kind when the
                // console watches only that namespace anyway).
                v.push(match scope {
                    Scope::Namespace(n) if n == ns => WatchKey::all(Kind::Event),
                    _ => WatchKey::select(Kind::Event, ns, "", ""),
                });
                v
            }
            // Watched by a fixed name already (the agent's).
            Screen::Details(kind @ (Kind::Lease | Kind::PendingGrantsFile), _) => {
                vec![WatchKey::all(*kind)]
            }
            Screen::Details(kind, (ns, name)) => {
                let mut v = vec![WatchKey::select(
                    *kind,
                    ns,
                    "",
                    &format!("metadata.name={name}"),
                )];
                // Events live in the object's namespace; the Details screen
                // shows none for cluster-scoped objects.
                if kind.namespaced() {
                    v.push(WatchKey::select(
                        Kind::Event,
                        ns,
                        "",
                        &format!(
                            "involvedObject.kind={},involvedObject.name={name}",
                            kind.label()
                        ),
                    ));
                }
                // The class's handler row reads every workload.
                if *kind == Kind::RuntimeClass {
                    v.extend(WORKLOAD_KINDS.iter().map(|k| WatchKey::all(*k)));
                }
                v
            }
            other => other.kinds().into_iter().map(WatchKey::all).collect(),
        }
    }
}

/// Selection, scroll, sort and filter of one list view.
#[derive(Clone, Debug, Default)]
pub struct ListState {
    /// Selected position in `visible`.
    pub selected: usize,
    /// First visible position (kept by the drawing code).
    pub offset: Cell<usize>,
    /// Selected column (for sorting).
    pub column: usize,
    /// `(column, descending)`.
    pub sort: Option<(usize, bool)>,
    /// Filter text.
    pub filter: String,
}

/// Input mode.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Keys navigate.
    #[default]
    Normal,
    /// `:` command line.
    Command {
        /// Typed text (without the colon).
        input: String,
        /// Candidates of the last Tab and which one is shown.
        completion: Option<(Vec<String>, usize)>,
    },
    /// `/` filter line (edits the current list's filter live).
    Filter,
}

/// State of one watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchState {
    /// Started, initial list not finished.
    Connecting,
    /// Initial list done, watching.
    Synced,
    /// The watch failed and is retrying.
    Reconnecting(String),
    /// The apiserver refuses it (no rights) or does not serve the resource.
    Denied(String),
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
    /// The context asked for with `:ctx` answered: the I/O side has
    /// switched to it.
    Switched {
        context: String,
        /// Every context of the kubeconfig.
        contexts: Vec<String>,
    },
    /// The context asked for with `:ctx` could not be used; the old one
    /// stays.
    SwitchFailed { context: String, error: String },
    /// Terminal resized.
    Resize,
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
    /// Drop every watch and watch these namespaces with the same client.
    Rescope(Scope),
    /// Connect to another kubeconfig context off the UI task (exec auth
    /// plugins run there too) and check that it answers; reply with
    /// [`Msg::Switched`] or [`Msg::SwitchFailed`].
    Connect { context: String },
    /// Read one whole object (the store keeps some kinds reduced: see
    /// [`crate::store::compact`]); answers with [`Msg::Fetched`].
    Fetch(Kind, ObjKey),
    /// Leave the app.
    Quit,
}

/// Rows derived from the store. A view is rebuilt only when one of the
/// kinds it reads changed ([`ListView::inputs`]) and only while it is live
/// ([`App::live_views`]); the others keep their last rows, stale, until
/// shown again.
#[derive(Clone, Debug, Default)]
pub struct Derived {
    /// Per view ([`ListView::index`]): the [`Store::stamp`] of its inputs
    /// its rows were built from (`None`: never built).
    pub built: [Option<u64>; 5],
    pub runtimes: Vec<RuntimeRow>,
    pub grants: Vec<GrantRow>,
    pub handlers: Vec<HandlerRow>,
    pub retained: Vec<RetainedRow>,
    pub namespaces: Vec<NamespaceRow>,
    /// The tables, indexed by [`ListView`].
    pub tables: [TableData; 5],
}

/// The app state.
#[derive(Debug)]
pub struct App {
    pub store: Store,
    /// Navigation stack; never empty, the last is shown.
    pub screens: Vec<Screen>,
    /// Per list view state, indexed by [`ListView`].
    pub lists: [ListState; 5],
    pub mode: Mode,
    pub show_help: bool,
    /// First line of help shown (help scrolls when it does not fit).
    pub help_scroll: usize,
    /// Largest useful help scroll at the last draw.
    pub help_scroll_max: Cell<usize>,
    /// A `:ctx` switch in flight (the context asked for).
    pub switching: Option<String>,
    /// Draw without colours (`--no-color`, `NO_COLOR`): emphasis stays.
    pub no_color: bool,
    /// Watches whose first list completed since they started: until then
    /// their counts are unknown, not zero.
    pub synced: BTreeSet<WatchKey>,
    pub context: String,
    /// Contexts of the kubeconfig (for `:ctx` completion).
    pub contexts: Vec<String>,
    pub scope: Scope,
    pub read_only: bool,
    pub watches: BTreeMap<WatchKey, WatchState>,
    /// Objects of (re)lists in progress, as the store keeps them.
    pub pending: BTreeMap<WatchKey, Vec<Stored>>,
    /// The keys each scoped watch holds in the store (see [`watches`]).
    pub held: BTreeMap<WatchKey, BTreeSet<ObjKey>>,
    /// The watches asked for, with their grace periods.
    pub watch_set: WatchSet,
    /// Watches stopped since the last switch: their late events (still
    /// queued when they stopped) are ignored.
    pub stopped: BTreeSet<WatchKey>,
    pub now: Timestamp,
    /// A one-line message (errors of commands).
    pub flash: Option<String>,
    pub quit: bool,
    /// Something changed since the last draw.
    pub dirty: bool,
    pub derived: Derived,
    /// Scroll of the details / rollout screen.
    pub scroll: usize,
    /// `(namespace, name)` of the agent's leader-election Lease.
    pub agent_lease: ObjKey,
    /// Rows of the table area at the last draw (for paging).
    pub page: Cell<usize>,
    /// Largest useful scroll of the details / rollout screen at the last
    /// draw (content lines minus visible lines).
    pub scroll_max: Cell<usize>,
    /// Bumped on every context/namespace switch: watch events of older
    /// connections still in flight are dropped.
    pub generation: u64,
    /// The retirement review shown, if any.
    pub review: Option<ReviewState>,
    /// The whole object the Details screen shows, once fetched (kinds the
    /// store keeps reduced), or why it could not be read.
    pub details: Option<(Kind, ObjKey, Result<Option<Object>, String>)>,
}

/// Namespace and name of the agent's Lease unless configured otherwise.
pub const DEFAULT_AGENT_LEASE: (&str, &str) = ("berth-system", "berth-agent");

impl App {
    /// A fresh state.
    pub fn new(context: impl Into<String>, scope: Scope, now: Timestamp) -> Self {
        Self {
            store: Store::default(),
            screens: vec![Screen::List(ListView::Runtimes)],
            lists: Default::default(),
            mode: Mode::Normal,
            show_help: false,
            help_scroll: 0,
            help_scroll_max: Cell::new(0),
            switching: None,
            no_color: false,
            synced: BTreeSet::new(),
            context: context.into(),
            contexts: Vec::new(),
            scope,
            read_only: false,
            watches: BTreeMap::new(),
            pending: BTreeMap::new(),
            held: BTreeMap::new(),
            watch_set: WatchSet::default(),
            stopped: BTreeSet::new(),
            now,
            flash: None,
            quit: false,
            dirty: true,
            derived: Derived::default(),
            scroll: 0,
            agent_lease: (
                DEFAULT_AGENT_LEASE.0.to_string(),
                DEFAULT_AGENT_LEASE.1.to_string(),
            ),
            page: Cell::new(20),
            scroll_max: Cell::new(usize::MAX),
            generation: 0,
            review: None,
            details: None,
        }
    }

    /// The screen shown.
    pub fn screen(&self) -> &Screen {
        // `screens` is never empty; fall back to the first view anyway.
        self.screens
            .last()
            .unwrap_or(&Screen::List(ListView::Runtimes))
    }

    /// The list state of a view.
    pub fn list(&self, v: ListView) -> &ListState {
        &self.lists[v.index()]
    }

    fn list_mut(&mut self, v: ListView) -> &mut ListState {
        &mut self.lists[v.index()]
    }

    /// The table of a view (call [`App::refresh`] first).
    pub fn table(&self, v: ListView) -> &TableData {
        &self.derived.tables[v.index()]
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
        let lease = WatchKey::all(Kind::Lease);
        let lease_state = self.watches.get(&lease);
        if !self.synced.contains(&lease) || matches!(lease_state, Some(WatchState::Denied(_))) {
            return LeaderState::Unknown;
        }
        let Some(spec) = self
            .store
            .leases
            .get(&self.agent_lease)
            .and_then(|l| l.spec.as_ref())
        else {
            return LeaderState::NoLease;
        };
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let expires = spec
            .renew_time
            .as_ref()
            .map(|t| t.0.as_second() + i64::from(spec.lease_duration_seconds.unwrap_or(0)));
        match (holder, expires) {
            (Some(h), Some(e)) if e > self.now.as_second() => LeaderState::Live(h),
            (h, _) => LeaderState::Expired(h),
        }
    }

    /// The agent is known not to be running: what its status says may be
    /// out of date.
    pub fn status_may_be_stale(&self) -> bool {
        matches!(
            self.leader_state(),
            LeaderState::Expired(_) | LeaderState::NoLease
        )
    }

    /// Whether the first list of every kind a view needs has completed (or
    /// was refused): until then the view's count is unknown.
    pub fn loaded(&self, v: ListView) -> bool {
        Screen::List(v).kinds().into_iter().all(|k| {
            let k = WatchKey::all(k);
            self.synced.contains(&k) || matches!(self.watches.get(&k), Some(WatchState::Denied(_)))
        })
    }

    /// Whether a watch this view needs is failing: its rows are the last
    /// data known, drawn dimmed until the watch runs again.
    pub fn reconnecting(&self, v: ListView) -> bool {
        Screen::List(v).kinds().into_iter().any(|k| {
            matches!(
                self.watches.get(&WatchKey::all(k)),
                Some(WatchState::Reconnecting(_))
            )
        })
    }

    /// Watches the apiserver refuses, with the error.
    pub fn denied(&self) -> Vec<(Kind, &str)> {
        self.watches
            .iter()
            .filter_map(|(k, s)| match s {
                WatchState::Denied(e) => Some((k.kind, e.as_str())),
                _ => None,
            })
            .collect()
    }

    /// Connection summary: `None` when every watch is synced (or denied),
    /// else the worst state with its kind.
    pub fn connection(&self) -> Option<(Kind, &WatchState)> {
        self.watches
            .iter()
            .find(|(_, s)| matches!(s, WatchState::Reconnecting(_)))
            .or_else(|| {
                self.watches
                    .iter()
                    .find(|(_, s)| matches!(s, WatchState::Connecting))
            })
            .map(|(k, s)| (k.kind, s))
    }

    /// The views whose rows must be current: the one on screen, the cheap
    /// ones of [`ListView::always_live`], and Handlers while a RuntimeClass's
    /// details (which quote its handler row) are shown.
    pub fn live_views(&self) -> Vec<ListView> {
        let mut v: Vec<ListView> = ListView::ALL
            .into_iter()
            .filter(|v| v.always_live())
            .collect();
        match self.screen() {
            Screen::List(l) => v.push(*l),
            Screen::Details(Kind::RuntimeClass, _) => v.push(ListView::Handlers),
            _ => {}
        }
        v.sort();
        v.dedup();
        v
    }

    /// Whether a view's rows are older than the kinds they are built from.
    pub fn stale(&self, v: ListView) -> bool {
        self.derived.built[v.index()] != Some(self.store.stamp(v.inputs()))
    }

    /// Rebuilds the rows of every live view whose inputs changed, then
    /// re-applies its filter and sort, keeping the selection on its object.
    /// Ages are not part of it: rows hold timestamps and the drawing turns
    /// them into ages, so time passing rebuilds nothing. Cheap when nothing
    /// changed. A view is not built until every kind it needs has listed:
    /// the analysis over half the workloads would be wrong (a class "safe
    /// to remove" before its pods are known) and is the costly part of the
    /// first frame.
    pub fn refresh(&mut self) {
        for v in self.live_views() {
            if self.stale(v) && self.loaded(v) {
                let id = self.selected_id(v);
                self.rebuild(v);
                self.apply_keeping(v, id);
            }
        }
    }

    /// Rebuilds every view, live or not (tests, and callers that show
    /// several views from one store).
    pub fn refresh_all(&mut self) {
        for v in ListView::ALL {
            if self.stale(v) {
                let id = self.selected_id(v);
                self.rebuild(v);
                self.apply_keeping(v, id);
            }
        }
    }

    /// Drops a view's rows: it shows loading until rebuilt.
    fn forget_rows(&mut self, v: ListView) {
        let d = &mut self.derived;
        d.built[v.index()] = None;
        d.tables[v.index()] = TableData::default();
        match v {
            ListView::Runtimes => d.runtimes = Vec::new(),
            ListView::Grants => d.grants = Vec::new(),
            ListView::Handlers => d.handlers = Vec::new(),
            ListView::Retained => d.retained = Vec::new(),
            ListView::Namespaces => d.namespaces = Vec::new(),
        }
    }

    /// Whether the list view shown (if one is) has everything it needs
    /// listed: the event loop draws the frame that completes it at once.
    pub fn current_loaded(&self) -> Option<bool> {
        self.current_list().map(|v| self.loaded(v))
    }

    fn rebuild(&mut self, v: ListView) {
        let stamp = self.store.stamp(v.inputs());
        let (store, now, d) = (&self.store, self.now, &mut self.derived);
        d.built[v.index()] = Some(stamp);
        d.tables[v.index()] = match v {
            ListView::Runtimes => {
                d.runtimes = rows::runtime_rows(store, now);
                TableData::of(&d.runtimes)
            }
            ListView::Grants => {
                d.grants = rows::grant_rows(store, now);
                TableData::of(&d.grants)
            }
            ListView::Namespaces => {
                d.namespaces = rows::namespace_rows(store, now);
                TableData::of(&d.namespaces)
            }
            ListView::Handlers | ListView::Retained => {
                let needs_workloads = store.count(Kind::RuntimeClass) > 0
                    || WORKLOAD_KINDS.iter().any(|k| store.count(*k) > 0);
                if v == ListView::Handlers {
                    d.handlers = if needs_workloads {
                        rows::handler_rows(store)
                    } else {
                        Vec::new()
                    };
                    TableData::of(&d.handlers)
                } else {
                    d.retained = if needs_workloads {
                        rows::retained_rows(store)
                    } else {
                        Vec::new()
                    };
                    TableData::of(&d.retained)
                }
            }
        };
    }

    /// Re-filters and re-sorts one table; the selection stays on the same
    /// object when it is still shown.
    pub fn reapply(&mut self, v: ListView) {
        let id = self.selected_id(v);
        self.apply_keeping(v, id);
    }

    fn apply_keeping(&mut self, v: ListView, id: Option<String>) {
        let (filter, sort) = {
            let l = self.list(v);
            (l.filter.clone(), l.sort)
        };
        let t = &mut self.derived.tables[v.index()];
        t.apply(&filter, sort);
        let len = t.visible.len();
        let found = id.and_then(|id| t.position(&id));
        let l = self.list_mut(v);
        match found {
            Some(pos) => l.selected = pos,
            // Gone (deleted, filtered out): stay at the same height.
            None => l.selected = l.selected.min(len.saturating_sub(1)),
        }
    }

    /// The identity (uid) of the selected row of a list view.
    pub fn selected_id(&self, v: ListView) -> Option<String> {
        self.table(v)
            .id_at(self.list(v).selected)
            .map(str::to_string)
    }

    /// The reference of the selected row of a list view.
    pub fn selected_ref(&self, v: ListView) -> Option<RowRef> {
        let t = self.table(v);
        let i = *t.visible.get(self.list(v).selected)?;
        t.refs.get(i).cloned()
    }

    /// The list view shown, if the screen is one.
    pub fn current_list(&self) -> Option<ListView> {
        match self.screen() {
            Screen::List(v) => Some(*v),
            _ => None,
        }
    }

    /// Pushes a screen (or replaces the top for list views) and asks for
    /// its watches.
    pub fn open(&mut self, s: Screen) -> Vec<Effect> {
        self.scroll = 0;
        match s {
            // The namespace picker opens on top: Esc goes back to the view.
            Screen::List(ListView::Namespaces) => {
                if self.screen() != &s {
                    self.screens.push(s);
                }
            }
            Screen::List(_) => {
                self.screens.clear();
                self.screens.push(s);
            }
            other => {
                if self.screen() != &other {
                    self.screens.push(other);
                }
            }
        }
        self.dirty = true;
        let mut effects = vec![self.watch_effect()];
        effects.extend(self.fetch_details());
        effects
    }

    /// Asks for the whole object of the Details screen shown, if its kind
    /// is kept reduced in the store.
    fn fetch_details(&mut self) -> Option<Effect> {
        match self.screen() {
            Screen::Details(kind, key) if crate::store::compact::compacted(*kind) => {
                let (kind, key) = (*kind, key.clone());
                if self
                    .details
                    .as_ref()
                    .is_none_or(|d| (d.0, &d.1) != (kind, &key))
                {
                    self.details = None;
                }
                Some(Effect::Fetch(kind, key))
            }
            _ => None,
        }
    }

    /// Forgets every object and watch (after a context or scope switch).
    pub fn reset_data(&mut self) {
        self.generation += 1;
        self.store = Store::default();
        self.watches.clear();
        self.synced.clear();
        self.pending.clear();
        self.held.clear();
        self.watch_set = WatchSet::default();
        self.stopped.clear();
        self.derived = Derived::default();
        self.details = None;
        for l in &mut self.lists {
            l.selected = 0;
            l.offset.set(0);
        }
        self.dirty = true;
    }

    /// Every namespace of the Namespace list and seen in the store (for
    /// `:ns` completion).
    pub fn namespaces(&self) -> Vec<String> {
        let mut set: BTreeSet<String> = BTreeSet::new();
        set.extend(self.store.namespaces.keys().map(|k| k.1.clone()));
        set.extend(self.store.runtimes.keys().map(|k| k.0.clone()));
        set.extend(self.store.pods.keys().map(|k| k.0.clone()));
        set.extend(self.store.deployments.keys().map(|k| k.0.clone()));
        if let Scope::Namespace(n) = &self.scope {
            set.insert(n.clone());
        }
        set.remove("");
        set.into_iter().collect()
    }
}

/// Applies one message. Pure: no I/O, the caller carries out the effects.
pub fn update(app: &mut App, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Key(k) => keys::on_key(app, k),
        Msg::Paste(text) => keys::on_paste(app, &text),
        Msg::Switched { context, contexts } => {
            if app.switching.as_deref() != Some(context.as_str()) {
                // Superseded by a later :ctx; the I/O side ignores it too.
                return Vec::new();
            }
            app.switching = None;
            app.context = context;
            app.contexts = contexts;
            // The namespace scope is kept, as before the switch.
            app.reset_data();
            app.flash = Some(format!(
                "switched to {}",
                berth_shared::sanitize::short(&app.context)
            ));
            vec![app.watch_effect()]
        }
        Msg::SwitchFailed { context, error } => {
            if app.switching.as_deref() == Some(context.as_str()) {
                app.switching = None;
            }
            app.dirty = true;
            app.flash = Some(format!(
                "cannot switch to {}: {}; still on {}",
                berth_shared::sanitize::short(&context),
                berth_shared::sanitize::short(&error),
                berth_shared::sanitize::short(&app.context)
            ));
            Vec::new()
        }
        Msg::Resize => {
            app.dirty = true;
            Vec::new()
        }
        Msg::Tick(now) => {
            let before = app.now.as_second();
            app.now = now;
            if now.as_second() - before >= 1 {
                app.dirty = true;
            }
            // Watches whose grace period ran out stop here.
            if app.update_watches() {
                vec![Effect::Watch(app.watch_set.running())]
            } else {
                Vec::new()
            }
        }
        Msg::Watch(kind, ev) => {
            watching::on_watch(app, WatchKey::all(kind), ev);
            Vec::new()
        }
        Msg::Watched(generation, key, ev) => {
            if generation != app.generation || app.stopped.contains(&key) {
                return Vec::new();
            }
            let kind = key.kind;
            // The object shown whole changed: read it again.
            let shown = match (&ev, app.screen()) {
                (WatchEvent::Apply(o), Screen::Details(k, key)) => *k == kind && o.key() == *key,
                _ => false,
            };
            watching::on_watch(app, key, ev);
            if shown {
                app.fetch_details().into_iter().collect()
            } else {
                Vec::new()
            }
        }
        Msg::Fetched(generation, kind, key, result) => {
            if generation == app.generation
                && matches!(app.screen(), Screen::Details(k, sk) if *k == kind && *sk == key)
            {
                app.details = Some((kind, key, result));
                app.dirty = true;
            }
            Vec::new()
        }
        Msg::Reviewed(result) => {
            app.dirty = true;
            if let Some(ReviewState::Loading { title, target }) = app.review.take() {
                app.scroll = 0;
                app.review = Some(match *result {
                    Ok(review) => ReviewState::Ready {
                        review: Box::new(review),
                        typed: String::new(),
                    },
                    Err(e) => ReviewState::Failed {
                        title,
                        target,
                        error: e.to_string(),
                    },
                });
            }
            Vec::new()
        }
        Msg::Executed(result) => {
            app.dirty = true;
            app.review = None;
            app.flash = Some(match *result {
                Ok(o) => match o.event_error {
                    None => o.message,
                    Some(e) => format!("{} (the Event could not be recorded: {e})", o.message),
                },
                Err(e) => e.to_string(),
            });
            Vec::new()
        }
    }
}

/// The agent's leader as its Lease tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaderState {
    /// Not known (the Lease is not listed yet, or cannot be read).
    Unknown,
    /// There is no Lease: no agent has ever led (or it was removed).
    NoLease,
    /// The Lease expired: the last holder, if any, stopped renewing it.
    Expired(Option<String>),
    /// The holder renews the Lease.
    Live(String),
}
