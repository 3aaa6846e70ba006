//! The console's copy of the cluster, reflector-like: the one [`Store`],
//! the state of every watch, and the (re)lists in progress. It applies
//! watch events itself — a relist replaces what its watch held — so that
//! overlapping watches of a kind agree (the rules are in
//! [`super::watches`]). Which watches run is decided above it, from the
//! screens ([`super::watching`]).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::jiff::Timestamp;

use crate::store::{Kind, ObjKey, Store, Stored};

use super::msg::WatchEvent;
use super::screen::{ListView, Screen};
use super::watches::{WatchKey, WatchSet};

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

/// What the watches have told, for one connection and scope.
#[derive(Debug, Default)]
pub struct Data {
    pub store: Store,
    pub watches: BTreeMap<WatchKey, WatchState>,
    /// Watches whose first list completed since they started: until then
    /// their counts are unknown, not zero.
    pub synced: BTreeSet<WatchKey>,
    /// Objects of (re)lists in progress, as the store keeps them.
    pub pending: BTreeMap<WatchKey, Vec<Stored>>,
    /// The keys each scoped watch holds in the store (see
    /// [`super::watches`]).
    pub held: BTreeMap<WatchKey, BTreeSet<ObjKey>>,
    /// The watches asked for, with their grace periods.
    pub watch_set: WatchSet,
    /// Watches stopped since the last switch: their late events (still
    /// queued when they stopped) are ignored.
    pub stopped: BTreeSet<WatchKey>,
}

impl Data {
    /// Applies one event of watch `key`.
    pub fn on_watch(&mut self, key: WatchKey, ev: WatchEvent) {
        let kind = key.kind;
        match ev {
            WatchEvent::Init => {
                self.pending.insert(key.clone(), Vec::new());
                self.watches.entry(key).or_insert(WatchState::Connecting);
            }
            WatchEvent::InitApply(o) => {
                // Kept as the store keeps it: a (re)list of every Pod is
                // held here until its InitDone.
                self.pending.entry(key.clone()).or_default().push(o.into());
                self.watches.entry(key).or_insert(WatchState::Connecting);
            }
            WatchEvent::InitDone => {
                let objs = self.pending.remove(&key).unwrap_or_default();
                self.relisted(&key, objs);
                self.watches.insert(key.clone(), WatchState::Synced);
                self.synced.insert(key);
            }
            WatchEvent::Apply(o) => {
                if !key.is_all() {
                    self.held.entry(key.clone()).or_default().insert(o.key());
                }
                self.store.apply(o);
                self.watches.insert(key, WatchState::Synced);
            }
            WatchEvent::Delete(o) => {
                let k = o.key();
                if key.is_all() {
                    // The whole kind's watch says it is gone: it is.
                    self.store.delete(kind, &k);
                } else {
                    if let Some(held) = self.held.get_mut(&key) {
                        held.remove(&k);
                    }
                    self.release(kind, &k);
                }
                self.watches.insert(key, WatchState::Synced);
            }
            WatchEvent::Error(e) => {
                self.watches.insert(key, WatchState::Reconnecting(e));
            }
            WatchEvent::Resumed => {
                // Only a watch whose list completed recovers this way; one
                // in a (re)list is complete only at its InitDone. (A
                // refused watch that starts again was allowed meanwhile.)
                if matches!(
                    self.watches.get(&key),
                    Some(WatchState::Reconnecting(_) | WatchState::Denied(_))
                ) && self.synced.contains(&key)
                    && !self.pending.contains_key(&key)
                {
                    self.watches.insert(key, WatchState::Synced);
                }
            }
            WatchEvent::Denied(e) => {
                self.watches.insert(key, WatchState::Denied(e));
            }
        }
    }

    /// A (re)list of `key` completed with `objs`: they replace what that
    /// watch held (see [`super::watches`] for overlapping watches of a
    /// kind).
    fn relisted(&mut self, key: &WatchKey, objs: Vec<Stored>) {
        let kind = key.kind;
        if key.is_all() {
            // What scoped watches hold and the list lacks stays (they will
            // say if it went).
            let keep = self.held_of(kind);
            let mut objs = objs;
            if !keep.is_empty() {
                let listed: BTreeSet<ObjKey> = objs.iter().map(Stored::key).collect();
                objs.extend(
                    keep.difference(&listed)
                        .filter_map(|k| self.store.get_stored(kind, k)),
                );
            }
            self.store.replace(kind, objs);
        } else {
            let now: BTreeSet<ObjKey> = objs.iter().map(Stored::key).collect();
            let before = self
                .held
                .insert(key.clone(), now.clone())
                .unwrap_or_default();
            for o in objs {
                self.store.apply(o);
            }
            for k in before.difference(&now) {
                self.release(kind, k);
            }
        }
    }

    /// Forgets a stopped watch and what only it held.
    pub fn drop_watch(&mut self, key: &WatchKey) {
        let kind = key.kind;
        self.watches.remove(key);
        self.synced.remove(key);
        self.pending.remove(key);
        self.stopped.insert(key.clone());
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
    pub fn held_of(&self, kind: Kind) -> BTreeSet<ObjKey> {
        self.held
            .iter()
            .filter(|(w, _)| w.kind == kind)
            .flat_map(|(_, keys)| keys.iter().cloned())
            .collect()
    }

    /// A scoped watch let go of `key`: it leaves the store unless the kind
    /// is watched whole (that watch decides) or another scoped watch holds
    /// it.
    pub fn release(&mut self, kind: Kind, key: &ObjKey) {
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

    /// What the agent's Lease `lease` says about its leader at `now`.
    pub fn leader_state(&self, lease: &ObjKey, now: Timestamp) -> LeaderState {
        let all = WatchKey::all(Kind::Lease);
        if !self.synced.contains(&all)
            || matches!(self.watches.get(&all), Some(WatchState::Denied(_)))
        {
            return LeaderState::Unknown;
        }
        let Some(spec) = self.store.leases.get(lease).and_then(|l| l.spec.as_ref()) else {
            return LeaderState::NoLease;
        };
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let expires = spec
            .renew_time
            .as_ref()
            .map(|t| t.0.as_second() + i64::from(spec.lease_duration_seconds.unwrap_or(0)));
        match (holder, expires) {
            (Some(h), Some(e)) if e > now.as_second() => LeaderState::Live(h),
            (h, _) => LeaderState::Expired(h),
        }
    }
}
