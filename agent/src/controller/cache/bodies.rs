//! The whole bodies of the objects a Runtime controls, kept compact
//! (issue 32).
//!
//! The apply step compares a Runtime's own objects with their rendered
//! form field by field (the production contract, `berth_shared::contract`)
//! and so needs each whole. As parsed k8s-openapi structs they were the
//! agent's largest live data at scale (heaptrack at 2,000 Runtimes: the
//! Deployments alone 22.5 MB of strings plus their structs). Here each is
//! kept as its JSON, compressed: a few hundred bytes instead of several
//! kilobytes of small allocations. The Deployments' reflector store keeps
//! only what status, the triggers and the analysis read (`reduce`); the
//! label-filtered kinds' stores keep none of them ([`for_store`]); and a
//! reconcile expands the one body it compares ([`Bodies::get`]).
//!
//! Objects of one kind rendered for different Runtimes are nearly the same
//! text: the same keys, the same defaults, the same contract. So each kind
//! compresses against a dictionary, the JSON of the first body it kept
//! ([`Dictionary`]), and a body stores little more than what differs
//! (names, uids, images, timestamps). LZ4 with that dictionary took the
//! demo's Deployments from 1,673 bytes (deflate, fastest level, no
//! dictionary, as until stop 49) to 419, and its Services, PDBs,
//! ServiceAccounts and ConfigMaps from 430–640 to 185–228 bytes (one
//! Runtime's objects compressed against another's, the demo's cluster).
//!
//! Nothing is compared in compact form: the body is the object exactly as
//! the watch delivered it (less `managedFields` and kubectl's last-applied
//! copy, which the cache never kept), so the contract's exact comparison
//! runs on the same input as before. A body that is missing or does not
//! inflate is never guessed at: the reader falls back to a GET
//! (`cached_objects::Cached::unread`).

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, RwLock};

use kube::Resource;
use kube::runtime::watcher;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::object_key::ObjectKey as Key;
use super::reduce::owned_by_runtime;
use super::stored::Stored;

/// No body expands past this (a corrupt one fails instead of growing).
const MAX_BODY: usize = 16 << 20;

/// LZ4 reaches back at most this far, so no dictionary is longer.
const MAX_DICTIONARY: usize = 64 << 10;

/// A kind's dictionary: the JSON of the first body kept (at most
/// [`MAX_DICTIONARY`] bytes of it), fixed from then on, for the process's
/// life, so that every body stays readable. Empty until then (a body
/// compressed against nothing is plain LZ4).
#[derive(Default)]
pub struct Dictionary(Box<[u8]>);

impl Dictionary {
    /// The dictionary made of `json` (its first [`MAX_DICTIONARY`] bytes).
    pub fn of(json: &[u8]) -> Self {
        Self(json[..json.len().min(MAX_DICTIONARY)].into())
    }
}

#[derive(Default)]
struct State {
    /// Namespace and name to compressed JSON.
    current: HashMap<Key, Box<[u8]>>,
    /// A relist in progress: swapped in when it completes, like the
    /// reflector's own store (objects deleted while no watch ran go).
    relist: Option<HashMap<Key, Box<[u8]>>>,
    /// What every body of the kind is compressed against (set with the
    /// first; a relist keeps it, as bodies still in `current` need it).
    dictionary: Option<Dictionary>,
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

/// JSON compressed against `dictionary` (LZ4, its length first).
fn compress(json: &[u8], dictionary: &Dictionary) -> Box<[u8]> {
    lz4_flex::block::compress_prepend_size_with_dict(json, &dictionary.0).into_boxed_slice()
}

/// The object back from its body ([`compress`]) with the same dictionary; `None` if it
/// does not expand (a length over [`MAX_BODY`] is refused before anything
/// is allocated for it) or parse.
pub fn expand<K: DeserializeOwned>(body: &[u8], dictionary: &Dictionary) -> Option<K> {
    let (len, rest) = lz4_flex::block::uncompressed_size(body).ok()?;
    if len > MAX_BODY {
        return None;
    }
    let json = lz4_flex::block::decompress_with_dict(rest, len, &dictionary.0).ok()?;
    serde_json::from_slice(&json).ok()
}

/// The event a label-filtered kind's store is given (`cache::table::managed`):
/// a Runtime's own object lives only in its body, so the store holds
/// anyone else's alone. An object that becomes a Runtime's leaves the
/// store (its `Apply` is a `Delete` there); one that stops being a
/// Runtime's enters it whole. `None`: the store is not told.
///
/// Before stop 49 the store also held every owned object reduced to its
/// metadata: at S some 8,000 of them took 16.9 MB (heaptrack), twice
/// what their bodies took, and nothing read them that the body does not
/// hold. Their watch events still reach the triggers and the owner
/// index as before (reduced: `reduce::managed`).
pub fn for_store<K: Resource + Clone>(
    event: &watcher::Event<K>,
) -> Option<std::borrow::Cow<'_, watcher::Event<K>>> {
    use std::borrow::Cow;
    match event {
        watcher::Event::Apply(obj) if owned_by_runtime(obj.meta()) => {
            Some(Cow::Owned(watcher::Event::Delete(obj.clone())))
        }
        watcher::Event::InitApply(obj) if owned_by_runtime(obj.meta()) => None,
        _ => Some(Cow::Borrowed(event)),
    }
}

impl State {
    /// Keeps (or drops) the body of `obj`, in the relist if one is in
    /// progress (`relisting`): only a Runtime's own objects have one. The
    /// first body kept makes the kind's dictionary.
    fn set<K: Resource>(&mut self, obj: &Stored<K>, relisting: bool) {
        if relisting && self.relist.is_none() {
            return;
        }
        let k = Key::of(obj.meta());
        // The JSON as the apiserver sent it, not the typed form: a field
        // newer than the compiled types is compared too (`stored`).
        let json = owned_by_runtime(obj.meta())
            .then(|| serde_json::to_vec(&obj.json).ok())
            .flatten();
        let body = json.map(|json| {
            let dictionary = self.dictionary.get_or_insert_with(|| Dictionary::of(&json));
            compress(&json, dictionary)
        });
        let map = match self.relist.as_mut() {
            Some(relist) if relisting => relist,
            _ => &mut self.current,
        };
        match body {
            Some(body) => {
                map.insert(k, body);
            }
            None => {
                map.remove(&k);
            }
        }
    }
}

impl<K> Bodies<K>
where
    K: Resource + Serialize + DeserializeOwned,
{
    /// Applies one watch event (the whole object, before the reduction).
    pub fn observe(&self, event: &watcher::Event<Stored<K>>) {
        let mut s = berth_shared::sync::write(&self.state);
        match event {
            watcher::Event::Init => s.relist = Some(HashMap::new()),
            watcher::Event::InitApply(obj) => s.set(obj, true),
            watcher::Event::InitDone => {
                if let Some(relist) = s.relist.take() {
                    s.current = relist;
                    s.current.shrink_to_fit();
                }
            }
            watcher::Event::Apply(obj) => s.set(obj, false),
            watcher::Event::Delete(obj) => {
                s.current.remove(&Key::of(obj.meta()));
            }
        }
    }

    /// The whole object `ns`/`name`, if a body is kept for it.
    pub fn get(&self, ns: &str, name: &str) -> Option<Stored<K>> {
        let s = berth_shared::sync::read(&self.state);
        let body = s.current.get(&Key::new(ns, name))?;
        expand(body, s.dictionary.as_ref()?)
    }

    /// Whether a body is kept for `ns`/`name` (one that [`Bodies::get`]
    /// does not give back is corrupt: read the object instead).
    pub fn holds(&self, ns: &str, name: &str) -> bool {
        let s = berth_shared::sync::read(&self.state);
        s.current.contains_key(&Key::new(ns, name))
    }

    /// Makes the body of `ns`/`name` unreadable (tests).
    #[cfg(test)]
    pub fn corrupt(&self, ns: &str, name: &str) {
        let mut s = berth_shared::sync::write(&self.state);
        if let Some(body) = s.current.get_mut(&Key::new(ns, name)) {
            *body = b"\xff\xff\xff\x00not lz4".as_slice().into();
        }
    }

    /// How many bodies are kept (tests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.state.read().map(|s| s.current.len()).unwrap_or(0)
    }

    /// The size of the body kept for `obj` (tests).
    #[cfg(test)]
    pub fn bytes(&self, obj: &K) -> usize {
        let s = berth_shared::sync::read(&self.state);
        s.current.get(&Key::of(obj.meta())).map_or(0, |b| b.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    /// An object as JSON compressed against `dictionary`.
    fn compact<K: Serialize>(obj: &K, dictionary: &Dictionary) -> Option<Box<[u8]>> {
        let json = serde_json::to_vec(obj).ok()?;
        Some(compress(&json, dictionary))
    }

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

    /// What goes in comes out, field for field, whatever the dictionary:
    /// the contract compares the same object it compared before the
    /// bodies were compact.
    #[test]
    fn a_body_is_the_object_exactly() {
        let d = dep("web", Some("u1"));
        let other = serde_json::to_vec(&dep("api", Some("u2"))).expect("json");
        for dictionary in [Dictionary::default(), Dictionary::of(&other)] {
            let body = compact(&d, &dictionary).expect("compact");
            let back: Deployment = expand(&body, &dictionary).expect("expand");
            assert_eq!(back, d);
            assert_eq!(
                serde_json::to_value(&back).expect("json"),
                serde_json::to_value(&d).expect("json")
            );
        }
    }

    #[test]
    fn a_corrupt_body_is_none_not_a_guess() {
        let dictionary = Dictionary::default();
        let mut body = compact(&dep("web", Some("u1")), &dictionary)
            .expect("compact")
            .into_vec();
        let mid = body.len() / 2;
        body.truncate(mid);
        assert!(expand::<Deployment>(&body, &dictionary).is_none());
        assert!(expand::<Deployment>(b"not lz4", &dictionary).is_none());
        // A length past the limit is refused before anything is allocated.
        let mut huge = u32::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(&body[4..]);
        assert!(expand::<Deployment>(&huge, &dictionary).is_none());
    }

    /// Another dictionary than the body's does not give the object back.
    #[test]
    fn a_body_needs_its_own_dictionary() {
        let first = serde_json::to_vec(&dep("api", Some("u2"))).expect("json");
        let body = compact(&dep("web", Some("u1")), &Dictionary::of(&first)).expect("compact");
        assert!(expand::<Deployment>(&body, &Dictionary::default()).is_none());
    }

    /// The Deployments berth renders for two Runtimes: the second, against
    /// the first as the dictionary, costs a fraction of it alone. (The
    /// demo's real Deployments, as the apiserver returns them: 1,673
    /// bytes deflated alone, 419 against another's.)
    #[test]
    fn a_kind_compresses_against_its_first_body() {
        use berth_shared::render::examples::examples;
        use berth_shared::render::render;
        let rendered: Vec<Deployment> = examples()
            .iter()
            .filter_map(|e| render(&e.runtime, &e.identity, &e.decision).ok())
            .map(|r| r.deployment)
            .collect();
        let (first, second) = (&rendered[0], &rendered[1]);
        assert_ne!(first, second);
        let json = serde_json::to_vec(second).expect("json");
        let alone = compact(second, &Dictionary::default()).expect("alone");
        let dictionary = Dictionary::of(&serde_json::to_vec(first).expect("json"));
        let against = compact(second, &dictionary).expect("against the first");
        assert!(
            against.len() * 3 < alone.len(),
            "{} bytes of JSON: {} alone, {} against the first",
            json.len(),
            alone.len(),
            against.len()
        );
        assert_eq!(
            expand::<Deployment>(&against, &dictionary).as_ref(),
            Some(second)
        );

        // Bodies do the same: the first sets the dictionary, the second
        // is kept small, and both come back whole.
        let owned = |mut d: Deployment, uid: &str| {
            d.metadata.owner_references = dep("x", Some(uid)).metadata.owner_references;
            d
        };
        let bodies = Bodies::<Deployment>::default();
        bodies.observe(&watcher::Event::Apply(Stored::of(owned(
            first.clone(),
            "u1",
        ))));
        bodies.observe(&watcher::Event::Apply(Stored::of(owned(
            second.clone(),
            "u2",
        ))));
        let kept = bodies.bytes(second);
        assert!(kept * 3 < alone.len(), "{kept} bytes kept for the second");
        let ns = second.metadata.namespace.as_deref().unwrap_or_default();
        let name = second.metadata.name.as_deref().unwrap_or_default();
        assert_eq!(
            bodies.get(ns, name).map(|s| s.typed),
            Some(owned(second.clone(), "u2"))
        );
    }

    #[test]
    fn only_runtime_controlled_objects_have_bodies_and_relists_replace() {
        let bodies = Bodies::<Deployment>::default();
        bodies.observe(&watcher::Event::Apply(Stored::of(dep("mine", Some("u1")))));
        bodies.observe(&watcher::Event::Apply(Stored::of(dep("theirs", None))));
        assert!(bodies.get("team", "mine").is_some());
        assert!(bodies.get("team", "theirs").is_none());
        // Losing the Runtime as controller drops the body.
        bodies.observe(&watcher::Event::Apply(Stored::of(dep("mine", None))));
        assert!(bodies.get("team", "mine").is_none());
        bodies.observe(&watcher::Event::Apply(Stored::of(dep("mine", Some("u1")))));
        bodies.observe(&watcher::Event::Apply(Stored::of(dep("gone", Some("u2")))));
        // A relist: what it does not list is gone once it completes; until
        // then the old bodies are read.
        bodies.observe(&watcher::Event::Init);
        bodies.observe(&watcher::Event::InitApply(Stored::of(dep(
            "mine",
            Some("u1"),
        ))));
        assert!(bodies.get("team", "gone").is_some());
        bodies.observe(&watcher::Event::InitDone);
        assert!(bodies.get("team", "gone").is_none());
        assert_eq!(bodies.len(), 1);
        bodies.observe(&watcher::Event::Delete(Stored::of(dep("mine", Some("u1")))));
        assert_eq!(bodies.len(), 0);
    }

    /// The store of a label-filtered kind is told of anyone else's
    /// objects only; one that becomes a Runtime's leaves it.
    #[test]
    fn the_store_holds_only_objects_no_runtime_controls() {
        use std::borrow::Cow;
        let (store, mut writer) = kube::runtime::reflector::store::<Deployment>();
        let mut apply = |event: watcher::Event<Deployment>| {
            let stored = for_store(&event).map(Cow::into_owned);
            if let Some(stored) = &stored {
                writer.apply_watcher_event(stored);
            }
            stored
        };
        let theirs = dep("web", None);
        assert!(matches!(
            apply(watcher::Event::Apply(theirs.clone())),
            Some(watcher::Event::Apply(_))
        ));
        assert_eq!(store.state().len(), 1);
        // Adopted by a Runtime: gone from the store (its body has it).
        assert!(matches!(
            apply(watcher::Event::Apply(dep("web", Some("u1")))),
            Some(watcher::Event::Delete(_))
        ));
        assert_eq!(store.state().len(), 0);
        // Listed as a Runtime's: not stored at all.
        assert!(apply(watcher::Event::InitApply(dep("api", Some("u1")))).is_none());
        // Released: stored again, whole.
        apply(watcher::Event::Apply(theirs.clone()));
        assert_eq!(store.state().first().map(|d| (**d).clone()), Some(theirs));
    }
}
