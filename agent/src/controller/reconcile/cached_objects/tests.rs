//! What one Runtime's apply step reads from the caches (`live`).
use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::runtime::watcher::Event;

/// A ConfigMap in `ns` controlled by the Runtime with `controller_uid`
/// (none: nobody's), optionally being deleted.
pub(crate) fn owned_cm(
    ns: &str,
    name: &str,
    controller_uid: Option<&str>,
    deleting: bool,
) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            owner_references: controller_uid.map(|uid| {
                vec![OwnerReference {
                    kind: "Runtime".into(),
                    name: "web".into(),
                    uid: uid.into(),
                    controller: Some(true),
                    ..Default::default()
                }]
            }),
            deletion_timestamp: deleting.then_some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn cm(ns: &str, name: &str, controller_uid: Option<&str>) -> ConfigMap {
    owned_cm(ns, name, controller_uid, false)
}

#[test]
fn reads_the_named_objects_and_with_owned_too_every_owned_one() {
    let (store, mut writer) = kube::runtime::reflector::store::<ConfigMap>();
    let index = OwnerIndex::<ConfigMap>::default();
    for obj in [
        cm("team", "web", Some("other")),    // at a rendered name, not ours
        cm("team", "web-np-old", Some("u")), // ours, no longer rendered
        cm("team", "unrelated", None),
        cm("elsewhere", "web-x", Some("u")),
    ] {
        let event = Event::Apply(obj);
        writer.apply_watcher_event(&event);
        index.apply(&event);
    }
    let names = vec!["web".to_string(), "web-missing".to_string()];
    let named = Cached::read(&store, None, "team", "u", &names, None, Absence::Cache);
    let got: Vec<String> = named.all().map(|o| o.name_any()).collect();
    assert_eq!(got, ["web"], "the object at the name, whoever owns it");
    assert!(named.get("web-missing").is_none());

    let with_owned = Cached::read(
        &store,
        None,
        "team",
        "u",
        &names,
        Some(&index),
        Absence::Cache,
    );
    let got: Vec<String> = with_owned.all().map(|o| o.name_any()).collect();
    assert_eq!(
        got,
        ["web", "web-np-old"],
        "plus what it owns in its namespace"
    );
}

#[test]
fn a_missing_name_is_free_only_when_its_authority_says_so() {
    let (store, mut writer) = kube::runtime::reflector::store::<ConfigMap>();
    writer.apply_watcher_event(&Event::Apply(cm("team", "web", Some("u"))));
    let names = vec![
        "web".to_string(),
        "web-unlabeled".to_string(),
        "web-new".to_string(),
    ];
    // An unfiltered cache: what it lacks is free; what it has is not.
    let all = Cached::read(&store, None, "team", "u", &names, None, Absence::Cache);
    assert!(!all.is_free("web"));
    assert!(all.is_free("web-unlabeled") && all.is_free("web-new"));

    // A label-filtered cache: the names index decides, and before its
    // first list nothing is free.
    let taken = NameIndex::default();
    let filtered = Cached::read(
        &store,
        None,
        "team",
        "u",
        &names,
        None,
        Absence::Names(&taken),
    );
    assert!(names.iter().all(|n| !filtered.is_free(n)), "not listed yet");
    taken.apply(&Event::<ConfigMap>::Init);
    for n in ["web", "web-unlabeled"] {
        taken.apply(&Event::InitApply(cm("team", n, None)));
    }
    taken.apply(&Event::<ConfigMap>::InitDone);
    let filtered = Cached::read(
        &store,
        None,
        "team",
        "u",
        &names,
        None,
        Absence::Names(&taken),
    );
    assert!(!filtered.is_free("web"));
    assert!(!filtered.is_free("web-unlabeled"), "someone else's object");
    assert!(filtered.is_free("web-new"));
}

/// A Runtime's own object is compared whole: from its body, or, when
/// the body is not kept, not from the cache at all (read first).
#[test]
fn a_runtimes_own_object_is_read_whole_from_its_body_or_not_at_all() {
    let bodies = Bodies::<ConfigMap>::default();
    let (store, mut writer) = kube::runtime::reflector::store::<ConfigMap>();
    let mut ours = cm("team", "web", Some("u"));
    for r in ours.metadata.owner_references.iter_mut().flatten() {
        r.api_version = berth_shared::api::API_VERSION.into();
    }
    ours.data = Some([("LD_PRELOAD".to_string(), "/evil.so".to_string())].into());
    // The cache's order: the body, then the reduced copy in the store.
    bodies.observe(&Event::Apply(Stored::of(ours.clone())));
    let mut reduced = ours.clone();
    crate::controller::cache::reduce::managed(&mut reduced);
    assert_eq!(reduced.data, None, "the store keeps the metadata only");
    writer.apply_watcher_event(&Event::Apply(reduced));
    let names = vec!["web".to_string()];
    let read = |b| Cached::read(&store, b, "team", "u", &names, None, Absence::Cache);

    let whole = read(Some(&bodies));
    assert_eq!(whole.get("web").map(|o| (**o).clone()), Some(ours.clone()));
    assert!(!whole.unread("web"));

    // No body (not kept yet, or gone first): never the reduced copy.
    let without = Bodies::<ConfigMap>::default();
    let unread = read(Some(&without));
    assert!(unread.get("web").is_none());
    assert!(unread.unread("web") && !unread.is_free("web"));
    assert_eq!(
        unread.any("web").map(|o| o.name_any()).as_deref(),
        Some("web")
    );
}

/// A ConfigMap a Runtime (`uid`) controls, as `owned_by_runtime` sees it.
fn ours(name: &str, uid: &str) -> ConfigMap {
    let mut cm = cm("team", name, Some(uid));
    for r in cm.metadata.owner_references.iter_mut().flatten() {
        r.api_version = berth_shared::api::API_VERSION.into();
    }
    cm.data = Some([("LD_PRELOAD".to_string(), "/evil.so".to_string())].into());
    cm
}

/// A label-filtered kind's store holds no Runtime's own object
/// (`bodies::for_store`): each is read whole from its body, by name and
/// through the owner index; anyone else's comes from the store; and a
/// body that does not expand is read from the apiserver first.
#[test]
fn a_label_filtered_kinds_own_objects_are_read_from_their_bodies_alone() {
    let bodies = Bodies::<ConfigMap>::default();
    let (store, mut writer) = kube::runtime::reflector::store::<ConfigMap>();
    let index = OwnerIndex::<ConfigMap>::default();
    let taken = NameIndex::default();
    let (web, old, theirs) = (
        ours("web", "u"),
        ours("web-old", "u"),
        cm("team", "web-x", None),
    );
    taken.apply(&Event::<ConfigMap>::Init);
    // The cache's order (`cache::cache_storing`): the body, then the
    // reduced object to the store (as `for_store` says) and the index.
    for obj in [web.clone(), old.clone(), theirs.clone()] {
        taken.apply(&Event::InitApply(obj.clone()));
        bodies.observe(&Event::Apply(Stored::of(obj.clone())));
        let mut reduced = obj;
        crate::controller::cache::reduce::managed(&mut reduced);
        let event = Event::Apply(reduced);
        if let Some(stored) = crate::controller::cache::bodies::for_store(&event) {
            writer.apply_watcher_event(&stored);
        }
        index.apply(&event);
    }
    taken.apply(&Event::<ConfigMap>::InitDone);
    let names: Vec<String> = ["web", "web-x", "web-new"].map(String::from).to_vec();
    let read = || {
        Cached::read(
            &store,
            Some(&bodies),
            "team",
            "u",
            &names,
            Some(&index),
            Absence::Names(&taken),
        )
    };
    assert_eq!(
        store.state().len(),
        1,
        "only someone else's object is stored"
    );

    let got = read();
    assert_eq!(got.get("web").map(|o| (**o).clone()), Some(web.clone()));
    assert_eq!(got.get("web-old").map(|o| (**o).clone()), Some(old));
    let mut stub = theirs;
    crate::controller::cache::reduce::managed(&mut stub);
    assert_eq!(
        got.get("web-x").map(|o| (**o).clone()),
        Some(stub),
        "someone else's, as the names-only stub the store keeps"
    );
    assert!(got.is_free("web-new") && !got.is_free("web"));
    assert!(!got.unread("web") && !got.unread("web-old"));

    // A body that does not expand: never guessed at, read first.
    bodies.corrupt("team", "web");
    let got = read();
    assert!(got.get("web").is_none());
    assert!(got.unread("web") && !got.is_free("web"));
    assert_eq!(got.any("web").map(|o| o.name_any()).as_deref(), Some("web"));
}
