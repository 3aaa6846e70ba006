//! The timing decisions of leader election, pure (no I/O, the clock passed
//! in) so that they are unit-tested directly.
//!
//! Both sides judge time only on their own monotonic clock, as client-go's
//! leader election does, so wall-clock skew between replicas cannot produce
//! two leaders:
//!
//! - the **holder** counts its lease from the moment it *sent* the write
//!   that took or renewed it (the apiserver stored it later, and a standby
//!   saw it later still), and closes its write gate a margin before the
//!   lease duration has passed since then, whether or not a renewal is
//!   still in flight;
//! - a **standby** never reads `renewTime` as a clock: it records when it
//!   first saw the current record (holder, renewTime, duration) and takes
//!   the lease only once that record has stayed unchanged for a full lease
//!   duration on its own clock.

use std::time::Duration;

use tokio::time::Instant;

/// What a standby compares between two reads of the Lease: any change
/// (a renewal, a new holder, a new duration) restarts its wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// `holderIdentity` (empty when released).
    pub holder: String,
    /// `renewTime` exactly as stored (never interpreted as a time).
    pub renew_time: Option<String>,
    /// `leaseDurationSeconds`.
    pub duration_seconds: Option<i32>,
}

/// A record and when this process first saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// The record.
    pub record: Record,
    /// When it was first seen, on this process's clock.
    pub since: Instant,
}

/// Folds a fresh read into what was observed before.
pub fn observe(previous: Option<&Observed>, record: Record, now: Instant) -> Observed {
    match previous {
        Some(p) if p.record == record => p.clone(),
        _ => Observed { record, since: now },
    }
}

/// The lease duration a record asks standbys to wait (15 s when absent,
/// the API's documented default; at least 1 s).
pub fn record_duration(record: &Record) -> Duration {
    let secs = record.duration_seconds.unwrap_or(15).max(1);
    Duration::from_secs(u64::try_from(secs).unwrap_or(15))
}

/// Whether a standby may take the lease now: nobody holds it, or the
/// record it saw has not changed for a full lease duration.
pub fn may_take_over(observed: &Observed, now: Instant) -> bool {
    observed.record.holder.is_empty()
        || now.saturating_duration_since(observed.since) >= record_duration(&observed.record)
}

/// How long before the lease would expire the holder stops writing: a
/// fifth of the duration, at least 1 s, and never the whole duration.
/// It covers a write already sent when the gate closes and clock-rate
/// differences between the replicas.
pub fn margin(duration: Duration) -> Duration {
    (duration / 5).max(Duration::from_secs(1)).min(duration / 2)
}

/// Until when the holder may write, given when it sent the write that took
/// or last renewed the lease: its renew deadline, and never later than the
/// margin before the lease could expire (so a renew deadline set too close
/// to the duration cannot let the holder write while a standby takes over).
pub fn writes_allowed_until(
    sent: Instant,
    duration: Duration,
    renew_deadline: Duration,
) -> Instant {
    sent + renew_deadline.min(duration.saturating_sub(margin(duration)))
}

/// The agent's default lease duration. client-go's defaults (15 s / 10 s /
/// 2 s, kube-controller-manager's) lose the lease after 10 s without a
/// successful renewal: an apiserver restart or an etcd stall on a busy
/// cluster then costs the leader its lease, and a berth leader that loses
/// its lease exits and relists every cache on restart, adding load exactly
/// when the apiserver is slow. cert-manager moved to 60 s / 40 s / 15 s for
/// that reason. berth takes cert-manager's duration and deadline: a crashed
/// leader's successor waits up to a minute, which only delays reconciles
/// (every replica serves the admission webhook, leader or not).
pub const DEFAULT_LEASE_DURATION_SECONDS: u64 = 60;

/// The agent's default retry period (renewal interval, and how often a
/// standby looks at the Lease). Shorter than cert-manager's 15 s: within the
/// 40 s deadline the holder tries about eight renewals rather than two, so
/// an outage of half a minute passes, and a standby takes a released lease
/// (rolling update, drain) within 5 s. The cost is one Lease read and write
/// per 5 s.
pub const DEFAULT_RETRY_PERIOD_SECONDS: u64 = 5;

/// The renew deadline when none is given: two thirds of the lease duration,
/// the ratio of both client-go's (10 s of 15 s) and cert-manager's (40 s of
/// 60 s) defaults.
pub fn default_renew_deadline(duration: Duration) -> Duration {
    duration * 2 / 3
}

/// Leader-election timing that cannot work.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TimingError {
    /// The holder would renew after it has already given up.
    #[error(
        "the lease renew deadline ({renew_deadline:?}) must be longer than the retry period ({retry:?})"
    )]
    RetryNotBeforeDeadline {
        /// The renew deadline.
        renew_deadline: Duration,
        /// The retry period.
        retry: Duration,
    },
    /// The holder would write after a standby may take over.
    #[error(
        "the lease renew deadline ({renew_deadline:?}) must be shorter than the lease duration ({duration:?})"
    )]
    DeadlineNotBeforeExpiry {
        /// The renew deadline.
        renew_deadline: Duration,
        /// The lease duration.
        duration: Duration,
    },
}

/// Checks client-go's rules: retry period < renew deadline < lease duration.
pub fn validate(
    duration: Duration,
    renew_deadline: Duration,
    retry: Duration,
) -> Result<(), TimingError> {
    if renew_deadline >= duration {
        return Err(TimingError::DeadlineNotBeforeExpiry {
            renew_deadline,
            duration,
        });
    }
    if retry >= renew_deadline {
        return Err(TimingError::RetryNotBeforeDeadline {
            renew_deadline,
            retry,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_the_deadline_is_two_thirds() {
        let s = Duration::from_secs;
        let duration = s(DEFAULT_LEASE_DURATION_SECONDS);
        assert_eq!(default_renew_deadline(duration), s(40));
        assert_eq!(default_renew_deadline(s(15)), s(10));
        assert_eq!(
            validate(
                duration,
                default_renew_deadline(duration),
                s(DEFAULT_RETRY_PERIOD_SECONDS)
            ),
            Ok(())
        );
        // client-go's and cert-manager's own numbers pass too.
        assert_eq!(validate(s(15), s(10), s(2)), Ok(()));
        assert_eq!(validate(s(60), s(40), s(15)), Ok(()));
    }

    #[test]
    fn timing_that_cannot_work_is_refused() {
        let s = Duration::from_secs;
        assert!(matches!(
            validate(s(15), s(15), s(2)),
            Err(TimingError::DeadlineNotBeforeExpiry { .. })
        ));
        assert!(matches!(
            validate(s(60), s(40), s(40)),
            Err(TimingError::RetryNotBeforeDeadline { .. })
        ));
    }

    fn record(holder: &str, renew: &str) -> Record {
        Record {
            holder: holder.to_string(),
            renew_time: Some(renew.to_string()),
            duration_seconds: Some(4),
        }
    }

    #[test]
    fn a_standby_waits_a_full_duration_from_when_it_first_saw_the_record() {
        let t0 = Instant::now();
        let seen = observe(None, record("a", "10:00:00"), t0);
        // However old renewTime claims to be, the wait starts now.
        assert!(!may_take_over(&seen, t0));
        assert!(!may_take_over(&seen, t0 + Duration::from_millis(3999)));
        let same = observe(
            Some(&seen),
            record("a", "10:00:00"),
            t0 + Duration::from_secs(3),
        );
        assert_eq!(
            same.since, t0,
            "an unchanged record keeps its first sighting"
        );
        assert!(may_take_over(&same, t0 + Duration::from_secs(4)));
    }

    #[test]
    fn any_change_of_the_record_restarts_the_wait() {
        let t0 = Instant::now();
        let seen = observe(None, record("a", "10:00:00"), t0);
        let t1 = t0 + Duration::from_secs(3);
        let renewed = observe(Some(&seen), record("a", "10:00:03"), t1);
        assert_eq!(renewed.since, t1);
        assert!(!may_take_over(&renewed, t0 + Duration::from_secs(5)));
        let new_holder = observe(
            Some(&renewed),
            record("b", "10:00:03"),
            t1 + Duration::from_secs(1),
        );
        assert_eq!(new_holder.since, t1 + Duration::from_secs(1));
        let longer = Record {
            duration_seconds: Some(15),
            ..record("b", "10:00:03")
        };
        let t2 = t1 + Duration::from_secs(2);
        assert_eq!(observe(Some(&new_holder), longer, t2).since, t2);
    }

    #[test]
    fn a_released_lease_is_free_at_once() {
        let t0 = Instant::now();
        let released = Record {
            holder: String::new(),
            renew_time: None,
            duration_seconds: Some(15),
        };
        assert!(may_take_over(&observe(None, released, t0), t0));
    }

    #[test]
    fn the_wait_uses_the_duration_the_record_announces() {
        let t0 = Instant::now();
        let r = Record {
            duration_seconds: None,
            ..record("a", "x")
        };
        let seen = observe(None, r, t0);
        assert!(!may_take_over(&seen, t0 + Duration::from_secs(14)));
        assert!(may_take_over(&seen, t0 + Duration::from_secs(15)));
        let zero = Record {
            duration_seconds: Some(0),
            ..record("a", "x")
        };
        assert_eq!(record_duration(&zero), Duration::from_secs(1));
    }

    #[test]
    fn the_holder_stops_writing_a_margin_before_its_lease_runs_out() {
        let sent = Instant::now();
        let s = Duration::from_secs;
        // A deadline well inside the lease is the limit …
        assert_eq!(writes_allowed_until(sent, s(60), s(40)), sent + s(40));
        assert_eq!(writes_allowed_until(sent, s(15), s(10)), sent + s(10));
        // … one too close to expiry is cut to the margin: a 15 s lease
        // stops writes 3 s early whatever the deadline says …
        assert_eq!(writes_allowed_until(sent, s(15), s(15)), sent + s(12));
        // … short test leases keep at least a second of margin …
        assert_eq!(writes_allowed_until(sent, s(4), s(4)), sent + s(3));
        // … but never the whole lease.
        assert_eq!(
            writes_allowed_until(sent, s(1), s(1)),
            sent + Duration::from_millis(500)
        );
    }

    #[test]
    fn the_holder_gate_closes_before_any_standby_may_take_over() {
        // The holder sends its renewal at t0; the standby can only see it
        // later. Whatever the delay, the holder's gate closes first.
        let d = Duration::from_secs(4);
        let t0 = Instant::now();
        for delay_ms in [0u64, 10, 500, 3000] {
            let seen_at = t0 + Duration::from_millis(delay_ms);
            let seen = observe(None, record("a", "t0"), seen_at);
            let closes = writes_allowed_until(t0, d, d);
            assert!(!may_take_over(&seen, closes));
            assert!(closes < seen_at + d);
        }
    }
}
