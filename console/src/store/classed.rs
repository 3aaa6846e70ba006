//! Which workloads (and Pods) reference a RuntimeClass, kept next to the
//! store's maps. The Handlers and Retained rows read only those: a workload
//! on the cluster's default runtime is in no class's usage and never
//! retained. At scale S that is ~800 of ~24,000 objects, so the views'
//! rebuild converts those instead of every workload (issue 14: the
//! conversion of every Pod was most of a rebuild).
//!
//! The [`super::Store`] updates it on every write (apply, delete, clear),
//! so it always agrees with a scan of the maps; the tests check that, and
//! that it agrees with the shared analysis's own reading of the class
//! ([`berth_shared::analysis::Workload::runtime_class`]).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::{DaemonSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};

use super::slim::SlimPod;
use super::slim_apps::{SlimDeployment, SlimReplicaSet};
use super::{Kind, ObjKey};

/// Keys of the objects that reference a class, per kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Classed {
    by_kind: BTreeMap<Kind, BTreeSet<ObjKey>>,
}

impl Classed {
    /// Records whether the object `key` of `kind` references a class.
    pub fn set(&mut self, kind: Kind, key: &ObjKey, classed: bool) {
        if classed {
            self.by_kind.entry(kind).or_default().insert(key.clone());
        } else {
            self.remove(kind, key);
        }
    }

    /// Forgets one object.
    pub fn remove(&mut self, kind: Kind, key: &ObjKey) {
        if let Some(set) = self.by_kind.get_mut(&kind) {
            set.remove(key);
        }
    }

    /// Forgets every object of a kind.
    pub fn clear(&mut self, kind: Kind) {
        self.by_kind.remove(&kind);
    }

    /// The keys of the objects of `kind` that reference a class, in key
    /// order (the order of the store's maps).
    pub fn keys(&self, kind: Kind) -> impl Iterator<Item = &ObjKey> {
        self.by_kind.get(&kind).into_iter().flatten()
    }
}

/// Whether a `runtimeClassName` names a class (an empty name is the
/// default runtime, as the analysis reads it).
fn names_class(class: Option<&str>) -> bool {
    class.is_some_and(|c| !c.is_empty())
}

fn template(t: Option<&PodTemplateSpec>) -> bool {
    let spec: Option<&PodSpec> = t.and_then(|t| t.spec.as_ref());
    names_class(spec.and_then(|s| s.runtime_class_name.as_deref()))
}

pub fn pod(p: &SlimPod) -> bool {
    names_class(p.runtime_class_name())
}

pub fn deployment(d: &SlimDeployment) -> bool {
    names_class(
        d.spec
            .as_ref()
            .and_then(|s| s.template.runtime_class_name.as_deref()),
    )
}

pub fn replica_set(r: &SlimReplicaSet) -> bool {
    names_class(r.template().and_then(|t| t.runtime_class_name.as_deref()))
}

pub fn stateful_set(s: &StatefulSet) -> bool {
    template(s.spec.as_ref().map(|s| &s.template))
}

pub fn daemon_set(d: &DaemonSet) -> bool {
    template(d.spec.as_ref().map(|s| &s.template))
}

pub fn job(j: &Job) -> bool {
    template(j.spec.as_ref().map(|s| &s.template))
}

pub fn cron_job(c: &CronJob) -> bool {
    template(
        c.spec
            .as_ref()
            .and_then(|s| s.job_template.spec.as_ref())
            .map(|s| &s.template),
    )
}

/// For kinds that are not workloads.
pub fn never<K>(_: &K) -> bool {
    false
}
