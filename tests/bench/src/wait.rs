//! Waiting on the Runtimes (until the agent has observed them, or they
//! reached a condition) and on the floor's Deployments (until they rolled
//! out as a Runtime's Ready judges its Deployment), each through a watch.

use std::collections::HashMap;
use std::fmt::Debug;
use std::time::{Duration, Instant};

use berth_shared::api::{RolloutPhase, Runtime};
use berth_shared::status;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

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
pub async fn until_runtimes_or_count(
    client: &Client,
    since: Instant,
    timeout: Duration,
    names: &[(String, String)],
    pred: impl Fn(&Runtime) -> bool,
) -> Result<Duration, (usize, usize)> {
    let relevant = |r: &Runtime| {
        names.is_empty()
            || names
                .iter()
                .any(|(ns, n)| r.namespace().as_deref() == Some(ns.as_str()) && &r.name_any() == n)
    };
    let api: Api<Runtime> = Api::all(client.clone());
    until_every(
        api,
        watcher::Config::default(),
        since,
        timeout,
        relevant,
        pred,
        None,
    )
    .await
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

/// Watches the Deployments `selector` selects until each of `expected`
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
    let runtime = |d: &Deployment| expected.get(&(d.namespace().unwrap_or_default(), d.name_any()));
    until_every(
        api,
        watcher::Config::default().labels(selector),
        since,
        timeout,
        |d| runtime(d).is_some(),
        |d| runtime(d).is_some_and(|rt| rolled_out(rt, d)),
        Some(expected.len()),
    )
    .await
}

/// Whether each object `relevant` picks is `done`, as a watch tells it
/// (one LIST, then events): until `need` of them are (or, without `need`,
/// every one seen, at least one), or `since + timeout`.
///
/// A watch, not a LIST polled every 250 ms: at S one LIST of the floor's
/// 2,000 Deployments is about 15 MB of JSON for the apiserver to encode,
/// the Runtimes' a fraction of that, so polling loaded the apiserver
/// heavily and the two phases unequally (issue 32: a floor must do the same
/// work as berth, and its observer must not add work of its own).
async fn until_every<K>(
    api: Api<K>,
    config: watcher::Config,
    since: Instant,
    timeout: Duration,
    relevant: impl Fn(&K) -> bool,
    done: impl Fn(&K) -> bool,
    need: Option<usize>,
) -> Result<Duration, (usize, usize)>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let deadline = tokio::time::Instant::from_std(since + timeout);
    let mut events = watcher(api, config).default_backoff().boxed();
    let mut seen = Seen::default();
    loop {
        let event = match tokio::time::timeout_at(deadline, events.next()).await {
            Ok(Some(Ok(event))) => event,
            // The watcher retries with its backoff; a stream that ends
            // cannot be waited on any longer.
            Ok(Some(Err(_))) => continue,
            Ok(None) | Err(_) => return Err(seen.counts(need)),
        };
        let entry = |o: &K| relevant(o).then(|| (key(o), done(o)));
        match event {
            watcher::Event::Init => seen.relist = Some(HashMap::new()),
            watcher::Event::InitApply(o) => {
                if let (Some(relist), Some((k, d))) = (seen.relist.as_mut(), entry(&o)) {
                    relist.insert(k, d);
                }
            }
            watcher::Event::InitDone => seen.listed(),
            watcher::Event::Apply(o) => {
                if let Some((k, d)) = entry(&o) {
                    seen.set(k, d);
                }
            }
            watcher::Event::Delete(o) => seen.remove(&key(&o)),
        }
        if seen.complete(need) {
            return Ok(since.elapsed());
        }
    }
}

fn key<K: Resource>(o: &K) -> (String, String) {
    (
        o.meta().namespace.clone().unwrap_or_default(),
        o.meta().name.clone().unwrap_or_default(),
    )
}

/// What a watch has shown: whether each relevant object is done, with the
/// count kept as events arrive (an event must not cost a scan of 2,000).
#[derive(Default)]
struct Seen {
    /// Once the first LIST is complete.
    current: Option<HashMap<(String, String), bool>>,
    done: usize,
    /// A LIST in progress (the first or a relist), swapped in at its end.
    relist: Option<HashMap<(String, String), bool>>,
}

impl Seen {
    fn listed(&mut self) {
        let listed = self.relist.take().unwrap_or_default();
        self.done = listed.values().filter(|d| **d).count();
        self.current = Some(listed);
    }

    fn set(&mut self, k: (String, String), d: bool) {
        let Some(current) = self.current.as_mut() else {
            return;
        };
        if current.insert(k, d) == Some(true) {
            self.done -= 1;
        }
        if d {
            self.done += 1;
        }
    }

    fn remove(&mut self, k: &(String, String)) {
        if let Some(current) = self.current.as_mut()
            && current.remove(k) == Some(true)
        {
            self.done -= 1;
        }
    }

    /// Done of how many: of `need`, or of every one seen.
    fn counts(&self, need: Option<usize>) -> (usize, usize) {
        let seen = self.current.as_ref().map_or(0, HashMap::len);
        (self.done, need.unwrap_or(seen))
    }

    fn complete(&self, need: Option<usize>) -> bool {
        let (done, of) = self.counts(need);
        self.current.is_some() && of > 0 && done >= of
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

    fn k(n: &str) -> (String, String) {
        ("ns".into(), n.into())
    }

    #[test]
    fn a_watch_counts_done_objects_as_events_arrive() {
        let mut seen = Seen::default();
        seen.set(k("early"), true);
        assert!(
            !seen.complete(None),
            "nothing before the first LIST is done"
        );
        seen.relist = Some(HashMap::from([(k("a"), true), (k("b"), false)]));
        seen.listed();
        assert_eq!(seen.counts(None), (1, 2));
        assert!(!seen.complete(None));
        assert!(seen.complete(Some(1)), "one of one needed is done");
        seen.set(k("b"), true);
        seen.set(k("b"), true);
        assert_eq!(
            seen.counts(None),
            (2, 2),
            "an object done twice counts once"
        );
        assert!(seen.complete(None));
        assert!(!seen.complete(Some(3)), "one expected object not yet seen");
        seen.set(k("a"), false);
        assert_eq!(seen.counts(None), (1, 2), "an object can be undone");
        seen.remove(&k("b"));
        assert_eq!(seen.counts(None), (0, 1));
        // A relist replaces what the watch showed, and recounts.
        seen.relist = Some(HashMap::from([(k("c"), true)]));
        seen.listed();
        assert_eq!(seen.counts(Some(2)), (1, 2));
        assert!(seen.complete(None));
    }

    #[test]
    fn an_empty_world_is_never_complete_without_a_count() {
        let mut seen = Seen {
            relist: Some(HashMap::new()),
            ..Seen::default()
        };
        seen.listed();
        assert!(!seen.complete(None));
        assert!(!seen.complete(Some(1)));
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
