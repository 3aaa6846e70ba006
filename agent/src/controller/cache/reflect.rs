//! One cache (docs/architecture.md §5): a reflector whose objects are
//! reduced before they enter its store, with the owner index, the grants
//! publisher's change tracking and (for the kinds the contract governs) the
//! bodies of the Runtimes' own objects fed from the same events. The table
//! of caches is `cache::build`.

use std::borrow::Cow;
use std::fmt::Debug;
use std::sync::Arc;

use futures::TryStreamExt;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use kube::Resource;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::bodies::Bodies;
use super::owner_index;
use super::reduce;
use super::stored::Stored;
use crate::signals::publisher_triggers::Changes;

/// What sees every event of a cache right after its store applied it:
/// the grants publisher's [`Changes`], the exposure check's orphans
/// (`surroundings::OrphanObserver`).
pub trait Observe<K>: Send + Sync {
    /// One watch event.
    fn observe(&self, event: &watcher::Event<K>);
}

impl<K: Resource> Observe<K> for Changes<K> {
    fn observe(&self, event: &watcher::Event<K>) {
        Changes::observe(self, event);
    }
}

/// Two observers of one cache.
impl<K, A: Observe<K> + ?Sized, B: Observe<K> + ?Sized> Observe<K> for (Arc<A>, Arc<B>) {
    fn observe(&self, event: &watcher::Event<K>) {
        self.0.observe(event);
        self.1.observe(event);
    }
}

/// A cache's observer, if it has one.
pub type Observer<K> = Option<Arc<dyn Observe<K>>>;

/// What the store of a [`cache_storing`] is given of each event.
pub type StoredFn<K> = fn(&watcher::Event<K>) -> Option<Cow<'_, watcher::Event<K>>>;

/// A cache's stream of changed objects (polled by the controller, or
/// drained): each object added or modified, and each object deleted,
/// marked by [`touched`].
pub type Applied<K> = BoxStream<'static, Result<K, watcher::Error>>;

/// The object a watch event touched, for the controller's triggers; a
/// deleted one with `deletionTimestamp` set if its last state had none.
///
/// kube's `applied_objects` drops deletions, and so every trigger missed
/// them: a PodDisruptionBudget deleted by someone else came back only at
/// the next resync (302 s with the production 300 s, reproduced on
/// 2026-12-07), and a deleted RuntimeClass left its Runtimes Granted as
/// long. kube's `touched_objects` alone would not do either: the owned
/// kinds pass a fingerprint filter (`wake::triggers::spec_fingerprint`,
/// the Deployments' status throttle), and an object deleted outright has
/// the fingerprint of its last update. The mark makes its fingerprint new,
/// as a deletion's is meant to be.
pub fn touched<K: Resource>(event: watcher::Event<K>) -> Option<K> {
    match event {
        watcher::Event::Apply(obj) | watcher::Event::InitApply(obj) => Some(obj),
        watcher::Event::Delete(mut obj) => {
            let meta = obj.meta_mut();
            if meta.deletion_timestamp.is_none() {
                meta.deletion_timestamp =
                    Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                        k8s_openapi::jiff::Timestamp::now(),
                    ));
            }
            Some(obj)
        }
        watcher::Event::Init | watcher::Event::InitDone => None,
    }
}

/// Every event as it is.
pub fn cache_storing_fn<K: Clone>(event: &watcher::Event<K>) -> Option<Cow<'_, watcher::Event<K>>> {
    Some(Cow::Borrowed(event))
}

/// One cache: a reflector of `watch` (a `Watches::watch`) whose objects are reduced by `keep`
/// before they enter the store, feeding the owner `index` (if any) and the
/// grants publisher's `changes` (if any) from the same events right after
/// the store applied each. Returns the store and its (to be polled) stream
/// of applied objects. The store may hold another type than the watch
/// parses (`reduce::KeptDeployment`).
pub fn cache<W, K>(
    watch: impl Stream<Item = Result<watcher::Event<W>, watcher::Error>> + Send + 'static,
    keep: impl Fn(W) -> K + Send + 'static,
    index: Option<owner_index::OwnerIndex<K>>,
    changes: Observer<K>,
) -> (Store<K>, Applied<K>)
where
    W: Parsed,
    K: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static,
{
    cache_storing(watch, |_| {}, keep, index, changes, cache_storing_fn)
}

/// [`cache`] of a kind the contract governs: the watch parses each object
/// as the apiserver stores it ([`Stored`]), the whole ones of the Runtimes'
/// own objects are kept compact in `bodies`, and the store is given
/// `stored(event)` of the typed, reduced objects.
pub fn stored_cache<W, K>(
    watch: impl Stream<Item = Result<watcher::Event<Stored<W>>, watcher::Error>> + Send + 'static,
    keep: impl Fn(W) -> K + Send + 'static,
    bodies: Bodies<W>,
    index: Option<owner_index::OwnerIndex<K>>,
    changes: Observer<K>,
    stored: StoredFn<K>,
) -> (Store<K>, Applied<K>)
where
    W: Parsed,
    K: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static,
{
    cache_storing(
        watch,
        // Before the reduction, and before the store: a reconcile woken
        // by this event finds the body at least as new as the store.
        move |event| bodies.observe(event),
        move |s: Stored<W>| keep(s.typed),
        index,
        changes,
        stored,
    )
}

/// A reflector of `watch`: each event is shown to `before` as parsed, its
/// object reduced by `keep`, the store given `stored(event)` (`None`:
/// nothing); the index, the changes and the stream see every event as it
/// is.
fn cache_storing<E, K>(
    watch: impl Stream<Item = Result<watcher::Event<E>, watcher::Error>> + Send + 'static,
    before: impl Fn(&watcher::Event<E>) + Send + 'static,
    keep: impl Fn(E) -> K + Send + 'static,
    index: Option<owner_index::OwnerIndex<K>>,
    changes: Observer<K>,
    stored: StoredFn<K>,
) -> (Store<K>, Applied<K>)
where
    E: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
    K: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static,
{
    let (reader, mut writer) = reflector::store();
    let stream = watch
        .modify(reduce::strip)
        .inspect(move |event| {
            if let Ok(event) = event {
                before(event);
            }
        })
        .map_ok(move |event| kept_event(event, &keep))
        .inspect(move |event| {
            if let Ok(event) = event
                && let Some(event) = stored(event)
            {
                writer.apply_watcher_event(&event);
            }
        })
        .inspect(move |event| {
            if let Ok(event) = event {
                if let Some(index) = &index {
                    index.apply(event);
                }
                if let Some(changes) = &changes {
                    changes.observe(event);
                }
            }
        })
        .try_filter_map(|event| futures::future::ready(Ok(touched(event))))
        .boxed();
    (reader, stream)
}

/// What a cache's watch parses: a kind's own type, with what the watch,
/// the bodies and the store ask of it (written once, for every cache and
/// for the apply step's `apply::Managed`).
pub trait Parsed:
    Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug + Send + Sync + 'static
{
}

impl<W> Parsed for W where
    W: Resource<DynamicType = ()>
        + Clone
        + Serialize
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static
{
}

/// A reduction in place, as a [`cache`]'s `keep`.
pub fn in_place<K: 'static>(reduce: fn(&mut K)) -> impl Fn(K) -> K + Send + 'static {
    move |mut obj| {
        reduce(&mut obj);
        obj
    }
}

/// The watch event with its object turned into what the store keeps.
fn kept_event<W, K>(event: watcher::Event<W>, keep: impl Fn(W) -> K) -> watcher::Event<K> {
    match event {
        watcher::Event::Apply(o) => watcher::Event::Apply(keep(o)),
        watcher::Event::Delete(o) => watcher::Event::Delete(keep(o)),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitApply(o) => watcher::Event::InitApply(keep(o)),
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

/// Polls a stream that only feeds a store.
pub fn drain<S, T, E>(stream: S)
where
    S: Stream<Item = Result<T, E>> + Send + 'static,
    E: std::fmt::Display,
{
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            if let Err(e) = item {
                tracing::warn!(error = %e, "watch error (retried)");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use kube::api::ObjectMeta;
    use kube::runtime::watcher::Event;

    use super::touched;
    use crate::controller::wake::triggers::spec_fingerprint;

    fn pdb() -> PodDisruptionBudget {
        PodDisruptionBudget {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("team".into()),
                generation: Some(1),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_deletion_reaches_the_triggers_with_a_new_fingerprint() {
        let last = pdb();
        let deleted = touched(Event::Delete(last.clone())).expect("a deletion is a change");
        assert!(deleted.metadata.deletion_timestamp.is_some());
        assert_ne!(spec_fingerprint(&deleted), spec_fingerprint(&last));
        // Already marked (a deletion with finalizers): kept as it was.
        let mut held = pdb();
        held.metadata.deletion_timestamp = deleted.metadata.deletion_timestamp.clone();
        let again = touched(Event::Delete(held.clone())).expect("a change");
        assert_eq!(
            again.metadata.deletion_timestamp,
            held.metadata.deletion_timestamp
        );
    }

    #[test]
    fn applied_objects_pass_and_list_markers_do_not() {
        assert_eq!(touched(Event::Apply(pdb())), Some(pdb()));
        assert_eq!(touched(Event::InitApply(pdb())), Some(pdb()));
        assert_eq!(touched(Event::<PodDisruptionBudget>::Init), None);
        assert_eq!(touched(Event::<PodDisruptionBudget>::InitDone), None);
    }
}
