//! The floor of agent convergence: a bare server-side-apply client that
//! applies the same rendered objects the agent would, Runtime after
//! Runtime, with the agent's concurrency. Deployments go in paused (one
//! field more) so the floor does not make the controllers create a second
//! set of pods, unless `--floor-pods` asks for the floor that pays for
//! them as the agent does; everything is deleted again before the agent
//! starts.

use std::time::{Duration, Instant};

use berth_shared::api::Runtime;
use berth_shared::render;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::world::Planned;

const FIELD_MANAGER: &str = "berth-bench-floor";
/// Selects what the floor applied (the rendered objects carry berth's
/// labels, which the agent's objects carry too; the floor runs first and
/// removes its objects before the agent starts).
const MANAGED: &str = "app.kubernetes.io/managed-by=berth";

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

async fn apply_runtime(
    client: Client,
    runtime: Runtime,
    planned: Planned,
    pods: bool,
) -> Result<(), FloorError> {
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
    Ok(apply(&client, &r.pod_disruption_budget).await?)
}

/// Applies every Runtime's rendered objects, `concurrency` Runtimes at a
/// time (Deployments paused unless `pods`); returns the wall time and the
/// number of objects applied.
pub async fn measure(
    client: &Client,
    stored: &[Runtime],
    plan: &[Planned],
    concurrency: usize,
    pods: bool,
) -> (Duration, usize) {
    let started = Instant::now();
    futures::stream::iter(stored.iter().cloned().zip(plan.iter().cloned()))
        .map(|(rt, p)| apply_runtime(client.clone(), rt, p, pods))
        .buffer_unordered(concurrency.max(1))
        .try_collect::<Vec<()>>()
        .await
        .unwrap_or_else(|e| panic!("the floor's apply failed: {e}"));
    (started.elapsed(), stored.len() * 5)
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
/// `pods`, also every pod its Deployments made).
pub async fn clear(client: &Client, namespaces: &[String], pods: bool) {
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

/// Waits until the garbage collector has removed the pods of the floor's
/// Deployments (the world's namespaces hold nothing else at that point).
async fn no_pods_left(client: &Client, namespace: &str) {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let lp = ListParams::default().limit(1);
    if until_empty(&api, &lp, 3600, Duration::from_secs(1)).await {
        return;
    }
    panic!("the pods of the floor's Deployments in {namespace} were not deleted in an hour");
}
