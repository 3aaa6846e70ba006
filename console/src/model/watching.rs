//! The app's side of watching: which watches the screens need, starting
//! and stopping them ([`super::watches::WatchSet`]), and applying their
//! events to the one store so that overlapping watches of a kind agree
//! (the rules are in [`super::watches`]).

use std::collections::BTreeSet;

use super::watches::{self, WatchKey};
use super::{App, Effect, Kind, ListView, ObjKey, WatchEvent, WatchState};
use crate::store::Stored;

impl App {
    /// Watches every screen of the stack needs, plus the agent Lease; a
    /// scoped watch gives way to a whole-kind one that is needed or
    /// [`watches::pinned`] and running.
    pub fn needed_watches(&self) -> BTreeSet<WatchKey> {
        let mut set: BTreeSet<WatchKey> = BTreeSet::from([WatchKey::all(Kind::Lease)]);
        for s in &self.screens {
            set.extend(s.watches(&self.scope));
        }
        set.extend(self.watch_set.running().into_iter().filter(watches::pinned));
        watches::reuse_whole(set)
    }

    /// Brings the watch set up to date with the screens at `self.now`:
    /// what is needed starts, what has not been needed for the grace period
    /// stops and its data goes. Whether anything started or stopped.
    pub fn update_watches(&mut self) -> bool {
        let needed = self.needed_watches();
        let change = self.watch_set.update(&needed, self.now);
        for k in &change.start {
            self.stopped.remove(k);
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
        Effect::Watch(self.watch_set.running())
    }

    /// Forgets a stopped watch and what only it held: the kind's views show
    /// loading again until a new watch lists it.
    pub(super) fn drop_watch(&mut self, key: &WatchKey) {
        let kind = key.kind;
        if key.is_all() {
            for v in ListView::ALL {
                if v.inputs().contains(&kind) {
                    self.forget_rows(v);
                }
            }
        }
        self.watches.remove(key);
        self.synced.remove(key);
        self.pending.remove(key);
        self.stopped.insert(key.clone());
        self.dirty = true;
        if key.is_all() {
            let keep = self.held_of(kind);
            if keep.is_empty() {
                self.store.clear(kind);
            } else {
                for k in self.store.keys(kind) {
                    if !keep.contains(&k) {
                        self.store.delete(kind, &k);
                    }
                }
            }
        } else if let Some(held) = self.held.remove(key) {
            for k in held {
                self.release(kind, &k);
            }
        }
    }

    /// Every key scoped watches of `kind` hold.
    pub(super) fn held_of(&self, kind: Kind) -> BTreeSet<ObjKey> {
        self.held
            .iter()
            .filter(|(w, _)| w.kind == kind)
            .flat_map(|(_, keys)| keys.iter().cloned())
            .collect()
    }

    /// A scoped watch let go of `key`: it leaves the store unless the kind
    /// is watched whole (that watch decides) or another scoped watch holds
    /// it.
    pub(super) fn release(&mut self, kind: Kind, key: &ObjKey) {
        let all = WatchKey::all(kind);
        let whole = self.watch_set.contains(&all) || self.watches.contains_key(&all);
        let held = self
            .held
            .iter()
            .any(|(w, keys)| w.kind == kind && keys.contains(key));
        if !whole && !held {
            self.store.delete(kind, key);
        }
    }
}

pub(super) fn on_watch(app: &mut App, key: WatchKey, ev: WatchEvent) {
    app.dirty = true;
    let kind = key.kind;
    match ev {
        WatchEvent::Init => {
            app.pending.insert(key.clone(), Vec::new());
            app.watches.entry(key).or_insert(WatchState::Connecting);
        }
        WatchEvent::InitApply(o) => {
            // Kept as the store keeps it: a (re)list of every Pod is
            // held here until its InitDone.
            app.pending.entry(key.clone()).or_default().push(o.into());
            app.watches.entry(key).or_insert(WatchState::Connecting);
        }
        WatchEvent::InitDone => {
            let objs = app.pending.remove(&key).unwrap_or_default();
            relisted(app, &key, objs);
            app.watches.insert(key.clone(), WatchState::Synced);
            app.synced.insert(key);
        }
        WatchEvent::Apply(o) => {
            if !key.is_all() {
                app.held.entry(key.clone()).or_default().insert(o.key());
            }
            app.store.apply(o);
            app.watches.insert(key, WatchState::Synced);
        }
        WatchEvent::Delete(o) => {
            let k = o.key();
            if key.is_all() {
                // The whole kind's watch says it is gone: it is.
                app.store.delete(kind, &k);
            } else {
                if let Some(held) = app.held.get_mut(&key) {
                    held.remove(&k);
                }
                app.release(kind, &k);
            }
            app.watches.insert(key, WatchState::Synced);
        }
        WatchEvent::Error(e) => {
            app.watches.insert(key, WatchState::Reconnecting(e));
        }
        WatchEvent::Resumed => {
            // Only a watch whose list completed recovers this way; one in a
            // (re)list is complete only at its InitDone. (A refused watch
            // that starts again was allowed meanwhile.)
            if matches!(
                app.watches.get(&key),
                Some(WatchState::Reconnecting(_) | WatchState::Denied(_))
            ) && app.synced.contains(&key)
                && !app.pending.contains_key(&key)
            {
                app.watches.insert(key, WatchState::Synced);
            }
        }
        WatchEvent::Denied(e) => {
            app.watches.insert(key, WatchState::Denied(e));
        }
    }
}

/// A (re)list of `key` completed with `objs`: they replace what that
/// watch held (see [`watches`] for overlapping watches of a kind).
fn relisted(app: &mut App, key: &WatchKey, objs: Vec<Stored>) {
    let kind = key.kind;
    if key.is_all() {
        // What scoped watches hold and the list lacks stays (they will say
        // if it went).
        let keep = app.held_of(kind);
        let mut objs = objs;
        if !keep.is_empty() {
            let listed: BTreeSet<ObjKey> = objs.iter().map(Stored::key).collect();
            objs.extend(
                keep.difference(&listed)
                    .filter_map(|k| app.store.get_stored(kind, k)),
            );
        }
        app.store.replace(kind, objs);
    } else {
        let now: BTreeSet<ObjKey> = objs.iter().map(Stored::key).collect();
        let before = app
            .held
            .insert(key.clone(), now.clone())
            .unwrap_or_default();
        for o in objs {
            app.store.apply(o);
        }
        for k in before.difference(&now) {
            app.release(kind, k);
        }
    }
}
