//! A synthetic cluster of the shape issue 14 calls scale S (2,000 Runtimes,
//! each with a Deployment of 10 replicas: 2,000 Deployments, 2,000
//! ReplicaSets, 20,000 Pods; 200 Nodes, 20 RuntimeClasses; 64 Runtimes
//! granted, the rest on the default runtime), made without a cluster so that
//! the console's rebuild and memory can be measured and profiled in a plain
//! test process. The Deployments are what the agent renders
//! ([`berth_shared::render::render`]); ReplicaSets and Pods are made from
//! their templates as the controllers would, with the status fields a kwok
//! cluster fills. Every object enters the app through the watch path
//! ([`crate::store::ingest::admit`], then `InitApply`), like real events.
//!
//! One deviation from the bench world: the last [`World::revoked`] granted
//! Runtimes have lost their RuntimeGrant, so that the Retained view has
//! rows (their Deployment, ReplicaSet and Pods) and a benchmark of it
//! cannot measure an empty table.

use berth_shared::api::Runtime;
use berth_shared::decide::{Decision, Identity};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::node::v1::RuntimeClass;
use serde_json::{Value, json};

use crate::model::{App, Kind, Msg, Object, Scope, WatchEvent, update};
use crate::store::ingest::admit;

/// Runtimes per namespace (as the bench world).
const PER_NAMESPACE: usize = 100;
/// The handler of every class; every node reports it.
const HANDLER: &str = "bounded-runc";
const PROJECT: &str = "bench";
const ENVIRONMENT: &str = "production";
const CREATED: &str = "2026-11-28T12:00:00Z";

/// The size of a synthetic world.
#[derive(Clone, Copy, Debug)]
pub struct World {
    pub runtimes: usize,
    pub replicas: usize,
    pub granted: usize,
    /// Of the granted, how many lost their RuntimeGrant (retained).
    pub revoked: usize,
    pub classes: usize,
    pub nodes: usize,
}

impl World {
    /// Scale S of issue 14.
    pub const S: World = World {
        runtimes: 2_000,
        replicas: 10,
        granted: 64,
        revoked: 8,
        classes: 20,
        nodes: 200,
    };

    /// Runtimes referencing a class whose grant is gone.
    pub fn retained_runtimes(&self) -> usize {
        self.revoked.min(self.granted)
    }

    /// Rows the Retained view must show: each revoked Runtime's
    /// Deployment, ReplicaSet and Pods.
    pub fn retained_rows(&self) -> usize {
        self.retained_runtimes() * (2 + self.replicas)
    }

    /// Every object of the world, reduced and sanitized as the watches
    /// deliver them.
    pub fn objects(&self) -> Vec<Object> {
        self.stream().collect()
    }

    /// [`World::objects`], made one Runtime's objects at a time: a
    /// benchmark that ingests them as they come holds no more of them at
    /// once than a watch's page (the whole world made first would add a
    /// peak of every Pod as a whole `Pod`, which the console never holds).
    pub fn stream(&self) -> impl Iterator<Item = Object> + '_ {
        let mut out = Vec::new();
        for c in 0..self.classes {
            out.extend(admit::<RuntimeClass>(from(json!({
                "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                "metadata": {"name": class_name(c), "uid": format!("uid-class-{c}"),
                             "creationTimestamp": CREATED, "resourceVersion": "17"},
                "handler": HANDLER,
            }))));
        }
        for n in 0..self.nodes {
            out.extend(admit(node(n)));
        }
        for k in 0..self.runtimes.div_ceil(PER_NAMESPACE) {
            out.extend(admit::<Namespace>(from(json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": format!("bench-{k}"), "uid": format!("uid-ns-{k}"),
                    "creationTimestamp": CREATED,
                    "labels": {"berth.dev/project": PROJECT, "berth.dev/environment": ENVIRONMENT,
                               "kubernetes.io/metadata.name": format!("bench-{k}")}},
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            }))));
        }
        let runtimes = (0..self.runtimes).flat_map(|i| {
            let mut values = Vec::new();
            self.runtime_values(i, &mut values);
            values
                .into_iter()
                .filter_map(admit_value)
                .collect::<Vec<_>>()
        });
        out.into_iter().chain(runtimes)
    }

    /// Every Pod of the world as the apiserver serves it, whole (JSON),
    /// one Runtime's at a time.
    pub fn pod_values(&self) -> impl Iterator<Item = Value> + '_ {
        (0..self.runtimes).flat_map(|i| {
            let mut values = Vec::new();
            self.runtime_values(i, &mut values);
            values.retain(|v| v["kind"] == "Pod");
            values
        })
    }

    fn grant(&self, i: usize) -> Option<(String, String)> {
        (i < self.granted).then(|| (format!("b{i}"), class_name(i % self.classes.max(1))))
    }

    /// One Runtime's objects as the apiserver would serve them (JSON, whole,
    /// before the console reduces them): the Runtime, its grant, its
    /// Deployment, ReplicaSet and Pods.
    fn runtime_values(&self, i: usize, out: &mut Vec<Value>) {
        let ns = format!("bench-{}", i / PER_NAMESPACE);
        let name = format!("rt-{i}");
        let service = format!("svc-{i}");
        let uid = format!("00000000-0000-4000-8000-{i:012}");
        let grant = self.grant(i);
        let identity = Identity {
            project: PROJECT.into(),
            environment: ENVIRONMENT.into(),
            application: "app".into(),
            service: service.clone(),
        };
        let decision = match &grant {
            Some((alias, class)) => Decision::Granted {
                alias: alias.clone(),
                runtime_class: class.clone(),
                handler: HANDLER.into(),
            },
            None => Decision::NotRequested,
        };
        let replicas = self.replicas;
        let mut spec = json!({
            "application": "app", "service": service,
            "image": {"repository": "registry.invalid/berth/app", "tag": "1"},
            "replicas": replicas,
        });
        let profile = match &grant {
            Some((alias, class)) => {
                spec["runtimeProfile"] = json!(alias);
                json!({"alias": alias, "class": class, "handler": HANDLER, "state": "Granted"})
            }
            None => json!({"state": "NotRequested"}),
        };
        let runtime_value = json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
            "metadata": {"name": name, "namespace": ns, "uid": uid, "generation": 1,
                         "creationTimestamp": CREATED, "resourceVersion": "1234"},
            "spec": spec,
            "status": {
                "observedGeneration": 1,
                "identity": {"project": PROJECT, "environment": ENVIRONMENT,
                             "application": "app", "service": service},
                "profile": profile,
                "rollout": {"revision": 1, "desired": replicas, "updated": replicas,
                    "ready": replicas, "available": replicas, "unavailable": 0, "phase": "Complete"},
                "conditions": [
                    cond("Ready", "True", "RolloutComplete", "all replicas are ready"),
                    cond("ProfileGranted", "True", "Granted", "as requested"),
                ],
            },
        });
        let runtime: Runtime = from(runtime_value.clone());
        let rendered = berth_shared::render::render(&runtime, &identity, &decision)
            .unwrap_or_else(|e| panic!("render {name}: {e}"));
        out.push(runtime_value);
        if let Some((alias, class)) = grant.filter(|_| i < self.granted - self.retained_runtimes())
        {
            out.push(json!({
                "apiVersion": "berth.dev/v1alpha1", "kind": "RuntimeGrant",
                "metadata": {"name": alias, "uid": format!("uid-grant-{i}"), "creationTimestamp": CREATED},
                "spec": {"project": PROJECT, "environment": ENVIRONMENT, "application": "app",
                         "service": service, "runtimeClass": class, "handler": HANDLER},
                "status": {"classPresent": true, "classHandler": HANDLER, "handlerMatches": true,
                    "nodes": {"withHandler": self.nodes, "total": self.nodes,
                              "summary": format!("{0}/{0}", self.nodes)},
                    "runtimes": [{"namespace": ns, "name": name}]},
            }));
        }
        let mut dep = serde_json::to_value(&rendered.deployment).unwrap_or(Value::Null);
        let dep_name = dep["metadata"]["name"]
            .as_str()
            .unwrap_or(&name)
            .to_string();
        dep["apiVersion"] = json!("apps/v1");
        dep["kind"] = json!("Deployment");
        dep["metadata"]["uid"] = json!(format!("uid-dep-{i}"));
        dep["metadata"]["creationTimestamp"] = json!(CREATED);
        dep["metadata"]["generation"] = json!(1);
        dep["metadata"]["resourceVersion"] = json!("2345");
        dep["metadata"]["annotations"] = json!({"deployment.kubernetes.io/revision": "1"});
        dep["status"] = json!({"observedGeneration": 1, "replicas": replicas,
            "updatedReplicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                 "message": "Deployment has minimum availability.",
                 "lastUpdateTime": CREATED, "lastTransitionTime": CREATED},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                 "message": format!("ReplicaSet \"{dep_name}-5d8f7c9b4\" has successfully progressed."),
                 "lastUpdateTime": CREATED, "lastTransitionTime": CREATED}]});
        let template = dep["spec"]["template"].clone();
        out.push(dep.clone());

        let hash = format!("{:x}", 0x5d8f_7c9b_u64 + i as u64);
        let rs_name = format!("{dep_name}-{hash}");
        let mut rs_template = template.clone();
        rs_template["metadata"]["labels"]["pod-template-hash"] = json!(hash);
        let owner = |kind: &str, name: &str, uid: String| {
            json!([{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid,
                    "controller": true, "blockOwnerDeletion": true}])
        };
        out.push(json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": rs_name, "namespace": ns, "uid": format!("uid-rs-{i}"),
                "creationTimestamp": CREATED, "generation": 1, "resourceVersion": "3456",
                "labels": rs_template["metadata"]["labels"].clone(),
                "annotations": {"deployment.kubernetes.io/revision": "1",
                    "deployment.kubernetes.io/desired-replicas": replicas.to_string(),
                    "deployment.kubernetes.io/max-replicas": (replicas + 1).to_string()},
                "ownerReferences": owner("Deployment", &dep_name, format!("uid-dep-{i}"))},
            "spec": {"replicas": replicas, "selector": dep["spec"]["selector"].clone(),
                     "template": rs_template},
            "status": {"replicas": replicas, "fullyLabeledReplicas": replicas,
                "readyReplicas": replicas, "availableReplicas": replicas, "observedGeneration": 1},
        }));
        for p in 0..replicas {
            let mut meta = rs_template["metadata"].clone();
            meta["name"] = json!(format!("{rs_name}-{p:05}"));
            meta["namespace"] = json!(ns);
            meta["uid"] = json!(format!("uid-pod-{i}-{p}"));
            meta["creationTimestamp"] = json!(CREATED);
            meta["resourceVersion"] = json!("4567");
            meta["ownerReferences"] = owner("ReplicaSet", &rs_name, format!("uid-rs-{i}"));
            let mut spec = rs_template["spec"].clone();
            spec["nodeName"] = json!(format!(
                "kwok-node-{}",
                (i * replicas + p) % self.nodes.max(1)
            ));
            let ready = |t: &str| {
                json!({"type": t, "status": "True", "lastProbeTime": null,
                       "lastTransitionTime": CREATED})
            };
            out.push(json!({
                "apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
                "status": {"phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.244.1.2",
                    "podIPs": [{"ip": "10.244.1.2"}], "startTime": CREATED, "qosClass": "Burstable",
                    "conditions": [ready("Initialized"), ready("Ready"), ready("ContainersReady"),
                                   ready("PodScheduled")],
                    "containerStatuses": [{"name": "app", "image": "registry.invalid/berth/app:1",
                        "imageID": "", "ready": true, "started": true, "restartCount": 0,
                        "state": {"running": {"startedAt": CREATED}}}]},
            }));
        }
    }
}

/// An app fed with `objs` through the watch path, every kind synced: as
/// the console's concurrent watches deliver them, every kind's list is
/// open at once, the objects arrive interleaved as they come and each
/// kind's list completes at the end.
pub fn app_with(objs: impl IntoIterator<Item = Object>) -> App {
    let mut app = App::new("scale", Scope::All, crate::fixtures::now());
    for kind in Kind::ALL {
        update(&mut app, Msg::Watch(*kind, WatchEvent::Init));
    }
    for o in objs {
        update(&mut app, Msg::Watch(o.kind(), WatchEvent::InitApply(o)));
    }
    for kind in Kind::ALL {
        update(&mut app, Msg::Watch(*kind, WatchEvent::InitDone));
    }
    app
}

/// An object of [`World::runtime_values`] as the watches deliver it.
fn admit_value(v: Value) -> Option<Object> {
    match v["kind"].as_str() {
        Some("Runtime") => admit::<Runtime>(from(v)),
        Some("RuntimeGrant") => admit::<berth_shared::api::RuntimeGrant>(from(v)),
        Some("Deployment") => admit::<Deployment>(from(v)),
        Some("ReplicaSet") => admit::<ReplicaSet>(from(v)),
        Some("Pod") => admit::<Pod>(from(v)),
        other => panic!("synthetic object of kind {other:?}"),
    }
}

fn class_name(c: usize) -> String {
    format!("bench-class-{c}")
}

fn from<K: serde::de::DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).unwrap_or_else(|e| panic!("synthetic object: {e}"))
}

fn cond(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
           "lastTransitionTime": CREATED, "observedGeneration": 1})
}

/// A kwok node as the bench cluster has them: Ready, reporting runc and
/// the benchmark's handler.
fn node(n: usize) -> Node {
    let ready = |t: &str, s: &str| {
        json!({"type": t, "status": s, "reason": "KubeletReady", "message": "kwok",
               "lastHeartbeatTime": CREATED, "lastTransitionTime": CREATED})
    };
    let resources =
        json!({"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"});
    from(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": format!("kwok-node-{n}"), "uid": format!("uid-node-{n}"),
            "creationTimestamp": CREATED, "resourceVersion": "99",
            "labels": {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": format!("kwok-node-{n}"),
                "kubernetes.io/os": "linux", "kubernetes.io/role": "agent", "type": "kwok"},
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"taints": [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]},
        "status": {
            "capacity": resources, "allocatable": resources,
            "conditions": [ready("Ready", "True"), ready("MemoryPressure", "False"),
                           ready("DiskPressure", "False"), ready("PIDPressure", "False"),
                           ready("NetworkUnavailable", "False")],
            "addresses": [{"type": "InternalIP", "address": format!("10.0.{}.{}", n / 250, n % 250)}],
            "nodeInfo": {"architecture": "amd64", "bootID": "", "containerRuntimeVersion": "kwok",
                "kernelVersion": "", "kubeProxyVersion": "fake", "kubeletVersion": "fake",
                "machineID": "", "operatingSystem": "linux", "osImage": "", "systemUUID": ""},
            "runtimeHandlers": [{"name": "runc", "features": {}},
                                {"name": HANDLER, "features": {}}],
        },
    }))
}

/// The middle of a benchmark's samples (the upper middle of an even count;
/// zero for none): what `frame_time_at_scale` and `pod_ingestion_at_scale`
/// report.
pub(crate) fn median(mut v: Vec<std::time::Duration>) -> std::time::Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}
