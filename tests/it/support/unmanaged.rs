//! Workloads berth does not manage, created in a test's namespace: what
//! names a RuntimeClass without a Runtime behind it (a retained workload
//! a grant's status must list). Kept apart from `agent`, which runs the
//! agent and reads what it wrote.

use berth_tests::harness::TestNamespace;
use k8s_openapi::api::batch::v1::CronJob;
use kube::Api;
use serde_json::json;

/// Creates `name`, a suspended CronJob (daily at 03:00, so it never runs
/// during a test) whose pods would run on `class`.
pub async fn create_suspended_cronjob(ns: &TestNamespace, name: &str, class: &str) -> CronJob {
    let cron: CronJob = serde_json::from_value(json!({"metadata": {"name": name},
        "spec": {"schedule": "0 3 * * *", "suspend": true, "jobTemplate": {"spec": {"template": {
            "spec": {"runtimeClassName": class, "restartPolicy": "Never",
                "containers": [{"name": "a", "image": "x"}]}}}}}}))
    .expect("cronjob");
    Api::<CronJob>::namespaced(ns.client.clone(), &ns.name)
        .create(&Default::default(), &cron)
        .await
        .unwrap_or_else(|e| panic!("create cronjob {name}: {e}"))
}
