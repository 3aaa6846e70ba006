use super::*;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::runtime::reflector;

fn rs(ns: &str, name: &str, controller: Option<&str>, other_owner: Option<&str>) -> ReplicaSet {
    let mut refs = Vec::new();
    if let Some(uid) = controller {
        refs.push(OwnerReference {
            kind: "Deployment".into(),
            name: "d".into(),
            uid: uid.into(),
            controller: Some(true),
            ..Default::default()
        });
    }
    if let Some(uid) = other_owner {
        // Not the controller: never indexed under it.
        refs.push(OwnerReference {
            kind: "Thing".into(),
            name: "t".into(),
            uid: uid.into(),
            controller: None,
            ..Default::default()
        });
    }
    ReplicaSet {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            owner_references: (!refs.is_empty()).then_some(refs),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn names(mut objs: Vec<Arc<ReplicaSet>>) -> Vec<String> {
    objs.sort_by_key(|o| (o.metadata.namespace.clone(), o.metadata.name.clone()));
    objs.iter()
        .map(|o| {
            format!(
                "{}/{}",
                o.metadata.namespace.as_deref().unwrap_or_default(),
                o.metadata.name.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

/// What a scan of the store answers (the reference).
fn scan(store: &Store<ReplicaSet>, uid: &str) -> Vec<Arc<ReplicaSet>> {
    store
        .state()
        .into_iter()
        .filter(|o| controlled_by_uid(o.meta(), uid))
        .collect()
}

#[test]
fn lookups_follow_applies_owner_changes_deletes_and_relists() {
    let (store, mut writer) = reflector::store();
    let index = OwnerIndex::default();
    let mut feed = |e: watcher::Event<ReplicaSet>| {
        writer.apply_watcher_event(&e);
        index.apply(&e);
    };
    feed(watcher::Event::Init);
    feed(watcher::Event::InitApply(rs(
        "a",
        "web-1",
        Some("d1"),
        None,
    )));
    feed(watcher::Event::InitApply(rs(
        "a",
        "web-2",
        Some("d1"),
        Some("x"),
    )));
    feed(watcher::Event::InitApply(rs(
        "b",
        "api-1",
        Some("d2"),
        None,
    )));
    feed(watcher::Event::InitApply(rs("b", "bare", None, Some("x"))));
    // Nothing answered before the list completes (the store is empty too).
    assert!(index.controlled_by(&store, "d1").is_empty());
    feed(watcher::Event::InitDone);
    assert_eq!(
        names(index.controlled_by(&store, "d1")),
        ["a/web-1", "a/web-2"]
    );
    assert_eq!(names(index.controlled_by(&store, "d2")), ["b/api-1"]);
    assert!(
        index.controlled_by(&store, "x").is_empty(),
        "not controller"
    );

    // Adopted by another controller: moves.
    feed(watcher::Event::Apply(rs("a", "web-2", Some("d2"), None)));
    assert_eq!(names(index.controlled_by(&store, "d1")), ["a/web-1"]);
    assert_eq!(
        names(index.controlled_by(&store, "d2")),
        ["a/web-2", "b/api-1"]
    );
    // Orphaned, then deleted.
    feed(watcher::Event::Apply(rs("b", "api-1", None, None)));
    assert_eq!(names(index.controlled_by(&store, "d2")), ["a/web-2"]);
    feed(watcher::Event::Delete(rs("a", "web-1", Some("d1"), None)));
    assert!(index.controlled_by(&store, "d1").is_empty());

    // A relist replaces everything, atomically at InitDone.
    feed(watcher::Event::Init);
    feed(watcher::Event::InitApply(rs("c", "new", Some("d1"), None)));
    assert_eq!(
        names(index.controlled_by(&store, "d2")),
        ["a/web-2"],
        "the previous contents serve until the relist completes"
    );
    feed(watcher::Event::InitDone);
    assert!(index.controlled_by(&store, "d2").is_empty());
    assert_eq!(names(index.controlled_by(&store, "d1")), ["c/new"]);
    assert_eq!(index.indexed(), 1);
}

#[test]
fn a_stale_entry_never_hands_out_another_controllers_object() {
    // The store moved on (adopted by d2) but the index has not seen it yet.
    let (store, mut writer) = reflector::store();
    let index = OwnerIndex::default();
    let first = watcher::Event::Apply(rs("a", "web-1", Some("d1"), None));
    writer.apply_watcher_event(&first);
    index.apply(&first);
    writer.apply_watcher_event(&watcher::Event::Apply(rs("a", "web-1", Some("d2"), None)));
    assert!(index.controlled_by(&store, "d1").is_empty());
}

#[test]
fn random_event_sequences_answer_like_a_scan() {
    // A small deterministic generator: many interleavings of applies,
    // owner changes, deletes and relists over few names and owners.
    let mut seed: u64 = 0x5eed;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let owners = ["d0", "d1", "d2"];
    for _round in 0..50 {
        let (store, mut writer) = reflector::store();
        let index = OwnerIndex::default();
        let mut listing = false;
        for _ in 0..200 {
            let name = format!("rs-{}", next(8));
            let ns = if next(2) == 0 { "a" } else { "b" };
            let owner = match next(4) {
                3 => None,
                i => owners.get(usize::try_from(i).unwrap_or(0)).copied(),
            };
            let obj = rs(ns, &name, owner, None);
            let event = match (listing, next(10)) {
                (false, 0) => {
                    listing = true;
                    watcher::Event::Init
                }
                (true, 0 | 1) => {
                    listing = false;
                    watcher::Event::InitDone
                }
                (true, _) => watcher::Event::InitApply(obj),
                (false, 1 | 2) => watcher::Event::Delete(obj),
                (false, _) => watcher::Event::Apply(obj),
            };
            writer.apply_watcher_event(&event);
            index.apply(&event);
            for uid in owners {
                assert_eq!(
                    names(index.controlled_by(&store, uid)),
                    names(scan(&store, uid)),
                    "owner {uid} after {event:?}"
                );
            }
        }
    }
}

/// Bytes this thread holds now (jemalloc counts per thread what it
/// allocated and freed, so the tests beside this one do not count).
#[cfg(not(feature = "system-allocator"))]
fn held_by_this_thread() -> u64 {
    use tikv_jemalloc_ctl::thread::{allocatedp, deallocatedp};
    let allocated = allocatedp::read().expect("thread.allocatedp").get();
    let freed = deallocatedp::read().expect("thread.deallocatedp").get();
    allocated - freed
}

/// What an entry costs (issue 32): at scale S the index holds the agent's
/// 2,000 ReplicaSets, NetworkPolicies and HPAs each. An entry keyed by
/// `ObjectRef` (four strings) with a one-entry `HashSet` per controller
/// was about 1 KB; the compact entry is a namespace, a name and a shared
/// uid.
#[cfg(not(feature = "system-allocator"))]
#[test]
fn an_entry_costs_a_few_hundred_bytes() {
    const N: usize = 2_000;
    let events: Vec<watcher::Event<ReplicaSet>> = (0..N)
        .map(|i| {
            let mut o = rs(
                &format!("bench-{:02}", i % 20),
                &format!("rt-{i:05}-7d9f8c6b5c"),
                Some(&format!("3f1c2a9e-5b7d-4c8e-9a1f-{i:012}")),
                None,
            );
            o.metadata.uid = Some(format!("9e2b7c1d-4a6f-4e3b-8c5d-{i:012}"));
            o.metadata.resource_version = Some(format!("{}", 1_000_000 + i));
            watcher::Event::Apply(o)
        })
        .collect();
    let index = OwnerIndex::default();
    let before = held_by_this_thread();
    for event in &events {
        index.apply(event);
    }
    let per_entry = (held_by_this_thread() - before) / N as u64;
    assert_eq!(index.indexed(), N);
    println!("owner index: {per_entry} bytes per entry");
    // 1,137 bytes keyed by `ObjectRef` with a `HashSet` per controller;
    // 460 as it is (2,000 entries, their tables included).
    assert!(per_entry < 600, "{per_entry} bytes per entry");
}
