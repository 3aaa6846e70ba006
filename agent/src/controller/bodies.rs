//! The whole bodies of the objects a Runtime controls, kept compact
//! (issue 32).
//!
//! The apply step compares a Runtime's own objects with their rendered
//! form field by field (the production contract, `berth_shared::contract`)
//! and so needs each whole. As parsed k8s-openapi structs they were the
//! agent's largest live data at scale (heaptrack at 2,000 Runtimes: the
//! Deployments alone 22.5 MB of strings plus their structs). Here each is
//! kept as its JSON, deflated: a few hundred bytes instead of several
//! kilobytes of small allocations. The reflector's store keeps only what
//! status, the triggers and the analysis read (`reduce`), and a reconcile
//! inflates the one body it compares ([`Bodies::get`]).
//!
//! Nothing is compared in compact form: the body is the object exactly as
//! the watch delivered it (less `managedFields` and kubectl's last-applied
//! copy, which the cache never kept), so the contract's exact comparison
//! runs on the same input as before. A body that is missing or does not
//! inflate is never guessed at: the reader falls back to a GET
//! (`live::Cached::unread`).

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, RwLock};

use kube::Resource;
use kube::runtime::watcher;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::object_key::ObjectKey as Key;
use super::reduce::owned_by_runtime;

/// Deflate level: the fastest (1) already takes a Deployment's JSON to
/// about a fifth; a body is written on every watch event of its object.
const LEVEL: u8 = 1;

/// No body inflates past this (a corrupt one fails instead of growing).
const MAX_BODY: usize = 16 << 20;

#[derive(Default)]
struct State {
    /// Namespace and name to deflated JSON.
    current: HashMap<Key, Box<[u8]>>,
    /// A relist in progress: swapped in when it completes, like the
    /// reflector's own store (objects deleted while no watch ran go).
    relist: Option<HashMap<Key, Box<[u8]>>>,
}

/// The compact bodies of one kind's Runtime-controlled objects, fed by the
/// kind's watch before its objects are reduced for the store.
pub struct Bodies<K> {
    state: Arc<RwLock<State>>,
    kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Bodies<K> {
    fn clone(&self) -> Self {
        Self {
            state: self.state.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> Default for Bodies<K> {
    fn default() -> Self {
        Self {
            state: Arc::default(),
            kind: PhantomData,
        }
    }
}

/// An object as deflated JSON.
pub fn compact<K: Serialize>(obj: &K) -> Option<Box<[u8]>> {
    let json = serde_json::to_vec(obj).ok()?;
    Some(miniz_oxide::deflate::compress_to_vec(&json, LEVEL).into_boxed_slice())
}

/// The object back from [`compact`]; `None` if it does not inflate or parse.
pub fn expand<K: DeserializeOwned>(body: &[u8]) -> Option<K> {
    let json = miniz_oxide::inflate::decompress_to_vec_with_limit(body, MAX_BODY).ok()?;
    serde_json::from_slice(&json).ok()
}

/// Keeps (or drops) the body of `obj` in `map`: only a Runtime's own
/// objects have one.
fn set<K: Resource + Serialize>(map: &mut HashMap<Key, Box<[u8]>>, obj: &K) {
    let k = Key::of(obj.meta());
    match owned_by_runtime(obj.meta()).then(|| compact(obj)).flatten() {
        Some(body) => {
            map.insert(k, body);
        }
        None => {
            map.remove(&k);
        }
    }
}

impl<K> Bodies<K>
where
    K: Resource + Serialize + DeserializeOwned,
{
    /// Applies one watch event (the whole object, before the reduction).
    pub fn observe(&self, event: &watcher::Event<K>) {
        let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
        match event {
            watcher::Event::Init => s.relist = Some(HashMap::new()),
            watcher::Event::InitApply(obj) => {
                if let Some(relist) = s.relist.as_mut() {
                    set(relist, obj);
                }
            }
            watcher::Event::InitDone => {
                if let Some(relist) = s.relist.take() {
                    s.current = relist;
                    s.current.shrink_to_fit();
                }
            }
            watcher::Event::Apply(obj) => set(&mut s.current, obj),
            watcher::Event::Delete(obj) => {
                s.current.remove(&Key::of(obj.meta()));
            }
        }
    }

    /// The whole object `ns`/`name`, if a body is kept for it.
    pub fn get(&self, ns: &str, name: &str) -> Option<K> {
        let s = self.state.read().unwrap_or_else(|e| e.into_inner());
        let body = s.current.get(&Key::new(ns, name))?;
        expand(body)
    }

    /// How many bodies are kept (tests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.state.read().map(|s| s.current.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn dep(name: &str, owner: Option<&str>) -> Deployment {
        let mut d: Deployment = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "team", "resourceVersion": "7"},
            "spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"hostNetwork": false, "containers": [{
                        "name": "app", "image": "x:1",
                        "env": [{"name": "LD_PRELOAD", "value": "/evil.so"}],
                    }]},
                },
            },
        }))
        .expect("a Deployment");
        d.metadata.owner_references = owner.map(|uid| {
            vec![OwnerReference {
                api_version: "berth.dev/v1alpha1".into(),
                kind: "Runtime".into(),
                name: name.into(),
                uid: uid.into(),
                controller: Some(true),
                ..Default::default()
            }]
        });
        d
    }

    /// What goes in comes out, field for field: the contract compares
    /// the same object it compared before the bodies were compact.
    #[test]
    fn a_body_is_the_object_exactly() {
        let d = dep("web", Some("u1"));
        let body = compact(&d).expect("compact");
        let back: Deployment = expand(&body).expect("expand");
        assert_eq!(back, d);
        assert_eq!(
            serde_json::to_value(&back).expect("json"),
            serde_json::to_value(&d).expect("json")
        );
    }

    #[test]
    fn a_corrupt_body_is_none_not_a_guess() {
        let mut body = compact(&dep("web", Some("u1")))
            .expect("compact")
            .into_vec();
        let mid = body.len() / 2;
        body.truncate(mid);
        assert!(expand::<Deployment>(&body).is_none());
        assert!(expand::<Deployment>(b"not deflate").is_none());
    }

    #[test]
    fn only_runtime_controlled_objects_have_bodies_and_relists_replace() {
        let bodies = Bodies::<Deployment>::default();
        bodies.observe(&watcher::Event::Apply(dep("mine", Some("u1"))));
        bodies.observe(&watcher::Event::Apply(dep("theirs", None)));
        assert!(bodies.get("team", "mine").is_some());
        assert!(bodies.get("team", "theirs").is_none());
        // Losing the Runtime as controller drops the body.
        bodies.observe(&watcher::Event::Apply(dep("mine", None)));
        assert!(bodies.get("team", "mine").is_none());
        bodies.observe(&watcher::Event::Apply(dep("mine", Some("u1"))));
        bodies.observe(&watcher::Event::Apply(dep("gone", Some("u2"))));
        // A relist: what it does not list is gone once it completes; until
        // then the old bodies are read.
        bodies.observe(&watcher::Event::Init);
        bodies.observe(&watcher::Event::InitApply(dep("mine", Some("u1"))));
        assert!(bodies.get("team", "gone").is_some());
        bodies.observe(&watcher::Event::InitDone);
        assert!(bodies.get("team", "gone").is_none());
        assert_eq!(bodies.len(), 1);
        bodies.observe(&watcher::Event::Delete(dep("mine", Some("u1"))));
        assert_eq!(bodies.len(), 0);
    }
}
