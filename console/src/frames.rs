//! When the event loop may draw: pure logic over instants the caller
//! passes in, so that it is tested with simulated time.
//!
//! A burst of watch events becomes one rebuild and one draw: frames caused
//! by watch events are at least [`MIN_INTERVAL`] apart (≤ 20 per second),
//! and further apart when rebuilding is slow, so that rebuilding a big view
//! takes at most about a tenth of a core however fast the cluster changes.
//! A frame asked for by a key press is drawn at once: the user waits for it.

use std::time::{Duration, Instant};

/// Shortest time between two frames caused by watch events (20 per second).
pub const MIN_INTERVAL: Duration = Duration::from_millis(50);
/// Longest time between two such frames, however slow rebuilding is: the
/// screen still follows the cluster.
pub const MAX_INTERVAL: Duration = Duration::from_secs(2);
/// A frame may take this share of the time until the next one (1/10 ⇒ at
/// most ~10 % of a core spent drawing under churn).
pub const COST_FACTOR: u32 = 10;

/// Decides when the next frame may be drawn.
#[derive(Clone, Debug, Default)]
pub struct FrameLimiter {
    /// When the last frame was drawn and what it cost.
    last: Option<(Instant, Duration)>,
}

impl FrameLimiter {
    /// A limiter that has drawn nothing yet (the first frame is due at once).
    pub fn new() -> Self {
        Self::default()
    }

    /// The earliest instant at which a frame caused by watch events may be
    /// drawn.
    pub fn due(&self) -> Option<Instant> {
        let (at, cost) = self.last?;
        let gap = (cost * COST_FACTOR).clamp(MIN_INTERVAL, MAX_INTERVAL);
        Some(at + gap)
    }

    /// Whether a frame may be drawn at `now`: always for a key press
    /// (`urgent`), else once [`FrameLimiter::due`] has passed.
    pub fn ready(&self, now: Instant, urgent: bool) -> bool {
        urgent || self.due().is_none_or(|d| now >= d)
    }

    /// Records a frame drawn at `at` that took `cost` (rebuild + draw).
    pub fn drawn(&mut self, at: Instant, cost: Duration) {
        self.last = Some((at, cost));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Feeds watch events at `every` for `span` and counts the frames the
    /// limiter allows, each costing `cost`.
    fn frames(every: Duration, span: Duration, cost: Duration) -> usize {
        let t0 = Instant::now();
        let mut l = FrameLimiter::new();
        let mut n = 0;
        let mut t = t0;
        // An event arrives at every step: the app is always dirty.
        while t < t0 + span {
            if l.ready(t, false) {
                l.drawn(t, cost);
                n += 1;
            }
            t += every;
        }
        n
    }

    #[test]
    fn a_burst_of_events_is_drawn_at_most_twenty_times_a_second() {
        // 1,000 events per second for 2 s, cheap frames: 40 frames, not 2,000.
        let n = frames(ms(1), Duration::from_secs(2), ms(1));
        assert!((39..=41).contains(&n), "{n} frames");
    }

    #[test]
    fn slow_rebuilds_are_spaced_to_a_tenth_of_the_time() {
        // 30 ms per frame: one every 300 ms, ~10 % of a core.
        let n = frames(ms(1), Duration::from_secs(3), ms(30));
        assert!((10..=11).contains(&n), "{n} frames");
        // Very slow frames still come at least every MAX_INTERVAL.
        let mut l = FrameLimiter::new();
        let t0 = Instant::now();
        l.drawn(t0, Duration::from_secs(1));
        assert_eq!(l.due(), Some(t0 + MAX_INTERVAL));
    }

    #[test]
    fn key_presses_are_drawn_at_once() {
        let t0 = Instant::now();
        let mut l = FrameLimiter::new();
        assert!(l.ready(t0, false), "the first frame is due at once");
        l.drawn(t0, ms(5));
        assert!(!l.ready(t0 + ms(10), false));
        assert!(l.ready(t0 + ms(10), true));
        assert!(l.ready(t0 + MIN_INTERVAL, false));
    }

    #[test]
    fn a_quiet_stream_is_drawn_without_delay() {
        // One event every 200 ms: each gets its frame.
        let n = frames(ms(200), Duration::from_secs(2), ms(1));
        assert_eq!(n, 10);
    }
}
