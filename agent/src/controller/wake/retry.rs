//! When a failed reconcile is tried again: per Runtime, 2 s doubling to
//! 256 s, forgotten once it succeeds.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use berth_shared::api::Runtime;
use kube::runtime::reflector::ObjectRef;

/// Per-object failure counts for exponential backoff.
#[derive(Default)]
pub struct Backoff(Mutex<HashMap<ObjectRef<Runtime>, u32>>);

impl Backoff {
    /// Counts one more failure of `key`; how long until it is tried again.
    pub fn fail(&self, key: ObjectRef<Runtime>) -> Duration {
        let mut map = berth_shared::sync::lock(&self.0);
        let n = map.entry(key).or_insert(0);
        *n = n.saturating_add(1);
        let secs = 2u64.saturating_pow((*n).min(8)).min(300);
        Duration::from_secs(secs)
    }
    /// Forgets `key`'s failures (it reconciled).
    pub fn reset(&self, key: &ObjectRef<Runtime>) {
        let mut map = berth_shared::sync::lock(&self.0);
        map.remove(key);
    }
}
