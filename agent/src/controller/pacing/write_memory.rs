//! What the agent remembers of its own writes while its caches may not
//! show them yet, and for how long.
//!
//! Under load a cache shows a write a little after the write returns (at
//! S/4, issue 32: 0.02–0.62 s for Runtime status). A reconcile woken in
//! between must not send the same write again, so each write is
//! remembered with the versions it went from and to. Once the cache has
//! caught up the memory is worth nothing, yet nothing asked for it again:
//! an agent that had just created the objects of 2,000 Runtimes kept
//! about 12,000 such entries, and the Runtimes' last statuses, for as
//! long as it ran, several MB that an agent restarted on the same world
//! never holds. [`REMEMBER_WRITES_FOR`] bounds that: [`WriteMemory`] and
//! the status pacer forget what is older (`Memories::forget_old_writes`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a write is remembered. A hundred times the cache lag measured
/// under load; forgetting a write the cache still does not show costs at
/// most that write sent again (an identical server-side apply, creates
/// included, which changes nothing).
pub const REMEMBER_WRITES_FOR: Duration = Duration::from_secs(60);

/// How often old writes are forgotten.
pub const FORGET_EVERY: Duration = Duration::from_secs(15);

/// What the agent last wrote, per object: the resourceVersion of the cached
/// object it acted on, the resourceVersion its write produced, and the hash
/// of what it sent. Two reconciles can run back to back before the cache
/// has seen the first one's write (a Deployment event and a status event of
/// the same change, or another controller's status update landing between
/// the foreign change and berth's correction); the second must not send the
/// same write again. Keyed `Kind/namespace/name`.
#[derive(Debug, Default)]
pub struct WriteMemory(Mutex<HashMap<String, SentWrite>>);

/// One remembered write.
#[derive(Debug, Clone)]
struct SentWrite {
    /// The cached version the write was sent from; `None`: it created the
    /// object.
    from: Option<String>,
    produced: Option<String>,
    hash: String,
    /// When it was sent.
    at: Instant,
}

/// Whether a cache at `cached` has not caught up with a write sent from
/// `from` that produced `produced`: it still shows the version the write was
/// sent from, or any version older than the one it produced. Since
/// Kubernetes 1.35 resourceVersions are comparable integers (KEP-5504); a
/// version that does not parse compares as "not older", so the check falls
/// back to the exact version the write was sent from.
pub fn cache_lags(cached: Option<&str>, from: Option<&str>, produced: Option<&str>) -> bool {
    cached.is_some_and(|v| {
        from == Some(v)
            || produced.is_some_and(|p| match (v.parse::<u64>(), p.parse::<u64>()) {
                (Ok(c), Ok(p)) => c < p,
                _ => false,
            })
    })
}

impl WriteMemory {
    /// Whether this write was already sent and the cache has not caught up
    /// with it yet: the cached version is the one the write was sent from,
    /// or any version older than the one the write produced.
    pub fn already_sent(&self, key: &str, cached_version: Option<&str>, sent: &str) -> bool {
        let map = berth_shared::sync::lock(&self.0);
        map.get(key).is_some_and(|w| {
            w.hash == sent && cache_lags(cached_version, w.from.as_deref(), w.produced.as_deref())
        })
    }

    /// Remembers a write sent (now) from `cached_version` that produced
    /// `produced_version` (the version in the write's response).
    pub fn sent(
        &self,
        key: &str,
        cached_version: Option<&str>,
        produced_version: Option<&str>,
        sent: &str,
    ) {
        let mut map = berth_shared::sync::lock(&self.0);
        map.insert(
            key.to_string(),
            SentWrite {
                from: cached_version.map(str::to_string),
                produced: produced_version.map(str::to_string),
                hash: sent.to_string(),
                at: Instant::now(),
            },
        );
    }

    /// Whether the last write remembered for `key` created the object: a
    /// cache that still lacks it lags (or someone deleted it since), so it
    /// is read before anything is sent again.
    pub fn created(&self, key: &str) -> bool {
        let map = berth_shared::sync::lock(&self.0);
        map.get(key).is_some_and(|w| w.from.is_none())
    }

    /// Forgets at `now` the writes sent [`REMEMBER_WRITES_FOR`] ago or
    /// earlier, and the table's room for them.
    pub fn forget_old(&self, now: Instant) {
        let mut map = berth_shared::sync::lock(&self.0);
        map.retain(|_, w| now.saturating_duration_since(w.at) < REMEMBER_WRITES_FOR);
        map.shrink_to_fit();
    }

    /// How many writes are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        berth_shared::sync::lock(&self.0).len()
    }
}

#[cfg(test)]
mod tests;
