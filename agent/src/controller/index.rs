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

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use berth_shared::api::meta::{controlled_by_uid, controller_of};
use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;

/// Controller uid → the objects it controls, and the reverse.
#[derive(Debug)]
struct Entries<K: Resource<DynamicType = ()>> {
    by_owner: HashMap<String, HashSet<ObjectRef<K>>>,
    owner_of: HashMap<ObjectRef<K>, String>,
}

impl<K: Resource<DynamicType = ()>> Default for Entries<K> {
    fn default() -> Self {
        Self {
            by_owner: HashMap::new(),
            owner_of: HashMap::new(),
        }
    }
}

impl<K: Resource<DynamicType = ()>> Entries<K> {
    fn remove(&mut self, key: &ObjectRef<K>) {
        if let Some(owner) = self.owner_of.remove(key)
            && let Some(set) = self.by_owner.get_mut(&owner)
        {
            set.remove(key);
            if set.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
    }

    fn insert(&mut self, obj: &K) {
        let key = ObjectRef::from_obj(obj);
        self.remove(&key);
        if let Some(owner) = controller_of(obj.meta()).map(|r| r.uid.clone()) {
            self.by_owner
                .entry(owner.clone())
                .or_default()
                .insert(key.clone());
            self.owner_of.insert(key, owner);
        }
    }
}

#[derive(Debug)]
struct State<K: Resource<DynamicType = ()>> {
    live: Entries<K>,
    /// Filled during a relist, swapped in when it completes (as the store
    /// does): until then lookups answer from the previous contents.
    buffer: Entries<K>,
}

/// The objects of one kind by controller uid. Cheap to clone (shared).
#[derive(Debug)]
pub struct OwnerIndex<K: Resource<DynamicType = ()>>(Arc<RwLock<State<K>>>);

impl<K: Resource<DynamicType = ()>> Clone for OwnerIndex<K> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<K: Resource<DynamicType = ()>> Default for OwnerIndex<K> {
    fn default() -> Self {
        Self(Arc::new(RwLock::new(State {
            live: Entries::default(),
            buffer: Entries::default(),
        })))
    }
}

impl<K> OwnerIndex<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    /// Applies one watch event (after the store applied it).
    pub fn apply(&self, event: &watcher::Event<K>) {
        let mut state = self.0.write().unwrap_or_else(|p| p.into_inner());
        match event {
            watcher::Event::Apply(obj) => state.live.insert(obj),
            watcher::Event::Delete(obj) => state.live.remove(&ObjectRef::from_obj(obj)),
            watcher::Event::Init => state.buffer = Entries::default(),
            watcher::Event::InitApply(obj) => state.buffer.insert(obj),
            watcher::Event::InitDone => {
                state.live = std::mem::take(&mut state.buffer);
            }
        }
    }

    /// The objects in `store` whose controller has `uid`.
    pub fn controlled_by(&self, store: &Store<K>, uid: &str) -> Vec<Arc<K>> {
        let keys: Vec<ObjectRef<K>> = {
            let state = self.0.read().unwrap_or_else(|p| p.into_inner());
            state
                .live
                .by_owner
                .get(uid)
                .map(|set| set.iter().cloned().collect())
                .unwrap_or_default()
        };
        keys.iter()
            .filter_map(|k| store.get(k))
            .filter(|o| controlled_by_uid(o.meta(), uid))
            .collect()
    }

    /// Number of indexed objects.
    #[cfg(test)]
    pub fn indexed(&self) -> usize {
        let state = self.0.read().unwrap_or_else(|p| p.into_inner());
        state.live.owner_of.len()
    }
}

#[cfg(test)]
mod tests;
