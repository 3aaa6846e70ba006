//! Polling until the cluster reaches a state, with a deadline whose
//! failure names what was awaited (and, where known, what was seen).

use std::time::{Duration, Instant};

/// Polls `check` until it returns true; panics naming `what` after `timeout`.
pub async fn wait_for<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if check().await {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {}s waiting for {what}",
            timeout.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Polls `get` until it yields `Some`, returning the value; panics naming
/// `what` after `timeout`.
pub async fn wait_for_value<T, F, Fut>(what: &str, timeout: Duration, mut get: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = get().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {}s waiting for {what}",
            timeout.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Polls `get` until it yields `Ok`, returning the value; after `timeout`
/// panics naming `what` and the last `Err`: what was seen instead, so that
/// a timeout says what state the wait was stuck in.
pub async fn wait_for_ok<T, F, Fut>(what: &str, timeout: Duration, mut get: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let seen = match get().await {
            Ok(v) => return v,
            Err(seen) => seen,
        };
        assert!(
            Instant::now() < deadline,
            "timed out after {}s waiting for {what}; last seen: {seen}",
            timeout.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
