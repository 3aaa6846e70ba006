//! What the agent remembers of each Runtime's last status write: when it
//! was sent (progress pacing) and, until the Runtime cache shows it, what
//! was sent.
//!
//! Under load the Runtime cache lags the agent's own writes: at S/4 (issue
//! 32) 268 of the 1,377 status writes before the last first pass rewrote a
//! status sent 0.02–0.62 s earlier, because the reconcile woken in between
//! still saw the status from before the write (often none), so every
//! condition looked new. While the cache lags, the status last written is
//! what the apiserver holds as far as the agent knows, and a reconcile
//! compares against it ([`LastStatusWrites::stored`]). A status someone else
//! writes after that arrives with a newer resourceVersion and is compared
//! as usual: a foreign edit is still restored.
//!
//! `status.lastApplied` (about 1 KB of JSON) is not copied into the memory
//! when the write left it as the cache showed it, which is every write but
//! the ones that change it (issue 52: the copies held 0.3 MB of the agent's
//! heap right after a rollout at S/4): the status is then put back together
//! with the record the cache still shows.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use berth_shared::api::{LastApplied, RuntimeStatus};

use super::intervals::{
    FIRST_PASS_PROGRESS_INTERVAL, PROGRESS_INTERVAL, PROGRESS_WRITES_PER_SECOND,
};
use super::write_memory::REMEMBER_WRITES_FOR;
use super::write_memory::cache_lags;

/// The last status write of each Runtime, keyed `namespace/name`. Only
/// entries younger than [`FIRST_PASS_PROGRESS_INTERVAL`] (the longer
/// pacing interval) matter for pacing; older ones are dropped as the map
/// grows and by [`LastStatusWrites::forget_old`]. The status sent is kept only
/// until the cache shows the write, or for [`REMEMBER_WRITES_FOR`].
#[derive(Debug, Default)]
pub struct LastStatusWrites(Mutex<HashMap<String, LastWrite>>);

#[derive(Debug)]
struct LastWrite {
    at: Instant,
    /// Boxed: most entries hold none (the cache caught up), and a status
    /// inline would be paid by every entry in the map's table.
    sent: Option<Box<Sent>>,
}

#[derive(Debug)]
struct Sent {
    /// The cached resourceVersion the write was sent from.
    from: Option<String>,
    /// The resourceVersion the write produced.
    produced: Option<String>,
    /// The status sent, without its `lastApplied` unless that changed.
    status: RuntimeStatus,
    /// Whether the status sent carried the `lastApplied` the cache showed
    /// when it was sent (then not kept in `status`).
    last_applied_as_cached: bool,
}

impl LastStatusWrites {
    /// How much longer a paced write of `key` must wait, when it may be
    /// written at most once per `interval` (`None`: write now).
    pub fn wait(&self, key: &str, now: Instant, interval: Duration) -> Option<Duration> {
        let map = berth_shared::sync::lock(&self.0);
        let last = map.get(key)?;
        interval
            .checked_sub(now.saturating_duration_since(last.at))
            .filter(|d| !d.is_zero())
    }

    /// The interval of progress-only writes at `now`: [`PROGRESS_INTERVAL`],
    /// stretched while many Runtimes have been written recently (those
    /// written within the last [`FIRST_PASS_PROGRESS_INTERVAL`], a rollout
    /// in progress) so that their progress writes together stay near
    /// [`PROGRESS_WRITES_PER_SECOND`], and never beyond
    /// [`FIRST_PASS_PROGRESS_INTERVAL`]. Transitions are not paced by it.
    pub fn progress_interval(&self, now: Instant) -> Duration {
        let map = berth_shared::sync::lock(&self.0);
        let active = map
            .values()
            .filter(|w| now.saturating_duration_since(w.at) < FIRST_PASS_PROGRESS_INTERVAL)
            .count();
        stretched(active)
    }

    /// The status last written for `key` while a cache at `cached_version`
    /// has not caught up with that write; `None`: the cache shows it (or
    /// something newer), compare with the cache. Once the cache has caught
    /// up the status sent is forgotten. `cached_last_applied`: the record
    /// the cache shows (a lagging cache still shows the one from before
    /// the write, which is the one sent unless the write changed it).
    pub fn stored(
        &self,
        key: &str,
        cached_version: Option<&str>,
        cached_last_applied: Option<&LastApplied>,
    ) -> Option<RuntimeStatus> {
        let mut map = berth_shared::sync::lock(&self.0);
        let last = map.get_mut(key)?;
        let sent = last.sent.as_ref()?;
        if cache_lags(
            cached_version,
            sent.from.as_deref(),
            sent.produced.as_deref(),
        ) {
            let mut status = sent.status.clone();
            if sent.last_applied_as_cached {
                status.last_applied = cached_last_applied.cloned();
            }
            Some(status)
        } else {
            last.sent = None;
            None
        }
    }

    /// Records a status write of `key` at `now`: `status`, sent from the
    /// cached version `from` (whose record was `cached_last_applied`),
    /// produced the version `produced`.
    pub fn wrote(
        &self,
        key: &str,
        now: Instant,
        from: Option<&str>,
        produced: Option<&str>,
        status: &RuntimeStatus,
        cached_last_applied: Option<&LastApplied>,
    ) {
        let last_applied_as_cached = status.last_applied.as_ref() == cached_last_applied;
        let status = if last_applied_as_cached {
            without_last_applied(status)
        } else {
            status.clone()
        };
        let mut map = berth_shared::sync::lock(&self.0);
        if map.len() >= 1024 {
            map.retain(|_, w| now.saturating_duration_since(w.at) < FIRST_PASS_PROGRESS_INTERVAL);
        }
        map.insert(
            key.to_string(),
            LastWrite {
                at: now,
                sent: Some(Box::new(Sent {
                    from: from.map(str::to_string),
                    produced: produced.map(str::to_string),
                    status,
                    last_applied_as_cached,
                })),
            },
        );
    }

    /// Forgets at `now` what no longer matters: a status sent more than
    /// [`REMEMBER_WRITES_FOR`] ago (nothing asked for it again, so the
    /// cache may never have been compared with it: after a rollout, the
    /// last status of every Runtime), and whole entries older than
    /// [`FIRST_PASS_PROGRESS_INTERVAL`], which no pacing interval reaches.
    pub fn forget_old(&self, now: Instant) {
        let mut map = berth_shared::sync::lock(&self.0);
        map.retain(|_, w| {
            let age = now.saturating_duration_since(w.at);
            if age >= REMEMBER_WRITES_FOR {
                w.sent = None;
            }
            age < FIRST_PASS_PROGRESS_INTERVAL
        });
        map.shrink_to_fit();
    }

    /// How many Runtimes' writes are remembered, and how many of them
    /// with the status sent.
    #[cfg(test)]
    fn remembered(&self) -> (usize, usize) {
        let map = berth_shared::sync::lock(&self.0);
        (map.len(), map.values().filter(|w| w.sent.is_some()).count())
    }
}

/// A copy of `status` without its `lastApplied`, the record not copied.
/// Every field named: a field added to the status is a decision here.
fn without_last_applied(status: &RuntimeStatus) -> RuntimeStatus {
    let RuntimeStatus {
        observed_generation,
        identity,
        profile,
        rollout,
        upgrade,
        conditions,
        jobs,
        last_applied: _,
        exposure,
    } = status;
    RuntimeStatus {
        observed_generation: *observed_generation,
        identity: identity.clone(),
        profile: profile.clone(),
        rollout: rollout.clone(),
        upgrade: upgrade.clone(),
        conditions: conditions.clone(),
        jobs: jobs.clone(),
        last_applied: None,
        exposure: exposure.clone(),
    }
}

/// The progress interval when `active` Runtimes share the budget.
fn stretched(active: usize) -> Duration {
    let shared = Duration::from_secs(1) * u32::try_from(active).unwrap_or(u32::MAX)
        / PROGRESS_WRITES_PER_SECOND;
    shared.clamp(PROGRESS_INTERVAL, FIRST_PASS_PROGRESS_INTERVAL)
}

#[cfg(test)]
mod tests {
    use super::LastStatusWrites;
    use crate::controller::pacing::intervals::{
        FIRST_PASS_PROGRESS_INTERVAL, PROGRESS_INTERVAL, PROGRESS_WRITES_PER_SECOND,
    };
    use berth_shared::api::{LastApplied, LastAppliedParts, RuntimeStatus};
    use std::time::{Duration, Instant};

    fn status(generation: i64) -> RuntimeStatus {
        RuntimeStatus {
            observed_generation: Some(generation),
            ..Default::default()
        }
    }

    #[test]
    fn progress_waits_out_the_interval_after_the_last_write() {
        let p = LastStatusWrites::default();
        let t0 = Instant::now();
        let s = status(1);
        let wait = |key: &str, at: Instant| p.wait(key, at, PROGRESS_INTERVAL);
        assert_eq!(wait("ns/a", t0), None, "never written: write now");
        p.wrote("ns/a", t0, Some("1"), Some("2"), &s, None);
        assert_eq!(
            wait("ns/a", t0 + Duration::from_secs(2)),
            Some(PROGRESS_INTERVAL - Duration::from_secs(2))
        );
        assert_eq!(wait("ns/a", t0 + PROGRESS_INTERVAL), None);
        assert_eq!(wait("ns/b", t0), None, "per Runtime");
        // While first passes wait, the same write waits longer.
        assert_eq!(
            p.wait("ns/a", t0 + PROGRESS_INTERVAL, FIRST_PASS_PROGRESS_INTERVAL),
            Some(FIRST_PASS_PROGRESS_INTERVAL - PROGRESS_INTERVAL)
        );
        // Old entries are dropped as the map grows; young ones stay.
        for i in 0..1100 {
            p.wrote(&format!("ns/{i}"), t0, None, None, &s, None);
        }
        let later = t0 + FIRST_PASS_PROGRESS_INTERVAL * 2;
        p.wrote("ns/new", later, None, None, &s, None);
        for i in 0..2000 {
            p.wrote(&format!("ns/x{i}"), later, None, None, &s, None);
        }
        assert!(p.wait("ns/new", later, PROGRESS_INTERVAL).is_some());
        assert_eq!(p.wait("ns/5", later, PROGRESS_INTERVAL), None);
    }

    #[test]
    fn progress_slows_while_many_runtimes_roll_out_at_once() {
        let p = LastStatusWrites::default();
        let t0 = Instant::now();
        let s = status(1);
        assert_eq!(p.progress_interval(t0), PROGRESS_INTERVAL, "none written");
        for i in 0..10 {
            p.wrote(&format!("ns/{i}"), t0, None, None, &s, None);
        }
        assert_eq!(
            p.progress_interval(t0),
            PROGRESS_INTERVAL,
            "a few Runtimes: every {PROGRESS_INTERVAL:?} each"
        );
        for i in 10..500 {
            p.wrote(&format!("ns/{i}"), t0, None, None, &s, None);
        }
        // 500 Runtimes share the budget: together about its rate.
        let interval = p.progress_interval(t0);
        assert_eq!(
            interval,
            Duration::from_secs(500 / u64::from(PROGRESS_WRITES_PER_SECOND))
        );
        assert!(interval > PROGRESS_INTERVAL);
        for i in 500..5000 {
            p.wrote(&format!("ns/{i}"), t0, None, None, &s, None);
        }
        assert_eq!(
            p.progress_interval(t0),
            FIRST_PASS_PROGRESS_INTERVAL,
            "never longer than the first passes' hold"
        );
        // Runtimes written long ago no longer count: the rollout is over.
        let later = t0 + FIRST_PASS_PROGRESS_INTERVAL;
        p.wrote("ns/late", later, None, None, &s, None);
        assert_eq!(p.progress_interval(later), PROGRESS_INTERVAL);
    }

    #[test]
    fn what_no_longer_matters_is_forgotten() {
        use crate::controller::pacing::write_memory::REMEMBER_WRITES_FOR;
        let p = LastStatusWrites::default();
        let t0 = Instant::now();
        // The cache never caught up as far as the pacer knows: nothing
        // reconciled these Runtimes again after their last write.
        p.wrote("ns/a", t0, Some("7"), Some("10"), &status(1), None);
        p.wrote(
            "ns/b",
            t0 + REMEMBER_WRITES_FOR,
            Some("7"),
            Some("10"),
            &status(1),
            None,
        );
        p.forget_old(t0 + REMEMBER_WRITES_FOR);
        assert_eq!(p.remembered(), (2, 1), "a's status forgotten, b's kept");
        assert_eq!(
            p.stored("ns/a", Some("7"), None),
            None,
            "a: compared with the cache"
        );
        assert_eq!(p.stored("ns/b", Some("7"), None), Some(status(1)));
        // a still paces its progress until no interval reaches it.
        let later = t0 + FIRST_PASS_PROGRESS_INTERVAL - Duration::from_secs(1);
        p.forget_old(later);
        assert!(
            p.wait("ns/a", later, FIRST_PASS_PROGRESS_INTERVAL)
                .is_some()
        );
        p.forget_old(t0 + FIRST_PASS_PROGRESS_INTERVAL);
        assert_eq!(p.remembered(), (1, 0), "a gone, b's status forgotten");
        p.forget_old(t0 + REMEMBER_WRITES_FOR + FIRST_PASS_PROGRESS_INTERVAL);
        assert_eq!(p.remembered(), (0, 0));
    }

    #[test]
    fn the_status_written_stands_in_for_the_cache_until_the_cache_shows_it() {
        let p = LastStatusWrites::default();
        let t0 = Instant::now();
        assert_eq!(p.stored("ns/a", Some("7"), None), None, "never written");
        // Sent from 7, the write produced 10.
        p.wrote("ns/a", t0, Some("7"), Some("10"), &status(3), None);
        assert_eq!(p.stored("ns/a", Some("7"), None), Some(status(3)));
        // 8 and 9: other writers' changes between; the cache still lags.
        assert_eq!(p.stored("ns/a", Some("9"), None), Some(status(3)));
        // The cache shows the write: compare with the cache, and the
        // status sent is forgotten even if an older version shows up.
        assert_eq!(p.stored("ns/a", Some("10"), None), None);
        assert_eq!(p.stored("ns/a", Some("7"), None), None);
        // A foreign edit after the write (a newer version) is the cache's.
        p.wrote("ns/b", t0, Some("7"), Some("10"), &status(3), None);
        assert_eq!(p.stored("ns/b", Some("11"), None), None);
        // Versions that are not integers: only the exact one lags.
        p.wrote("ns/c", t0, Some("a"), Some("c"), &status(3), None);
        assert_eq!(p.stored("ns/c", Some("b"), None), None);
        p.wrote("ns/c", t0, Some("a"), Some("c"), &status(3), None);
        assert_eq!(p.stored("ns/c", Some("a"), None), Some(status(3)));
        // The pacing still counts from the write.
        assert!(p.wait("ns/c", t0, PROGRESS_INTERVAL).is_some());
    }

    fn record(replicas: i32) -> LastApplied {
        use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
        LastApplied::new(&LastAppliedParts {
            deployment: Some(Deployment {
                spec: Some(DeploymentSpec {
                    replicas: Some(replicas),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
        .expect("record")
    }

    fn with_record(generation: i64, r: Option<&LastApplied>) -> RuntimeStatus {
        RuntimeStatus {
            last_applied: r.cloned(),
            ..status(generation)
        }
    }

    /// The record is kept only when the write changed it; otherwise the
    /// status sent is put back together with the one the cache shows, and
    /// reads back exactly as sent either way.
    #[test]
    fn the_record_is_kept_only_when_the_write_changed_it() {
        let p = LastStatusWrites::default();
        let t0 = Instant::now();
        let (two, three) = (record(2), record(3));
        // Progress: the record as the cache showed it.
        let sent = with_record(4, Some(&two));
        p.wrote("ns/a", t0, Some("7"), Some("10"), &sent, Some(&two));
        let kept = berth_shared::sync::lock(&p.0)["ns/a"]
            .sent
            .as_ref()
            .map(|s| (s.status.last_applied.is_some(), s.last_applied_as_cached));
        assert_eq!(kept, Some((false, true)), "not copied");
        assert_eq!(p.stored("ns/a", Some("7"), Some(&two)), Some(sent));
        // A write that changed the record (a first status, a new spec).
        for (cached, new) in [
            (None, Some(&three)),
            (Some(&two), Some(&three)),
            (Some(&two), None),
        ] {
            let sent = with_record(5, new);
            p.wrote("ns/b", t0, Some("7"), Some("10"), &sent, cached);
            assert_eq!(
                p.stored("ns/b", Some("7"), cached),
                Some(sent),
                "{cached:?} -> {new:?}"
            );
        }
    }
}
