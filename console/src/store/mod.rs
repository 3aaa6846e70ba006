//! The console's copy of the cluster: one map per watched kind, filled from
//! watch events (the app task is the reflector's store). Every object in
//! here went through [`ingest::admit`] first: reduced to what the views
//! read ([`compact`]), stripped and sanitized; Pods, Deployments and
//! ReplicaSets are then kept slimmer still ([`slim`], [`slim_apps`], see
//! [`kept`]), their label maps shared ([`intern`]). The bottom layer: it imports nothing
//! else of the console.

pub mod classed;
pub mod cluster_id;
pub mod compact;
pub mod index;
pub mod ingest;
pub mod intern;
pub mod kept;
pub mod meta;
pub mod slim;
pub mod slim_apps;
pub mod visit;
pub mod wire;

use std::collections::BTreeMap;

use berth_shared::api::{PendingGrantsFile, Runtime, RuntimeGrant};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod};
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::ResourceExt;

pub use cluster_id::ClusterId;
use kept::Kept;
use slim::SlimPod;
use slim_apps::{SlimDeployment, SlimReplicaSet};
use wire::WirePod;

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub type ObjKey = (String, String);

/// The key of an object.
pub fn key_of<K: ResourceExt>(obj: &K) -> ObjKey {
    (obj.namespace().unwrap_or_default(), obj.name_any())
}

macro_rules! kinds {
    ($( $variant:ident => $ty:ty [read $wire:ty] as $kept:ty, $field:ident, $label:literal, $namespaced:literal, $links:path, $classed:path; )*) => {
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

            /// Runs `f` with the object type of this kind.
            pub fn visit<F: visit::KindFn>(self, f: F) -> F::Out {
                match self { $( Kind::$variant => f.call::<$ty>(), )* }
            }
        }

        visit::watched!($( $ty => $wire ),*);

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

            /// The object's metadata.
            pub fn meta(&self) -> &kube::api::ObjectMeta {
                match self { $( Object::$variant(o) => kube::Resource::meta(o.as_ref()), )* }
            }

            /// The object stripped and sanitized ([`ingest::prepare`]);
            /// `None` if it no longer deserializes.
            pub fn prepared(self) -> Option<Object> {
                match self { $( Object::$variant(o) => ingest::prepare(*o).map(Object::from), )* }
            }

            /// The object as YAML (already sanitized and stripped).
            pub fn to_yaml(&self) -> String {
                let r = match self { $( Object::$variant(o) => yaml_serde::to_string(o.as_ref()), )* };
                r.unwrap_or_else(|e| format!("# cannot render YAML: {e}\n"))
            }
        }

        $(
            impl From<$ty> for Object {
                fn from(o: $ty) -> Self { Object::$variant(Box::new(o)) }
            }
        )*

        /// One object of any watched kind as the store keeps it ([`kept`]):
        /// what a (re)list collects until it completes, so that a list of
        /// 20,000 Pods is not held as 20,000 whole `Pod` structs meanwhile.
        #[derive(Clone, Debug)]
        pub enum Stored { $( $variant(Box<$kept>), )* }

        impl Stored {
            /// The object's kind.
            pub fn kind(&self) -> Kind {
                match self { $( Stored::$variant(_) => Kind::$variant, )* }
            }

            /// The object's key.
            pub fn key(&self) -> ObjKey {
                match self { $( Stored::$variant(o) => Kept::<$ty>::key(o.as_ref()), )* }
            }
        }

        impl From<Object> for Stored {
            /// The kept form of an object that went through
            /// [`ingest::admit`].
            fn from(obj: Object) -> Self {
                match obj { $( Object::$variant(o) => Stored::$variant(<$kept as Kept<$ty>>::keep(o)), )* }
            }
        }

        /// The console's copy of the cluster.
        #[derive(Clone, Debug, Default)]
        pub struct Store {
            // Boxed: a map node holds 11 values and is often half full
            // (lists arrive in key order), and a reduced workload is still
            // kilobytes of mostly absent optional fields; boxed, the
            // half-empty nodes hold pointers (issue 14: ~70 MB at scale S).
            $( pub $field: BTreeMap<ObjKey, Box<$kept>>, )*
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
            /// Inserts or replaces an object. It must have come through
            /// [`ingest::admit`]: what is kept is built from it as it is.
            pub fn apply(&mut self, obj: impl Into<Stored>) {
                let obj: Stored = obj.into();
                self.touch(obj.kind());
                match obj { $( Stored::$variant(o) => {
                    let key = Kept::<$ty>::key(o.as_ref());
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
            pub fn replace<O: Into<Stored>>(&mut self, kind: Kind, objs: Vec<O>) {
                self.clear(kind);
                for o in objs {
                    let o: Stored = o.into();
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

            /// One object by kind and key, as an [`Object`] (a copy; a Pod
            /// rebuilt from what is kept, see [`kept::Kept::object`]).
            pub fn get(&self, kind: Kind, key: &ObjKey) -> Option<Object> {
                match kind { $( Kind::$variant => self.$field.get(key).map(|o| {
                    Object::$variant(Box::new(Kept::<$ty>::object(o.as_ref())))
                }), )* }
            }

            /// One object by kind and key as it is kept (a copy).
            pub fn get_stored(&self, kind: Kind, key: &ObjKey) -> Option<Stored> {
                match kind { $( Kind::$variant => self.$field.get(key).cloned().map(Stored::$variant), )* }
            }
        }
    };
}

// Per kind: the `Object` variant => the object's type [read as what a LIST
// page or watch event is parsed into ([`wire`])] as the store keeps it
// ([`kept`]), the map's field, the kind's name, whether it is
// namespaced, its links ([`index`]) and whether it references a class
// ([`classed`]).
kinds! {
    Runtime => Runtime [read Runtime] as Runtime, runtimes, "Runtime", true, index::none, classed::never;
    RuntimeGrant => RuntimeGrant [read RuntimeGrant] as RuntimeGrant, grants, "RuntimeGrant", false, index::none, classed::never;
    RuntimeClass => RuntimeClass [read RuntimeClass] as RuntimeClass, classes, "RuntimeClass", false, index::none, classed::never;
    Node => Node [read Node] as Node, nodes, "Node", false, index::none, classed::never;
    Pod => Pod [read WirePod] as SlimPod, pods, "Pod", true, index::owners, classed::pod;
    Deployment => Deployment [read Deployment] as SlimDeployment, deployments, "Deployment", true, index::owners, classed::deployment;
    ReplicaSet => ReplicaSet [read ReplicaSet] as SlimReplicaSet, replicasets, "ReplicaSet", true, index::owners, classed::replica_set;
    StatefulSet => StatefulSet [read StatefulSet] as StatefulSet, statefulsets, "StatefulSet", true, index::none, classed::stateful_set;
    DaemonSet => DaemonSet [read DaemonSet] as DaemonSet, daemonsets, "DaemonSet", true, index::none, classed::daemon_set;
    Job => Job [read Job] as Job, jobs, "Job", true, index::none, classed::job;
    CronJob => CronJob [read CronJob] as CronJob, cronjobs, "CronJob", true, index::none, classed::cron_job;
    Event => Event [read Event] as Event, events, "Event", true, index::involved, classed::never;
    Lease => Lease [read Lease] as Lease, leases, "Lease", true, index::none, classed::never;
    Namespace => Namespace [read Namespace] as Namespace, namespaces, "Namespace", false, index::none, classed::never;
    PendingGrantsFile => PendingGrantsFile [read PendingGrantsFile] as PendingGrantsFile, pending_files, "PendingGrantsFile", false, index::none, classed::never;
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
