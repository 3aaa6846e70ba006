//! A Deployment of plain pods that nothing of berth's owns (the console's
//! churn, the restarted workers' probe), and the wait until its pods are
//! Ready. One object, read with a GET per poll: no watch needed.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;

/// `replicas` pods of one container, image `registry.invalid/NAME:1`
/// (kwok runs anything).
pub fn deployment(name: &str, replicas: usize) -> Deployment {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": format!("registry.invalid/{name}:1")}]},
            },
        },
    }))
    .expect("a plain Deployment")
}

/// Polls Deployment `name` every `every` until `n` of its pods are Ready
/// (`true`), or `timeout` after the first poll (`false`).
pub async fn until_ready(
    api: &Api<Deployment>,
    name: &str,
    n: usize,
    every: Duration,
    timeout: Duration,
) -> bool {
    let t = Instant::now();
    loop {
        let ready = api
            .get(name)
            .await
            .ok()
            .and_then(|d| d.status)
            .and_then(|s| s.ready_replicas)
            .unwrap_or(0);
        if usize::try_from(ready).unwrap_or(0) >= n {
            return true;
        }
        if t.elapsed() > timeout {
            return false;
        }
        tokio::time::sleep(every).await;
    }
}
