//! One kind's foreign objects as the exposure check keeps them: by
//! namespace, each reduced to what the check reads (`T`), fed the watch
//! events of its kind. Like the stores, a relist is buffered and swapped
//! in when it completes. Each event says which namespace's contents it
//! changed, so that only a change of what the check reads wakes a
//! reconcile (a Service's status, or a foreign object that selects
//! nothing, wakes nothing).

use std::collections::{BTreeMap, HashMap};
use std::sync::RwLock;

use kube::Resource;
use kube::runtime::watcher;

type Namespaces<T> = HashMap<Box<str>, BTreeMap<Box<str>, T>>;

#[derive(Debug)]
struct State<T> {
    live: Namespaces<T>,
    /// Filled during a relist.
    buffer: Namespaces<T>,
    listed: bool,
}

impl<T> Default for State<T> {
    fn default() -> Self {
        State {
            live: HashMap::new(),
            buffer: HashMap::new(),
            listed: false,
        }
    }
}

/// The kept objects of one kind, by namespace and name.
#[derive(Debug)]
pub struct Mirror<T>(RwLock<State<T>>);

impl<T> Default for Mirror<T> {
    fn default() -> Self {
        Mirror(RwLock::new(State::default()))
    }
}

fn key<K: Resource>(obj: &K) -> (Box<str>, Box<str>) {
    let m = obj.meta();
    (
        m.namespace.as_deref().unwrap_or_default().into(),
        m.name.as_deref().unwrap_or_default().into(),
    )
}

fn put<T>(map: &mut Namespaces<T>, ns: Box<str>, name: Box<str>, kept: Option<T>) {
    match kept {
        Some(t) => {
            map.entry(ns).or_default().insert(name, t);
        }
        None => {
            if let Some(names) = map.get_mut(&ns) {
                names.remove(&name);
                if names.is_empty() {
                    map.remove(&ns);
                }
            }
        }
    }
}

impl<T: PartialEq> Mirror<T> {
    /// Applies one watch event, `keep` reducing its object (`None`: not
    /// kept, the check has nothing to read in it). Returns the namespaces
    /// whose kept contents changed; none while the first list is under way
    /// (nothing is reconciled before every cache has listed).
    pub fn apply<K: Resource>(
        &self,
        event: &watcher::Event<K>,
        keep: impl Fn(&K) -> Option<T>,
    ) -> Vec<Box<str>> {
        let mut s = berth_shared::sync::write(&self.0);
        match event {
            watcher::Event::Apply(obj) => {
                let (ns, name) = key(obj);
                let kept = keep(obj);
                let before = s.live.get(&ns).and_then(|n| n.get(&name));
                if before == kept.as_ref() {
                    return Vec::new();
                }
                put(&mut s.live, ns.clone(), name, kept);
                vec![ns]
            }
            watcher::Event::Delete(obj) => {
                let (ns, name) = key(obj);
                let had = s.live.get(&ns).is_some_and(|n| n.contains_key(&name));
                put(&mut s.live, ns.clone(), name, None);
                if had { vec![ns] } else { Vec::new() }
            }
            watcher::Event::Init => {
                s.buffer = HashMap::new();
                Vec::new()
            }
            watcher::Event::InitApply(obj) => {
                let (ns, name) = key(obj);
                let kept = keep(obj);
                put(&mut s.buffer, ns, name, kept);
                Vec::new()
            }
            watcher::Event::InitDone => {
                let new = std::mem::take(&mut s.buffer);
                let old = std::mem::replace(&mut s.live, new);
                let first = !std::mem::replace(&mut s.listed, true);
                if first {
                    return Vec::new();
                }
                let live = &s.live;
                let mut changed: Vec<Box<str>> = old
                    .iter()
                    .filter(|(ns, names)| live.get(*ns) != Some(*names))
                    .map(|(ns, _)| ns.clone())
                    .collect();
                changed.extend(live.keys().filter(|ns| !old.contains_key(*ns)).cloned());
                changed
            }
        }
    }
}

impl<T> Mirror<T> {
    /// Calls `f` with each kept object of `ns` (name order).
    pub fn each_in(&self, ns: &str, mut f: impl FnMut(&str, &T)) {
        let s = berth_shared::sync::read(&self.0);
        if let Some(names) = s.live.get(ns) {
            for (name, t) in names {
                f(name, t);
            }
        }
    }

    /// Whether the first list completed.
    pub fn listed(&self) -> bool {
        berth_shared::sync::read(&self.0).listed
    }

    /// How many objects are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        let s = berth_shared::sync::read(&self.0);
        s.live.values().map(BTreeMap::len).sum()
    }

    /// Whether nothing is kept.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::watcher::Event;

    fn cm(ns: &str, name: &str, v: Option<&str>) -> ConfigMap {
        let mut c = ConfigMap::default();
        c.metadata.namespace = Some(ns.into());
        c.metadata.name = Some(name.into());
        c.data = v.map(|v| [("k".to_string(), v.to_string())].into());
        c
    }

    fn keep(c: &ConfigMap) -> Option<String> {
        c.data.as_ref()?.get("k").cloned()
    }

    fn names(m: &Mirror<String>, ns: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        m.each_in(ns, |n, v| out.push((n.to_string(), v.clone())));
        out
    }

    #[test]
    fn only_a_change_of_what_is_kept_reports_its_namespace() {
        let m = Mirror::<String>::default();
        assert!(m.apply(&Event::<ConfigMap>::Init, keep).is_empty());
        assert!(
            m.apply(&Event::InitApply(cm("a", "x", Some("1"))), keep)
                .is_empty()
        );
        assert!(
            m.apply(&Event::InitApply(cm("b", "y", None)), keep)
                .is_empty()
        );
        assert!(
            m.apply(&Event::<ConfigMap>::InitDone, keep).is_empty(),
            "the first list wakes nothing"
        );
        assert!(m.listed());
        assert_eq!(names(&m, "a"), vec![("x".into(), "1".into())]);
        assert!(names(&m, "b").is_empty(), "nothing to keep");

        let changed = |e: Event<ConfigMap>| -> Vec<String> {
            m.apply(&e, keep).iter().map(|n| n.to_string()).collect()
        };
        assert!(changed(Event::Apply(cm("a", "x", Some("1")))).is_empty());
        assert!(changed(Event::Apply(cm("b", "y", None))).is_empty());
        assert_eq!(changed(Event::Apply(cm("a", "x", Some("2")))), ["a"]);
        assert_eq!(changed(Event::Apply(cm("b", "y", Some("3")))), ["b"]);
        assert_eq!(changed(Event::Apply(cm("b", "y", None))), ["b"]);
        assert!(changed(Event::Delete(cm("b", "y", None))).is_empty());
        assert_eq!(changed(Event::Delete(cm("a", "x", None))), ["a"]);
        assert!(m.is_empty());
    }

    #[test]
    fn a_relist_reports_the_namespaces_whose_contents_it_changed() {
        let m = Mirror::<String>::default();
        for e in [
            Event::Init,
            Event::InitApply(cm("a", "x", Some("1"))),
            Event::InitApply(cm("b", "y", Some("1"))),
            Event::InitDone,
        ] {
            m.apply(&e, keep);
        }
        m.apply(&Event::<ConfigMap>::Init, keep);
        m.apply(&Event::InitApply(cm("a", "x", Some("1"))), keep);
        m.apply(&Event::InitApply(cm("c", "z", Some("1"))), keep);
        assert_eq!(
            names(&m, "b").len(),
            1,
            "answers from the old list meanwhile"
        );
        let mut changed: Vec<String> = m
            .apply(&Event::<ConfigMap>::InitDone, keep)
            .iter()
            .map(|n| n.to_string())
            .collect();
        changed.sort();
        assert_eq!(changed, ["b", "c"]);
        assert_eq!(m.len(), 2);
    }
}
