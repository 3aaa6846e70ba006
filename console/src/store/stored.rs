//! The console's copy of the cluster ([`Store`]) and one object as it
//! keeps it ([`Stored`]), built from the table ([`super::table`]). The top
//! of the store: it reads the layers below (what is kept,
//! [`super::kept`]; who points at whom, [`index`]; who references a
//! class, [`classed`]) and none of them reads it.

use std::collections::BTreeMap;

use berth_shared::api::{PendingGrantsFile, Runtime, RuntimeGrant};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod};
use k8s_openapi::api::node::v1::RuntimeClass;

use super::kept::Kept;
use super::key::ObjKey;
use super::kind::Kind;
use super::object::Object;
use super::slim::SlimPod;
use super::slim_apps::{SlimDeployment, SlimReplicaSet};
use super::{classed, index};

macro_rules! stored {
    ($( $variant:ident => $ty:ty [read $wire:ty] as $kept:ty, $field:ident, $label:literal, $namespaced:literal, $links:path, $classed:path; )*) => {
        /// One object of any watched kind as the store keeps it ([`kept`](super::kept)):
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
            /// [`ingest::admit`](super::ingest::admit).
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
            /// [`ingest::admit`](super::ingest::admit): what is kept is built from it as it is.
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
            /// rebuilt from what is kept, see [`Kept::object`]).
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

super::table::kinds! { stored }
