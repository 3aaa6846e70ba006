//! Whether the caches' first lists are still moving (issue 14).
//!
//! The leader gives up when a cache never completes its first list (a
//! watch refused, an apiserver that never answers): exiting hands the lease
//! on and a restart starts every watch afresh. A fixed deadline for the
//! whole list cannot tell that from a big cluster: at 20,000 pods, with the
//! control plane busy making pods, the Pod cache's first list (in pages of
//! [`super::watches::LIST_PAGE_SIZE`]) took longer than the 60 s default, and the
//! restarted agent would have timed out again on every restart. So the
//! deadline is for progress: a cache still listing must have received an
//! object (or its list's end) within each window of
//! `--cache-sync-timeout-seconds`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use kube::runtime::watcher;

/// Events received per cache, by resource plural (the names
/// [`super::unsynced`] reports); clones share the counts.
#[derive(Clone, Debug, Default)]
pub struct ListProgress(Arc<Mutex<BTreeMap<String, Arc<AtomicU64>>>>);

impl ListProgress {
    /// The counter of the caches of `plural` (two watches of one kind
    /// share it: they list the same resource with the same permissions).
    pub fn counter(&self, plural: &str) -> Arc<AtomicU64> {
        let mut map = berth_shared::sync::lock(&self.0);
        map.entry(plural.to_string()).or_default().clone()
    }

    /// Every cache's count so far.
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        berth_shared::sync::lock(&self.0)
            .iter()
            .map(|(k, v)| (k.clone(), v.load(Ordering::Relaxed)))
            .collect()
    }
}

/// Whether a watch event is progress of a list: an object, or the list's
/// end. `Init` is not: the watcher yields it when it *starts* a (re)list,
/// before the request, so a watch refused on every retry (RBAC) yields an
/// `Init` before each error and would look alive forever. Errors are not.
pub fn is_progress<K, E>(event: &Result<watcher::Event<K>, E>) -> bool {
    matches!(
        event,
        Ok(watcher::Event::InitApply(_)
            | watcher::Event::InitDone
            | watcher::Event::Apply(_)
            | watcher::Event::Delete(_))
    )
}

/// Of the caches still `pending`, those that received nothing between
/// `before` and `now` (a cache never counted has received nothing).
pub fn stalled<'a>(
    pending: &[&'a str],
    before: &BTreeMap<String, u64>,
    now: &BTreeMap<String, u64>,
) -> Vec<&'a str> {
    let count = |m: &BTreeMap<String, u64>, name: &str| m.get(name).copied().unwrap_or(0);
    pending
        .iter()
        .copied()
        .filter(|name| count(now, name) == count(before, name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn a_pending_cache_stalls_only_when_nothing_arrived_in_the_window() {
        let before = counts(&[("pods", 4_000), ("runtimes", 10)]);
        // Pods still listing (pages arriving), Runtimes stuck.
        let now = counts(&[("pods", 9_000), ("runtimes", 10)]);
        assert_eq!(stalled(&["pods", "runtimes"], &before, &now), ["runtimes"]);
        // A cache that never received anything (a refused watch) stalls.
        assert_eq!(stalled(&["jobs"], &before, &now), ["jobs"]);
        // Synced caches are not asked about.
        assert!(stalled(&["pods"], &before, &now).is_empty());
    }

    #[test]
    fn a_relist_starting_is_not_progress_but_what_it_receives_is() {
        type Ev = Result<watcher::Event<u8>, &'static str>;
        // A refused watch: Init before every failing list, then the error.
        let refused: [Ev; 4] = [
            Ok(watcher::Event::Init),
            Err("403"),
            Ok(watcher::Event::Init),
            Err("403"),
        ];
        assert!(!refused.iter().any(is_progress));
        // A list arriving: its objects and its end.
        let listing: [Ev; 4] = [
            Ok(watcher::Event::InitApply(1)),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Apply(2)),
            Ok(watcher::Event::Delete(2)),
        ];
        assert!(listing.iter().all(is_progress));
    }

    #[test]
    fn watches_of_one_kind_share_a_counter_and_agents_share_none() {
        let progress = ListProgress::default();
        let a = progress.counter("pods");
        let b = progress.clone().counter("pods");
        a.fetch_add(2, Ordering::Relaxed);
        b.fetch_add(3, Ordering::Relaxed);
        assert_eq!(progress.snapshot().get("pods"), Some(&5));
        // Another agent in the same process (the tests run several)
        // counts its own lists.
        assert_eq!(ListProgress::default().snapshot().get("pods"), None);
    }
}
