//! What wakes the grants publisher: a change that can change a grant's
//! status or the set of grants — a RuntimeGrant, a RuntimeClass, a Node
//! (the fields the controller's Node filter keeps), a Namespace's labels,
//! a Runtime's profile, identity or state, a workload's RuntimeClass.
//! Each cache that matters observes its watch events through a
//! [`Changes`], which wakes the publisher only when an object's
//! fingerprint for the publisher changes: a Deployment's status churning
//! through a rollout, or a Runtime's counts moving, wake nothing.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use tokio::sync::Notify;

/// Wakes the publisher (one stored wake-up at most: changes during a pass
/// cause one more pass, never a queue of them).
#[derive(Clone, Default)]
pub struct Wake(Arc<Notify>);

impl Wake {
    /// Something that matters changed.
    pub fn wake(&self) {
        self.0.notify_one();
    }

    /// Waits for the next change.
    pub async fn changed(&self) {
        self.0.notified().await;
    }
}

/// The fingerprint of each object of one kind, as the publisher reads it
/// (`None`: nothing the publisher reads, e.g. a workload without a
/// RuntimeClass).
pub struct Changes<K> {
    wake: Wake,
    fingerprint: fn(&K) -> Option<String>,
    /// Each object's fingerprint, hashed (only the objects that have one).
    last: Mutex<HashMap<String, u64>>,
}

impl<K: Resource> Changes<K> {
    /// Watches `fingerprint` of every object, waking `wake` when one
    /// changes.
    pub fn new(wake: &Wake, fingerprint: fn(&K) -> Option<String>) -> Arc<Self> {
        Arc::new(Self {
            wake: wake.clone(),
            fingerprint,
            last: Mutex::new(HashMap::new()),
        })
    }

    /// Notes one watch event; wakes the publisher when a fingerprint
    /// changed (appeared, changed, went) or a relist completed.
    pub fn observe(&self, event: &watcher::Event<K>) {
        let changed = match event {
            watcher::Event::Apply(obj) | watcher::Event::InitApply(obj) => self.apply(obj),
            watcher::Event::Delete(obj) => self.forget(obj),
            // A relist may have missed deletes: look once more.
            watcher::Event::InitDone => true,
            watcher::Event::Init => false,
        };
        if changed {
            self.wake.wake();
        }
    }

    fn key(obj: &K) -> String {
        format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any())
    }

    fn apply(&self, obj: &K) -> bool {
        let key = Self::key(obj);
        let mut last = berth_shared::sync::lock(&self.last);
        match (self.fingerprint)(obj) {
            Some(now) => {
                let mut h = DefaultHasher::new();
                now.hash(&mut h);
                let now = h.finish();
                last.insert(key, now) != Some(now)
            }
            None => last.remove(&key).is_some(),
        }
    }

    fn forget(&self, obj: &K) -> bool {
        let mut last = berth_shared::sync::lock(&self.last);
        last.remove(&Self::key(obj)).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(name: &str, value: Option<&str>) -> ConfigMap {
        let mut c = ConfigMap::default();
        c.metadata.name = Some(name.into());
        c.metadata.namespace = Some("ns".into());
        c.data = value.map(|v| [("class".to_string(), v.to_string())].into());
        c
    }

    fn class_of(c: &ConfigMap) -> Option<String> {
        c.data.as_ref()?.get("class").cloned()
    }

    #[tokio::test]
    async fn only_a_changed_fingerprint_wakes() {
        let wake = Wake::default();
        let changes = Changes::new(&wake, class_of);
        let woke = |changes: &Changes<ConfigMap>, e: watcher::Event<ConfigMap>| match &e {
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => changes.apply(o),
            watcher::Event::Delete(o) => changes.forget(o),
            _ => true,
        };
        // (event, wakes?)
        assert!(woke(
            &changes,
            watcher::Event::Apply(cm("a", Some("gvisor")))
        ));
        assert!(!woke(
            &changes,
            watcher::Event::Apply(cm("a", Some("gvisor")))
        ));
        assert!(woke(&changes, watcher::Event::Apply(cm("a", Some("kata")))));
        // Dropping the class is a change; an object without one is not.
        assert!(woke(&changes, watcher::Event::Apply(cm("a", None))));
        assert!(!woke(&changes, watcher::Event::Apply(cm("b", None))));
        assert!(!woke(&changes, watcher::Event::Delete(cm("b", None))));
        assert!(woke(
            &changes,
            watcher::Event::Apply(cm("c", Some("gvisor")))
        ));
        assert!(woke(
            &changes,
            watcher::Event::Delete(cm("c", Some("gvisor")))
        ));

        // And `observe` wakes the publisher through the Notify.
        changes.observe(&watcher::Event::Apply(cm("d", Some("gvisor"))));
        tokio::time::timeout(std::time::Duration::from_secs(5), wake.changed())
            .await
            .expect("woken");
    }
}
