//! Rows derived from the [`super::data::Data`] store, per list view, with
//! each view's filter and sort applied and its selection kept on its
//! object across rebuilds.

use crate::rows::{
    self, GrantRow, HandlerRow, NamespaceRow, RetainedRow, RowRef, RuntimeRow, TableData,
};
use crate::store::{Kind, WORKLOAD_KINDS};

use super::App;
use super::screen::{ListView, Screen};

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
    /// Per view: when (seconds) it was last rebuilt off screen for its tab
    /// count ([`App::refresh_counts`]).
    pub counted_at: [Option<i64>; 5],
}

/// How often a tab off screen is rebuilt for its count at most: Handlers
/// and Retained run the analysis over every classed workload, so a view
/// not shown follows a busy cluster a few seconds behind rather than
/// doubling the cost of every frame.
pub const COUNT_REFRESH_SECONDS: i64 = 5;

impl App {
    /// The table of a view (call [`App::refresh`] first).
    pub fn table(&self, v: ListView) -> &TableData {
        &self.derived.tables[v.index()]
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
        self.derived.built[v.index()] != Some(self.data.store.stamp(v.inputs()))
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
            if self.stale(v) && self.data.loaded(v) {
                let id = self.selected_id(v);
                self.rebuild(v);
                self.apply_keeping(v, id);
            }
        }
        self.refresh_counts();
    }

    /// Gives every tab its count once its inputs are loaded, even off
    /// screen (issue 31): Handlers and Retained read the same kinds, so a
    /// visit to one (or the plan) counts the other too. No watch is started
    /// for a count: before any screen needs the workloads and Pods (the
    /// bulk of a cluster's memory, issue 32) the tab says `(…)`.
    fn refresh_counts(&mut self) {
        let live = self.live_views();
        let now = self.now.as_second();
        for v in ListView::TABS {
            let recent =
                self.derived.counted_at[v.index()].is_some_and(|t| now - t < COUNT_REFRESH_SECONDS);
            if live.contains(&v) || recent || !self.stale(v) || !self.data.loaded(v) {
                continue;
            }
            self.derived.counted_at[v.index()] = Some(now);
            let id = self.selected_id(v);
            self.rebuild(v);
            self.apply_keeping(v, id);
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
    pub(super) fn forget_rows(&mut self, v: ListView) {
        let d = &mut self.derived;
        d.built[v.index()] = None;
        d.counted_at[v.index()] = None;
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
        self.current_list().map(|v| self.data.loaded(v))
    }

    /// How complete the screen is: see [`Completion::completed_by`].
    pub fn completion(&self) -> Completion {
        Completion {
            loaded: self.current_loaded(),
            synced: self.data.connection().is_none(),
        }
    }

    fn rebuild(&mut self, v: ListView) {
        let stamp = self.data.store.stamp(v.inputs());
        let (store, now, d) = (&self.data.store, self.now, &mut self.derived);
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
}

/// How complete the screen is before or after a batch of messages: the list
/// view's kinds listed, and no watch still syncing (or reconnecting: the
/// status bar says so until every watch runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    loaded: Option<bool>,
    synced: bool,
}

impl Completion {
    /// Whether going from `self` to `after` completes the screen: its last
    /// list came in, or the last watch still syncing caught up. That frame
    /// is what the user waits for, so the event loop draws it at once
    /// instead of coalescing it with later watch events (a frame due only
    /// 50 ms after the previous one: issue 32 measured a fixed ~60 ms on
    /// the first complete Grants frame).
    pub fn completed_by(self, after: Completion) -> bool {
        (self.loaded == Some(false) && after.loaded == Some(true)) || (!self.synced && after.synced)
    }
}
