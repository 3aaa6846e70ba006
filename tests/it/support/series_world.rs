//! The parts of a world that make the agent's every documented series
//! appear, shared by the metrics-doc test (the agent's own scrape) and
//! the Prometheus test (the same series as Prometheus holds them).

use berth_tests::harness::TestNamespace;
use serde_json::json;

use super::agent::{create_class, create_runtime, wait_condition};
use super::unmanaged::create_suspended_cronjob;

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
    create_suspended_cronjob(ns, "report", &kept).await;
    wait_condition(ns, "other", "Blocked", "True", None).await;
    kept
}
