//! "The agent writes nothing at rest", checked so that other tests
//! sharing the cluster cannot fail it and a failure says what was written.
//!
//! A RuntimeGrant's node coverage counts every Node, and other tests add
//! Nodes to the shared cluster: a grant status write is allowed only when
//! some grant's coverage changed meanwhile. Every other write must stay
//! put. (CI of 7352fdc failed `job_identity` on one such write, counted
//! before this allowance was shared.)

use berth_shared::api::{NodeCoverage, RuntimeGrant};
use kube::api::ListParams;
use kube::{Api, Client};

use super::agent::{Agent, grant_status_writes, wait_reconciles, writes};

/// Every grant's name and node coverage, to tell a Node change from a
/// write at rest.
async fn coverage(client: &Client) -> Vec<(Option<String>, Option<NodeCoverage>)> {
    Api::<RuntimeGrant>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("list grants")
        .items
        .into_iter()
        .map(|g| (g.metadata.name, g.status.and_then(|s| s.nodes)))
        .collect()
}

/// The request counter lines whose value changed from `before` to
/// `after`: what the agent wrote, for a failure message.
fn changed_requests(before: &str, after: &str) -> Vec<String> {
    let counters = |m: &str| -> Vec<String> {
        m.lines()
            .filter(|l| l.starts_with("berth_agent_api_requests_total") && !l.contains("\"GET\""))
            .map(str::to_string)
            .collect()
    };
    let old = counters(before);
    counters(after)
        .into_iter()
        .filter(|l| !old.contains(l))
        .collect()
}

/// Over the next `reconciles` reconciles the agent sends no write besides
/// Lease renewals and a grant status whose coverage changed.
pub async fn assert_no_writes_over(agent: &Agent, client: &Client, reconciles: f64, what: &str) {
    let coverage_before = coverage(client).await;
    let before = agent.metrics().await;
    wait_reconciles(agent, reconciles).await;
    let after = agent.metrics().await;
    let coverage_changed = coverage(client).await != coverage_before;
    let changed = changed_requests(&before, &after);
    assert!(
        coverage_changed || grant_status_writes(&before) == grant_status_writes(&after),
        "{what}: no grant's coverage changed, yet a grant status was written: {changed:#?}"
    );
    assert_eq!(
        writes(&before) - grant_status_writes(&before),
        writes(&after) - grant_status_writes(&after),
        "{what}: the agent wrote at rest: {changed:#?}\nagent log:\n{}",
        agent.log_text()
    );
}

/// The agent sends no write while nothing changes, after the paced
/// progress of the last rollout is written: windows of six reconciles
/// until one passes without a Runtime write (at most five; an agent that
/// writes in every window fails), then one more that must be silent.
pub async fn silent_at_rest(agent: &Agent, client: &Client, what: &str) {
    // The repairs' paced progress is written a progress interval after
    // the Deployments settle, by a retry the reconciler asked for, and six
    // reconciles can all be those retries' (seen in CI under load: the
    // window began before them).
    let runtime_writes = |m: &str| writes(m) - grant_status_writes(m);
    let mut quiet_after = None;
    for window in 1..=5 {
        let before = agent.metrics().await;
        wait_reconciles(agent, 6.0).await;
        if runtime_writes(&before) == runtime_writes(&agent.metrics().await) {
            quiet_after = Some(window);
            break;
        }
    }
    assert!(
        quiet_after.is_some(),
        "{what}: the agent kept writing through five windows of six reconciles; agent log:\n{}",
        agent.log_text()
    );
    assert_no_writes_over(agent, client, 6.0, what).await;
}
