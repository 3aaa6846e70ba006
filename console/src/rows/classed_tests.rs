//! The Handlers and Retained rows built from the store's index of classed
//! workloads equal the rows built from every workload (what the console
//! computed before the index): on the fixtures, on a small synthetic world
//! and on random sequences of writes.

use berth_shared::analysis::Workload;
use serde_json::{Value, json};

use super::handlers::{classed_workloads, handler_rows, handler_rows_of, workloads};
use super::retained::{retained_rows, retained_rows_of};
use crate::store::{Kind, Object, Store};
use crate::test_rng::Rng;

/// Every row family the index feeds, computed both ways.
fn assert_same_rows(store: &Store, what: &str) {
    let all = workloads(store);
    let classed: Vec<Workload> = all
        .iter()
        .filter(|w| w.runtime_class.is_some())
        .cloned()
        .collect();
    assert_eq!(classed_workloads(store), classed, "{what}: workloads");
    assert_eq!(
        handler_rows(store),
        handler_rows_of(store, &all),
        "{what}: handlers"
    );
    assert_eq!(
        retained_rows(store),
        retained_rows_of(store, &all),
        "{what}: retained"
    );
}

#[test]
fn fixture_rows_are_those_of_every_workload() {
    let app = crate::fixtures::app();
    assert!(!handler_rows(&app.clusters[0].data.store).is_empty());
    assert!(!retained_rows(&app.clusters[0].data.store).is_empty());
    assert_same_rows(&app.clusters[0].data.store, "fixtures");
}

#[test]
fn a_small_synthetic_world_has_the_same_rows() {
    let world = crate::testkit::World {
        size: berth_world::Size {
            runtimes: 120,
            replicas: 3,
            granted: 12,
            classes: 4,
            nodes: 5,
        },
        revoked: 3,
    };
    let app = crate::testkit::app_with(world.objects());
    let retained = retained_rows(&app.clusters[0].data.store);
    assert_eq!(retained.len(), world.retained_rows());
    assert_eq!(
        handler_rows(&app.clusters[0].data.store).len(),
        world.size.classes
    );
    // The index holds the classed objects only, not the 108 on the
    // default runtime.
    assert_eq!(
        classed_workloads(&app.clusters[0].data.store).len(),
        12 * (2 + 3)
    );
    assert_same_rows(&app.clusters[0].data.store, "small world");
}

const CLASSES: &[&str] = &["", "a", "b", "gone"];
const PROFILES: &[&str] = &["p1", "p2"];
const SERVICES: &[&str] = &["s1", "s2"];

fn template(rng: &mut Rng) -> Value {
    let mut labels = json!({"berth.dev/project": "pr", "berth.dev/environment": "env",
        "berth.dev/application": "app", "berth.dev/service": rng.pick(SERVICES)});
    if rng.below(2) == 0 {
        labels["app.kubernetes.io/managed-by"] = json!("berth");
    }
    let mut spec = json!({"containers": [{"name": "c", "image": "i"}]});
    if rng.below(4) > 0 {
        spec["runtimeClassName"] = json!(rng.pick(CLASSES));
    }
    json!({"metadata": {"labels": labels,
                        "annotations": {"berth.dev/runtime-profile": rng.pick(PROFILES)}},
           "spec": spec})
}

fn meta(rng: &mut Rng, owner: Option<&str>) -> Value {
    let ns = rng.pick(&["x", "y"]);
    let mut m = json!({"name": format!("w{}", rng.below(5)), "namespace": ns,
        "annotations": {"deployment.kubernetes.io/revision": (1 + rng.below(2)).to_string()}});
    if let Some(kind) = owner.filter(|_| rng.below(3) > 0) {
        m["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": kind,
            "name": format!("w{}", rng.below(5)), "uid": "u", "controller": rng.below(4) > 0}]);
    }
    m
}

fn de<T: serde::de::DeserializeOwned>(v: Value) -> Option<T> {
    serde_json::from_value(v).ok()
}

fn random_object(rng: &mut Rng) -> Option<Object> {
    let t = template(rng);
    Some(match rng.below(9) {
        0 => Object::Deployment(Box::new(de(
            json!({"metadata": meta(rng, Some("Runtime")),
            "spec": {"replicas": rng.below(3), "selector": {}, "template": t}}),
        )?)),
        1 | 2 => Object::ReplicaSet(Box::new(de(
            json!({"metadata": meta(rng, Some("Deployment")),
            "spec": {"replicas": rng.below(3), "selector": {}, "template": t},
            "status": {"replicas": 1, "readyReplicas": rng.below(2)}}),
        )?)),
        3 | 4 => {
            let ns = rng.pick(&["x", "y"]);
            let phase = rng.pick(&["Running", "Succeeded"]);
            Object::Pod(Box::new(de(json!({"metadata": {
                "name": format!("p{}", rng.below(6)), "namespace": ns,
                "labels": t["metadata"]["labels"].clone(),
                "annotations": t["metadata"]["annotations"].clone(),
                "ownerReferences": meta(rng, Some("ReplicaSet"))["ownerReferences"].clone()},
            "spec": t["spec"].clone(),
            "status": {"phase": phase}}))?))
        }
        5 => Object::StatefulSet(Box::new(de(json!({"metadata": meta(rng, None),
            "spec": {"selector": {}, "serviceName": "s", "template": t}}))?)),
        6 => Object::Job(Box::new(de(
            json!({"metadata": meta(rng, Some("CronJob")),
            "spec": {"suspend": rng.below(2) == 0, "template": t}}),
        )?)),
        7 => Object::CronJob(Box::new(de(json!({"metadata": meta(rng, None),
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": t}}}}))?)),
        _ => Object::RuntimeGrant(Box::new(de(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "RuntimeGrant",
            "metadata": {"name": rng.pick(PROFILES)},
            "spec": {"project": "pr", "environment": "env", "application": "app",
                     "service": rng.pick(SERVICES), "runtimeClass": rng.pick(&CLASSES[1..]),
                     "handler": "h"}}))?)),
    })
}

/// The index rebuilt from scratch by scanning the maps.
fn scanned(store: &Store) -> Vec<(Kind, crate::store::ObjKey)> {
    let mut out = Vec::new();
    for w in workloads(store) {
        if w.runtime_class.is_some()
            && let Some(kind) = super::store_kind(w.kind.as_str())
        {
            out.push((kind, (w.namespace.clone(), w.name.clone())));
        }
    }
    out.sort();
    out
}

fn indexed(store: &Store) -> Vec<(Kind, crate::store::ObjKey)> {
    let mut out: Vec<_> = crate::store::WORKLOAD_KINDS
        .iter()
        .flat_map(|k| store.classed.keys(*k).map(|key| (*k, key.clone())))
        .collect();
    out.sort();
    out
}

#[test]
fn rows_agree_after_random_writes() {
    for seed in 1..=12u64 {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D ^ seed);
        let mut store = crate::fixtures::app().clusters.remove(0).data.store;
        let mut kinds = std::collections::BTreeSet::new();
        for step in 0..300 {
            let Some(o) = random_object(&mut rng) else {
                continue;
            };
            kinds.insert(o.kind());
            match rng.below(10) {
                0..=6 => store.apply(o),
                7 | 8 => store.delete(o.kind(), &o.key()),
                _ => {
                    let kind = o.kind();
                    store.replace(kind, vec![o]);
                }
            }
            assert_eq!(indexed(&store), scanned(&store), "seed {seed} step {step}");
            if step % 10 == 0 {
                assert_same_rows(&store, &format!("seed {seed} step {step}"));
            }
        }
        assert_same_rows(&store, &format!("seed {seed} end"));
        // Every generated kind deserialized (none is silently skipped).
        assert_eq!(kinds.len(), 7, "seed {seed}: {kinds:?}");
    }
}
