//! Throttles the reconciles an owned Deployment's status wakes (issue 14).
//!
//! The Deployment controller rewrites a Deployment's status for nearly
//! every pod of a rollout (replicas, updated, ready, available), and each
//! rewrite woke the owning Runtime's reconcile. Measured at 500 Runtimes
//! rolling out together: about 10 reconciles per Runtime before every
//! Runtime had its first status. kube-runtime holds the wake-ups it cannot
//! run yet in a set and picks from it in no order, so a Runtime never
//! reconciled waited behind rollouts of Runtimes reconciled already, for
//! as long as their pods kept coming.
//!
//! A Runtime's status is written at most once per
//! [`PROGRESS_INTERVAL`](crate::controller::pacing::PROGRESS_INTERVAL) for progress
//! anyway, so a status-only update of one Deployment passes at once when
//! the last one passed at least an interval ago, and is otherwise held:
//! the newest held update passes when the interval ends (leading and
//! trailing edge, so the last state of a rollout is always seen, at most
//! one interval late, and a busy Deployment is never starved). Anything
//! else — a new object, a changed spec, labels, annotations, owners or a
//! deletion (see [`spec_fingerprint`]) — passes at once: drift is repaired
//! without delay.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use futures::{SinkExt, Stream, StreamExt};
use kube::Resource;

use super::triggers::spec_fingerprint;
use crate::controller::cache::object_key::ObjectKey;

/// What the throttle remembers of one object.
struct Seen<K> {
    fingerprint: Option<u64>,
    /// When an update of it last passed.
    passed_at: Instant,
    /// The newest update held back, if any, and its entry in `due`.
    /// Boxed: an object's inline size (2.3 KB for a Deployment) would
    /// otherwise be paid by every remembered object, held or not, in the
    /// map's table, which keeps its peak capacity (heaptrack at 500
    /// Runtimes: 2.6 MB of the agent's 23.6 MB live heap).
    held: Option<Box<(K, (Instant, u64))>>,
}

/// The pure throttling decision, driven by the caller's clock.
pub struct StatusUpdateThrottle<K: Resource<DynamicType = ()>> {
    interval: Duration,
    seen: HashMap<ObjectKey, Seen<K>>,
    /// Held objects by the instant they fall due (`seq` keeps two holds
    /// due at the same instant apart).
    due: BTreeMap<(Instant, u64), ObjectKey>,
    seq: u64,
    /// `seen`'s size after the last prune: it is pruned again when it has
    /// doubled, so pruning costs O(1) per update amortized.
    pruned_at: usize,
}

impl<K> StatusUpdateThrottle<K>
where
    K: Resource<DynamicType = ()> + Clone,
{
    /// A throttle letting one status-only update per object through per
    /// `interval`.
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            seen: HashMap::new(),
            due: BTreeMap::new(),
            seq: 0,
            pruned_at: 64,
        }
    }

    /// Offers an update at `now`: `Some` passes it at once, `None` holds
    /// it (it passes from [`StatusUpdateThrottle::take_due`]).
    pub fn offer(&mut self, obj: K, now: Instant) -> Option<K> {
        self.prune(now);
        let fingerprint = spec_fingerprint(&obj);
        let key = ObjectKey::of(obj.meta());
        let interval = self.interval;
        let Some(seen) = self.seen.get_mut(&key) else {
            self.seen.insert(
                key,
                Seen {
                    fingerprint,
                    passed_at: now,
                    held: None,
                },
            );
            return Some(obj);
        };
        let quiet = now.saturating_duration_since(seen.passed_at) >= interval;
        if seen.fingerprint != fingerprint || (quiet && seen.held.is_none()) {
            // A held update is older than this one: it is dropped.
            if let Some(held) = seen.held.take() {
                self.due.remove(&held.1);
            }
            seen.fingerprint = fingerprint;
            seen.passed_at = now;
            return Some(obj);
        }
        match &mut seen.held {
            Some(held) => held.0 = obj,
            None => {
                self.seq = self.seq.wrapping_add(1);
                let at = (seen.passed_at + interval, self.seq);
                seen.held = Some(Box::new((obj, at)));
                self.due.insert(at, key);
            }
        }
        None
    }

    /// When the earliest held update falls due.
    pub fn next_due(&self) -> Option<Instant> {
        self.due.keys().next().map(|(at, _)| *at)
    }

    /// The held updates due by `now`, each the newest of its object.
    pub fn take_due(&mut self, now: Instant) -> Vec<K> {
        let mut out = Vec::new();
        while let Some(entry) = self.due.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let key = entry.remove();
            if let Some(seen) = self.seen.get_mut(&key)
                && let Some(held) = seen.held.take()
            {
                seen.passed_at = now;
                out.push(held.0);
            }
        }
        out
    }

    /// Forgets objects with nothing held that passed more than an interval
    /// ago (a forgotten object's next update passes at once, as a new one:
    /// deleted objects do not pile up).
    fn prune(&mut self, now: Instant) {
        if self.seen.len() < self.pruned_at.saturating_mul(2) {
            return;
        }
        let interval = self.interval;
        self.seen.retain(|_, s| {
            s.held.is_some() || now.saturating_duration_since(s.passed_at) < interval
        });
        self.pruned_at = self.seen.len().max(64);
        // A table keeps its peak capacity: give back what a burst (every
        // Deployment rolling out at once) grew it to.
        self.seen.shrink_to_fit();
    }

    /// How many objects are remembered (for tests).
    #[cfg(test)]
    fn remembered(&self) -> usize {
        self.seen.len()
    }
}

/// `stream` with status-only updates throttled per object (see the module
/// header). The stream is polled by a task of its own, so a cache it
/// feeds stays current while updates are held; errors pass at once.
pub fn throttled<K, E, S>(stream: S, interval: Duration) -> impl Stream<Item = Result<K, E>> + Send
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
    E: Send + 'static,
    S: Stream<Item = Result<K, E>> + Send + 'static,
{
    let (mut tx, rx) = futures::channel::mpsc::channel(256);
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        let mut throttle = StatusUpdateThrottle::new(interval);
        loop {
            let due = throttle.next_due();
            let wake = async move {
                match due {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => futures::future::pending().await,
                }
            };
            tokio::select! {
                item = stream.next() => {
                    let out = match item {
                        None => return,
                        Some(Ok(obj)) => throttle.offer(obj, Instant::now()).map(Ok),
                        Some(Err(e)) => Some(Err(e)),
                    };
                    if let Some(out) = out
                        && tx.send(out).await.is_err()
                    {
                        return;
                    }
                }
                () = wake => {
                    for obj in throttle.take_due(Instant::now()) {
                        if tx.send(Ok(obj)).await.is_err() {
                            return;
                        }
                    }
                }
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    const INTERVAL: Duration = Duration::from_secs(5);

    fn dep(name: &str, generation: i64, ready: i32) -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                generation: Some(generation),
                ..Default::default()
            },
            status: Some(DeploymentStatus {
                ready_replicas: Some(ready),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn ready(d: &Deployment) -> Option<i32> {
        d.status.as_ref().and_then(|s| s.ready_replicas)
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn status_updates_of_one_object_pass_once_per_interval_and_the_newest_is_never_lost() {
        let t0 = Instant::now();
        let mut throttle = StatusUpdateThrottle::new(INTERVAL);
        assert!(
            throttle.offer(dep("web", 1, 0), t0).is_some(),
            "a new object"
        );
        assert!(throttle.offer(dep("web", 1, 1), t0 + secs(1)).is_none());
        assert!(throttle.offer(dep("web", 1, 2), t0 + secs(2)).is_none());
        assert_eq!(throttle.next_due(), Some(t0 + INTERVAL));
        assert!(throttle.take_due(t0 + secs(4)).is_empty(), "not due yet");
        let due = throttle.take_due(t0 + INTERVAL);
        assert_eq!(due.iter().map(ready).collect::<Vec<_>>(), [Some(2)]);
        assert_eq!(throttle.next_due(), None);
        // Within the next interval: held again, due an interval after the
        // trailing pass.
        assert!(throttle.offer(dep("web", 1, 3), t0 + secs(6)).is_none());
        assert_eq!(throttle.next_due(), Some(t0 + INTERVAL + INTERVAL));
        // After a quiet interval an update passes at once.
        let mut quiet = StatusUpdateThrottle::new(INTERVAL);
        assert!(quiet.offer(dep("web", 1, 0), t0).is_some());
        assert!(quiet.offer(dep("web", 1, 1), t0 + INTERVAL).is_some());
    }

    #[test]
    fn anything_but_status_passes_at_once_and_supersedes_what_is_held() {
        let t0 = Instant::now();
        let mut throttle = StatusUpdateThrottle::new(INTERVAL);
        assert!(throttle.offer(dep("web", 1, 0), t0).is_some());
        assert!(throttle.offer(dep("web", 1, 1), t0 + secs(1)).is_none());
        // The spec changed (a foreign edit): repaired now, not in 4 s.
        let edited = throttle.offer(dep("web", 2, 1), t0 + secs(2));
        assert_eq!(edited.map(|d| d.metadata.generation), Some(Some(2)));
        assert!(
            throttle.take_due(t0 + INTERVAL).is_empty(),
            "the older held status is superseded"
        );
        let mut deleting = dep("web", 2, 1);
        deleting.metadata.deletion_timestamp = Some(Time(Default::default()));
        assert!(throttle.offer(deleting, t0 + secs(6)).is_some());
    }

    #[test]
    fn objects_are_throttled_apart() {
        let t0 = Instant::now();
        let mut throttle = StatusUpdateThrottle::new(INTERVAL);
        for name in ["a", "b"] {
            assert!(throttle.offer(dep(name, 1, 0), t0).is_some());
        }
        assert!(throttle.offer(dep("b", 1, 1), t0 + secs(3)).is_none());
        assert!(throttle.offer(dep("a", 1, 1), t0 + secs(1)).is_none());
        assert!(throttle.offer(dep("c", 1, 0), t0 + secs(1)).is_some());
        let due = throttle.take_due(t0 + INTERVAL);
        let mut names: Vec<_> = due.iter().map(|d| d.metadata.name.clone()).collect();
        names.sort();
        assert_eq!(names, [Some("a".to_string()), Some("b".to_string())]);
    }

    #[test]
    fn forgotten_objects_do_not_pile_up_and_held_ones_are_kept() {
        let t0 = Instant::now();
        let mut throttle = StatusUpdateThrottle::new(INTERVAL);
        assert!(throttle.offer(dep("busy", 1, 0), t0).is_some());
        assert!(throttle.offer(dep("busy", 1, 1), t0 + secs(1)).is_none());
        // A thousand objects seen once each, ten a second.
        let end = t0 + Duration::from_millis(100 * 1000);
        for i in 0..1000u64 {
            let name = format!("gone-{i}");
            let at = t0 + Duration::from_millis(100 * i);
            assert!(throttle.offer(dep(&name, 1, 0), at).is_some());
        }
        assert!(
            throttle.remembered() < 200,
            "pruned as it grows: {}",
            throttle.remembered()
        );
        let due = throttle.take_due(end);
        assert_eq!(due.iter().map(ready).collect::<Vec<_>>(), [Some(1)]);
    }

    #[test]
    fn a_remembered_object_costs_its_key_not_its_size() {
        // Every Deployment of the cluster is remembered for an interval;
        // only held ones carry an object, boxed.
        let entry = std::mem::size_of::<(ObjectKey, Seen<Deployment>)>();
        let object = std::mem::size_of::<Deployment>();
        assert!(
            entry * 4 < object,
            "a map entry takes {entry} bytes, a Deployment {object}"
        );
        let t0 = Instant::now();
        let mut throttle = StatusUpdateThrottle::new(INTERVAL);
        for i in 0..2000u64 {
            assert!(throttle.offer(dep(&format!("d-{i}"), 1, 0), t0).is_some());
        }
        // An interval later, the burst is forgotten and its table shrunk
        // to what is still remembered.
        for i in 0..100u64 {
            let at = t0 + INTERVAL + secs(1);
            assert!(
                throttle
                    .offer(dep(&format!("later-{i}"), 1, 0), at)
                    .is_some()
            );
        }
        assert!(
            throttle.seen.capacity() < 512,
            "capacity {} for {} remembered",
            throttle.seen.capacity(),
            throttle.remembered()
        );
    }
}
