//! Which watches run: the ones the screens of the stack need, started and
//! stopped through [`super::watches::WatchSet`]; a stopped watch's data
//! leaves the [`super::data::Data`] store and its views' rows go with it.

use std::collections::BTreeSet;

use super::msg::Effect;
use super::screen::{ListView, Screen};
use super::watches::{self, WatchKey};
use super::{App, Kind, WatchState};

impl App {
    /// Watches every screen of the stack needs, plus the agent Lease; a
    /// scoped watch gives way to a whole-kind one that is needed or
    /// [`watches::pinned`] and running.
    pub fn needed_watches(&self) -> BTreeSet<WatchKey> {
        let mut set: BTreeSet<WatchKey> = BTreeSet::from([WatchKey::all(Kind::Lease)]);
        for s in &self.ui.screens {
            set.extend(s.watches(&self.session.scope));
        }
        set.extend(
            self.data
                .watch_set
                .running()
                .into_iter()
                .filter(watches::pinned),
        );
        watches::reuse_whole(set)
    }

    /// Brings the watch set up to date with the screens at `self.now`:
    /// what is needed starts, what has not been needed for the grace period
    /// stops and its data goes. Whether anything started or stopped.
    pub fn update_watches(&mut self) -> bool {
        let needed = self.needed_watches();
        let change = self.data.watch_set.update(&needed, self.now);
        for k in &change.start {
            self.data.stopped.remove(k);
        }
        for k in &change.stop {
            self.drop_watch(k);
        }
        !change.start.is_empty() || !change.stop.is_empty()
    }

    /// [`App::update_watches`], as the effect that makes the I/O side run
    /// exactly the watches of the set.
    pub fn watch_effect(&mut self) -> Effect {
        self.update_watches();
        Effect::Watch(self.data.watch_set.running())
    }

    /// Forgets a stopped watch and what only it held: the kind's views show
    /// loading again until a new watch lists it.
    pub(super) fn drop_watch(&mut self, key: &WatchKey) {
        if key.is_all() {
            for v in ListView::ALL {
                if v.inputs().contains(&key.kind) {
                    self.forget_rows(v);
                }
            }
        }
        self.data.drop_watch(key);
        self.ui.dirty = true;
    }
}

impl App {
    /// Whether every watch `screen` needs has completed its first list (or
    /// is refused): until then its rows are partial and it says
    /// `loading…`, as a list view does. A scoped watch counts as listed
    /// when the whole kind's watch that replaces it is
    /// ([`watches::reuse_whole`]). Returning to a screen after its watches
    /// stopped therefore shows loading again until they relist.
    pub fn screen_listed(&self, screen: &Screen) -> bool {
        let listed = |k: &WatchKey| {
            self.data.synced.contains(k)
                || matches!(self.data.watches.get(k), Some(WatchState::Denied(_)))
        };
        screen
            .watches(&self.session.scope)
            .iter()
            .all(|k| listed(k) || (!k.is_all() && listed(&WatchKey::all(k.kind))))
    }
}
