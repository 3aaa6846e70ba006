//! The console's copy of the cluster: one map per watched kind, filled from
//! watch events (the app task is the reflector's store). Every object in
//! here went through [`ingest::admit`] first: reduced to what the views
//! read ([`compact`]), stripped and sanitized; Pods, Deployments and
//! ReplicaSets are then kept slimmer still ([`slim`], [`slim_apps`], see
//! [`kept`]), their label maps shared ([`intern`]). The bottom layer: it imports nothing
//! else of the console.
//!
//! This file is wiring only: the kinds are one table ([`table`]) from which
//! each layer builds its part ([`kind`], [`object`], [`visit`], [`ingest`],
//! [`stored`]), and everything the rest of the console names as
//! `store::X` is re-exported here.

pub mod classed;
pub mod cluster_id;
pub mod compact;
pub mod index;
pub mod ingest;
pub mod intern;
pub mod kept;
pub mod key;
pub mod kind;
pub mod meta;
pub mod object;
pub mod slim;
pub mod slim_apps;
pub mod stored;
mod table;
pub mod visit;
pub mod wire;

pub use cluster_id::ClusterId;
pub use key::{ObjKey, key_of};
pub use kind::{ANALYSIS_KINDS, Kind, WORKLOAD_KINDS};
pub use object::Object;
pub use stored::{Store, Stored};
