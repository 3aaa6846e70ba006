//! Fixture data for the view snapshots, key tests and the frame-time
//! benchmark: a small cluster with a granted, a blocked and a progressing
//! Runtime, grants with and without problems, classes safe and unsafe to
//! remove, a deleted class still referenced by a bare pod.

use serde_json::{Value, json};

use crate::model::{App, ClusterId, Kind, Object, Origin, Scope, WatchEvent};
use crate::model::{Msg, update};
use crate::store::ingest::prepare;

/// The fixed "now" of every fixture.
pub use crate::testkit::now;

fn obj<K>(v: Value) -> K
where
    K: kube::ResourceExt + serde::Serialize + serde::de::DeserializeOwned + Clone,
{
    let parsed: K = serde_json::from_value(v).unwrap_or_else(|e| panic!("fixture: {e}"));
    prepare(parsed).unwrap_or_else(|| panic!("fixture did not survive ingest"))
}

fn cond(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
           "lastTransitionTime": "2026-11-29T11:50:00Z"})
}

fn runtime(ns: &str, name: &str, profile: Option<&str>, status: Value) -> Object {
    let mut spec = json!({"application": "shop", "service": name,
        "image": {"repository": "registry.example/shop/".to_string() + name, "tag": "1.2.0"}});
    if let Some(p) = profile {
        spec["runtimeProfile"] = json!(p);
    }
    Object::from(obj::<berth_shared::api::Runtime>(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-11-28T12:00:00Z",
                     "uid": format!("uid-{name}")},
        "spec": spec, "status": status,
    })))
}

/// The small cluster, kind by kind (see the module doc).
pub fn objects() -> Vec<Object> {
    let mut out = runtimes();
    out.extend(grants());
    out.extend(classes_and_nodes());
    out.extend(workloads());
    out.extend(the_rest());
    out
}

/// A granted, a blocked and a progressing Runtime.
fn runtimes() -> Vec<Object> {
    vec![
        runtime(
            "demo",
            "web",
            Some("bounded-web"),
            json!({
                "profile": {"alias": "bounded-web", "class": "bounded-runc", "handler": "bounded-runc", "state": "Granted"},
                "rollout": {"revision": 2, "desired": 2, "updated": 2, "ready": 2, "available": 2, "unavailable": 0, "phase": "Complete"},
                "upgrade": {"desiredImage": "registry.example/shop/web:1.2.0", "currentImage": "registry.example/shop/web:1.1.0", "lastSuccessfulImage": "registry.example/shop/web:1.1.0"},
                "conditions": [cond("ProfileGranted", "True", "Granted", "granted by bounded-web")],
            }),
        ),
        runtime(
            "demo",
            "worker",
            Some("bounded-worker"),
            json!({
                "profile": {"alias": "bounded-worker", "class": "bounded-runc", "handler": "bounded-runc", "state": "Revoked"},
                "rollout": {"revision": 1, "desired": 2, "updated": 2, "ready": 1, "available": 1, "unavailable": 1, "phase": "Blocked"},
                "conditions": [
                    cond("ProfileGranted", "False", "Revoked", "grant bounded-worker was removed from the grants file"),
                    cond("Blocked", "True", "Revoked", "grant bounded-worker is gone; nothing is changed"),
                ],
            }),
        ),
        runtime(
            "demo",
            "api",
            None,
            json!({
                "profile": {"state": "NotRequested"},
                "rollout": {"revision": 3, "desired": 3, "updated": 1, "ready": 1, "available": 1, "unavailable": 2, "phase": "Progressing"},
            }),
        ),
    ]
}

/// A grant in order and one whose class is missing.
fn grants() -> Vec<Object> {
    let mut out = Vec::new();
    let grant = |name: &str, class: &str, handler: &str, status: Value| {
        Object::from(obj::<berth_shared::api::RuntimeGrant>(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "RuntimeGrant",
            "metadata": {"name": name, "creationTimestamp": "2026-11-28T12:00:00Z",
                         "labels": {"berth.dev/published-by": "berth-agent"}},
            "spec": {"project": "demo", "environment": "production", "application": "shop",
                     "service": name.trim_start_matches("bounded-"), "runtimeClass": class, "handler": handler},
            "status": status,
        })))
    };
    let source = json!({"sha256": "ab".repeat(32), "loadedAt": "2026-11-29T11:00:00Z"});
    out.push(grant(
        "bounded-web",
        "bounded-runc",
        "bounded-runc",
        json!({"classPresent": true, "classHandler": "bounded-runc", "handlerMatches": true,
               "nodes": {"withHandler": 2, "total": 3, "summary": "2/3"},
               "runtimes": [{"namespace": "demo", "name": "web"}], "source": source}),
    ));
    out.push(grant(
        "gvisor-api",
        "gvisor-missing",
        "runsc",
        json!({"classPresent": false, "handlerMatches": false,
               "nodes": {"withHandler": 0, "total": 3, "summary": "0/3"}, "source": source,
               "conditions": [cond("RestartRequired", "True", "FileChanged", "the grants file changed on disk")]}),
    ));
    out
}

/// The classes, and three nodes (two with the bounded handler).
fn classes_and_nodes() -> Vec<Object> {
    let mut out = Vec::new();
    for (name, handler, deleting) in [
        ("bounded-runc", "bounded-runc", false),
        ("gvisor", "runsc", false),
    ] {
        let mut meta = json!({"name": name, "creationTimestamp": "2026-11-01T00:00:00Z"});
        if deleting {
            meta["deletionTimestamp"] = json!("2026-11-29T11:00:00Z");
        }
        out.push(Object::from(obj::<k8s_openapi::api::node::v1::RuntimeClass>(
            json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": meta, "handler": handler}),
        )));
    }
    for (i, handlers) in [
        vec!["runc", "bounded-runc"],
        vec!["runc", "bounded-runc"],
        vec!["runc"],
    ]
    .into_iter()
    .enumerate()
    {
        let hs: Vec<Value> = handlers
            .iter()
            .map(|h| json!({"name": h, "features": {}}))
            .collect();
        out.push(Object::from(obj::<k8s_openapi::api::core::v1::Node>(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("kwok-node-{i}")},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "runtimeHandlers": hs},
        }))));
    }
    out
}

/// The granted and blocked Runtimes' Deployments, ReplicaSets and pods.
fn workloads() -> Vec<Object> {
    let mut out = Vec::new();
    let template = |name: &str, class: &str, profile: &str| {
        json!({"metadata": {"labels": {"berth.dev/runtime": name, "app.kubernetes.io/managed-by": "berth",
                    "berth.dev/project": "demo", "berth.dev/environment": "production",
                    "berth.dev/application": "shop", "berth.dev/service": name},
                 "annotations": {"berth.dev/runtime-profile": profile}},
               "spec": {"runtimeClassName": class, "containers": [{"name": "app", "image": format!("registry.example/shop/{name}:1.2.0")}]}})
    };
    for (name, profile) in [("web", "bounded-web"), ("worker", "bounded-worker")] {
        out.push(Object::from(obj::<k8s_openapi::api::apps::v1::Deployment>(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "demo", "labels": {"app.kubernetes.io/managed-by": "berth"},
                "annotations": {"deployment.kubernetes.io/revision": "2"},
                "ownerReferences": [{"apiVersion": "berth.dev/v1alpha1", "kind": "Runtime", "name": name, "uid": format!("uid-{name}"), "controller": true}]},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"berth.dev/runtime": name}},
                     "template": template(name, "bounded-runc", profile), "progressDeadlineSeconds": 600},
            "status": {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "availableReplicas": 2,
                "conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastUpdateTime": "2026-11-29T11:55:00Z"}]},
        }))));
        for (rev, replicas, image) in [("1", 0, "1.1.0"), ("2", 2, "1.2.0")] {
            let rs_name = format!("{name}-rev{rev}");
            let mut t = template(name, "bounded-runc", profile);
            t["spec"]["containers"][0]["image"] =
                json!(format!("registry.example/shop/{name}:{image}"));
            out.push(Object::from(obj::<k8s_openapi::api::apps::v1::ReplicaSet>(json!({
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": rs_name, "namespace": "demo",
                    "annotations": {"deployment.kubernetes.io/revision": rev},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": "d", "controller": true}]},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"berth.dev/runtime": name}}, "template": t},
                "status": {"replicas": replicas, "readyReplicas": replicas},
            }))));
            for p in 0..replicas {
                out.push(Object::from(obj::<k8s_openapi::api::core::v1::Pod>(json!({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": format!("{rs_name}-{p}"), "namespace": "demo",
                        "labels": template(name, "bounded-runc", profile)["metadata"]["labels"].clone(),
                        "annotations": {"berth.dev/runtime-profile": profile},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name, "uid": "r", "controller": true}]},
                    "spec": {"runtimeClassName": "bounded-runc", "nodeName": format!("kwok-node-{p}"),
                             "containers": [{"name": "app", "image": "x"}]},
                    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
                }))));
            }
        }
    }
    out
}

/// A bare pod on a deleted class, events, the agent's Lease, namespaces.
fn the_rest() -> Vec<Object> {
    let mut out = Vec::new();
    out.push(Object::from(obj::<k8s_openapi::api::core::v1::Pod>(
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "legacy-batch", "namespace": "legacy"},
            "spec": {"runtimeClassName": "kata-old", "containers": [{"name": "app", "image": "x"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }),
    )));
    out.push(Object::from(obj::<k8s_openapi::api::core::v1::Event>(
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "demo"},
            "involvedObject": {"kind": "Deployment", "name": "web", "namespace": "demo"},
            "type": "Normal", "reason": "ScalingReplicaSet",
            "message": "Scaled up replica set web-rev2 from 0 to 2",
            "lastTimestamp": "2026-11-29T11:58:00Z",
        }),
    )));
    out.push(Object::from(obj::<k8s_openapi::api::core::v1::Event>(
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "worker.1", "namespace": "demo"},
            "involvedObject": {"kind": "Runtime", "name": "worker", "namespace": "demo"},
            "type": "Warning", "reason": "Blocked",
            "message": "grant bounded-worker is gone",
            "lastTimestamp": "2026-11-29T11:50:00Z",
        }),
    )));
    out.push(Object::from(
        obj::<k8s_openapi::api::coordination::v1::Lease>(json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "berth-agent", "namespace": "berth-system"},
            "spec": {"holderIdentity": "berth-agent-7f9c", "leaseDurationSeconds": 15,
                     "renewTime": "2026-11-29T11:59:50.000000Z"},
        })),
    ));
    for (name, labels) in [
        ("default", json!({})),
        (
            "demo",
            json!({"berth.dev/project": "shop", "berth.dev/environment": "prod"}),
        ),
        ("empty", json!({})),
        ("legacy", json!({})),
    ] {
        out.push(Object::from(obj::<k8s_openapi::api::core::v1::Namespace>(
            json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "labels": labels, "uid": format!("uid-ns-{name}"),
                             "creationTimestamp": "2026-11-01T00:00:00Z"},
                "status": {"phase": "Active"},
            }),
        )));
    }
    out
}

/// What the agent's canaries saw of `bounded-runc` (issue 53): verified on
/// kwok-node-1, failing on kwok-node-0 (its sandbox not created), with a
/// canary pod and a workload pod stuck there and the kubelet's events.
pub fn failing_canary() -> Vec<Object> {
    let mut out = objects();
    let at = |t: &str| json!(t);
    out.push(Object::from(obj::<berth_shared::api::RuntimeGrant>(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "RuntimeGrant",
        "metadata": {"name": "bounded-web", "creationTimestamp": "2026-11-28T12:00:00Z"},
        "spec": {"project": "demo", "environment": "production", "application": "shop",
                 "service": "web", "runtimeClass": "bounded-runc", "handler": "bounded-runc"},
        "status": {"classPresent": true, "classHandler": "bounded-runc", "handlerMatches": true,
            "nodes": {"withHandler": 2, "total": 3, "summary": "2/3"},
            "runtimes": [{"namespace": "demo", "name": "web"}],
            "attestation": {"canaries": true, "periodSeconds": 600,
                "checks": ["sandbox started", "kernel: the host kernel", "uid 10001"],
                "verified": 1, "failing": 1, "unverified": 0, "summary": "1 failing, 1 verified",
                "nodes": [
                    {"node": "kwok-node-0", "state": "Failing", "reason": "SandboxNotCreated",
                     "message": "sandbox not created: the canary's pod never became ready to start containers within 40 s (handler bounded-runc; the node's FailedCreatePodSandBox events say why)",
                     "at": at("2026-11-29T11:57:00Z"), "job": "berth-canary-0123456789-t1"},
                    {"node": "kwok-node-1", "state": "Verified", "reason": "Verified",
                     "message": "a canary ran on the host kernel under the contract",
                     "at": at("2026-11-29T11:55:00Z"), "job": "berth-canary-9876543210-t1"}]}},
    }))));
    for (ns, name, owner) in [
        (
            "berth-system",
            "berth-canary-0123456789-t1-abcde",
            "berth-canary-0123456789-t1",
        ),
        ("demo", "web-rev2-9", "web-rev2"),
    ] {
        let kind = if ns == "demo" { "ReplicaSet" } else { "Job" };
        let labels = if ns == "demo" {
            json!({"berth.dev/runtime": "web", "app.kubernetes.io/managed-by": "berth",
                   "berth.dev/project": "demo", "berth.dev/environment": "production",
                   "berth.dev/application": "shop", "berth.dev/service": "web"})
        } else {
            json!({"berth.dev/canary": "true", "app.kubernetes.io/managed-by": "berth-agent"})
        };
        out.push(Object::from(obj::<k8s_openapi::api::core::v1::Pod>(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-11-29T11:56:00Z",
                "labels": labels, "annotations": {"berth.dev/runtime-profile": "bounded-web"},
                "ownerReferences": [{"apiVersion": "v1", "kind": kind, "name": owner, "uid": "o", "controller": true}]},
            "spec": {"runtimeClassName": "bounded-runc", "nodeName": "kwok-node-0",
                     "containers": [{"name": "app", "image": "x"}]},
            "status": {"phase": if ns == "demo" { "Pending" } else { "Failed" }},
        }))));
        out.push(Object::from(obj::<k8s_openapi::api::core::v1::Event>(json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("{name}.sandbox"), "namespace": ns},
            "involvedObject": {"kind": "Pod", "name": name, "namespace": ns},
            "type": "Warning", "reason": "FailedCreatePodSandBox",
            "message": "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to start sandbox: fork/exec /opt/bin/bounded-runc: no such file or directory",
            "lastTimestamp": "2026-11-29T11:59:30Z",
        }))));
    }
    out
}

/// Two namespaces carrying the fixtures' grants' project/environment pair
/// (demo/production): copies there would claim one identity.
pub fn namespaces_sharing_demo_production() -> Vec<Object> {
    ["team-a", "team-b"]
        .into_iter()
        .map(|name| {
            Object::from(obj::<k8s_openapi::api::core::v1::Namespace>(json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "uid": format!("uid-ns-{name}"),
                             "labels": {"berth.dev/project": "demo", "berth.dev/environment": "production"},
                             "creationTimestamp": "2026-11-01T00:00:00Z"},
                "status": {"phase": "Active"},
            })))
        })
        .collect()
}

/// The fixtures' one cluster (context `kwok-test`).
pub fn cluster() -> ClusterId {
    ClusterId::new("kwok-test")
}

/// The origin of watch messages of `app`'s first cluster now.
pub fn origin(app: &App) -> Origin {
    Origin {
        cluster: app.clusters[0].id.clone(),
        generation: app.session.generation,
    }
}

/// An app fed with [`objects`] through the watch path, every watch synced.
pub fn app() -> App {
    app_with(objects())
}

/// A fleet of one cluster per `(context, objects)`, each fed through its
/// own watchers' messages, every watched kind synced there.
pub fn fleet_with(clusters: Vec<(&str, Vec<Object>)>) -> App {
    let ids = clusters.iter().map(|(c, _)| ClusterId::new(c)).collect();
    let mut app = App::of_fleet(ids, Scope::All, now());
    for (i, (_, objs)) in clusters.iter().enumerate() {
        let origin = app.origin_of(i);
        for kind in Kind::ALL {
            let key = crate::model::WatchKey::all(*kind);
            let mut send = |ev| update(&mut app, Msg::Watched(origin.clone(), key.clone(), ev));
            send(WatchEvent::Init);
            for o in objs.iter().filter(|o| o.kind() == *kind) {
                send(WatchEvent::InitApply(o.clone()));
            }
            send(WatchEvent::InitDone);
        }
    }
    app.refresh_all();
    app
}

/// Two clusters, `prod-eu` and `prod-us`, holding the same objects (same
/// namespaces, names, even uids: as after a restore from a backup).
pub fn fleet() -> App {
    fleet_with(vec![("prod-eu", objects()), ("prod-us", objects())])
}

/// An app fed with `objs`, every watched kind synced.
pub fn app_with(objs: Vec<Object>) -> App {
    let mut app = App::new("kwok-test", Scope::All, now());
    for kind in Kind::ALL {
        update(&mut app, Msg::Watch(*kind, WatchEvent::Init));
        for o in objs.iter().filter(|o| o.kind() == *kind) {
            update(
                &mut app,
                Msg::Watch(*kind, WatchEvent::InitApply(o.clone())),
            );
        }
        update(&mut app, Msg::Watch(*kind, WatchEvent::InitDone));
    }
    // As if every view had been visited (the tabs show every count).
    app.refresh_all();
    app
}
