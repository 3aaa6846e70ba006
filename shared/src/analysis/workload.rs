//! Adapters from the Kubernetes workload kinds to one plain [`Workload`].

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::api::meta::is_managed;
pub use crate::api::meta::{MANAGED_BY_LABEL, REVISION_ANNOTATION};
use crate::render::RUNTIME_PROFILE_ANNOTATION;

/// The kinds of workload the analysis understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkloadKind {
    /// apps/v1 Deployment.
    Deployment,
    /// apps/v1 ReplicaSet (a Deployment's revision, or a bare one).
    ReplicaSet,
    /// apps/v1 StatefulSet.
    StatefulSet,
    /// apps/v1 DaemonSet.
    DaemonSet,
    /// batch/v1 Job.
    Job,
    /// batch/v1 CronJob.
    CronJob,
    /// core/v1 Pod.
    Pod,
    /// apps/v1 ControllerRevision (a StatefulSet's or DaemonSet's
    /// revision, kept for rollback).
    ControllerRevision,
}

impl WorkloadKind {
    /// The Kubernetes kind string.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::ReplicaSet => "ReplicaSet",
            WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::DaemonSet => "DaemonSet",
            WorkloadKind::Job => "Job",
            WorkloadKind::CronJob => "CronJob",
            WorkloadKind::Pod => "Pod",
            WorkloadKind::ControllerRevision => "ControllerRevision",
        }
    }
}

impl std::fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A workload's labels, shared: a [`Workload`] is cloned per report and
/// rebuilt per view refresh, and its labels were most of that work (the
/// console's event-to-frame profile was mostly label-map clones). Behind
/// an `Arc`, a clone is a reference count; a caller that keeps workloads'
/// labels as `Labels` already (the console's store) builds a `Workload`
/// without copying them at all. Change one with [`Arc::make_mut`].
pub type Labels = Arc<BTreeMap<String, String>>;

/// The controller owner of a workload (`ownerReferences[controller=true]`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner {
    /// Owner kind, e.g. `Deployment`.
    pub kind: String,
    /// Owner name (same namespace).
    pub name: String,
}

/// One workload, reduced to what the grant/handler analysis needs.
///
/// Built with the `Workload::from_*` adapters (or [`Workload::from_replica_set`]
/// with the owning Deployment's revision, to tell rollback revisions apart).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Workload {
    /// Which kind.
    pub kind: WorkloadKind,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `runtimeClassName` of the pod template (of the pod for a Pod); `None`
    /// when unset or empty (the cluster's default runtime).
    pub runtime_class: Option<String>,
    /// Desired replicas: `spec.replicas` (Deployment, ReplicaSet,
    /// StatefulSet; default 1), `desiredNumberScheduled` (DaemonSet),
    /// `parallelism` while unfinished and not suspended (Job), active Jobs
    /// (CronJob), 1 while not terminated (Pod).
    pub replicas: i32,
    /// Ready replicas: `readyReplicas` / `numberReady` / Job `ready` /
    /// active Jobs (CronJob) / the Pod's Ready condition.
    pub ready: i32,
    /// The object (or its pod template) carries
    /// `app.kubernetes.io/managed-by: berth`.
    pub managed_by_berth: bool,
    /// The controller owner, if any.
    pub owner: Option<Owner>,
    /// A ReplicaSet that is not the current revision of its Deployment (or,
    /// when the Deployment is not known, one owned by a Deployment and
    /// scaled to zero): it keeps the class for a `kubectl rollout undo`.
    pub is_rollback_revision: bool,
    /// `spec.suspend` of a Job or CronJob.
    pub suspended: bool,
    /// The pod template's `berth.dev/runtime-profile` annotation (the alias
    /// it was granted under), when set.
    pub runtime_profile: Option<String>,
    /// The pod template's labels overlaid with the object's own (berth's
    /// identity labels among them).
    pub labels: Labels,
}

impl Workload {
    /// `Kind/namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}/{}", self.kind, self.namespace, self.name)
    }

    /// One of the agent's canary Jobs (or its pod): a probe of a handler
    /// (`crate::attest`), not a workload that needs the class. Only a Job
    /// or a Job's pod, labelled by the agent: the workload RuntimeClass
    /// policy lets no one else create a Job on a granted class.
    pub fn is_canary(&self) -> bool {
        let job_or_its_pod = self.kind == WorkloadKind::Job
            || (self.kind == WorkloadKind::Pod
                && self.owner.as_ref().is_some_and(|o| o.kind == "Job"));
        job_or_its_pod
            && self
                .labels
                .get(crate::api::meta::CANARY_LABEL)
                .map(String::as_str)
                == Some("true")
            && self.labels.get(MANAGED_BY_LABEL).map(String::as_str)
                == Some(crate::api::meta::MANAGED_BY_AGENT)
    }

    /// A Pod without a controller owner.
    pub fn is_bare_pod(&self) -> bool {
        self.kind == WorkloadKind::Pod && self.owner.is_none()
    }

    /// berth-managed (berth's labels) with no controller: every object
    /// berth makes for a Runtime has one (the Runtime, a Deployment, a
    /// ReplicaSet, a Job or CronJob), so this one was orphaned.
    pub fn is_orphan(&self) -> bool {
        self.managed_by_berth && self.owner.is_none()
    }

    /// The value of `berth.dev/runtime` on it or its pod template: the
    /// Runtime it was made for (`render::label_value` of its name).
    pub fn runtime_label(&self) -> Option<&str> {
        self.labels
            .get(crate::render::labels::RUNTIME_LABEL)
            .map(String::as_str)
    }

    /// Whether anything is running or wanted right now (`replicas > 0` or
    /// `ready > 0`).
    pub fn is_active(&self) -> bool {
        self.replicas > 0 || self.ready > 0
    }

    /// From a Deployment.
    pub fn from_deployment(d: &Deployment) -> Self {
        let spec = d.spec.as_ref();
        let status = d.status.as_ref();
        base(
            WorkloadKind::Deployment,
            &d.metadata,
            spec.map(|s| &s.template),
            spec.and_then(|s| s.replicas).unwrap_or(1),
            status.and_then(|s| s.ready_replicas).unwrap_or(0),
        )
    }

    /// From a ReplicaSet. `deployment_revision` is the
    /// `deployment.kubernetes.io/revision` of its owning Deployment when the
    /// caller knows it: a ReplicaSet with another revision is a rollback
    /// revision. Without it, a Deployment-owned ReplicaSet scaled to zero is
    /// taken for one.
    pub fn from_replica_set(rs: &ReplicaSet, deployment_revision: Option<&str>) -> Self {
        let spec = rs.spec.as_ref();
        let replicas = spec.and_then(|s| s.replicas).unwrap_or(1);
        let mut w = base(
            WorkloadKind::ReplicaSet,
            &rs.metadata,
            spec.and_then(|s| s.template.as_ref()),
            replicas,
            rs.status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0),
        );
        let owned_by_deployment = w.owner.as_ref().is_some_and(|o| o.kind == "Deployment");
        let own_revision = rs
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION_ANNOTATION));
        w.is_rollback_revision = owned_by_deployment
            && match (deployment_revision, own_revision) {
                (Some(current), Some(own)) => current != own,
                _ => replicas == 0,
            };
        w
    }

    /// From a StatefulSet.
    pub fn from_stateful_set(s: &StatefulSet) -> Self {
        let spec = s.spec.as_ref();
        base(
            WorkloadKind::StatefulSet,
            &s.metadata,
            spec.map(|s| &s.template),
            spec.and_then(|s| s.replicas).unwrap_or(1),
            s.status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0),
        )
    }

    /// From a DaemonSet.
    pub fn from_daemon_set(d: &DaemonSet) -> Self {
        let status = d.status.as_ref();
        base(
            WorkloadKind::DaemonSet,
            &d.metadata,
            d.spec.as_ref().map(|s| &s.template),
            status.map(|s| s.desired_number_scheduled).unwrap_or(0),
            status.map(|s| s.number_ready).unwrap_or(0),
        )
    }

    /// From a Job. A finished (Complete/Failed) or suspended Job wants no pods.
    pub fn from_job(j: &Job) -> Self {
        let spec = j.spec.as_ref();
        let status = j.status.as_ref();
        let finished = status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
            });
        let suspended = spec.and_then(|s| s.suspend).unwrap_or(false);
        let replicas = if finished || suspended {
            0
        } else {
            spec.and_then(|s| s.parallelism).unwrap_or(1)
        };
        let mut w = base(
            WorkloadKind::Job,
            &j.metadata,
            spec.map(|s| &s.template),
            replicas,
            status.and_then(|s| s.ready).unwrap_or(0),
        );
        w.suspended = suspended;
        w
    }

    /// From a CronJob: `replicas` and `ready` are the Jobs it has running.
    pub fn from_cron_job(c: &CronJob) -> Self {
        let spec = c.spec.as_ref();
        let active = c
            .status
            .as_ref()
            .and_then(|s| s.active.as_ref())
            .map_or(0, |a| i32::try_from(a.len()).unwrap_or(i32::MAX));
        let template = spec
            .and_then(|s| s.job_template.spec.as_ref())
            .map(|s| &s.template);
        let mut w = base(WorkloadKind::CronJob, &c.metadata, template, active, active);
        w.suspended = spec.and_then(|s| s.suspend).unwrap_or(false);
        w
    }

    /// From a Pod: wants one replica until it terminated (Succeeded/Failed).
    pub fn from_pod(p: &Pod) -> Self {
        let spec = p.spec.as_ref();
        Self::from_pod_parts(
            &p.metadata,
            spec.and_then(|s| s.runtime_class_name.as_deref()),
            p.status.as_ref().and_then(|s| s.phase.as_deref()),
            crate::api::meta::pod_ready(p),
        )
    }

    /// From what [`Workload::from_pod`] reads of a Pod: its metadata,
    /// `spec.runtimeClassName`, `status.phase` and whether its `Ready`
    /// condition is `True`. For callers that keep pods reduced to those
    /// fields (the console) and would otherwise rebuild a whole `Pod` per
    /// conversion.
    pub fn from_pod_parts(
        meta: &ObjectMeta,
        runtime_class: Option<&str>,
        phase: Option<&str>,
        ready: bool,
    ) -> Self {
        let terminated = phase.is_some_and(|ph| ph == "Succeeded" || ph == "Failed");
        let mut w = base(
            WorkloadKind::Pod,
            meta,
            None,
            i32::from(!terminated),
            i32::from(ready),
        );
        w.runtime_class = runtime_class.filter(|c| !c.is_empty()).map(str::to_string);
        w.managed_by_berth = is_managed(meta);
        w.runtime_profile = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(RUNTIME_PROFILE_ANNOTATION).cloned());
        w
    }
}

impl Workload {
    /// From a ControllerRevision: the pod template it keeps for a rollback
    /// of its StatefulSet or DaemonSet (`data.spec.template`). Runs
    /// nothing itself (0 replicas) but needs the template's handler as
    /// long as it may be rolled back to.
    pub fn from_controller_revision(r: &ControllerRevision) -> Self {
        let template: Option<PodTemplateSpec> = r
            .data
            .as_ref()
            .and_then(|d| d.0.pointer("/spec/template"))
            .and_then(|t| serde_json::from_value(t.clone()).ok());
        let mut w = base(
            WorkloadKind::ControllerRevision,
            &r.metadata,
            template.as_ref(),
            0,
            0,
        );
        w.is_rollback_revision = true;
        w
    }
}

fn base(
    kind: WorkloadKind,
    meta: &ObjectMeta,
    template: Option<&PodTemplateSpec>,
    replicas: i32,
    ready: i32,
) -> Workload {
    let template_meta = template.and_then(|t| t.metadata.as_ref());
    let owner = meta.owner_references.as_ref().and_then(|refs| {
        refs.iter()
            .find(|r| r.controller == Some(true))
            .map(|r| Owner {
                kind: r.kind.clone(),
                name: r.name.clone(),
            })
    });
    Workload {
        kind,
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        runtime_class: template
            .and_then(|t| t.spec.as_ref())
            .and_then(|s| s.runtime_class_name.clone())
            .filter(|c| !c.is_empty()),
        replicas: replicas.max(0),
        ready: ready.max(0),
        managed_by_berth: is_managed(meta) || template_meta.is_some_and(is_managed),
        owner,
        is_rollback_revision: false,
        suspended: false,
        runtime_profile: template_meta
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get(RUNTIME_PROFILE_ANNOTATION).cloned()),
        labels: {
            // The template's labels, overlaid with the object's own: Jobs
            // made by a CronJob and ReplicaSets carry berth's identity labels
            // only through their templates.
            let mut labels = template_meta
                .and_then(|m| m.labels.clone())
                .unwrap_or_default();
            labels.extend(meta.labels.clone().unwrap_or_default());
            Arc::new(labels)
        },
    }
}

/// Every workload of the given lists as [`Workload`]s, ReplicaSets judged
/// against their owning Deployment's current revision when it is among
/// `deployments`. Pass empty slices for kinds you do not read. The lists
/// hold references: callers pass their caches as they are, without a
/// deep copy of every workload (thousands of them at scale).
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkloadSources<'a> {
    /// Deployments.
    pub deployments: &'a [&'a Deployment],
    /// ReplicaSets.
    pub replica_sets: &'a [&'a ReplicaSet],
    /// StatefulSets.
    pub stateful_sets: &'a [&'a StatefulSet],
    /// DaemonSets.
    pub daemon_sets: &'a [&'a DaemonSet],
    /// Jobs.
    pub jobs: &'a [&'a Job],
    /// CronJobs.
    pub cron_jobs: &'a [&'a CronJob],
    /// Pods.
    pub pods: &'a [&'a Pod],
    /// ControllerRevisions (StatefulSet/DaemonSet rollback revisions).
    pub controller_revisions: &'a [&'a ControllerRevision],
}

impl WorkloadSources<'_> {
    /// Converts everything, in kind order then the input order.
    pub fn collect(&self) -> Vec<Workload> {
        let revisions = DeploymentRevisions::of(self.deployments.iter().map(|d| &d.metadata));
        let mut out = Vec::new();
        out.extend(
            self.deployments
                .iter()
                .map(|w| Workload::from_deployment(w)),
        );
        out.extend(
            self.replica_sets
                .iter()
                .map(|rs| Workload::from_replica_set(rs, revisions.of_owner(&rs.metadata))),
        );
        out.extend(
            self.stateful_sets
                .iter()
                .map(|w| Workload::from_stateful_set(w)),
        );
        out.extend(
            self.daemon_sets
                .iter()
                .map(|w| Workload::from_daemon_set(w)),
        );
        out.extend(self.jobs.iter().map(|w| Workload::from_job(w)));
        out.extend(self.cron_jobs.iter().map(|w| Workload::from_cron_job(w)));
        out.extend(self.pods.iter().map(|w| Workload::from_pod(w)));
        out.extend(
            self.controller_revisions
                .iter()
                .map(|w| Workload::from_controller_revision(w)),
        );
        out
    }
}

/// The current revision (`deployment.kubernetes.io/revision`) of each
/// Deployment, by namespace and name: what
/// [`Workload::from_replica_set`] judges a ReplicaSet against. For callers
/// that hold their ReplicaSets in another form and convert them one at a
/// time instead of passing them to [`WorkloadSources`].
#[derive(Clone, Debug, Default)]
pub struct DeploymentRevisions(BTreeMap<(String, String), String>);

impl DeploymentRevisions {
    /// The revisions of the Deployments with metadata `deployments`
    /// (those without one are left out).
    pub fn of<'a>(deployments: impl IntoIterator<Item = &'a ObjectMeta>) -> Self {
        Self(
            deployments
                .into_iter()
                .filter_map(|m| {
                    let rev = m.annotations.as_ref()?.get(REVISION_ANNOTATION)?;
                    Some((
                        (
                            m.namespace.clone().unwrap_or_default(),
                            m.name.clone().unwrap_or_default(),
                        ),
                        rev.clone(),
                    ))
                })
                .collect(),
        )
    }

    /// The revision of the Deployment that controls the object with
    /// `meta` (a ReplicaSet), when it is known.
    pub fn of_owner(&self, meta: &ObjectMeta) -> Option<&str> {
        let owner = meta
            .owner_references
            .as_ref()?
            .iter()
            .find(|r| r.controller == Some(true) && r.kind == "Deployment")?;
        self.0
            .get(&(
                meta.namespace.clone().unwrap_or_default(),
                owner.name.clone(),
            ))
            .map(String::as_str)
    }
}
