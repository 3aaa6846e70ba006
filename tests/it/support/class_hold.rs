//! A RuntimeClass held in deletion: a finalizer no controller acts on
//! keeps a deleted class, and so its Runtimes `Blocked=True/ClassDeleting`,
//! until the test lets go. `agent_held` and `as_shipped::upgrade` both
//! bring a Runtime to that state this way.

use k8s_openapi::api::node::v1::RuntimeClass;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;

/// The finalizer that holds the class.
const HOLD_FINALIZER: &str = "berth.dev/test-hold";

/// Puts the hold on class `name`: a later delete leaves it deleting.
pub async fn hold(client: &Client, name: &str) -> kube::Result<RuntimeClass> {
    let hold = Patch::Merge(json!({"metadata": {"finalizers": [HOLD_FINALIZER]}}));
    Api::<RuntimeClass>::all(client.clone())
        .patch(name, &PatchParams::default(), &hold)
        .await
}

/// Lets class `name` go (drops its finalizers): a deleting class is then
/// deleted.
pub async fn let_go(client: &Client, name: &str) -> kube::Result<RuntimeClass> {
    let let_go = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    Api::<RuntimeClass>::all(client.clone())
        .patch(name, &PatchParams::default(), &let_go)
        .await
}
