//! The world's cluster once everything has converged, made without one:
//! every object as the apiserver would serve it (JSON, whole). The
//! Deployments are what the agent renders ([`berth_shared::render::render`]);
//! ReplicaSets and Pods are made from their templates as the controllers
//! would, with the status fields a kwok cluster fills; the Runtimes carry
//! the status the agent writes and the RuntimeGrants the one it publishes.

use serde_json::{Value, json};

use super::{CREATED, ENVIRONMENT, HANDLER, PROJECT, Planned, Size, class_name, from};
use berth_shared::api::Runtime;

impl Size {
    /// The RuntimeClasses, every one naming [`HANDLER`].
    pub fn class_values(&self) -> Vec<Value> {
        (0..self.classes)
            .map(|c| {
                json!({
                    "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                    "metadata": {"name": class_name(c), "uid": format!("uid-class-{c}"),
                                 "creationTimestamp": CREATED, "resourceVersion": "17"},
                    "handler": HANDLER,
                })
            })
            .collect()
    }

    /// The namespaces, labelled with the world's project and environment.
    pub fn namespace_values(&self) -> Vec<Value> {
        self.namespaces()
            .into_iter()
            .enumerate()
            .map(|(k, name)| {
                json!({
                    "apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": name, "uid": format!("uid-ns-{k}"),
                        "creationTimestamp": CREATED,
                        "labels": {"berth.dev/project": PROJECT, "berth.dev/environment": ENVIRONMENT,
                                   "kubernetes.io/metadata.name": name}},
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {"phase": "Active"},
                })
            })
            .collect()
    }

    /// The nodes, as kwok runs them: Ready, reporting runc and [`HANDLER`].
    pub fn node_values(&self) -> Vec<Value> {
        (0..self.nodes).map(node).collect()
    }

    /// One Runtime's objects: the Runtime with its status, its
    /// RuntimeGrant when it is granted and `grant_published`, its
    /// Deployment, ReplicaSet and Pods.
    pub fn runtime_values(&self, p: &Planned, grant_published: bool) -> Vec<Value> {
        let mut out = Vec::new();
        let i = p.index;
        let (ns, name, service) = (&p.namespace, &p.name, &p.service);
        let replicas = self.replicas;
        let profile = match &p.grant {
            Some((alias, class)) => {
                json!({"alias": alias, "class": class, "handler": HANDLER, "state": "Granted"})
            }
            None => json!({"state": "NotRequested"}),
        };
        let runtime_value = json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
            "metadata": {"name": name, "namespace": ns, "uid": format!("00000000-0000-4000-8000-{i:012}"),
                         "generation": 1, "creationTimestamp": CREATED, "resourceVersion": "1234"},
            "spec": p.spec(replicas),
            "status": {
                "observedGeneration": 1,
                "identity": {"project": PROJECT, "environment": ENVIRONMENT,
                             "application": super::APPLICATION, "service": service},
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
        let rendered = berth_shared::render::render(&runtime, &p.identity(), &p.decision())
            .unwrap_or_else(|e| panic!("render {name}: {e}"));
        out.push(runtime_value);
        if let Some((alias, class)) = p.grant.as_ref().filter(|_| grant_published) {
            out.push(json!({
                "apiVersion": "berth.dev/v1alpha1", "kind": "RuntimeGrant",
                "metadata": {"name": alias, "uid": format!("uid-grant-{i}"), "creationTimestamp": CREATED},
                "spec": {"project": PROJECT, "environment": ENVIRONMENT, "application": super::APPLICATION,
                         "service": service, "runtimeClass": class, "handler": HANDLER},
                "status": {"classPresent": true, "classHandler": HANDLER, "handlerMatches": true,
                    "nodes": {"withHandler": self.nodes, "total": self.nodes,
                              "summary": format!("{0}/{0}", self.nodes)},
                    "runtimes": [{"namespace": ns, "name": name}]},
            }));
        }
        let mut dep = serde_json::to_value(&rendered.deployment).unwrap_or(Value::Null);
        let dep_name = dep["metadata"]["name"].as_str().unwrap_or(name).to_string();
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
        let mut rs_template = template;
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
        for pod in 0..replicas {
            let mut meta = rs_template["metadata"].clone();
            meta["name"] = json!(format!("{rs_name}-{pod:05}"));
            meta["namespace"] = json!(ns);
            meta["uid"] = json!(format!("uid-pod-{i}-{pod}"));
            meta["creationTimestamp"] = json!(CREATED);
            meta["resourceVersion"] = json!("4567");
            meta["ownerReferences"] = owner("ReplicaSet", &rs_name, format!("uid-rs-{i}"));
            let mut spec = rs_template["spec"].clone();
            spec["nodeName"] = json!(format!(
                "kwok-node-{}",
                (i * replicas + pod) % self.nodes.max(1)
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
        out
    }
}

fn cond(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
           "lastTransitionTime": CREATED, "observedGeneration": 1})
}

/// A kwok node as the bench cluster has them: Ready, reporting runc and
/// the world's handler.
fn node(n: usize) -> Value {
    let ready = |t: &str, s: &str| {
        json!({"type": t, "status": s, "reason": "KubeletReady", "message": "kwok",
               "lastHeartbeatTime": CREATED, "lastTransitionTime": CREATED})
    };
    let resources =
        json!({"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"});
    json!({
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_brings_its_grant_deployment_replica_set_and_pods() {
        let size = Size {
            runtimes: 3,
            replicas: 2,
            granted: 1,
            classes: 1,
            nodes: 2,
        };
        let kinds = |p: &Planned, published| -> Vec<String> {
            size.runtime_values(p, published)
                .iter()
                .map(|v| v["kind"].as_str().unwrap_or_default().to_string())
                .collect()
        };
        let granted = size.planned(0);
        assert_eq!(
            kinds(&granted, true),
            [
                "Runtime",
                "RuntimeGrant",
                "Deployment",
                "ReplicaSet",
                "Pod",
                "Pod"
            ]
        );
        assert_eq!(
            kinds(&granted, false),
            ["Runtime", "Deployment", "ReplicaSet", "Pod", "Pod"]
        );
        assert_eq!(
            kinds(&size.planned(1), true),
            ["Runtime", "Deployment", "ReplicaSet", "Pod", "Pod"]
        );
        assert_eq!(size.node_values().len(), 2);
        assert_eq!(size.class_values().len(), 1);
        assert_eq!(size.namespace_values().len(), 1);
    }
}
