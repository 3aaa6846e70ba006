//! A kwok node of one test's own. The other tests share the cluster's
//! nodes, so it is labelled and tainted with `key=mark`: only pods that
//! select the label and tolerate the taint land there ([`OwnNode::placement`]).

use std::collections::BTreeSet;
use std::time::Duration;

use berth_tests::harness::wait_for_value;
use berth_tests::localcluster::nodes::{set_capacity, set_handlers};
use k8s_openapi::api::core::v1::Node;
use kube::{Api, Client};
use serde_json::json;

/// How long a new kwok node may take to turn Ready.
const WAIT: Duration = Duration::from_secs(120);

pub struct OwnNode {
    key: String,
    mark: String,
}

impl OwnNode {
    /// Creates node `name` and waits until it is Ready and reports
    /// `handlers` in `status.runtimeHandlers` (set in that order); `None`: it
    /// reports no handler list at all, as older kubelets do.
    pub async fn create(
        client: &Client,
        name: &str,
        key: &str,
        mark: &str,
        handlers: Option<&[&str]>,
    ) -> OwnNode {
        let nodes: Api<Node> = Api::all(client.clone());
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name,
                "labels": {"kubernetes.io/hostname": name, "type": "kwok", key: mark},
                "annotations": {"kwok.x-k8s.io/node": "fake"}},
            "spec": {"taints": [{"key": key, "value": mark, "effect": "NoSchedule"}]},
        }))
        .expect("node");
        nodes
            .create(&Default::default(), &node)
            .await
            .expect("create node");
        // The contract requests ephemeral storage, which kwok does not report.
        set_capacity(client, name).await.expect("node capacity");
        if let Some(handlers) = handlers {
            let handlers: Vec<String> = handlers.iter().map(|h| (*h).to_string()).collect();
            set_handlers(client, name, &handlers)
                .await
                .expect("node handlers");
        }
        let want: Option<BTreeSet<&str>> = handlers.map(|hs| hs.iter().copied().collect());
        wait_for_value(
            &format!("node {name} Ready, reporting {handlers:?}"),
            WAIT,
            || async {
                let status = nodes.get(name).await.ok()?.status?;
                let ready = status
                    .conditions?
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True");
                let reported: Option<BTreeSet<String>> = status
                    .runtime_handlers
                    .map(|hs| hs.into_iter().filter_map(|h| h.name).collect());
                let reports = match (&want, &reported) {
                    (Some(want), Some(got)) => {
                        want.iter().copied().eq(got.iter().map(String::as_str))
                    }
                    (None, None) => true,
                    _ => false,
                };
                (ready && reports).then_some(())
            },
        )
        .await;
        OwnNode {
            key: key.to_string(),
            mark: mark.to_string(),
        }
    }

    /// A Runtime's `scheduling` that places its pods on the nodes of this
    /// mark only: the label selected, the taint tolerated.
    pub fn placement(&self) -> serde_json::Value {
        json!({
            "nodeSelector": {&self.key: &self.mark},
            "tolerations": [{"key": &self.key, "operator": "Equal", "value": &self.mark, "effect": "NoSchedule"}],
        })
    }
}
