//! The parts of a world that make the agent's every documented series
//! appear, shared by the metrics-doc test (the agent's own scrape) and
//! the Prometheus test (the same series as Prometheus holds them).

use berth_tests::harness::TestNamespace;
use k8s_openapi::api::batch::v1::CronJob;
use kube::Api;
use serde_json::json;

use super::agent::{create_class, create_runtime, wait_condition};

/// Beside the test's own granted Runtimes: `other`, on a profile no
/// binding grants (Blocked), and `report`, a CronJob berth does not
/// manage on a class no grant covers (`<namespace>-kept`, a retained
/// workload). Returns the kept class's name once `other` is Blocked.
pub async fn blocked_and_retained(ns: &TestNamespace) -> String {
    create_runtime(
        ns,
        "other",
        json!({"service": "extra", "runtimeProfile": "nobody-grants-this"}),
    )
    .await;
    let kept = format!("{}-kept", ns.name);
    create_class(&ns.client, &kept, "kept-runc").await;
    let cron: CronJob = serde_json::from_value(json!({"metadata": {"name": "report"},
        "spec": {"schedule": "0 3 * * *", "suspend": true, "jobTemplate": {"spec": {"template": {
            "spec": {"runtimeClassName": &kept, "restartPolicy": "Never",
                "containers": [{"name": "a", "image": "x"}]}}}}}}))
    .expect("cronjob");
    Api::<CronJob>::namespaced(ns.client.clone(), &ns.name)
        .create(&Default::default(), &cron)
        .await
        .expect("cronjob");
    wait_condition(ns, "other", "Blocked", "True", None).await;
    kept
}
