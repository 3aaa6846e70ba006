//! Who points at whom, kept next to the store's maps so that the rollout
//! rows find a Runtime's Deployment, its ReplicaSets, their Pods and the
//! events about any of them by lookup instead of scanning every object of
//! the kind per Runtime (which made `berth get rollouts` cost Runtimes ×
//! ReplicaSets × Pods).
//!
//! A link is `(child kind, namespace, target kind, target name)` → names of
//! the children: an owner reference of a Deployment, ReplicaSet or Pod,
//! or the `involvedObject` of an Event. The [`super::Store`] updates it on
//! every write (apply replaces the old object's links, delete and clear
//! remove them), so it always agrees with a scan of the maps.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Event;

use super::meta::HasSlimMeta;
use super::{Kind, ObjKey};

/// `(kind, name)` of what an object points at.
pub type Target = (String, String);

/// `(child kind, namespace, target kind, target name)`.
type LinkKey = (Kind, String, String, String);

/// The links of every indexed object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Links {
    map: BTreeMap<LinkKey, BTreeSet<String>>,
}

impl Links {
    /// Records that `child` (of `kind`) points at each of `targets`.
    pub fn add(&mut self, kind: Kind, child: &ObjKey, targets: &[Target]) {
        for (tk, tn) in targets {
            self.map
                .entry((kind, child.0.clone(), tk.clone(), tn.clone()))
                .or_default()
                .insert(child.1.clone());
        }
    }

    /// Forgets that `child` points at each of `targets`.
    pub fn remove(&mut self, kind: Kind, child: &ObjKey, targets: &[Target]) {
        for (tk, tn) in targets {
            let k = (kind, child.0.clone(), tk.clone(), tn.clone());
            if let Some(set) = self.map.get_mut(&k) {
                set.remove(&child.1);
                if set.is_empty() {
                    self.map.remove(&k);
                }
            }
        }
    }

    /// Forgets every link of one child kind.
    pub fn clear(&mut self, kind: Kind) {
        self.map.retain(|k, _| k.0 != kind);
    }

    /// Names of the objects of `kind` in `namespace` that point at the
    /// `target_kind` called `target_name`, in name order.
    pub fn of<'a>(
        &'a self,
        kind: Kind,
        namespace: &str,
        target_kind: &str,
        target_name: &str,
    ) -> impl Iterator<Item = &'a String> + 'a {
        // Owned strings for the key: a BTreeMap of tuples cannot be probed
        // with borrowed parts.
        let k = (
            kind,
            namespace.to_string(),
            target_kind.to_string(),
            target_name.to_string(),
        );
        self.map.get(&k).into_iter().flatten()
    }
}

/// Links of an object by its owner references.
pub fn owners<K: HasSlimMeta>(obj: &K) -> Vec<Target> {
    obj.slim_meta()
        .owners
        .iter()
        .map(|r| (r.kind.clone(), r.name.clone()))
        .collect()
}

/// Links of an Event: the object it is about.
pub fn involved(e: &Event) -> Vec<Target> {
    let io = &e.involved_object;
    match (&io.kind, &io.name) {
        (Some(k), Some(n)) => vec![(k.clone(), n.clone())],
        _ => Vec::new(),
    }
}

/// For kinds nobody looks up by link.
pub fn none<K>(_: &K) -> Vec<Target> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Object, Store};
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::{ObjectReference, Pod};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::api::ObjectMeta;

    use crate::test_rng::Rng;

    const NAMESPACES: &[&str] = &["a", "b"];

    fn meta(rng: &mut Rng, owner_kind: &str) -> ObjectMeta {
        let owners = (0..rng.below(3))
            .map(|_| OwnerReference {
                kind: owner_kind.into(),
                name: format!("o{}", rng.below(4)),
                ..Default::default()
            })
            .collect();
        ObjectMeta {
            namespace: Some(NAMESPACES[rng.below(2)].into()),
            name: Some(format!("n{}", rng.below(6))),
            owner_references: Some(owners),
            ..Default::default()
        }
    }

    fn random_object(rng: &mut Rng) -> Object {
        match rng.below(4) {
            0 => Deployment {
                metadata: meta(rng, "Runtime"),
                ..Default::default()
            }
            .into(),
            1 => ReplicaSet {
                metadata: meta(rng, "Deployment"),
                ..Default::default()
            }
            .into(),
            2 => Pod {
                metadata: meta(rng, "ReplicaSet"),
                ..Default::default()
            }
            .into(),
            _ => {
                let mut m = meta(rng, "");
                m.owner_references = None;
                Event {
                    metadata: m,
                    involved_object: ObjectReference {
                        kind: Some(["Pod", "ReplicaSet"][rng.below(2)].into()),
                        name: Some(format!("o{}", rng.below(4))),
                        ..Default::default()
                    },
                    ..Default::default()
                }
                .into()
            }
        }
    }

    /// The index built from scratch by scanning every map.
    fn scanned(store: &Store) -> Links {
        let mut l = Links::default();
        for (k, o) in &store.deployments {
            l.add(Kind::Deployment, k, &owners(o.as_ref()));
        }
        for (k, o) in &store.replicasets {
            l.add(Kind::ReplicaSet, k, &owners(o.as_ref()));
        }
        for (k, o) in &store.pods {
            l.add(Kind::Pod, k, &owners(o.as_ref()));
        }
        for (k, o) in &store.events {
            l.add(Kind::Event, k, &involved(o.as_ref()));
        }
        l
    }

    #[test]
    fn index_agrees_with_a_scan_after_random_writes() {
        const KINDS: [Kind; 4] = [Kind::Deployment, Kind::ReplicaSet, Kind::Pod, Kind::Event];
        for seed in 1..=20u64 {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ seed);
            let mut store = Store::default();
            for step in 0..400 {
                match rng.below(10) {
                    // Apply (often a replacement with other owners).
                    0..=5 => store.apply(random_object(&mut rng)),
                    6..=7 => {
                        let o = random_object(&mut rng);
                        store.delete(o.kind(), &o.key());
                    }
                    // A relist: everything of one kind replaced.
                    8 => {
                        let kind = KINDS[rng.below(4)];
                        let objs: Vec<Object> = (0..rng.below(8))
                            .map(|_| random_object(&mut rng))
                            .filter(|o| o.kind() == kind)
                            .collect();
                        store.replace(kind, objs);
                    }
                    _ => store.clear(KINDS[rng.below(4)]),
                }
                assert_eq!(store.links, scanned(&store), "seed {seed} step {step}");
            }
        }
    }

    #[test]
    fn lookup_finds_owned_objects_by_namespace() {
        let mut store = Store::default();
        let rs = |ns: &str, name: &str, owner: &str| -> Object {
            ReplicaSet {
                metadata: ObjectMeta {
                    namespace: Some(ns.into()),
                    name: Some(name.into()),
                    owner_references: Some(vec![OwnerReference {
                        kind: "Deployment".into(),
                        name: owner.into(),
                        ..Default::default()
                    }]),
                    ..Default::default()
                },
                ..Default::default()
            }
            .into()
        };
        store.apply(rs("a", "web-2", "web"));
        store.apply(rs("a", "web-1", "web"));
        store.apply(rs("b", "web-9", "web"));
        store.apply(rs("a", "db-1", "db"));
        let names: Vec<&String> = store
            .links
            .of(Kind::ReplicaSet, "a", "Deployment", "web")
            .collect();
        assert_eq!(names, ["web-1", "web-2"]);
        // Re-owned: the old link goes.
        store.apply(rs("a", "web-2", "db"));
        let names: Vec<&String> = store
            .links
            .of(Kind::ReplicaSet, "a", "Deployment", "web")
            .collect();
        assert_eq!(names, ["web-1"]);
    }
}
