//! Simulated kwok nodes whose status reports container runtime handlers.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{
    Node, NodeRuntimeHandler, NodeRuntimeHandlerFeatures, NodeStatus,
};
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};

use super::Error;
use super::process::Component;

/// Nodes carrying this annotation (value `fake`) are driven by kwok.
pub const KWOK_ANNOTATION: &str = "kwok.x-k8s.io/node";

/// One simulated node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    pub name: String,
    /// Runtime handlers listed in `status.runtimeHandlers`.
    pub handlers: Vec<String>,
}

/// The `status.runtimeHandlers` a real kubelet would publish for `handlers`.
pub fn runtime_handlers(handlers: &[String]) -> Vec<NodeRuntimeHandler> {
    handlers
        .iter()
        .map(|h| NodeRuntimeHandler {
            name: Some(h.clone()),
            features: Some(NodeRuntimeHandlerFeatures {
                recursive_read_only_mounts: Some(true),
                user_namespaces: Some(false),
            }),
        })
        .collect()
}

fn node(spec: &NodeSpec) -> Node {
    let labels = BTreeMap::from([
        ("kubernetes.io/hostname".to_string(), spec.name.clone()),
        ("kubernetes.io/os".to_string(), "linux".to_string()),
        ("kubernetes.io/arch".to_string(), "amd64".to_string()),
        ("type".to_string(), "kwok".to_string()),
    ]);
    Node {
        metadata: ObjectMeta {
            name: Some(spec.name.clone()),
            labels: Some(labels),
            annotations: Some(BTreeMap::from([(
                KWOK_ANNOTATION.to_string(),
                "fake".to_string(),
            )])),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Creates every node, then sets its runtime handlers through the status
/// subresource (the way a kubelet reports them).
pub async fn create(client: &Client, specs: &[NodeSpec]) -> Result<(), Error> {
    let api: Api<Node> = Api::all(client.clone());
    for spec in specs {
        api.create(&PostParams::default(), &node(spec))
            .await
            .map_err(|e| Error::Kube(format!("creating node {}: {e}", spec.name)))?;
        set_capacity(client, &spec.name).await?;
        set_handlers(client, &spec.name, &spec.handlers).await?;
    }
    Ok(())
}

/// What every simulated node offers: kwok's own defaults (cpu 1k, memory
/// 1Ti, pods 1M) plus ephemeral storage, which kwok leaves out. Without it
/// the scheduler refuses every pod that requests ephemeral storage, and
/// berth's contract requests some for every pod.
fn capacity() -> serde_json::Value {
    serde_json::json!({"cpu": "1k", "memory": "1Ti", "pods": "1M", "ephemeral-storage": "1Ti"})
}

/// Sets the node's capacity and allocatable (a merge patch: kwok's stage
/// keeps what a node already reports). Tests that create a kwok node of
/// their own call it too.
pub async fn set_capacity(client: &Client, node: &str) -> Result<(), Error> {
    let api: Api<Node> = Api::all(client.clone());
    let patch = serde_json::json!({"status": {"capacity": capacity(), "allocatable": capacity()}});
    api.patch_status(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| Error::Kube(format!("setting the capacity of node {node}: {e}")))?;
    Ok(())
}

/// Replaces the runtime handlers a node reports.
pub async fn set_handlers(client: &Client, node: &str, handlers: &[String]) -> Result<(), Error> {
    let api: Api<Node> = Api::all(client.clone());
    let status = NodeStatus {
        runtime_handlers: Some(runtime_handlers(handlers)),
        ..Default::default()
    };
    let patch = serde_json::json!({ "status": status });
    api.patch_status(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| Error::Kube(format!("setting runtime handlers of node {node}: {e}")))?;
    Ok(())
}

fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn handler_names(node: &Node) -> Vec<String> {
    node.status
        .as_ref()
        .and_then(|s| s.runtime_handlers.as_ref())
        .map(|hs| hs.iter().filter_map(|h| h.name.clone()).collect())
        .unwrap_or_default()
}

/// Waits until every node is Ready and still reports its handlers.
pub async fn wait_ready(
    client: &Client,
    specs: &[NodeSpec],
    components: &mut [Component],
    timeout: Duration,
) -> Result<(), Error> {
    let api: Api<Node> = Api::all(client.clone());
    let deadline = Instant::now() + timeout;
    loop {
        for c in components.iter_mut() {
            c.check_running()?;
        }
        let mut waiting = Vec::new();
        for spec in specs {
            match api.get_opt(&spec.name).await {
                Ok(Some(n)) if is_ready(&n) && handler_names(&n) == spec.handlers => {}
                _ => waiting.push(spec.name.clone()),
            }
        }
        if waiting.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            let log = components
                .iter()
                .find(|c| c.name == "kwok")
                .map(|c| c.log.clone())
                .unwrap_or_default();
            return Err(Error::Unhealthy {
                component: "kwok".into(),
                secs: timeout.as_secs(),
                detail: format!(
                    "nodes not Ready with their handlers: {}",
                    waiting.join(", ")
                ),
                log,
            });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
