//! What the caches keep of each object (issue 14): the agent watches every
//! workload of the cluster, but reconcile and the retained-workload
//! analysis read only a few fields of most of them. Each watch event is
//! reduced before it enters its store, so memory grows with what is read,
//! not with the size of other parties' objects.
//!
//! Two classes of object:
//! - **Owned** (the controller is a Runtime): the apply step compares them
//!   with the rendered object (every desired field must be present, and the
//!   production contract inspects the whole pod spec for hostNetwork,
//!   privilege, extra containers, …). Of Deployments and the label-filtered
//!   kinds, the whole object (but `managedFields` and kubectl's
//!   last-applied annotation, which neither the diff nor the contract
//!   reads; the HPA handover reads managedFields from a fresh GET) is kept
//!   compact in `bodies`. The Deployments' store keeps what the status,
//!   triggers and indexes read ([`deployment`]); the label-filtered
//!   kinds' stores keep none of a Runtime's own objects, whose events the
//!   triggers see with their metadata alone ([`managed`]). Owned Jobs and
//!   CronJobs are kept whole in their stores.
//! - **Foreign** (everyone else's, and ReplicaSets, which the Deployment
//!   controller owns): only what `berth_shared::analysis::Workload` and the
//!   rollout summary read — identity metadata, owner references, berth's
//!   labels, the revision and profile annotations, replica counts, and a
//!   pod template cut down to its class, berth's labels, the profile
//!   annotation and the first container's image.
//!
//! Pure functions; `mod.rs` plugs them into the watch streams.

use std::collections::BTreeMap;

use berth_shared::api::meta::{MANAGED_BY_LABEL, REVISION_ANNOTATION, controller_of};
use berth_shared::api::{GROUP, Runtime};
use berth_shared::render::RUNTIME_PROFILE_ANNOTATION;
use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, DaemonSetSpec, DaemonSetStatus, Deployment, DeploymentSpec,
    DeploymentStatus, ReplicaSet, ReplicaSetSpec, ReplicaSetStatus, StatefulSet, StatefulSetSpec,
    StatefulSetStatus,
};
use k8s_openapi::api::batch::v1::{
    CronJob, CronJobSpec, CronJobStatus, Job, JobCondition, JobSpec, JobStatus, JobTemplateSpec,
};
use k8s_openapi::api::core::v1::{
    Container, Node, NodeCondition, NodeSpec, NodeStatus, NodeSystemInfo, Pod, PodSpec,
    PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::watcher;

mod kept_deployment;
mod kept_replica_set;
mod kept_template;
pub use kept_deployment::KeptDeployment;
pub use kept_replica_set::KeptReplicaSet;

/// kubectl's copy of the whole object as last applied: often the largest
/// field of an object, and never read.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Whether a Runtime is the object's controller (the apply step's own
/// objects, compared for drift).
pub fn owned_by_runtime(meta: &ObjectMeta) -> bool {
    controller_of(meta).is_some_and(|r| {
        r.kind == Runtime::kind(&()) && r.api_version.split('/').next() == Some(GROUP)
    })
}

/// Every cache: no managedFields, no last-applied copy.
pub fn strip<K: Resource>(obj: &mut K) {
    strip_meta(obj.meta_mut());
}

fn strip_meta(meta: &mut ObjectMeta) {
    meta.managed_fields = None;
    if let Some(a) = meta.annotations.as_mut() {
        a.remove(LAST_APPLIED_ANNOTATION);
    }
}

/// Labels the analysis reads: `app.kubernetes.io/managed-by` and berth's
/// own (`berth.dev/…`: the identity labels).
fn berth_labels(labels: Option<BTreeMap<String, String>>) -> Option<BTreeMap<String, String>> {
    labels.map(|l| {
        l.into_iter()
            .filter(|(k, _)| k == MANAGED_BY_LABEL || k.starts_with("berth.dev/"))
            .collect()
    })
}

/// Annotations the analysis and the rollout summary read.
fn read_annotations(
    annotations: Option<BTreeMap<String, String>>,
) -> Option<BTreeMap<String, String>> {
    annotations.map(|a| {
        a.into_iter()
            .filter(|(k, _)| k == REVISION_ANNOTATION || k == RUNTIME_PROFILE_ANNOTATION)
            .collect()
    })
}

/// A foreign object's metadata: what identifies it, who controls it, and
/// the labels and annotations read.
fn foreign_meta(meta: ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resource_version: meta.resource_version,
        generation: meta.generation,
        creation_timestamp: meta.creation_timestamp,
        deletion_timestamp: meta.deletion_timestamp,
        owner_references: meta.owner_references,
        labels: berth_labels(meta.labels),
        annotations: read_annotations(meta.annotations),
        ..Default::default()
    }
}

/// A pod template cut to what the analysis and the rollout summary read:
/// the class, berth's labels, the profile annotation, and the first
/// container's image (the image a rollout runs).
pub fn reduce_template(t: PodTemplateSpec) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: t.metadata.map(|m| ObjectMeta {
            labels: berth_labels(m.labels),
            annotations: m.annotations.map(|a| {
                a.into_iter()
                    .filter(|(k, _)| k == RUNTIME_PROFILE_ANNOTATION)
                    .collect()
            }),
            ..Default::default()
        }),
        spec: t.spec.map(|s| PodSpec {
            runtime_class_name: s.runtime_class_name,
            containers: s
                .containers
                .into_iter()
                .take(1)
                .map(|c| Container {
                    name: c.name,
                    image: c.image,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
    }
}

/// A label-filtered kind's object: a Runtime's own keeps only its
/// metadata here, with its labels and annotations folded into one digest
/// ([`kept_metadata_digest`]), for the triggers and the owner index that
/// see its events; its whole body is in `bodies`, and the store does not
/// hold it at all (`bodies::for_store`). Anyone else's is a names-only
/// stub ([`stub_meta`]): all the apply step asks of it is that it is there
/// and not the Runtime's (a conflict). Wearing berth's label makes an
/// object pass the watch's filter, nothing more: before issue 52 forty
/// foreign ConfigMaps of 800 kB each, labelled as berth's, were kept whole
/// and grew the agent by 31 MB; a stub's size does not depend on the
/// object's.
pub fn managed<K: Resource + Default>(obj: &mut K) {
    strip(obj);
    let mut metadata = std::mem::take(obj.meta_mut());
    if owned_by_runtime(&metadata) {
        digest_labels_and_annotations(&mut metadata);
    } else {
        metadata = stub_meta(metadata);
    }
    *obj = K::default();
    *obj.meta_mut() = metadata;
}

/// A names-only stub of someone else's object: what identifies it, and its
/// controller reference (one; an object may carry thousands of owner
/// references). Bounded whatever the object holds.
pub fn stub_meta(meta: ObjectMeta) -> ObjectMeta {
    let controller = meta
        .owner_references
        .into_iter()
        .flatten()
        .find(|r| r.controller == Some(true));
    ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resource_version: meta.resource_version,
        deletion_timestamp: meta.deletion_timestamp,
        owner_references: controller.map(|r| vec![r]),
        ..Default::default()
    }
}

/// The digest of the labels and annotations of a Runtime's own
/// label-filtered object, which the store keeps in their place. Nothing
/// reads those maps from the store (the diff and the contract read the
/// body, pruning and the owner indexes read identity and owners), but the
/// triggers must still see them change (`triggers::spec_fingerprint`
/// hashes it): someone else's edit of berth's labels is drift. Two maps
/// per object were most of its metadata (a B-tree leaf each, about half a
/// kilobyte, before any string). The digest is kept in
/// `metadata.selfLink`, which apiservers no longer set (since v1.20), as
/// one short string: as an annotation it still took a whole B-tree leaf
/// (640 bytes in jemalloc's size classes) for one entry.
pub fn kept_metadata_digest(meta: &ObjectMeta) -> Option<&str> {
    meta.self_link
        .as_deref()
        .and_then(|s| s.strip_prefix(KEPT_DIGEST_PREFIX))
}

const KEPT_DIGEST_PREFIX: &str = "berth-kept-metadata-digest:";

fn digest_labels_and_annotations(meta: &mut ObjectMeta) {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut h = DefaultHasher::new();
    meta.labels.take().hash(&mut h);
    meta.annotations.take().hash(&mut h);
    meta.self_link = Some(format!("{KEPT_DIGEST_PREFIX}{:016x}", h.finish()));
}

/// Deployments: the Runtime's own keep their metadata and status (what
/// the triggers and the Runtime's status read) and a reduced spec, their
/// whole body being in `bodies` (drift); others reduced further.
pub fn deployment(d: &mut Deployment) {
    strip(d);
    if owned_by_runtime(&d.metadata) {
        d.spec = d.spec.take().map(|s| DeploymentSpec {
            replicas: s.replicas,
            template: reduce_template(s.template),
            ..Default::default()
        });
        return;
    }
    let metadata = foreign_meta(std::mem::take(&mut d.metadata));
    let spec = d.spec.take().map(|s| DeploymentSpec {
        replicas: s.replicas,
        template: reduce_template(s.template),
        ..Default::default()
    });
    let status = d.status.take().map(|s| DeploymentStatus {
        observed_generation: s.observed_generation,
        replicas: s.replicas,
        ready_replicas: s.ready_replicas,
        available_replicas: s.available_replicas,
        updated_replicas: s.updated_replicas,
        unavailable_replicas: s.unavailable_replicas,
        ..Default::default()
    });
    *d = Deployment {
        metadata,
        spec,
        status,
    };
}

/// ReplicaSets (the Deployment controller's, never compared for drift):
/// always reduced; the rollout summary reads ready counts, the revision
/// annotation and the first container's image. The cache holds the result
/// as a [`KeptReplicaSet`].
pub fn replica_set(rs: &mut ReplicaSet) {
    let metadata = foreign_meta(std::mem::take(&mut rs.metadata));
    let spec = rs.spec.take().map(|s| ReplicaSetSpec {
        replicas: s.replicas,
        template: s.template.map(reduce_template),
        ..Default::default()
    });
    let status = rs.status.take().map(|s| ReplicaSetStatus {
        replicas: s.replicas,
        ready_replicas: s.ready_replicas,
        available_replicas: s.available_replicas,
        ..Default::default()
    });
    *rs = ReplicaSet {
        metadata,
        spec,
        status,
    };
}

/// Jobs: the Runtime's own kept whole, others reduced to what tells
/// whether they still want pods (finished, suspended, parallelism, ready).
pub fn job(j: &mut Job) {
    strip(j);
    if owned_by_runtime(&j.metadata) {
        return;
    }
    let metadata = foreign_meta(std::mem::take(&mut j.metadata));
    let spec = j.spec.take().map(|s| JobSpec {
        parallelism: s.parallelism,
        suspend: s.suspend,
        template: reduce_template(s.template),
        ..Default::default()
    });
    let status = j.status.take().map(|s| JobStatus {
        ready: s.ready,
        conditions: s.conditions.map(|cs| {
            cs.into_iter()
                .filter(|c| c.type_ == "Complete" || c.type_ == "Failed")
                .map(|c| JobCondition {
                    type_: c.type_,
                    status: c.status,
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    });
    *j = Job {
        metadata,
        spec,
        status,
    };
}

/// CronJobs: the Runtime's own kept whole, others reduced to suspend, the
/// template and the active Jobs (counted).
pub fn cron_job(c: &mut CronJob) {
    strip(c);
    if owned_by_runtime(&c.metadata) {
        return;
    }
    let metadata = foreign_meta(std::mem::take(&mut c.metadata));
    let spec = c.spec.take().map(|s| CronJobSpec {
        schedule: s.schedule,
        suspend: s.suspend,
        job_template: JobTemplateSpec {
            metadata: None,
            spec: s.job_template.spec.map(|js| JobSpec {
                template: reduce_template(js.template),
                ..Default::default()
            }),
        },
        ..Default::default()
    });
    let status = c.status.take().map(|s| CronJobStatus {
        active: s.active,
        ..Default::default()
    });
    *c = CronJob {
        metadata,
        spec,
        status,
    };
}

/// StatefulSets (berth renders none): reduced.
pub fn stateful_set(s: &mut StatefulSet) {
    let metadata = foreign_meta(std::mem::take(&mut s.metadata));
    let spec = s.spec.take().map(|sp| StatefulSetSpec {
        replicas: sp.replicas,
        template: reduce_template(sp.template),
        ..Default::default()
    });
    let status = s.status.take().map(|st| StatefulSetStatus {
        replicas: st.replicas,
        ready_replicas: st.ready_replicas,
        ..Default::default()
    });
    *s = StatefulSet {
        metadata,
        spec,
        status,
    };
}

/// DaemonSets (berth renders none): reduced.
pub fn daemon_set(d: &mut DaemonSet) {
    let metadata = foreign_meta(std::mem::take(&mut d.metadata));
    let spec = d.spec.take().map(|sp| DaemonSetSpec {
        template: reduce_template(sp.template),
        ..Default::default()
    });
    let status = d.status.take().map(|st| DaemonSetStatus {
        desired_number_scheduled: st.desired_number_scheduled,
        number_ready: st.number_ready,
        ..Default::default()
    });
    *d = DaemonSet {
        metadata,
        spec,
        status,
    };
}

/// Nodes: what placement and handler coverage read (`NodeInfo`): labels,
/// taints, cordon, the Ready condition and the runtime handlers. Images,
/// addresses, capacity, annotations and the heartbeat times go.
pub fn node(n: &mut Node) {
    let meta = std::mem::take(&mut n.metadata);
    let metadata = ObjectMeta {
        name: meta.name,
        uid: meta.uid,
        resource_version: meta.resource_version,
        deletion_timestamp: meta.deletion_timestamp,
        labels: meta.labels,
        // Whether kwok simulates it: a canary there proves nothing.
        annotations: meta
            .annotations
            .map(|a| {
                a.into_iter()
                    .filter(|(k, _)| k == berth_shared::attest::SIMULATED_NODE_ANNOTATION)
                    .collect::<std::collections::BTreeMap<_, _>>()
            })
            .filter(|a| !a.is_empty()),
        ..Default::default()
    };
    let spec = n.spec.take().map(|s| NodeSpec {
        unschedulable: s.unschedulable,
        taints: s.taints,
        ..Default::default()
    });
    let status = n.status.take().map(|s| NodeStatus {
        // Ready, and the pressure conditions a canary is skipped for.
        conditions: s.conditions.map(|cs| {
            cs.into_iter()
                .filter(|c| {
                    c.type_ == "Ready"
                        || berth_shared::attest::expect::PRESSURE_CONDITIONS
                            .contains(&c.type_.as_str())
                })
                .map(|c| NodeCondition {
                    type_: c.type_,
                    status: c.status,
                    ..Default::default()
                })
                .collect()
        }),
        runtime_handlers: s.runtime_handlers,
        // The host kernel a runc canary must see (and gVisor's must not).
        node_info: s.node_info.map(|i| NodeSystemInfo {
            kernel_version: i.kernel_version,
            ..Default::default()
        }),
        ..Default::default()
    });
    *n = Node {
        metadata,
        spec,
        status,
    };
}

/// Keeps of a Pod only what the retained-workload analysis reads (bare
/// pods: owner, class, profile annotation, berth's labels, phase, Ready):
/// pods are the most numerous objects of a cluster.
pub fn pod(pod: &mut Pod) {
    let meta = &mut pod.metadata;
    meta.managed_fields = None;
    // berth's identity labels too: `covered_by_grant` reads them.
    meta.labels = berth_labels(meta.labels.take());
    meta.annotations = meta.annotations.take().map(|a| {
        a.into_iter()
            .filter(|(k, _)| k == RUNTIME_PROFILE_ANNOTATION)
            .collect()
    });
    pod.spec = pod.spec.take().map(|s| PodSpec {
        runtime_class_name: s.runtime_class_name,
        ..Default::default()
    });
    pod.status = pod
        .status
        .take()
        .map(|s| k8s_openapi::api::core::v1::PodStatus {
            phase: s.phase,
            conditions: s
                .conditions
                .map(|cs| cs.into_iter().filter(|c| c.type_ == "Ready").collect()),
            ..Default::default()
        });
}

/// Whether a Pod has a controller (counted through it by the analysis, so
/// never read from the Pod cache).
fn controlled(pod: &Pod) -> bool {
    controller_of(&pod.metadata).is_some()
}

/// Only bare pods enter the Pod cache: the analysis counts a controller's
/// pods through their controller, and at scale nearly every pod has one.
/// A pod that gains a controller (adoption) leaves the cache as if it were
/// deleted; one that loses it (orphaned) enters it.
pub fn bare_pods_only(event: watcher::Event<Pod>) -> Option<watcher::Event<Pod>> {
    match event {
        watcher::Event::InitApply(p) if controlled(&p) => None,
        watcher::Event::Apply(p) if controlled(&p) => Some(watcher::Event::Delete(p)),
        other => Some(other),
    }
}

/// The store of a kind the agent does not watch (Pods without
/// `--watch-bare-pods`): empty and ready at once, so that nothing waits for
/// a list that is never made.
pub fn unwatched_store<K>() -> kube::runtime::reflector::Store<K>
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, mut writer) = kube::runtime::reflector::store();
    writer.apply_watcher_event(&watcher::Event::Init);
    writer.apply_watcher_event(&watcher::Event::InitDone);
    reader
}

#[cfg(test)]
mod managed_tests;
#[cfg(test)]
mod node_pod_tests;
/// Keeps of a ControllerRevision only its template's class and profile.
pub fn controller_revision(rev: &mut ControllerRevision) {
    strip(rev);
    rev.metadata.annotations = None;
    if let Some(data) = rev.data.as_mut() {
        let template = data.0.pointer("/spec/template");
        let class = template
            .and_then(|t| t.pointer("/spec/runtimeClassName"))
            .cloned();
        let annotations = template
            .and_then(|t| t.pointer("/metadata/annotations"))
            .cloned();
        let labels = template
            .and_then(|t| t.pointer("/metadata/labels"))
            .cloned();
        data.0 = serde_json::json!({"spec": {"template": {
            "metadata": {"annotations": annotations, "labels": labels},
            "spec": {"runtimeClassName": class, "containers": []},
        }}});
    }
}

#[cfg(test)]
mod tests;
