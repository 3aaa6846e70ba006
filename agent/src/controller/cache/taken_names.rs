//! Which names are taken, whoever's object holds them (issue 14). The
//! caches of a Runtime's ConfigMaps, ServiceAccounts, Services, PDBs,
//! NetworkPolicies and HPAs hold only objects carrying berth's labels, so
//! "not in the cache" does not mean "free": another party's unlabeled
//! object may sit at the name, and berth never adopts one. Before, the
//! apply step read every such name from the API before creating it — one
//! GET per object, doubling the requests of a Runtime's first reconcile.
//!
//! A metadata-only watch of each of those kinds (names, no bodies) tells
//! the apply step which names are free. Memory: one `namespace/name` per
//! object of the kind in the watched scope, nothing else.
//!
//! A name is "free" only once the watch has listed, and only while it
//! shows no object there; a name taken in the moment between the watch
//! event and the create is the same race the GET had (between GET and
//! create), with the watch's lag instead of one round trip as its window.

use std::collections::HashSet;
use std::sync::{Arc, RwLock};

use kube::runtime::watcher;

use super::object_key::ObjectKey;

#[derive(Debug, Default)]
struct State {
    live: HashSet<ObjectKey>,
    /// Filled during a relist, swapped in when it completes.
    buffer: HashSet<ObjectKey>,
    /// The first list completed.
    listed: bool,
}

/// The taken names of one kind. Cheap to clone (shared).
#[derive(Clone, Debug, Default)]
pub struct NameIndex(Arc<RwLock<State>>);

impl NameIndex {
    /// Applies one watch event.
    pub fn apply<K: kube::Resource>(&self, event: &watcher::Event<K>) {
        let mut s = berth_shared::sync::write(&self.0);
        match event {
            watcher::Event::Apply(obj) => {
                s.live.insert(ObjectKey::of(obj.meta()));
            }
            watcher::Event::Delete(obj) => {
                s.live.remove(&ObjectKey::of(obj.meta()));
            }
            watcher::Event::Init => s.buffer = HashSet::new(),
            watcher::Event::InitApply(obj) => {
                s.buffer.insert(ObjectKey::of(obj.meta()));
            }
            watcher::Event::InitDone => {
                s.live = std::mem::take(&mut s.buffer);
                s.listed = true;
            }
        }
    }

    /// Whether no object of any owner is at `ns/name`: `false` also while
    /// the first list is not complete (unknown is not free).
    pub fn is_free(&self, ns: &str, name: &str) -> bool {
        let s = berth_shared::sync::read(&self.0);
        s.listed && !s.live.contains(&ObjectKey::new(ns, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::runtime::watcher::Event;

    fn cm(ns: &str, name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_name_is_free_only_after_the_first_list_and_while_nothing_is_there() {
        let index = NameIndex::default();
        assert!(!index.is_free("team", "web"), "unknown before the list");
        index.apply(&Event::<ConfigMap>::Init);
        index.apply(&Event::InitApply(cm("team", "taken")));
        assert!(!index.is_free("team", "web"), "still listing");
        index.apply(&Event::<ConfigMap>::InitDone);
        assert!(index.is_free("team", "web"));
        assert!(!index.is_free("team", "taken"));
        assert!(index.is_free("other", "taken"), "names are per namespace");
        index.apply(&Event::Apply(cm("team", "web")));
        assert!(!index.is_free("team", "web"));
        index.apply(&Event::Delete(cm("team", "web")));
        assert!(index.is_free("team", "web"));
    }

    #[test]
    fn a_relist_keeps_answering_from_the_previous_list_until_it_completes() {
        let index = NameIndex::default();
        index.apply(&Event::<ConfigMap>::Init);
        index.apply(&Event::InitApply(cm("team", "old")));
        index.apply(&Event::<ConfigMap>::InitDone);
        index.apply(&Event::<ConfigMap>::Init);
        index.apply(&Event::InitApply(cm("team", "new")));
        assert!(!index.is_free("team", "old"));
        assert!(index.is_free("team", "new"), "not swapped in yet");
        index.apply(&Event::<ConfigMap>::InitDone);
        assert!(index.is_free("team", "old"));
        assert!(!index.is_free("team", "new"));
    }
}
