//! Pods as the store keeps them: the metadata and the handful of fields
//! [`super::compact`] keeps of a Pod, without the rest of the k8s-openapi
//! `Pod` struct. That struct is ~4 kB inline even when, as after
//! compaction, nearly all its optional fields are absent; at scale S
//! (20,000 Pods) that was most of the console's memory.
//!
//! Who reads what: the shared analysis (metadata, class, phase, Ready:
//! [`SlimPod::workload`]), the rollout's pod lines (name, phase, Ready,
//! node), the owner index and key (metadata). The first container is kept
//! so that [`SlimPod::to_pod`] gives back exactly the reduced Pod (the
//! Details summary shows it until the whole object is read).

use berth_shared::analysis::{Workload, WorkloadKind};
use berth_shared::render::RUNTIME_PROFILE_ANNOTATION;
use k8s_openapi::api::core::v1::{Container, Pod, PodCondition, PodSpec, PodStatus};

use super::kept::Kept;
use super::meta::{HasSlimMeta, SlimMeta};

/// The `type` of the condition kept.
const READY: &str = "Ready";

/// A Pod reduced to what the console reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlimPod {
    /// What [`SlimMeta`] keeps of the metadata [`super::compact`] left
    /// (berth's annotations only); the labels and annotations shared with
    /// the other Pods of its ReplicaSet ([`super::intern`]).
    pub metadata: SlimMeta,
    /// `spec`, when the Pod had one.
    pub spec: Option<SlimSpec>,
    /// `status`, when the Pod had one.
    pub status: Option<SlimStatus>,
}

/// What is kept of a Pod's `spec`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlimSpec {
    /// `runtimeClassName`.
    pub runtime_class_name: Option<String>,
    /// `nodeName`.
    pub node_name: Option<String>,
    /// The first container's name and image.
    pub container: Option<SlimContainer>,
}

/// The first container of a Pod (or of a pod template); also what
/// [`super::wire`] reads of it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct SlimContainer {
    /// `name`.
    pub name: String,
    /// `image`.
    pub image: Option<String>,
}

impl From<Container> for SlimContainer {
    fn from(c: Container) -> Self {
        SlimContainer {
            name: c.name,
            image: c.image,
        }
    }
}

impl SlimContainer {
    /// The container as [`super::compact`] reduces it.
    pub fn to_container(&self) -> Container {
        Container::from(self.clone())
    }
}

impl From<SlimContainer> for Container {
    fn from(c: SlimContainer) -> Self {
        Container {
            name: c.name,
            image: c.image,
            ..Default::default()
        }
    }
}

/// What is kept of a Pod's `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlimStatus {
    /// `phase`.
    pub phase: Option<String>,
    /// The `status` of the `Ready` condition (`True`, `False`, `Unknown`),
    /// when the Pod has one.
    pub ready: Option<String>,
}

impl SlimPod {
    /// `spec.runtimeClassName`.
    pub fn runtime_class_name(&self) -> Option<&str> {
        self.spec.as_ref()?.runtime_class_name.as_deref()
    }

    /// `spec.nodeName`.
    pub fn node_name(&self) -> Option<&str> {
        self.spec.as_ref()?.node_name.as_deref()
    }

    /// `status.phase`.
    pub fn phase(&self) -> Option<&str> {
        self.status.as_ref()?.phase.as_deref()
    }

    /// Whether the `Ready` condition is `True` (as
    /// [`berth_shared::api::meta::pod_ready`] reads a Pod).
    pub fn ready(&self) -> bool {
        self.status
            .as_ref()
            .is_some_and(|s| s.ready.as_deref() == Some("True"))
    }

    /// The Pod as the shared analysis sees it (as
    /// [`Workload::from_pod`] would see [`SlimPod::to_pod`], without
    /// building that).
    pub fn workload(&self) -> Workload {
        let m = &self.metadata;
        let terminated = self
            .phase()
            .is_some_and(|ph| ph == "Succeeded" || ph == "Failed");
        Workload {
            kind: WorkloadKind::Pod,
            namespace: m.namespace.clone().unwrap_or_default(),
            name: m.name.clone().unwrap_or_default(),
            runtime_class: self
                .runtime_class_name()
                .filter(|c| !c.is_empty())
                .map(str::to_string),
            replicas: i32::from(!terminated),
            ready: i32::from(self.ready()),
            managed_by_berth: m.is_managed(),
            owner: m.controller(),
            is_rollback_revision: false,
            suspended: false,
            runtime_profile: m.annotation(RUNTIME_PROFILE_ANNOTATION).map(str::to_string),
            // Shared with the store: no copy.
            labels: m.labels.clone(),
        }
    }

    /// The Pod as [`super::compact`] reduces it.
    pub fn to_pod(&self) -> Pod {
        Pod {
            metadata: self.metadata.to_meta(),
            spec: self.spec.as_ref().map(|s| PodSpec {
                runtime_class_name: s.runtime_class_name.clone(),
                node_name: s.node_name.clone(),
                containers: s
                    .container
                    .iter()
                    .map(SlimContainer::to_container)
                    .collect(),
                ..Default::default()
            }),
            status: self.status.as_ref().map(|s| PodStatus {
                phase: s.phase.clone(),
                conditions: s.ready.as_ref().map(|r| {
                    vec![PodCondition {
                        type_: READY.to_string(),
                        status: r.clone(),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
        }
    }
}

impl From<Pod> for SlimPod {
    /// Takes the kept fields of `pod` (moved, not copied).
    fn from(pod: Pod) -> Self {
        let Pod {
            metadata,
            spec,
            status,
        } = pod;
        SlimPod {
            metadata: SlimMeta::from(metadata),
            spec: spec.map(|s| SlimSpec {
                runtime_class_name: s.runtime_class_name,
                node_name: s.node_name,
                container: s.containers.into_iter().next().map(SlimContainer::from),
            }),
            status: status.map(|s| {
                // The API server keeps one condition per type; should a
                // Pod carry several `Ready` ones, a `True` among them wins,
                // as `pod_ready` reads them.
                let mut ready: Vec<String> = s
                    .conditions
                    .into_iter()
                    .flatten()
                    .filter(|c| c.type_ == READY)
                    .map(|c| c.status)
                    .collect();
                let ready = match ready.iter().position(|r| r == "True") {
                    Some(i) => Some(ready.swap_remove(i)),
                    None => ready.into_iter().next(),
                };
                SlimStatus {
                    phase: s.phase,
                    ready,
                }
            }),
        }
    }
}

impl Kept<Pod> for SlimPod {
    fn keep(obj: Box<Pod>) -> Box<Self> {
        Box::new(SlimPod::from(*obj))
    }

    fn object(&self) -> Pod {
        self.to_pod()
    }

    fn key(&self) -> super::ObjKey {
        self.metadata.key()
    }
}

impl HasSlimMeta for SlimPod {
    fn slim_meta(&self) -> &SlimMeta {
        &self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::super::compact::tests::{from, full_pod};
    use super::*;
    use crate::store::{Kind, Object, Store, Stored, ingest};
    use berth_shared::api::meta::pod_ready;

    /// The Pod as the store keeps it, the way every watched Pod gets there.
    fn stored(pod: Pod) -> (Store, SlimPod) {
        let mut store = Store::default();
        store.apply(ingest::admit(pod).expect("admitted"));
        let slim = store.pods.values().next().expect("kept").as_ref().clone();
        (store, slim)
    }

    #[test]
    fn a_pod_keeps_what_the_views_read() {
        let full = full_pod();
        let (store, slim) = stored(full.clone());
        // The analysis sees the same pod.
        assert_eq!(slim.workload(), Workload::from_pod(&full));
        // The rollout's pod line, the key and the owner index.
        assert!(slim.ready());
        assert_eq!(slim.phase(), Some("Running"));
        assert_eq!(slim.node_name(), Some("node-3"));
        assert_eq!(slim.runtime_class_name(), Some("kata"));
        let key = ("ns".to_string(), "web-1".to_string());
        assert_eq!(slim.metadata.key(), key);
        let owned: Vec<_> = store
            .links
            .of(Kind::Pod, "ns", "ReplicaSet", "web-abc")
            .collect();
        assert_eq!(owned, ["web-1"]);
        assert_eq!(slim.metadata.uid.as_deref(), Some("u1"));
        // Only berth's annotations, no finalizers; the first container.
        let ann = &slim.metadata.annotations;
        assert_eq!(ann.len(), 1, "{ann:?}");
        let c = slim.spec.as_ref().and_then(|s| s.container.as_ref());
        assert_eq!(c.map(|c| c.name.as_str()), Some("app"));
        assert_eq!(
            c.and_then(|c| c.image.as_deref()),
            Some("registry.invalid/web:2")
        );
        // What the store hands out is the Pod as compaction left it, but
        // for its owner references' apiVersion and uid (not kept).
        let Some(Object::Pod(got)) = store.get(Kind::Pod, &key) else {
            panic!("a pod");
        };
        let Some(Object::Pod(mut reduced)) = ingest::admit(full) else {
            panic!("a pod");
        };
        for r in reduced.metadata.owner_references.iter_mut().flatten() {
            (r.api_version, r.uid) = Default::default();
        }
        assert_eq!(got, reduced);
        assert!(pod_ready(&got));
        // The point of it all: a fraction of a Pod's inline size.
        let (slim_b, pod_b) = (size_of::<SlimPod>(), size_of::<Pod>());
        assert!(slim_b * 4 < pod_b, "{slim_b} B vs {pod_b} B");
    }

    #[test]
    fn a_list_in_progress_holds_slim_pods() {
        // What the model collects until a (re)list's InitDone.
        let obj = ingest::admit(full_pod()).expect("admitted");
        let key = obj.key();
        let stored = Stored::from(obj);
        assert_eq!((stored.kind(), stored.key()), (Kind::Pod, key.clone()));
        let Stored::Pod(slim) = &stored else {
            panic!("a slim pod");
        };
        assert_eq!(slim.phase(), Some("Running"));
        let mut store = Store::default();
        store.replace(Kind::Pod, vec![stored.clone()]);
        assert_eq!(store.count(Kind::Pod), 1);
        assert!(store.classed.keys(Kind::Pod).any(|k| *k == key));
        // Kept again as it was (a relist keeps what scoped watches hold).
        let again = store.get_stored(Kind::Pod, &key).expect("kept");
        let (Stored::Pod(a), Stored::Pod(b)) = (&again, &stored) else {
            panic!("slim pods");
        };
        assert_eq!(a, b);
        assert!(
            store
                .get_stored(Kind::Pod, &("ns".into(), "other".into()))
                .is_none()
        );
    }

    #[test]
    fn pod_and_slim_pod_convert_back_and_forth() {
        let pods: [serde_json::Value; 5] = [
            serde_json::json!({"metadata": {"name": "bare"}}),
            serde_json::json!({"metadata": {"name": "p"}, "spec": {"containers": []}}),
            serde_json::json!({"metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c"}]}, "status": {}}),
            serde_json::json!({"metadata": {"name": "p"}, "status": {"phase": "Pending",
                "conditions": [{"type": "Ready", "status": "False"}]}}),
            serde_json::json!({"metadata": {"name": "p"}, "status": {"phase": "Failed",
                "conditions": [{"type": "Ready", "status": "Unknown"}]}}),
        ];
        for v in pods {
            let pod: Pod = from(v.clone());
            let slim = SlimPod::from(pod.clone());
            // Every field of these is one that is kept.
            assert_eq!(slim.to_pod(), pod, "{v}");
            assert_eq!(SlimPod::from(slim.to_pod()), slim, "{v}");
            assert_eq!(slim.ready(), pod_ready(&pod), "{v}");
            assert_eq!(slim.workload(), Workload::from_pod(&pod), "{v}");
        }
    }

    #[test]
    fn a_true_ready_condition_wins() {
        let pod: Pod = from(serde_json::json!({"metadata": {"name": "p"},
        "status": {"conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "Ready", "status": "True"}
        ]}}));
        let slim = SlimPod::from(pod.clone());
        assert!(pod_ready(&pod) && slim.ready());
        let pod: Pod = from(serde_json::json!({"metadata": {"name": "p"},
        "status": {"conditions": [
            {"type": "ContainersReady", "status": "True"},
            {"type": "Ready", "status": "Unknown"},
            {"type": "Ready", "status": "False"}
        ]}}));
        let slim = SlimPod::from(pod);
        assert!(!slim.ready());
        assert_eq!(
            slim.status.and_then(|s| s.ready).as_deref(),
            Some("Unknown")
        );
    }

    #[test]
    fn what_is_kept_was_sanitized() {
        let mut pod = full_pod();
        let esc = "\u{1b}]52;c;AAAA\u{7}\u{1b}[2J";
        pod.metadata.labels = Some([("app".to_string(), format!("web{esc}"))].into());
        if let Some(s) = pod.spec.as_mut() {
            s.node_name = Some(format!("node{esc}-3"));
            s.containers[0].image = Some(format!("img{esc}:1"));
        }
        if let Some(s) = pod.status.as_mut() {
            s.phase = Some(format!("Run{esc}ning"));
        }
        let (_, slim) = stored(pod);
        // The escapes are gone from every field the views show.
        assert_eq!(slim.node_name(), Some("node-3"));
        assert_eq!(slim.phase(), Some("Running"));
        let image = slim.spec.as_ref().and_then(|s| s.container.as_ref());
        assert_eq!(image.and_then(|c| c.image.as_deref()), Some("img:1"));
        let labels = &slim.metadata.labels;
        assert_eq!(labels.get("app").map(String::as_str), Some("web"));
    }
}
