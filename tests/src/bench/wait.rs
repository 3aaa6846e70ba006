//! Waiting on the Runtimes: until the agent has observed them, or they
//! reached a condition.

use std::time::{Duration, Instant};

use berth_shared::api::Runtime;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

pub fn observed(r: &Runtime) -> bool {
    let generation = r.metadata.generation.unwrap_or(0);
    r.status
        .as_ref()
        .and_then(|s| s.observed_generation)
        .is_some_and(|g| g >= generation)
}

pub fn has_condition(r: &Runtime, type_: &str, status: &str) -> bool {
    r.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == type_ && c.status == status)
    })
}

/// Polls the Runtimes until `pred` holds for all of `names` (or all when
/// empty); the time since `since`. Panics naming `what` after `timeout`.
pub async fn until_runtimes(
    client: &Client,
    what: &str,
    since: Instant,
    timeout: Duration,
    names: &[(String, String)],
    pred: impl Fn(&Runtime) -> bool,
) -> Duration {
    match until_runtimes_or_count(client, since, timeout, names, pred).await {
        Ok(d) => d,
        Err((done, total)) => panic!("{what}: only {done} of {total} within {timeout:?}"),
    }
}

/// [`until_runtimes`], but a timeout is an answer: how many of how many.
pub async fn until_runtimes_or_count(
    client: &Client,
    since: Instant,
    timeout: Duration,
    names: &[(String, String)],
    pred: impl Fn(&Runtime) -> bool,
) -> Result<Duration, (usize, usize)> {
    let api: Api<Runtime> = Api::all(client.clone());
    loop {
        if let Ok(list) = api.list(&ListParams::default()).await {
            let relevant: Vec<&Runtime> = list
                .items
                .iter()
                .filter(|r| {
                    names.is_empty()
                        || names.iter().any(|(ns, n)| {
                            r.namespace().as_deref() == Some(ns.as_str()) && &r.name_any() == n
                        })
                })
                .collect();
            let done = relevant.iter().filter(|r| pred(r)).count();
            if !relevant.is_empty() && done == relevant.len() {
                return Ok(since.elapsed());
            }
            if since.elapsed() > timeout {
                return Err((done, relevant.len()));
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
