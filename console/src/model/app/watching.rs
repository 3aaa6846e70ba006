//! Which watches run in each cluster: the ones the screens of the stack
//! need there (a list view's in every cluster, a screen about one
//! cluster's object in that cluster only), started and stopped through
//! each cluster's [`crate::model::watches::WatchSet`]; a stopped watch's data
//! leaves that cluster's store and its part of the views goes with it.

use std::collections::BTreeSet;

use super::App;
use crate::model::msg::Effect;
use crate::model::screen::{ListView, Screen};
use crate::model::watches::{self, WatchKey};
use crate::model::{Kind, WatchState};

impl App {
    /// Watches every screen of the stack needs in cluster `i`, plus the
    /// agent Lease (and, in a fleet, the RuntimeGrants, whose digest the
    /// fleet header shows); a scoped watch gives way to a whole-kind one
    /// that is needed or [`watches::pinned`] and running.
    pub fn needed_watches(&self, i: usize) -> BTreeSet<WatchKey> {
        let c = &self.clusters[i];
        let mut set: BTreeSet<WatchKey> = BTreeSet::from([WatchKey::all(Kind::Lease)]);
        // The fleet header names each cluster's grants file digest, which
        // its RuntimeGrants carry (a few dozen objects at most).
        if self.fleet() {
            set.insert(WatchKey::all(Kind::RuntimeGrant));
        }
        for s in &self.ui.screens {
            if s.cluster().is_none_or(|id| *id == c.id) {
                set.extend(s.watches(&self.session.scope));
            }
        }
        set.extend(
            c.data
                .watch_set
                .running()
                .into_iter()
                .filter(watches::pinned),
        );
        watches::reuse_whole(set)
    }

    /// Brings every cluster's watch set up to date with the screens at
    /// `self.now`: what is needed starts, what has not been needed for the
    /// grace period stops and its data goes. The clusters where anything
    /// started or stopped.
    pub fn update_watches(&mut self) -> Vec<usize> {
        let mut changed = Vec::new();
        for i in 0..self.clusters.len() {
            let needed = self.needed_watches(i);
            let change = self.clusters[i].data.watch_set.update(&needed, self.now);
            for k in &change.start {
                self.clusters[i].data.stopped.remove(k);
            }
            for k in &change.stop {
                self.drop_watch(i, k);
            }
            if !change.start.is_empty() || !change.stop.is_empty() {
                changed.push(i);
            }
        }
        changed
    }

    /// The effect that makes the I/O side run exactly cluster `i`'s
    /// watches.
    pub(in crate::model) fn watch_effect_of(&self, i: usize) -> Effect {
        let c = &self.clusters[i];
        Effect::Watch(c.id.clone(), c.data.watch_set.running())
    }

    /// [`App::update_watches`], as the effects that make the I/O side run
    /// exactly the watches of each cluster's set (one per cluster).
    pub fn watch_effects(&mut self) -> Vec<Effect> {
        self.update_watches();
        (0..self.clusters.len())
            .map(|i| self.watch_effect_of(i))
            .collect()
    }

    /// Forgets a stopped watch of cluster `i` and what only it held: the
    /// kind's views show loading again there until a new watch lists it.
    pub(in crate::model) fn drop_watch(&mut self, i: usize, key: &WatchKey) {
        if key.is_all() {
            for v in ListView::ALL {
                if v.inputs().contains(&key.kind) {
                    self.forget_rows(i, v);
                }
            }
        }
        self.clusters[i].data.drop_watch(key);
        self.ui.dirty = true;
    }
}

impl App {
    /// Whether every watch `screen` needs has completed its first list (or
    /// is refused) in every cluster it reads: until then its rows are
    /// partial and it says `loading…`, as a list view does. A scoped watch
    /// counts as listed when the whole kind's watch that replaces it is
    /// ([`watches::reuse_whole`]). Returning to a screen after its watches
    /// stopped therefore shows loading again until they relist.
    pub fn screen_listed(&self, screen: &Screen) -> bool {
        self.clusters
            .iter()
            .filter(|c| screen.cluster().is_none_or(|id| *id == c.id))
            .all(|c| {
                let listed = |k: &WatchKey| {
                    c.data.synced.contains(k)
                        || matches!(c.data.watches.get(k), Some(WatchState::Denied(_)))
                };
                screen
                    .watches(&self.session.scope)
                    .iter()
                    .all(|k| listed(k) || (!k.is_all() && listed(&WatchKey::all(k.kind))))
            })
    }
}
