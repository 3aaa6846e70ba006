//! The console's copy of the cluster: one map per watched kind, filled from
//! watch events (the app task is the reflector's store). Every object in
//! here went through [`ingest::admit`] first: reduced to what the views
//! read ([`compact`]), stripped and sanitized. The bottom layer: it
//! imports nothing else of the console.

pub mod classed;
pub mod compact;
pub mod index;
pub mod ingest;

use std::collections::BTreeMap;

use berth_shared::api::{PendingGrantsFile, Runtime, RuntimeGrant};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod};
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::ResourceExt;

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub type ObjKey = (String, String);

/// The key of an object.
pub fn key_of<K: ResourceExt>(obj: &K) -> ObjKey {
    (obj.namespace().unwrap_or_default(), obj.name_any())
}

macro_rules! kinds {
    ($( $variant:ident => $ty:ty, $field:ident, $label:literal, $namespaced:literal, $links:path, $classed:path; )*) => {
        /// Every kind the console watches.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Kind { $( $variant, )* }

        impl Kind {
            /// Every kind, in a stable order.
            pub const ALL: &'static [Kind] = &[ $( Kind::$variant, )* ];

            /// The Kubernetes kind name.
            pub fn label(self) -> &'static str {
                match self { $( Kind::$variant => $label, )* }
            }

            /// Whether objects of this kind live in a namespace.
            pub fn namespaced(self) -> bool {
                match self { $( Kind::$variant => $namespaced, )* }
            }
        }

        /// One object of any watched kind.
        #[derive(Clone, Debug)]
        pub enum Object { $( $variant(Box<$ty>), )* }

        impl Object {
            /// The object's kind.
            pub fn kind(&self) -> Kind {
                match self { $( Object::$variant(_) => Kind::$variant, )* }
            }

            /// The object's key.
            pub fn key(&self) -> ObjKey {
                match self { $( Object::$variant(o) => key_of(o.as_ref()), )* }
            }

            /// The object stripped and sanitized ([`ingest::prepare`]);
            /// `None` if it no longer deserializes.
            pub fn prepared(self) -> Option<Object> {
                match self { $( Object::$variant(o) => ingest::prepare(*o).map(Object::from), )* }
            }

            /// The object as YAML (already sanitized and stripped).
            pub fn to_yaml(&self) -> String {
                let r = match self { $( Object::$variant(o) => serde_yaml::to_string(o.as_ref()), )* };
                r.unwrap_or_else(|e| format!("# cannot render YAML: {e}\n"))
            }
        }

        $(
            impl From<$ty> for Object {
                fn from(o: $ty) -> Self { Object::$variant(Box::new(o)) }
            }
        )*

        /// The console's copy of the cluster.
        #[derive(Clone, Debug, Default)]
        pub struct Store {
            // Boxed: a map node holds 11 values and is often half full
            // (lists arrive in key order), and a reduced Pod is still ~4 kB
            // of mostly absent optional fields; boxed, the half-empty
            // nodes hold pointers (issue 14: ~70 MB at scale S).
            $( pub $field: BTreeMap<ObjKey, Box<$ty>>, )*
            /// Who points at whom ([`index`]), kept by every write below.
            pub links: index::Links,
            /// Which workloads reference a class ([`classed`]), kept by
            /// every write below.
            pub classed: classed::Classed,
            /// Bumped on every change, so derived rows know when to rebuild.
            pub version: u64,
            /// Bumped on every change of one kind, so that a view is rebuilt
            /// only when one of the kinds it reads changed.
            pub versions: BTreeMap<Kind, u64>,
        }

        impl Store {
            /// Inserts or replaces an object.
            pub fn apply(&mut self, obj: Object) {
                self.touch(obj.kind());
                match obj { $( Object::$variant(o) => {
                    let key = key_of(o.as_ref());
                    let links = $links(o.as_ref());
                    self.classed.set(Kind::$variant, &key, $classed(o.as_ref()));
                    if let Some(old) = self.$field.insert(key.clone(), o) {
                        self.links.remove(Kind::$variant, &key, &$links(old.as_ref()));
                    }
                    self.links.add(Kind::$variant, &key, &links);
                } )* }
            }

            /// Removes an object.
            pub fn delete(&mut self, kind: Kind, key: &ObjKey) {
                self.touch(kind);
                match kind { $( Kind::$variant => {
                    if let Some(old) = self.$field.remove(key) {
                        self.links.remove(kind, key, &$links(old.as_ref()));
                    }
                    self.classed.remove(kind, key);
                } )* }
            }

            /// Replaces every object of a kind (the end of a (re)list).
            pub fn replace(&mut self, kind: Kind, objs: Vec<Object>) {
                self.clear(kind);
                for o in objs {
                    if o.kind() == kind {
                        self.apply(o);
                    }
                }
            }

            /// Forgets every object of a kind.
            pub fn clear(&mut self, kind: Kind) {
                self.touch(kind);
                match kind { $( Kind::$variant => self.$field.clear(), )* }
                self.links.clear(kind);
                self.classed.clear(kind);
            }

            /// Records a change of `kind` (what every write does).
            pub fn touch(&mut self, kind: Kind) {
                self.version += 1;
                *self.versions.entry(kind).or_default() += 1;
            }

            /// A number that changes whenever any of `kinds` changed: the
            /// sum of their versions, each of which only grows.
            pub fn stamp(&self, kinds: &[Kind]) -> u64 {
                kinds.iter().map(|k| self.versions.get(k).copied().unwrap_or(0)).sum()
            }

            /// How many objects of a kind are known.
            pub fn count(&self, kind: Kind) -> usize {
                match kind { $( Kind::$variant => self.$field.len(), )* }
            }

            /// The keys of every object of a kind.
            pub fn keys(&self, kind: Kind) -> Vec<ObjKey> {
                match kind { $( Kind::$variant => self.$field.keys().cloned().collect(), )* }
            }

            /// One object by kind and key, cloned into an [`Object`].
            pub fn get(&self, kind: Kind, key: &ObjKey) -> Option<Object> {
                match kind { $( Kind::$variant => self.$field.get(key).cloned().map(Object::$variant), )* }
            }
        }
    };
}

kinds! {
    Runtime => Runtime, runtimes, "Runtime", true, index::none, classed::never;
    RuntimeGrant => RuntimeGrant, grants, "RuntimeGrant", false, index::none, classed::never;
    RuntimeClass => RuntimeClass, classes, "RuntimeClass", false, index::none, classed::never;
    Node => Node, nodes, "Node", false, index::none, classed::never;
    Pod => Pod, pods, "Pod", true, index::owners, classed::pod;
    Deployment => Deployment, deployments, "Deployment", true, index::owners, classed::deployment;
    ReplicaSet => ReplicaSet, replicasets, "ReplicaSet", true, index::owners, classed::replica_set;
    StatefulSet => StatefulSet, statefulsets, "StatefulSet", true, index::none, classed::stateful_set;
    DaemonSet => DaemonSet, daemonsets, "DaemonSet", true, index::none, classed::daemon_set;
    Job => Job, jobs, "Job", true, index::none, classed::job;
    CronJob => CronJob, cronjobs, "CronJob", true, index::none, classed::cron_job;
    Event => Event, events, "Event", true, index::involved, classed::never;
    Lease => Lease, leases, "Lease", true, index::none, classed::never;
    Namespace => Namespace, namespaces, "Namespace", false, index::none, classed::never;
    PendingGrantsFile => PendingGrantsFile, pending_files, "PendingGrantsFile", false, index::none, classed::never;
}

/// The kinds the workload analysis (Handlers, Retained, the plan) reads:
/// one list for the views' inputs, the screens' watches and the plan's
/// loads.
pub const ANALYSIS_KINDS: &[Kind] = &[
    Kind::RuntimeClass,
    Kind::Node,
    Kind::RuntimeGrant,
    Kind::Pod,
    Kind::Deployment,
    Kind::ReplicaSet,
    Kind::StatefulSet,
    Kind::DaemonSet,
    Kind::Job,
    Kind::CronJob,
];

/// The workloads among [`ANALYSIS_KINDS`] (its tail).
pub const WORKLOAD_KINDS: &[Kind] = ANALYSIS_KINDS.split_at(3).1;
