//! One Runtime per identity at reconcile: which Runtimes to wake when a
//! claimant's standing changes.
//!
//! The younger claimant of an identity is Blocked while the older one
//! exists (see `read::identity_taken`). When the holder is deleted (or
//! starts being deleted) nothing about the younger one changes, so without
//! help it would stay Blocked until the next resync. Here the controller's
//! own Runtime watch also emits, after each such event, the other Runtimes
//! with the same application and service. They are emitted *after* the
//! reflector applied the event to the store, so their reconcile already
//! reads a store without the holder (a second watch could race the store).
//! A deletion missed while the watch was down shows up only as a relist;
//! the periodic resync covers that case.
//!
//! The same stream drops updates of a Runtime that change only its status
//! (issue 14): the agent's own status writes woke a second reconcile of
//! every Runtime they touched, which found nothing to do but took a slot
//! that a Runtime never reconciled was waiting for. A spec, label,
//! annotation, owner or deletion change still wakes it at once (see
//! `triggers::spec_fingerprint`), and so does every Runtime of a relist;
//! a status someone else rewrote is put back by the next resync.

use std::collections::HashMap;
use std::sync::Arc;

use berth_shared::api::Runtime;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;

use super::triggers::spec_fingerprint;
use crate::controller::cache::object_key::ObjectKey;

/// The controller's trigger stream: every applied Runtime whose spec,
/// labels, annotations, owners or deletion changed (not a status-only
/// update), plus the rivals of a Runtime that is deleted or being deleted.
pub fn with_rivals<S>(
    events: S,
    store: Store<Runtime>,
) -> impl Stream<Item = Result<Runtime, watcher::Error>> + Send + 'static
where
    S: Stream<Item = Result<watcher::Event<Runtime>, watcher::Error>> + Send + 'static,
{
    // A spec fingerprint per Runtime, keyed compactly (see `object_key`).
    let mut seen: HashMap<ObjectKey, Option<u64>> = HashMap::new();
    events.flat_map(move |event| {
        let out: Vec<Result<Runtime, watcher::Error>> = match event {
            Ok(watcher::Event::Apply(rt) | watcher::Event::InitApply(rt)) => {
                let mut out = Vec::new();
                if rt.metadata.deletion_timestamp.is_some() {
                    out.extend(rivals(&store, &rt).into_iter().map(Ok));
                }
                let fingerprint = spec_fingerprint(&rt);
                if seen.insert(ObjectKey::of(&rt.metadata), fingerprint) != Some(fingerprint) {
                    out.push(Ok(rt));
                }
                out
            }
            Ok(watcher::Event::Delete(rt)) => {
                seen.remove(&ObjectKey::of(&rt.metadata));
                rivals(&store, &rt).into_iter().map(Ok).collect()
            }
            // A relist (first start, or the watch expired): whatever
            // happened while the watch was down (a Runtime deleted and
            // created again under its name, a change whose event was
            // lost) shows up only here, so every listed Runtime wakes.
            Ok(watcher::Event::Init) => {
                seen.clear();
                Vec::new()
            }
            Ok(watcher::Event::InitDone) => Vec::new(),
            Err(e) => vec![Err(e)],
        };
        futures::stream::iter(out)
    })
}

/// The other Runtimes with the same application and service (their
/// namespaces' labels are not compared: waking one too many costs a
/// reconcile that writes nothing).
fn rivals(store: &Store<Runtime>, rt: &Runtime) -> Vec<Runtime> {
    let me = ObjectRef::from_obj(rt);
    store
        .state()
        .iter()
        .filter(|r| {
            r.spec.application == rt.spec.application
                && r.spec.service == rt.spec.service
                && ObjectRef::from_obj(&***r) != me
        })
        .map(|r| Runtime::clone(r))
        .collect()
}

/// The Runtimes to reconcile when a Namespace changes: its own, and every
/// Runtime sharing an application and service with one of them — a label
/// change can make two namespaces claim one project/environment pair (or
/// stop doing so), which changes who holds an identity elsewhere.
pub fn on_namespace(
    runtimes: &Store<Runtime>,
    ns: &PartialObjectMeta<Namespace>,
) -> Vec<ObjectRef<Runtime>> {
    let name = ns.name_any();
    let all: Vec<Arc<Runtime>> = runtimes.state();
    let inside: Vec<&Arc<Runtime>> = all
        .iter()
        .filter(|r| r.namespace().as_deref() == Some(name.as_str()))
        .collect();
    all.iter()
        .filter(|r| {
            inside.iter().any(|i| {
                i.spec.application == r.spec.application && i.spec.service == r.spec.service
            })
        })
        .map(|r| ObjectRef::from_obj(&**r))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_shared::api::RuntimeSpec;
    use futures::executor::block_on;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::runtime::reflector;

    fn rt(ns: &str, name: &str, service: &str) -> Runtime {
        let mut r = Runtime::new(
            name,
            RuntimeSpec {
                application: "analytics".into(),
                service: service.into(),
                ..Default::default()
            },
        );
        r.metadata.namespace = Some(ns.into());
        r
    }

    fn store_of(objs: &[Runtime]) -> Store<Runtime> {
        let (store, mut writer) = reflector::store();
        for o in objs {
            writer.apply_watcher_event(&watcher::Event::Apply(o.clone()));
        }
        store
    }

    fn names(out: Vec<Result<Runtime, watcher::Error>>) -> Vec<String> {
        out.into_iter()
            .map(|r| r.map(|r| r.name_any()).unwrap_or_else(|e| e.to_string()))
            .collect()
    }

    #[test]
    fn a_deleted_holder_wakes_the_other_claimants_only() {
        // The reflector already removed "holder" when its Delete arrives.
        let copy = rt("team-b", "copy", "worker");
        let other = rt("team-a", "api", "api");
        let store = store_of(&[copy.clone(), other]);
        let holder = rt("team-a", "holder", "worker");
        let events = futures::stream::iter(vec![
            Ok(watcher::Event::Delete(holder.clone())),
            Ok(watcher::Event::Apply(copy.clone())),
        ]);
        let out: Vec<_> = block_on(with_rivals(events, store.clone()).collect());
        // The copy for the deletion, then the copy's own event; never the
        // other service.
        assert_eq!(names(out), vec!["copy", "copy"]);

        // Deletion starting (a finalizer holds the object): the rivals and
        // the Runtime itself.
        let mut deleting = holder;
        deleting.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        let events = futures::stream::iter(vec![Ok(watcher::Event::Apply(deleting))]);
        let out: Vec<_> = block_on(with_rivals(events, store).collect());
        assert_eq!(names(out), vec!["copy", "holder"]);
    }

    #[test]
    fn a_status_only_update_wakes_nothing_and_anything_else_does() {
        let web = rt("team-a", "web", "worker");
        let mut status_only = web.clone();
        status_only.metadata.resource_version = Some("2".into());
        status_only.status = Some(Default::default());
        let mut respecced = status_only.clone();
        respecced.metadata.generation = Some(2);
        let mut relabelled = respecced.clone();
        relabelled.metadata.labels = Some([("tier".to_string(), "gold".to_string())].into());
        let events = futures::stream::iter(vec![
            Ok(watcher::Event::InitApply(web.clone())),
            Ok(watcher::Event::Apply(status_only.clone())),
            Ok(watcher::Event::Apply(respecced)),
            Ok(watcher::Event::Apply(relabelled.clone())),
            Ok(watcher::Event::Apply(relabelled.clone())),
            // Deleted and created again under the same name: new.
            Ok(watcher::Event::Delete(relabelled.clone())),
            Ok(watcher::Event::Apply(relabelled.clone())),
            // A relist wakes every listed Runtime, changed or not.
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(relabelled.clone())),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Apply(relabelled)),
        ]);
        let out: Vec<_> = block_on(with_rivals(events, store_of(&[])).collect());
        let generations: Vec<_> = out
            .into_iter()
            .map(|r| r.ok().and_then(|r| r.metadata.generation))
            .collect();
        assert_eq!(generations, vec![None, Some(2), Some(2), Some(2), Some(2)]);
    }

    #[test]
    fn a_namespace_change_wakes_its_runtimes_and_their_rivals() {
        let store = store_of(&[
            rt("team-a", "web", "worker"),
            rt("team-b", "copy", "worker"),
            rt("team-b", "api", "api"),
            rt("team-c", "lone", "lone"),
        ]);
        let ns = PartialObjectMeta::<Namespace> {
            metadata: kube::api::ObjectMeta {
                name: Some("team-a".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut woken: Vec<String> = on_namespace(&store, &ns)
            .into_iter()
            .map(|r| format!("{}/{}", r.namespace.unwrap_or_default(), r.name))
            .collect();
        woken.sort();
        assert_eq!(woken, vec!["team-a/web", "team-b/copy"]);
    }
}
