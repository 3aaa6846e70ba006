//! What the grants publisher reads of each kind, as a fingerprint string
//! (see [`crate::signals::publisher_triggers::Changes`]): a change of it is a change that may
//! change a grant's status, the published set, or the publisher's gauges.

use berth_shared::analysis::{NodeInfo, Workload};
use berth_shared::api::Runtime;
use berth_shared::api::condition_types::BLOCKED;
use berth_shared::decide::{ENVIRONMENT_LABEL, ObservedClass, PROJECT_LABEL};
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::core::PartialObjectMeta;

use super::reduce::{KeptDeployment, KeptReplicaSet};

/// A workload with a RuntimeClass, as the retained analysis sees it, with
/// its counts reduced to "any": a rollout's ready counts move all the
/// time, and only whether anything runs changes what is retained.
fn workload(mut w: Workload) -> Option<String> {
    w.runtime_class.as_ref()?;
    // A canary (crate::canary) is not a workload the analysis counts.
    if w.is_canary() {
        return None;
    }
    w.replicas = i32::from(w.replicas > 0);
    w.ready = i32::from(w.ready > 0);
    Some(format!("{w:?}"))
}

/// A Deployment.
pub fn deployment(d: &KeptDeployment) -> Option<String> {
    workload(Workload::from_deployment(&d.whole()))
}

/// A ReplicaSet (a rollback revision is told by its replicas here; the
/// pass itself reads the Deployment's revision).
pub fn replica_set(r: &KeptReplicaSet) -> Option<String> {
    workload(Workload::from_replica_set(&r.whole(), None))
}

/// A StatefulSet.
pub fn stateful_set(s: &StatefulSet) -> Option<String> {
    workload(Workload::from_stateful_set(s))
}

/// A DaemonSet.
pub fn daemon_set(d: &DaemonSet) -> Option<String> {
    workload(Workload::from_daemon_set(d))
}

/// A Job.
pub fn job(j: &Job) -> Option<String> {
    workload(Workload::from_job(j))
}

/// A CronJob.
pub fn cron_job(c: &CronJob) -> Option<String> {
    workload(Workload::from_cron_job(c))
}

/// A ControllerRevision (a rollback revision of its class).
pub fn controller_revision(r: &ControllerRevision) -> Option<String> {
    workload(Workload::from_controller_revision(r))
}

/// A bare Pod.
pub fn pod(p: &Pod) -> Option<String> {
    workload(Workload::from_pod(p))
}

/// A RuntimeClass, as a grant's status reads it.
pub fn runtime_class(c: &RuntimeClass) -> Option<String> {
    Some(format!("{:?}", ObservedClass::from_runtime_class(c)))
}

/// A Node, as coverage reads it.
pub fn node(n: &Node) -> Option<String> {
    Some(format!("{:?}", NodeInfo::from_node(n)))
}

/// A Namespace's identity labels.
pub fn namespace(n: &PartialObjectMeta<Namespace>) -> Option<String> {
    let labels = n.metadata.labels.as_ref();
    let get = |k: &str| labels.and_then(|l| l.get(k)).cloned();
    Some(format!(
        "{:?}",
        (get(PROJECT_LABEL), get(ENVIRONMENT_LABEL))
    ))
}

/// A Runtime: its profile and identity (which grant lists it) and its
/// state and hold (the publisher's gauges).
pub fn runtime(r: &Runtime) -> Option<String> {
    let status = r.status.as_ref();
    let state = status
        .and_then(|s| s.profile.as_ref())
        .map(|p| p.state.as_str().to_string());
    let blocked = status.is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == BLOCKED && c.status == "True")
    });
    Some(format!(
        "{:?}",
        (
            &r.spec.runtime_profile,
            &r.spec.application,
            &r.spec.service,
            state,
            blocked
        )
    ))
}
