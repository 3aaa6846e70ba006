//! Which watches run: keyed by kind and filter, started when a screen of
//! the stack needs them, stopped once nothing has needed them for
//! [`GRACE`] (going back and forth between views does not relist), except
//! the kinds the always-live parts of the screen read ([`pinned`]).
//!
//! A Rollout or Details screen watches only its object: the Runtime's
//! Deployment, ReplicaSets and Pods by berth's server-pod label selector,
//! Events of its namespace, one object by `metadata.name`, its Events by
//! `involvedObject` field selectors. Where the whole kind is needed anyway
//! (a list view on the stack), that watch is reused and no scoped one runs.
//!
//! One store holds what every watch of a kind sees. How it stays
//! consistent when watches of one kind overlap (see `App::on_watch`): the
//! scoped watches remember the keys they hold; an object goes when the
//! last watch that holds it lets go of it — a scoped watch's delete,
//! relist without it or stop drops it only if no other scoped watch holds
//! it and the kind is not watched whole; the whole-kind watch's delete is
//! authoritative, its relist keeps what scoped watches hold, and its stop
//! keeps only that. Pure bookkeeping: no I/O.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::jiff::Timestamp;

use crate::store::Kind;

/// How long a watch nobody needs keeps running.
pub const GRACE_SECONDS: i64 = 60;

/// What a watch selects within the console's scope.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Filter {
    /// Every object of the kind in the console's namespace scope.
    All,
    /// Objects in `namespace` (every namespace when empty) matching the
    /// label and field selectors (none when empty).
    Select {
        namespace: String,
        labels: String,
        fields: String,
    },
}

/// One watch: a kind and what of it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WatchKey {
    pub kind: Kind,
    pub filter: Filter,
}

impl WatchKey {
    /// The whole kind.
    pub fn all(kind: Kind) -> Self {
        WatchKey {
            kind,
            filter: Filter::All,
        }
    }

    /// Objects of `kind` in `namespace` matching the selectors.
    pub fn select(kind: Kind, namespace: &str, labels: &str, fields: &str) -> Self {
        WatchKey {
            kind,
            filter: Filter::Select {
                namespace: namespace.to_string(),
                labels: labels.to_string(),
                fields: fields.to_string(),
            },
        }
    }

    /// Whether it watches the whole kind.
    pub fn is_all(&self) -> bool {
        self.filter == Filter::All
    }
}

impl From<Kind> for WatchKey {
    fn from(kind: Kind) -> Self {
        WatchKey::all(kind)
    }
}

/// Kinds never stopped once watched: the always-live views (Runtimes and
/// Grants, counted in the tab bar and rebuilt off screen) and the agent's
/// Lease (the status bar).
pub fn pinned(key: &WatchKey) -> bool {
    key.is_all() && matches!(key.kind, Kind::Runtime | Kind::RuntimeGrant | Kind::Lease)
}

/// Drops scoped watches of kinds that are needed whole anyway (the whole
/// watch holds what they would).
pub fn reuse_whole(needed: BTreeSet<WatchKey>) -> BTreeSet<WatchKey> {
    let whole: BTreeSet<Kind> = needed
        .iter()
        .filter(|k| k.is_all())
        .map(|k| k.kind)
        .collect();
    needed
        .into_iter()
        .filter(|k| k.is_all() || !whole.contains(&k.kind))
        .collect()
}

/// What changed: watches to start and to stop.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Change {
    pub start: Vec<WatchKey>,
    pub stop: Vec<WatchKey>,
}

/// The running watches, each with when it stopped being needed.
#[derive(Clone, Debug, Default)]
pub struct WatchSet {
    /// `None`: needed now; `Some(t)`: unneeded since `t`.
    running: BTreeMap<WatchKey, Option<Timestamp>>,
}

impl WatchSet {
    /// Given what is needed at `now`: what to start (needed, not running)
    /// and what to stop (unneeded for [`GRACE_SECONDS`], not [`pinned`]).
    pub fn update(&mut self, needed: &BTreeSet<WatchKey>, now: Timestamp) -> Change {
        let mut change = Change::default();
        for k in needed {
            if self.running.insert(k.clone(), None).is_none() {
                change.start.push(k.clone());
            }
        }
        for (k, since) in &mut self.running {
            if needed.contains(k) || pinned(k) {
                continue;
            }
            match since {
                None => *since = Some(now),
                Some(t) if now.as_second() - t.as_second() >= GRACE_SECONDS => {
                    change.stop.push(k.clone());
                }
                Some(_) => {}
            }
        }
        for k in &change.stop {
            self.running.remove(k);
        }
        change
    }

    /// Every watch that must run (needed or within its grace period).
    pub fn running(&self) -> Vec<WatchKey> {
        self.running.keys().cloned().collect()
    }

    /// Whether `key` runs.
    pub fn contains(&self, key: &WatchKey) -> bool {
        self.running.contains_key(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn set(keys: &[WatchKey]) -> BTreeSet<WatchKey> {
        keys.iter().cloned().collect()
    }

    #[test]
    fn starts_keeps_through_grace_stops_after_and_restarts() {
        let pods = WatchKey::all(Kind::Pod);
        let rt = WatchKey::all(Kind::Runtime);
        let mut ws = WatchSet::default();
        let c = ws.update(&set(&[rt.clone(), pods.clone()]), at(0));
        assert_eq!(c.start, vec![rt.clone(), pods.clone()]);
        assert!(c.stop.is_empty());
        // Still needed: nothing changes.
        assert_eq!(
            ws.update(&set(&[rt.clone(), pods.clone()]), at(5)),
            Change::default()
        );
        // Unneeded from 10 s: kept through the grace period.
        assert_eq!(
            ws.update(&set(std::slice::from_ref(&rt)), at(10)),
            Change::default()
        );
        assert_eq!(
            ws.update(&set(std::slice::from_ref(&rt)), at(10 + GRACE_SECONDS - 1)),
            Change::default()
        );
        assert!(ws.contains(&pods));
        let c = ws.update(&set(std::slice::from_ref(&rt)), at(10 + GRACE_SECONDS));
        assert_eq!(c.stop, vec![pods.clone()]);
        assert!(!ws.contains(&pods));
        assert_eq!(ws.running(), vec![rt.clone()]);
        // Needed again: started again.
        let c = ws.update(&set(&[rt.clone(), pods.clone()]), at(200));
        assert_eq!(c.start, vec![pods.clone()]);
    }

    #[test]
    fn needed_again_within_grace_resets_the_clock() {
        let pods = WatchKey::all(Kind::Pod);
        let mut ws = WatchSet::default();
        ws.update(&set(std::slice::from_ref(&pods)), at(0));
        ws.update(&set(&[]), at(1));
        // Back before the grace ran out: not restarted, not stopped.
        assert_eq!(
            ws.update(&set(std::slice::from_ref(&pods)), at(30)),
            Change::default()
        );
        ws.update(&set(&[]), at(40));
        assert_eq!(
            ws.update(&set(&[]), at(40 + GRACE_SECONDS - 1)),
            Change::default()
        );
        assert_eq!(
            ws.update(&set(&[]), at(40 + GRACE_SECONDS)).stop,
            vec![pods]
        );
    }

    #[test]
    fn pinned_kinds_are_never_stopped() {
        let mut ws = WatchSet::default();
        let keys = [
            WatchKey::all(Kind::Runtime),
            WatchKey::all(Kind::RuntimeGrant),
            WatchKey::all(Kind::Lease),
        ];
        ws.update(&set(&keys), at(0));
        ws.update(&set(&[]), at(1));
        assert!(ws.update(&set(&[]), at(10_000)).stop.is_empty());
        assert_eq!(ws.running(), keys.to_vec());
        // A scoped watch of a pinned kind is not pinned.
        let one = WatchKey::select(Kind::Runtime, "demo", "", "metadata.name=web");
        ws.update(&set(std::slice::from_ref(&one)), at(20_000));
        ws.update(&set(&[]), at(20_001));
        assert_eq!(ws.update(&set(&[]), at(30_000)).stop, vec![one]);
    }

    #[test]
    fn a_whole_kind_watch_replaces_scoped_ones() {
        let scoped_pods = WatchKey::select(Kind::Pod, "demo", "berth.dev/runtime=web", "");
        let scoped_events = WatchKey::select(Kind::Event, "demo", "", "");
        let needed = set(&[WatchKey::all(Kind::Pod), scoped_pods, scoped_events.clone()]);
        assert_eq!(
            reuse_whole(needed),
            set(&[WatchKey::all(Kind::Pod), scoped_events])
        );
    }
}
