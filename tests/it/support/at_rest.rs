//! "The agent writes nothing at rest", checked so that other tests
//! sharing the cluster cannot fail it and a failure says what was written.
//!
//! A RuntimeGrant's node coverage counts every Node, and other tests add
//! Nodes to the shared cluster: a grant status write is allowed only when
//! some grant's coverage changed meanwhile. Every other write must stay
//! put. (CI of 7352fdc failed `job_identity` on one such write, counted
//! before this allowance was shared.) Comparing coverage before and after
//! a window misses a Node another test adds and deletes within it: the
//! agent writes both changes and the coverage ends where it began. CI of
//! 0747b61 failed `agent_held_for_an_incomplete_identity_keeps_its_protection`
//! at rest, while `agent_deletions` adds and deletes a Node of its own in
//! well under a window; so the Nodes are watched through the window too.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use berth_shared::api::{NodeCoverage, RuntimeGrant};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::ListParams;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use tokio::sync::oneshot;

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

/// What a grant's node coverage counts of one Node: the handlers it
/// reports (`None`: no list at all).
fn handlers_of(node: &Node) -> Option<Vec<Option<String>>> {
    let handlers = node.status.as_ref()?.runtime_handlers.as_ref()?;
    Some(handlers.iter().map(|h| h.name.clone()).collect())
}

/// A watch on every Node from before a window to its end: whether any
/// Node came, went, or changed the handlers it reports meanwhile.
pub struct NodeChanges {
    changed: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl NodeChanges {
    /// Returns once the watch has listed the Nodes, so that every change
    /// after the return is seen.
    pub async fn watch(client: &Client) -> NodeChanges {
        let changed = Arc::new(AtomicBool::new(false));
        let (listed, on_listed) = oneshot::channel();
        let task = tokio::spawn({
            let changed = changed.clone();
            let stream = watcher(Api::<Node>::all(client.clone()), watcher::Config::default());
            async move {
                let mut stream = std::pin::pin!(stream);
                let mut known = BTreeMap::new();
                let mut listed = Some(listed);
                while let Some(event) = stream.next().await {
                    match event {
                        Ok(watcher::Event::InitApply(node)) if listed.is_some() => {
                            known.insert(node.name_any(), handlers_of(&node));
                        }
                        Ok(watcher::Event::InitDone) if listed.is_some() => {
                            if let Some(tx) = listed.take() {
                                let _ = tx.send(());
                            }
                        }
                        Ok(watcher::Event::Apply(node)) => {
                            if known.get(&node.name_any()) != Some(&handlers_of(&node)) {
                                changed.store(true, Ordering::SeqCst);
                            }
                        }
                        // A Node deleted, or a watch restarted after an
                        // error (what happened meanwhile is unknown).
                        Ok(_) | Err(_) => changed.store(true, Ordering::SeqCst),
                    }
                }
            }
        });
        tokio::time::timeout(std::time::Duration::from_secs(60), on_listed)
            .await
            .expect("the Node watch listed the Nodes within 60s")
            .expect("the Node watch ended before it listed the Nodes");
        NodeChanges { changed, task }
    }

    /// Whether a Node came, went or changed its handlers since `watch`.
    pub fn seen(self) -> bool {
        self.task.abort();
        self.changed.load(Ordering::SeqCst)
    }
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
    let nodes = NodeChanges::watch(client).await;
    let coverage_before = coverage(client).await;
    let before = agent.metrics().await;
    wait_reconciles(agent, reconciles).await;
    let after = agent.metrics().await;
    let coverage_changed = coverage(client).await != coverage_before;
    let nodes_changed = nodes.seen();
    let changed = changed_requests(&before, &after);
    assert!(
        coverage_changed
            || nodes_changed
            || grant_status_writes(&before) == grant_status_writes(&after),
        "{what}: no Node came, went or changed its handlers and no grant's coverage changed, \
         yet a grant status was written: {changed:#?}"
    );
    assert_eq!(
        writes(&before) - grant_status_writes(&before),
        writes(&after) - grant_status_writes(&after),
        "{what}: the agent wrote at rest: {changed:#?}\nagent log:\n{}",
        agent.log_text()
    );
}

/// Longer than the agent's progress interval (5 s,
/// `agent/src/controller/pacing/intervals.rs`): a window this long with no
/// Runtime write holds no paced write still due.
const QUIET: Duration = Duration::from_secs(7);

/// The agent sends no write while nothing changes, after the paced
/// progress of the last rollout is written: windows of six reconciles and
/// at least [`QUIET`] until one passes without a Runtime write (at most
/// five; an agent that writes in every window fails), then one more that
/// must be silent.
pub async fn silent_at_rest(agent: &Agent, client: &Client, what: &str) {
    // The repairs' paced progress is written a progress interval after
    // the Runtime's previous status write, by a retry the reconciler asked
    // for. Six reconciles alone can pass well within that interval: with a
    // 2 s resync and several Runtimes, a cold CI (7 Dec 2026) counted a
    // quiet window of six in under 2 s after the repairs of
    // `agent_held`, and the strict window after it caught the paced writes
    // 2.4 s after the repairs. So a quiet window also lasts longer than
    // the interval.
    let runtime_writes = |m: &str| writes(m) - grant_status_writes(m);
    let mut quiet_after = None;
    for window in 1..=5 {
        let before = agent.metrics().await;
        let started = Instant::now();
        wait_reconciles(agent, 6.0).await;
        tokio::time::sleep(QUIET.saturating_sub(started.elapsed())).await;
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
