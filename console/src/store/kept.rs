//! How the [`super::Store`] keeps an object of a kind. Most kinds are kept
//! as the (reduced, sanitized) object itself; Pods, the bulk of a cluster,
//! as a [`super::slim::SlimPod`] of the few fields the console reads,
//! because a k8s-openapi `Pod` is ~4 kB inline even when nearly every
//! field is absent; Deployments and ReplicaSets likewise
//! ([`super::slim_apps`]).

/// A stored form of objects of type `T`.
pub trait Kept<T>: Sized {
    /// The stored form of an object that went through
    /// [`super::ingest::admit`] (so it is built from sanitized data).
    fn keep(obj: Box<T>) -> Box<Self>;

    /// The object again, as [`super::compact`] reduced it: what
    /// [`super::Store::get`] hands out (for the Details summary, a relist
    /// that keeps what scoped watches hold).
    fn object(&self) -> T;

    /// The store's key of the object.
    fn key(&self) -> super::ObjKey;
}

/// Kinds kept as they are.
impl<T: Clone + kube::ResourceExt> Kept<T> for T {
    fn keep(obj: Box<T>) -> Box<T> {
        obj
    }

    fn object(&self) -> T {
        self.clone()
    }

    fn key(&self) -> super::ObjKey {
        super::key_of(self)
    }
}
