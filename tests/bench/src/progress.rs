//! How far a run is, on standard error.

use std::time::Instant;

/// A line on standard error: how far the run is.
pub fn progress(started: Instant, what: &str) {
    eprintln!("[{:>7.1}s] {what}", started.elapsed().as_secs_f64());
}
