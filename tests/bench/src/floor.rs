//! The floor of agent convergence: a bare server-side-apply client that
//! applies the same rendered objects the agent would, Runtime after
//! Runtime, with the agent's concurrency, and waits until every pod of
//! its Deployments is Ready. It does the agent's work without the agent:
//! the control plane makes the same pods while it applies, as it does
//! while the agent converges. Everything is deleted again, and its pods
//! gone, before the agent starts. `--floor-paused` keeps the older, cheaper
//! floor: Deployments paused (one field more), no pods, no Ready floor.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use berth_shared::api::Runtime;
use berth_shared::render;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::wait::{Reached, until_rolled_out};
use super::world::{Planned, Size};
use super::{Options, apiserver_profile, cpu, progress, requests};

const FIELD_MANAGER: &str = "berth-bench-floor";
/// Selects what the floor applied (the rendered objects carry berth's
/// labels, which the agent's objects carry too; the floor runs first and
/// removes its objects before the agent starts).
pub(super) const MANAGED: &str = "app.kubernetes.io/managed-by=berth";

async fn apply<K>(client: &Client, obj: &K) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug,
{
    let ns = obj.namespace().unwrap_or_default();
    let api: Api<K> = Api::namespaced(client.clone(), &ns);
    let mut value = serde_json::to_value(obj).map_err(kube::Error::SerdeError)?;
    value["apiVersion"] = K::api_version(&()).into();
    value["kind"] = K::kind(&()).into();
    api.patch(
        &obj.name_any(),
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(value),
    )
    .await
    .map(|_| ())
}

/// Why the floor could not apply a Runtime's objects.
#[derive(Debug, thiserror::Error)]
enum FloorError {
    #[error("render: {0}")]
    Render(#[from] render::RenderError),
    #[error("apply: {0}")]
    Apply(#[from] kube::Error),
}

/// Applies one Runtime's objects; the `(namespace, name)` of its
/// Deployment, with the Runtime.
async fn apply_runtime(
    client: Client,
    runtime: Runtime,
    planned: Planned,
    pods: bool,
) -> Result<((String, String), Runtime), FloorError> {
    let mut r = render::render(&runtime, &planned.identity(), &planned.decision())?;
    if let Some(spec) = r.deployment.spec.as_mut()
        && !pods
    {
        spec.paused = Some(true);
    }
    apply(&client, &r.config_map).await?;
    apply(&client, &r.service_account).await?;
    apply(&client, &r.service).await?;
    apply(&client, &r.deployment).await?;
    apply(&client, &r.pod_disruption_budget).await?;
    let deployment = (
        r.deployment.namespace().unwrap_or_default(),
        r.deployment.name_any(),
    );
    Ok((deployment, runtime))
}

/// Applies every Runtime's rendered objects, `concurrency` Runtimes at a
/// time (Deployments paused unless `pods`); each Deployment's
/// `(namespace, name)` with the Runtime it was rendered from.
pub(super) async fn apply_all(
    client: &Client,
    stored: &[Runtime],
    plan: &[Planned],
    concurrency: usize,
    pods: bool,
) -> HashMap<(String, String), Runtime> {
    futures::stream::iter(stored.iter().cloned().zip(plan.iter().cloned()))
        .map(|(rt, p)| apply_runtime(client.clone(), rt, p, pods))
        .buffer_unordered(concurrency.max(1))
        .try_collect()
        .await
        .unwrap_or_else(|e| panic!("the floor's apply failed: {e}"))
}

/// What the floor measured.
#[derive(Clone, Debug)]
pub struct Floor {
    /// Whether its Deployments were paused (`--floor-paused`): no pods,
    /// no Ready floor.
    pub paused: bool,
    /// (a) From its start until every object was applied: the floor of
    /// "every Runtime observed".
    pub applied: Duration,
    pub objects: usize,
    /// (b) From its start until every Deployment rolled out (every pod
    /// Ready): the floor of "every Runtime Ready". `None` when paused.
    pub ready: Option<Reached>,
    /// CPU from its start until everything was applied.
    pub cpu_applied: cpu::Usage,
    /// CPU from its start until every pod was Ready.
    pub cpu_ready: Option<cpu::Usage>,
    /// The apiserver's requests from its start until every pod was Ready.
    pub requests_ready: Option<requests::Sample>,
    /// The apiserver's CPU profile over the same phase
    /// (`--profile-apiserver`).
    pub profile_ready: Option<apiserver_profile::Summary>,
}

/// Runs the floor on the created world, then clears what it made.
pub async fn run(
    client: &Client,
    cluster_dir: &Path,
    stored: &[Runtime],
    size: &Size,
    opts: &Options,
    started: Instant,
) -> Floor {
    let paused = opts.floor_paused;
    progress(
        started,
        if paused {
            "floor: server-side apply of the rendered objects, Deployments paused"
        } else {
            "floor: server-side apply of the rendered objects (the control plane makes their pods)"
        },
    );
    let t0 = Instant::now();
    let cpu0 = cpu::sample(cluster_dir, None);
    let requests0 = requests::sample(client).await;
    let profiling = (opts.profile_apiserver && !paused)
        .then(|| apiserver_profile::start(client, cluster_dir, "floor"));
    let expected = apply_all(client, stored, &size.plan(), opts.concurrency, !paused).await;
    let applied = t0.elapsed();
    let cpu_applied = cpu::usage(&cpu0, &cpu::sample(cluster_dir, None));
    let objects = expected.len() * 5;
    progress(
        started,
        &format!("floor: {objects} objects applied in {applied:.2?}"),
    );
    let (ready, cpu_ready, requests_ready, profile_ready) = if paused {
        (None, None, None, None)
    } else {
        progress(started, "floor: waiting until every pod is Ready");
        // As generous as the agent's wait for every Runtime Ready: the
        // same pods, made by the same control plane.
        let timeout = Duration::from_secs(opts.ready_timeout_seconds);
        let answer = until_rolled_out(client, MANAGED, t0, timeout, &expected).await;
        let cpu_ready = cpu::usage(&cpu0, &cpu::sample(cluster_dir, None));
        let requests_ready = requests::delta(&requests0, &requests::sample(client).await);
        let profile_ready = match profiling {
            Some(p) => p.finish(cluster_dir).await,
            None => None,
        };
        let ready = Reached::from(t0, answer);
        progress(
            started,
            &match ready.short_of {
                None => format!("floor: every pod Ready after {:.2?}", ready.took),
                Some((done, total)) => format!(
                    "floor: only {done} of {total} Deployments rolled out at the timeout; going on"
                ),
            },
        );
        (
            Some(ready),
            Some(cpu_ready),
            Some(requests_ready),
            profile_ready,
        )
    };
    progress(
        started,
        if paused {
            "floor: clearing its objects"
        } else {
            "floor: clearing its objects and waiting until their pods are gone"
        },
    );
    clear(client, &size.namespaces(), !paused).await;
    Floor {
        paused,
        applied,
        objects,
        ready,
        cpu_applied,
        cpu_ready,
        requests_ready,
        profile_ready,
    }
}

async fn clear_kind<K>(client: &Client, namespace: &str)
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let lp = ListParams::default().labels(MANAGED);
    let _ = api.delete_collection(&DeleteParams::default(), &lp).await;
    if !until_empty(&api, &lp, 600, Duration::from_millis(200)).await {
        panic!(
            "the floor's {} in {namespace} were not deleted",
            K::kind(&())
        );
    }
}

/// Polls until `api` lists nothing for `lp`; false after `tries` polls.
async fn until_empty<K>(api: &Api<K>, lp: &ListParams, tries: u32, pause: Duration) -> bool
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    for _ in 0..tries {
        match api.list_metadata(lp).await {
            Ok(l) if l.items.is_empty() => return true,
            _ => tokio::time::sleep(pause).await,
        }
    }
    false
}

/// Deletes what the floor applied and waits until it is gone (with
/// `pods`, also every pod its Deployments made: the agent must start on
/// the same empty world, and its Deployments take the same names).
async fn clear(client: &Client, namespaces: &[String], pods: bool) {
    for ns in namespaces {
        clear_kind::<Deployment>(client, ns).await;
        clear_kind::<ConfigMap>(client, ns).await;
        clear_kind::<ServiceAccount>(client, ns).await;
        clear_kind::<Service>(client, ns).await;
        clear_kind::<PodDisruptionBudget>(client, ns).await;
    }
    if pods {
        for ns in namespaces {
            no_pods_left(client, ns).await;
        }
    }
}

/// Removes the pods of the floor's Deployments (the world's namespaces
/// hold nothing else at that point) and waits until none is left. Once
/// their ReplicaSets are gone (before that they would be made again) the
/// pods are deleted with no grace period: the garbage collector's delete
/// would let each sit out its 30 s, which nothing on a kwok node cuts
/// short.
async fn no_pods_left(client: &Client, namespace: &str) {
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), namespace);
    let any = ListParams::default().limit(1);
    if !until_empty(&sets, &any, 3600, Duration::from_secs(1)).await {
        panic!(
            "the ReplicaSets of the floor's Deployments in {namespace} were not deleted in an hour"
        );
    }
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    let _ = api.delete_collection(&now, &ListParams::default()).await;
    if until_empty(&api, &any, 3600, Duration::from_secs(1)).await {
        return;
    }
    panic!("the pods of the floor's Deployments in {namespace} were not deleted in an hour");
}
