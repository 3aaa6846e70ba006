//! The key every pacing memory keeps a Runtime under.

use berth_shared::api::Runtime;
use kube::ResourceExt;

/// The pacing memories' key of a Runtime, `namespace/name`.
pub(crate) fn key(runtime: &Runtime) -> String {
    format!(
        "{}/{}",
        runtime.namespace().unwrap_or_default(),
        runtime.name_any()
    )
}
