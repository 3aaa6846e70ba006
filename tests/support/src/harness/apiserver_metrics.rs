//! Counting apiserver requests from its own metrics, for tests and
//! benchmarks that measure how much the agent writes.

use kube::Client;

/// Sum of the apiserver's `apiserver_request_total` samples whose labels
/// satisfy `filter` (the label text between the braces).
pub async fn apiserver_requests(client: &Client, filter: impl Fn(&str) -> bool) -> f64 {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("metrics request");
    let text = client
        .request_text(request)
        .await
        .expect("apiserver /metrics");
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("apiserver_request_total{")?;
            let (labels, value) = rest.rsplit_once("} ")?;
            filter(labels).then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

/// Whether an `apiserver_request_total` label set is a write to something
/// the agent writes: Runtimes and RuntimeGrants (any subresource), its
/// managed kinds (not their status or scale, which controllers write) and
/// events.k8s.io Events (the agent's recorder; kube-controller-manager's
/// HPA warnings go to core Events).
pub fn agent_kind_write(labels: &str) -> bool {
    let has = |k: &str, v: &str| labels.contains(&format!("{k}=\"{v}\""));
    let write = [
        "POST",
        "PUT",
        "PATCH",
        "APPLY",
        "DELETE",
        "DELETECOLLECTION",
    ]
    .iter()
    .any(|v| has("verb", v));
    let no_sub = has("subresource", "");
    let kind = has("group", "berth.dev")
        || (has("group", "events.k8s.io") && has("resource", "events"))
        || (has("group", "")
            && ["configmaps", "serviceaccounts", "services"]
                .iter()
                .any(|r| has("resource", r)))
        || (no_sub
            && [
                ("apps", "deployments"),
                ("policy", "poddisruptionbudgets"),
                ("networking.k8s.io", "networkpolicies"),
                ("autoscaling", "horizontalpodautoscalers"),
                ("batch", "jobs"),
                ("batch", "cronjobs"),
            ]
            .iter()
            .any(|(g, r)| has("group", g) && has("resource", r)));
    write && kind
}
