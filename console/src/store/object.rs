//! One object of any watched kind ([`Object`]), built from the table
//! ([`super::table`]). Its own file so that compaction, the way in
//! ([`super::ingest`]) and the generic steps ([`super::visit`]) can take an
//! object of any kind without the store that keeps them.

use berth_shared::api::{PendingGrantsFile, Runtime, RuntimeGrant};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod};
use k8s_openapi::api::node::v1::RuntimeClass;

use super::key::{ObjKey, key_of};
use super::kind::Kind;

macro_rules! object_enum {
    ($( $variant:ident => $ty:ty [read $wire:ty] as $kept:ty, $field:ident, $label:literal, $namespaced:literal, $links:path, $classed:path; )*) => {
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

    };
}

super::table::kinds! { object_enum }
