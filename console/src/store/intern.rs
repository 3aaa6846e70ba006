//! One shared copy of each distinct label (or annotation) map the store
//! keeps. The Pods of one ReplicaSet carry the same labels and berth's
//! annotations, copied from its template; kept once per Pod, those maps
//! (a B-tree node of ~0.5 kB plus a string per key and value) were most
//! of what the store held for 20,000 Pods. Interned, the Pods of a
//! ReplicaSet share one map behind an `Arc`, which is also the form the
//! shared analysis takes them in ([`Labels`]): a `Workload` is built from
//! the store without copying a label.
//!
//! The pool is process-wide (the store's kept forms are built where the
//! watch events are collected, which has no store at hand) and forgets a
//! map once nothing else holds it: it is swept whenever it has doubled
//! since the last sweep, so it stays within twice the live maps.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, LazyLock, Mutex};

pub use berth_shared::analysis::Labels;

/// Sweeps happen no more often than every this many new maps.
const MIN_SWEEP: usize = 1024;

#[derive(Default)]
struct Pool {
    maps: HashSet<Labels>,
    /// Size after the last sweep.
    swept: usize,
}

static POOL: LazyLock<Mutex<Pool>> = LazyLock::new(Default::default);

/// The empty map, shared (most objects carry no annotation kept).
static EMPTY: LazyLock<Labels> = LazyLock::new(Default::default);

/// The shared copy of `map`.
pub fn labels(map: BTreeMap<String, String>) -> Labels {
    if map.is_empty() {
        return EMPTY.clone();
    }
    // A panic elsewhere cannot leave the set half-changed: take it as is.
    let mut pool = berth_shared::sync::lock(&POOL);
    if let Some(found) = pool.maps.get(&map) {
        return found.clone();
    }
    if pool.maps.len() >= (2 * pool.swept).max(MIN_SWEEP) {
        // Only the pool holds these any more.
        pool.maps.retain(|m| Arc::strong_count(m) > 1);
        pool.swept = pool.maps.len();
    }
    let shared = Arc::new(map);
    pool.maps.insert(shared.clone());
    shared
}

/// [`labels`] of an optional map (absent = empty).
pub fn opt(map: Option<BTreeMap<String, String>>) -> Labels {
    labels(map.unwrap_or_default())
}

/// The map as `ObjectMeta` has it (`None` when empty).
pub fn to_opt(l: &Labels) -> Option<BTreeMap<String, String>> {
    (!l.is_empty()).then(|| l.as_ref().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn equal_maps_are_one_copy_and_unequal_ones_are_not() {
        let a = labels(map(&[("app", "web"), ("pod-template-hash", "abc")]));
        let b = labels(map(&[("app", "web"), ("pod-template-hash", "abc")]));
        let c = labels(map(&[("app", "web"), ("pod-template-hash", "abd")]));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(c.get("pod-template-hash").map(String::as_str), Some("abd"));
        assert!(Arc::ptr_eq(&opt(None), &labels(BTreeMap::new())));
        assert_eq!(to_opt(&opt(None)), None);
        assert_eq!(
            to_opt(&a),
            Some(map(&[("app", "web"), ("pod-template-hash", "abc")]))
        );
    }

    #[test]
    fn maps_nobody_holds_are_forgotten() {
        // Unique to this test (the pool is shared with the other tests).
        let gone = |i: usize| map(&[("intern-test-gone", &i.to_string())]);
        for i in 0..(4 * MIN_SWEEP) {
            drop(labels(gone(i)));
        }
        let kept = labels(map(&[("intern-test-kept", "1")]));
        let pool = berth_shared::sync::lock(&POOL);
        let left = pool
            .maps
            .iter()
            .filter(|m| m.contains_key("intern-test-gone"))
            .count();
        assert!(left <= 2 * MIN_SWEEP, "{left} dropped maps still pooled");
        assert!(pool.maps.contains(&*kept));
    }
}
