//! How long a failing watch waits before it tries again.
//!
//! kube's `default_backoff` follows client-go: 0.8 s doubling to 30 s,
//! forgotten only after two minutes without an error. After a
//! kube-apiserver restart of ten seconds or so each cache had backed off
//! to 13–26 s, then met an expired resourceVersion and waited again, and
//! the agent took a minute or more to see the cluster again (fault suite,
//! "kube-apiserver restart"). A cache that is behind blocks or revokes
//! nothing, but it delays every repair, so here the wait doubles from
//! half a second to at most five. It starts over once the watch delivers
//! again (kube's `StreamBackoff` resets it on every event) or after thirty
//! quiet seconds. Eighteen watches retrying every five seconds are nothing
//! next to the apiserver's own flow control.

use std::time::{Duration, Instant};

/// First wait after an error.
const FIRST: Duration = Duration::from_millis(500);
/// Longest wait.
const MAX: Duration = Duration::from_secs(5);
/// Quiet time after which the next error starts over at [`FIRST`].
const FORGET_AFTER: Duration = Duration::from_secs(30);

/// A watch's backoff (see the module header).
#[derive(Debug, Default)]
pub struct WatchBackoff {
    /// The previous wait and when it was handed out.
    last: Option<(Duration, Instant)>,
}

impl WatchBackoff {
    /// The wait after an error at `now`.
    fn next_at(&mut self, now: Instant) -> Duration {
        let wait = match self.last {
            Some((prev, at)) if now.saturating_duration_since(at) < prev + FORGET_AFTER => {
                (prev * 2).min(MAX)
            }
            _ => FIRST,
        };
        self.last = Some((wait, now));
        wait
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(self.next_at(Instant::now()))
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_five_seconds_and_starts_over_after_a_quiet_spell() {
        let mut b = WatchBackoff::default();
        let t0 = Instant::now();
        let mut t = t0;
        let mut waits = Vec::new();
        for _ in 0..6 {
            let w = b.next_at(t);
            waits.push(w.as_millis());
            t += w;
        }
        assert_eq!(waits, vec![500, 1000, 2000, 4000, 5000, 5000]);
        // Errors right after the wait keep it at the maximum …
        assert_eq!(b.next_at(t + Duration::from_secs(1)), MAX);
        // … thirty quiet seconds (after the wait) forget it.
        let later = t + Duration::from_secs(1) + MAX + FORGET_AFTER;
        assert_eq!(b.next_at(later), FIRST);
        kube::runtime::utils::Backoff::reset(&mut b);
        assert_eq!(b.next_at(later), FIRST);
    }
}
