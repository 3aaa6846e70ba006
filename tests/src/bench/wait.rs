//! Waiting on the Runtimes (until the agent has observed them, or they
//! reached a condition) and on the floor's Deployments (until they rolled
//! out as a Runtime's Ready judges its Deployment).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use berth_shared::api::{RolloutPhase, Runtime};
use berth_shared::status;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

/// How long a wait took; when it timed out, how many of how many were
/// done by then (the time is then the timeout's, a lower bound).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reached {
    pub took: Duration,
    pub short_of: Option<(usize, usize)>,
}

impl Reached {
    /// From a wait's answer (a timeout is an answer) that started at
    /// `since`.
    pub fn from(since: Instant, answer: Result<Duration, (usize, usize)>) -> Self {
        match answer {
            Ok(took) => Reached {
                took,
                short_of: None,
            },
            Err(counts) => Reached {
                took: since.elapsed(),
                short_of: Some(counts),
            },
        }
    }
}

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
/// Polls every 250 ms, as [`until_rolled_out`] does: both waits load the
/// apiserver alike.
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

/// Whether `d` (rendered from `runtime`) has rolled out as the agent
/// judges it for the Runtime's Ready condition: the same shared functions
/// (the rollout Complete, the Deployment's Available condition True).
/// Ready also needs the grant, the handler and no degradation, which are
/// the agent's own work and hold in the benchmark's world.
pub fn rolled_out(runtime: &Runtime, d: &Deployment) -> bool {
    let complete = status::rollout(runtime, Some(d), &[], false)
        .status
        .is_some_and(|s| s.phase == RolloutPhase::Complete);
    complete && status::available(runtime, Some(d)).status == "True"
}

/// Polls the Deployments `selector` selects until each of `expected`
/// (`(namespace, name)` → the Runtime it was rendered from) has
/// [`rolled_out`]; the time since `since`, or at the timeout how many of
/// how many had.
pub async fn until_rolled_out(
    client: &Client,
    selector: &str,
    since: Instant,
    timeout: Duration,
    expected: &HashMap<(String, String), Runtime>,
) -> Result<Duration, (usize, usize)> {
    let api: Api<Deployment> = Api::all(client.clone());
    let lp = ListParams::default().labels(selector);
    loop {
        if let Ok(list) = api.list(&lp).await {
            let done = list
                .items
                .iter()
                .filter(|d| {
                    let key = (d.namespace().unwrap_or_default(), d.name_any());
                    expected.get(&key).is_some_and(|rt| rolled_out(rt, d))
                })
                .count();
            if done == expected.len() {
                return Ok(since.elapsed());
            }
            if since.elapsed() > timeout {
                return Err((done, expected.len()));
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn runtime() -> Runtime {
        serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
            "metadata": {"name": "rt", "namespace": "ns"},
            "spec": {"application": "app", "service": "svc",
                     "image": {"repository": "r", "tag": "1"}, "replicas": 2},
        }))
        .expect("a Runtime")
    }

    fn deployment(observed: i64, ready: i32, available: &str) -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "d", "namespace": "ns", "generation": 2},
            "spec": {"replicas": 2, "selector": {}, "template": {}},
            "status": {
                "observedGeneration": observed, "replicas": 2, "updatedReplicas": 2,
                "readyReplicas": ready, "availableReplicas": ready,
                "conditions": [{"type": "Available", "status": available}],
            },
        }))
        .expect("a Deployment")
    }

    #[test]
    fn rolled_out_as_the_agents_ready_judges_it() {
        let rt = runtime();
        assert!(rolled_out(&rt, &deployment(2, 2, "True")));
        assert!(
            !rolled_out(&rt, &deployment(2, 1, "True")),
            "a pod not Ready"
        );
        assert!(!rolled_out(&rt, &deployment(1, 2, "True")), "unobserved");
        assert!(
            !rolled_out(&rt, &deployment(2, 2, "False")),
            "not Available"
        );
    }

    #[test]
    fn a_timeout_is_reached_with_its_counts() {
        let since = Instant::now();
        let r = Reached::from(since, Err((3, 5)));
        assert_eq!(r.short_of, Some((3, 5)));
        let ok = Reached::from(since, Ok(Duration::from_secs(2)));
        assert_eq!((ok.took, ok.short_of), (Duration::from_secs(2), None));
    }
}
