//! The list views' rows as the app builds them: which views are live,
//! when a cluster's part of a view is rebuilt (only when its inputs
//! changed), the merged tables, their counts and selections. The rows
//! themselves are [`crate::model::derived`]'s.

use k8s_openapi::jiff::Timestamp;

use super::App;
use crate::model::derived::{COUNT_REFRESH_SECONDS, Completion, headers};
use crate::model::fleet::Cluster;
use crate::model::screen::{ListView, Screen};
use crate::rows::{self, Located, Merged, RowId, TableData};
use crate::store::{Kind, WORKLOAD_KINDS};

impl App {
    /// The table of a view (call [`App::refresh`] first).
    pub fn table(&self, v: ListView) -> &Merged {
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
            Screen::Details(_, Kind::RuntimeClass, _) => v.push(ListView::Handlers),
            _ => {}
        }
        v.sort();
        v.dedup();
        v
    }

    /// Whether cluster `i`'s rows of a view are older than the kinds they
    /// are built from.
    pub fn stale(&self, i: usize, v: ListView) -> bool {
        let c = &self.clusters[i];
        c.rows.built[v.index()] != Some(c.data.store.stamp(v.inputs()))
    }

    /// Whether a view has what it needs to be shown: every cluster has
    /// listed its kinds (in a fleet, or failed before it could: see
    /// [`super::Cluster::settled`]). Until then its count is unknown.
    pub fn loaded(&self, v: ListView) -> bool {
        let fleet = self.fleet();
        self.clusters.iter().all(|c| c.settled(v, fleet))
    }

    /// Whether a view's rows are built for every cluster that has listed
    /// its kinds (its tab shows a count).
    pub fn counted(&self, v: ListView) -> bool {
        self.loaded(v)
            && self
                .clusters
                .iter()
                .all(|c| !c.data.loaded(v) || c.rows.built[v.index()].is_some())
    }

    /// Rebuilds the rows of every live view whose inputs changed in some
    /// cluster (only that cluster's part), then re-applies its filter and
    /// sort, keeping the selection on its object. Ages are not part of it:
    /// rows hold timestamps and the drawing turns them into ages, so time
    /// passing rebuilds nothing. Cheap when nothing changed. A cluster's
    /// part is not built until every kind the view needs has listed there:
    /// the analysis over half the workloads would be wrong (a class "safe
    /// to remove" before its pods are known) and is the costly part of the
    /// first frame.
    pub fn refresh(&mut self) {
        for v in self.live_views() {
            self.refresh_view(v, |_| true);
        }
        self.refresh_counts();
    }

    /// Rebuilds the stale, listed parts of `v` that `pick(cluster)`
    /// allows; the clusters rebuilt.
    fn refresh_view(&mut self, v: ListView, pick: impl Fn(usize) -> bool) -> Vec<usize> {
        let parts: Vec<usize> = (0..self.clusters.len())
            .filter(|&i| self.stale(i, v) && self.clusters[i].data.loaded(v) && pick(i))
            .collect();
        if !parts.is_empty() {
            let id = self.selected_id(v);
            self.rebuild(&parts, v);
            self.apply_keeping(v, id);
        }
        parts
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
            if live.contains(&v) {
                continue;
            }
            let recent = |app: &App, i: usize| {
                app.clusters[i].rows.counted_at[v.index()]
                    .is_some_and(|t| now - t < COUNT_REFRESH_SECONDS)
            };
            let due: Vec<usize> = (0..self.clusters.len())
                .filter(|&i| !recent(self, i))
                .collect();
            for i in self.refresh_view(v, |i| due.contains(&i)) {
                self.clusters[i].rows.counted_at[v.index()] = Some(now);
            }
        }
    }

    /// Rebuilds every view, live or not (tests, and callers that show
    /// several views from one store).
    pub fn refresh_all(&mut self) {
        for v in ListView::ALL {
            let parts: Vec<usize> = (0..self.clusters.len())
                .filter(|&i| self.stale(i, v))
                .collect();
            if parts.is_empty() {
                continue;
            }
            let id = self.selected_id(v);
            self.rebuild(&parts, v);
            self.apply_keeping(v, id);
        }
    }

    /// Drops cluster `i`'s rows of a view: it shows loading there until
    /// rebuilt.
    pub(in crate::model) fn forget_rows(&mut self, i: usize, v: ListView) {
        let id = self.selected_id(v);
        let r = &mut self.clusters[i].rows;
        r.built[v.index()] = None;
        r.counted_at[v.index()] = None;
        match v {
            ListView::Runtimes => r.runtimes = Vec::new(),
            ListView::Grants => r.grants = Vec::new(),
            ListView::Handlers => r.handlers = Vec::new(),
            ListView::Retained => r.retained = Vec::new(),
            ListView::Namespaces => r.namespaces = Vec::new(),
        }
        self.derived.tables[v.index()].set_part(i, TableData::new(headers(v).to_vec()));
        self.apply_keeping(v, id);
    }

    /// Whether the list view shown (if one is) has everything it needs
    /// listed: the event loop draws the frame that completes it at once.
    pub fn current_loaded(&self) -> Option<bool> {
        self.current_list().map(|v| self.loaded(v))
    }

    /// How complete the screen is: see [`Completion::completed_by`].
    pub fn completion(&self) -> Completion {
        Completion {
            loaded: self.current_loaded(),
            synced: self.clusters.iter().all(|c| c.data.connection().is_none()),
        }
    }

    /// Rebuilds the parts of `v` of the clusters `parts`, each cluster's on
    /// a thread of its own when there are several: a fleet's key press or
    /// first frame then waits for the slowest cluster's rows, not for the
    /// sum of every cluster's (issue 56), as its LISTs do.
    fn rebuild(&mut self, parts: &[usize], v: ListView) {
        let now = self.now;
        let built: Vec<(usize, TableData)> = if parts.len() < 2 {
            parts
                .iter()
                .map(|&i| (i, build_part(&mut self.clusters[i], v, now)))
                .collect()
        } else {
            std::thread::scope(|scope| {
                let running: Vec<_> = self
                    .clusters
                    .iter_mut()
                    .enumerate()
                    .filter(|(i, _)| parts.contains(i))
                    .map(|(i, c)| (i, scope.spawn(move || build_part(c, v, now))))
                    .collect();
                running
                    .into_iter()
                    .map(|(i, h)| match h.join() {
                        Ok(table) => (i, table),
                        // A row builder that panicked panics the console
                        // as it would have on one thread.
                        Err(p) => std::panic::resume_unwind(p),
                    })
                    .collect()
            })
        };
        for (i, table) in built {
            self.derived.tables[v.index()].set_part(i, table);
        }
    }

    /// Re-filters and re-sorts one table; the selection stays on the same
    /// object when it is still shown.
    pub fn reapply(&mut self, v: ListView) {
        let id = self.selected_id(v);
        self.apply_keeping(v, id);
    }

    fn apply_keeping(&mut self, v: ListView, id: Option<RowId>) {
        let (filter, sort) = {
            let l = self.list(v);
            (l.filter.clone(), l.sort)
        };
        let t = &mut self.derived.tables[v.index()];
        t.apply(&filter, sort);
        let len = t.len();
        let found = id.and_then(|id| t.position(&id));
        let l = self.list_mut(v);
        match found {
            Some(pos) => l.selected = pos,
            // Gone (deleted, filtered out): stay at the same height.
            None => l.selected = l.selected.min(len.saturating_sub(1)),
        }
    }

    /// The identity (cluster and uid) of the selected row of a list view.
    pub fn selected_id(&self, v: ListView) -> Option<RowId> {
        self.table(v).id_at(self.list(v).selected)
    }

    /// What the selected row of a list view points at, in its cluster.
    pub fn selected_ref(&self, v: ListView) -> Option<Located> {
        self.table(v).located_at(self.list(v).selected)
    }
}

/// Builds cluster `c`'s rows of `v` from its store, records what they were
/// built from, and returns its part of the merged table.
fn build_part(c: &mut Cluster, v: ListView, now: Timestamp) -> TableData {
    let stamp = c.data.store.stamp(v.inputs());
    let (store, r) = (&c.data.store, &mut c.rows);
    r.built[v.index()] = Some(stamp);
    match v {
        ListView::Runtimes => {
            r.runtimes = rows::runtime_rows(store, now);
            TableData::of(&r.runtimes)
        }
        ListView::Grants => {
            r.grants = rows::grant_rows(store, now);
            TableData::of(&r.grants)
        }
        ListView::Namespaces => {
            r.namespaces = rows::namespace_rows(store, now);
            TableData::of(&r.namespaces)
        }
        ListView::Handlers | ListView::Retained => {
            let needs_workloads = store.count(Kind::RuntimeClass) > 0
                || WORKLOAD_KINDS.iter().any(|k| store.count(*k) > 0);
            if v == ListView::Handlers {
                r.handlers = if needs_workloads {
                    rows::handler_rows(store)
                } else {
                    Vec::new()
                };
                TableData::of(&r.handlers)
            } else {
                r.retained = if needs_workloads {
                    rows::retained_rows(store)
                } else {
                    Vec::new()
                };
                TableData::of(&r.retained)
            }
        }
    }
}
