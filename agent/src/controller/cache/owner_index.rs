//! Secondary indexes over the reflector stores (issue 14): the objects of
//! one kind by their controller's uid. A reconcile asks for the
//! ReplicaSets of one Deployment and for the Jobs, CronJobs,
//! NetworkPolicies and HPAs of one Runtime (to prune); scanning the whole
//! store for each made every reconcile cost as much as the cluster is
//! large.
//!
//! An index is fed the same watch events as its store, right after the
//! store applied them (`mod.rs`), and mirrors the store's handling of a
//! relist (a buffer swapped in at `InitDone`). Lookups return the store's
//! current objects and check the controller again, so an index entry that
//! is a moment behind its store can never hand out a wrong object.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use berth_shared::api::meta::{controlled_by_uid, controller_of};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;

use super::object_key::ObjectKey as Key;

/// Controller uid → the objects it controls, and the reverse. A uid is
/// held once, shared by both maps; a controller's objects are a short
/// list (one ReplicaSet per revision kept, one NetworkPolicy, one HPA).
/// An entry was about 1 KB when keyed by `ObjectRef` with a one-entry
/// `HashSet` per controller (see `object_key`; the test
/// `an_entry_costs_a_few_hundred_bytes` measures it).
#[derive(Debug, Default)]
struct Entries {
    by_owner: HashMap<Arc<str>, Vec<Key>>,
    owner_of: HashMap<Key, Arc<str>>,
}

impl Entries {
    fn remove(&mut self, key: &Key) {
        if let Some(owner) = self.owner_of.remove(key)
            && let Some(keys) = self.by_owner.get_mut(&*owner)
        {
            keys.retain(|k| k != key);
            if keys.is_empty() {
                self.by_owner.remove(&*owner);
            }
        }
    }

    fn insert(&mut self, meta: &ObjectMeta) {
        let key = Key::of(meta);
        self.remove(&key);
        if let Some(uid) = controller_of(meta).map(|r| r.uid.as_str()) {
            let owner = match self.by_owner.get_key_value(uid) {
                Some((owner, _)) => owner.clone(),
                None => Arc::from(uid),
            };
            self.by_owner
                .entry(owner.clone())
                .or_default()
                .push(key.clone());
            self.owner_of.insert(key, owner);
        }
    }
}

#[derive(Debug, Default)]
struct State {
    live: Entries,
    /// Filled during a relist, swapped in when it completes (as the store
    /// does): until then lookups answer from the previous contents.
    buffer: Entries,
}

/// The objects of one kind by controller uid. Cheap to clone (shared).
#[derive(Debug)]
pub struct OwnerIndex<K: Resource<DynamicType = ()>> {
    state: Arc<RwLock<State>>,
    kind: std::marker::PhantomData<fn() -> K>,
}

impl<K: Resource<DynamicType = ()>> Clone for OwnerIndex<K> {
    fn clone(&self) -> Self {
        Self {
            state: self.state.clone(),
            kind: std::marker::PhantomData,
        }
    }
}

impl<K: Resource<DynamicType = ()>> Default for OwnerIndex<K> {
    fn default() -> Self {
        Self {
            state: Arc::default(),
            kind: std::marker::PhantomData,
        }
    }
}

impl<K> OwnerIndex<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    /// Applies one watch event (after the store applied it).
    pub fn apply(&self, event: &watcher::Event<K>) {
        let mut state = berth_shared::sync::write(&self.state);
        match event {
            watcher::Event::Apply(obj) => state.live.insert(obj.meta()),
            watcher::Event::Delete(obj) => state.live.remove(&Key::of(obj.meta())),
            watcher::Event::Init => state.buffer = Entries::default(),
            watcher::Event::InitApply(obj) => state.buffer.insert(obj.meta()),
            watcher::Event::InitDone => {
                state.live = std::mem::take(&mut state.buffer);
            }
        }
    }

    /// The objects in `store` whose controller has `uid`.
    pub fn controlled_by(&self, store: &Store<K>, uid: &str) -> Vec<Arc<K>> {
        let keys: Vec<ObjectRef<K>> = {
            let state = berth_shared::sync::read(&self.state);
            state
                .live
                .by_owner
                .get(uid)
                .map(|keys| keys.iter().map(Key::object_ref).collect())
                .unwrap_or_default()
        };
        keys.iter()
            .filter_map(|k| store.get(k))
            .filter(|o| controlled_by_uid(o.meta(), uid))
            .collect()
    }

    /// The keys of the objects whose controller has `uid` (as last seen:
    /// the reader checks the controller on the object it then reads).
    pub fn keys_of(&self, uid: &str) -> Vec<Key> {
        let state = berth_shared::sync::read(&self.state);
        state.live.by_owner.get(uid).cloned().unwrap_or_default()
    }

    /// Number of indexed objects.
    #[cfg(test)]
    pub fn indexed(&self) -> usize {
        let state = berth_shared::sync::read(&self.state);
        state.live.owner_of.len()
    }
}

#[cfg(test)]
mod tests;
