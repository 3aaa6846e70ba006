//! Code generic over a kind's object type. The one table from [`Kind`] to
//! its Rust type is `kinds!` ([`super::table`]); watching, listing
//! and fetching each write their step once as a [`KindFn`] and run it
//! with [`Kind::visit`], instead of matching on the kinds themselves.

use std::fmt::Debug;

use berth_shared::api::{PendingGrantsFile, Runtime, RuntimeGrant};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::kind::Kind;
use super::object::Object;
use super::wire::WirePod;

/// A step written once for every kind: [`KindFn::call`] runs with `K` the
/// object type of the kind it was given to ([`Kind::visit`]).
pub trait KindFn {
    type Out;
    fn call<K: Watched>(self) -> Self::Out;
}

/// What every watched object type is: a typed Kubernetes resource the
/// store holds as an [`Object`].
pub trait Watched:
    Resource<DynamicType = ()>
    + ResourceExt
    + Clone
    + DeserializeOwned
    + Serialize
    + Debug
    + Send
    + Sync
    + Into<Object>
    + 'static
{
    /// What a LIST page or a watch event is parsed into: the type itself,
    /// or for Pods only the fields the store keeps ([`super::wire`]).
    type Wire: Resource<DynamicType = (), Scope = <Self as Resource>::Scope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + Into<Self>
        + 'static;

    /// The API of this type in `namespace` (all namespaces if `None`);
    /// cluster-scoped types have one API and ignore the namespace.
    fn api(client: Client, namespace: Option<&str>) -> Api<Self>;

    /// The same API, read as [`Watched::Wire`] (lists and watches; a GET
    /// of one whole object uses [`Watched::api`]).
    fn wire_api(client: Client, namespace: Option<&str>) -> Api<Self::Wire>;
}

/// Builds an API by the scope of its type (kube's `Api::namespaced` only
/// exists for namespaced types).
pub trait ScopeApi {
    fn api<K: Resource<Scope = Self, DynamicType = ()>>(
        client: Client,
        namespace: Option<&str>,
    ) -> Api<K>;
}

impl ScopeApi for NamespaceResourceScope {
    fn api<K: Resource<Scope = Self, DynamicType = ()>>(
        client: Client,
        namespace: Option<&str>,
    ) -> Api<K> {
        match namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        }
    }
}

impl ScopeApi for ClusterResourceScope {
    fn api<K: Resource<Scope = Self, DynamicType = ()>>(client: Client, _: Option<&str>) -> Api<K> {
        Api::all(client)
    }
}

macro_rules! watched {
    ($($ty:ty => $wire:ty),* $(,)?) => {
        $(
            impl $crate::store::visit::Watched for $ty {
                type Wire = $wire;
                fn api(client: kube::Client, namespace: Option<&str>) -> kube::Api<Self> {
                    <<Self as kube::Resource>::Scope as $crate::store::visit::ScopeApi>::api(
                        client, namespace,
                    )
                }
                fn wire_api(
                    client: kube::Client,
                    namespace: Option<&str>,
                ) -> kube::Api<$wire> {
                    <<Self as kube::Resource>::Scope as $crate::store::visit::ScopeApi>::api(
                        client, namespace,
                    )
                }
            }
        )*
    };
}

// [`Kind::visit`] and every type's [`Watched`], from the table
// ([`super::table`]).
macro_rules! kind_visit {
    ($( $variant:ident => $ty:ty [read $wire:ty] as $kept:ty, $field:ident, $label:literal, $namespaced:literal, $links:path, $classed:path; )*) => {
        impl Kind {
            /// Runs `f` with the object type of this kind.
            pub fn visit<F: KindFn>(self, f: F) -> F::Out {
                match self { $( Kind::$variant => f.call::<$ty>(), )* }
            }
        }

        watched!($( $ty => $wire ),*);
    };
}

super::table::kinds! { kind_visit }

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Kind;

    /// Names each kind's type as Kubernetes does, through `visit`.
    struct KindName;
    impl KindFn for KindName {
        type Out = String;
        fn call<K: Watched>(self) -> String {
            K::kind(&()).into_owned()
        }
    }

    #[test]
    fn every_kind_visits_its_own_type() {
        for kind in Kind::ALL {
            assert_eq!(kind.visit(KindName), kind.label(), "{kind:?}");
        }
    }
}
