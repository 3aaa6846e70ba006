//! Upgrade and rollback of berth as shipped (issue 55, item 3): the
//! previous release (`previous::`, the commit `PREVIOUS_RELEASE_COMMIT` of
//! tests/k8s/versions.env: its chart, and its image built by its own
//! `assets/image/build.sh`) is installed with `helm install` as the
//! as-shipped test installs the current one; Runtimes are made in several
//! states on the real node; then `helm upgrade` to this tree's chart and
//! image, and `helm rollback` to the first revision. It shows:
//! - no workload rolled: every Deployment of the Runtimes keeps its
//!   generation and pod template, every pod (and the Job's) its uid, and
//!   no Job ran again (`git diff <previous> -- shared/src/render` is empty
//!   for 38de520; docs/upgrade.md's release notes say what changes);
//! - no Runtime's status changed: phase, conditions (with their transition
//!   times), profile decision, rollout and job records are what the
//!   previous agent wrote;
//! - the CRDs were upgraded in place: the same objects (uid), with this
//!   chart's schema, `v1alpha1` the one stored version, and every stored
//!   Runtime and RuntimeGrant reads back into this tree's types and passes
//!   the new schema (a dry-run create of a copy, which validation ratcheting
//!   does not spare);
//! - no writes at rest once the upgrade settled: the apiserver counts no
//!   write to the agent's kinds (`apiserver_request_total`) over a window,
//!   and its audit log shows none by any agent replica (but its Lease);
//! - after `helm rollback`, the previous agent runs again, leads, and every
//!   workload, pod and Runtime status is still as it was.
//!
//! The states: `api` granted and Ready (Complete) on the real node;
//! `worker` granted and Ready with a one-time Job run to completion;
//! `idle` granted and suspended (Suspended); `held` granted, rolled out,
//! then Blocked `ClassDeleting` (its RuntimeClass deleted and held by a
//! finalizer), its workloads kept. Each has a service no other test uses
//! (`service_of`): an identity is cluster-wide.
//!
//! It takes the real node alone (`NODE`), like the as-shipped test, for
//! the same reasons; and its release is removed whatever the outcome.

use std::time::{Duration, Instant};

use berth_shared::api::Runtime;
use berth_tests::harness::{self, TestNamespace, wait_for_value};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::api::DeleteParams;
use kube::{Api, Client};
use serde_json::{Value, json};

mod crds;
mod world;

use self::crds::{crds_are, stored_objects_valid};
use self::world::{assert_same, world};
use super::previous;
use super::release::{self, NAMESPACE, Release};
use super::{
    Image, agent_pods, fail_if_stuck, holder, import, imported_image, is_ready, name_of,
    release_namespace, this_cluster_values,
};
use crate::agent_support::{
    binding_for_service, create_class, wait_condition, wait_condition_within,
};
use crate::real_node::{self, NODE, WAIT};
use crate::support::class_hold;

/// The Runtimes, by name (each its own service, so its own identity).
const RUNTIMES: [&str; 4] = ["api", "worker", "idle", "held"];

/// Runtime `name`'s service: one no other test on the shared real-node
/// cluster uses. An identity is cluster-wide, and the as-shipped test's
/// Runtime `api` (service `api`) may still stand when this one runs: the
/// full run of 3e0ad34 failed here with `IdentityTaken`.
fn service_of(name: &str) -> String {
    format!("upgraded-{name}")
}

/// Waits until exactly two agent pods exist, both Ready on `node` and
/// running `image` by digest (the rollout of an upgrade or a rollback is
/// over: no pod of the other image is left, not even terminating); their
/// names.
async fn agents_running(client: &Client, node: &str, image: &Image) -> Vec<String> {
    wait_for_value(
        &format!(
            "2 agent pods Ready on {node}, and only them, from {}",
            image.digest
        ),
        WAIT,
        || async {
            let pods = agent_pods(client).await;
            fail_if_stuck(&pods);
            let ours = |p: &Pod| {
                is_ready(p)
                    && p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node)
                    && p.spec.as_ref().is_some_and(|s| {
                        s.containers.iter().all(|c| {
                            c.image
                                .as_deref()
                                .is_some_and(|i| i.ends_with(&image.digest))
                        })
                    })
            };
            (pods.len() == 2 && pods.iter().all(ours)).then(|| pods.iter().map(name_of).collect())
        },
    )
    .await
}

/// The agent replica `pod`'s metrics (through the apiserver's pod proxy).
async fn agent_metrics(client: &Client, pod: &str) -> Option<String> {
    let path = format!("/api/v1/namespaces/{NAMESPACE}/pods/{pod}:8080/proxy/metrics");
    let req = http::Request::get(&path).body(Vec::new()).ok()?;
    client.request_text(req).await.ok()
}

/// Each of `agents` says, in `berth_agent_build_info`, that it was built
/// from `commit`: the image by digest is the release meant (the two
/// builds share a target directory).
async fn built_from(client: &Client, agents: &[String], commit: &str) {
    let label = format!("commit=\"{commit}\"");
    for pod in agents {
        let m = wait_for_value(&format!("{pod}'s metrics"), WAIT, || {
            agent_metrics(client, pod)
        })
        .await;
        let info = m
            .lines()
            .find(|l| l.starts_with("berth_agent_build_info{"))
            .unwrap_or_default();
        assert!(
            info.contains(&label),
            "agent {pod} is not built from {commit}: {info}"
        );
    }
}

/// Waits until the leader `pod` has done as many reconciles as there are
/// Runtimes (a new leader reconciles each at once; the next resync is 300 s
/// away), then 10 s more for what those passes set off (status writes,
/// Events): what it would change, it has changed by then, and the quiet
/// windows of [`quiet_at_rest`] check that it has.
async fn leader_settled(client: &Client, pod: &str) {
    let want = RUNTIMES.len() as f64;
    wait_for_value(
        &format!("{want} reconciles by the leader {pod}"),
        WAIT,
        || async {
            let m = agent_metrics(client, pod).await?;
            (crate::agent_support::reconciles(&m) >= want).then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(10)).await;
}

/// Every write in the audit log by an agent replica (its User-Agent names
/// it), but to its Lease.
fn agent_writes(audit_log: &std::path::Path) -> Vec<String> {
    berth_tests::audit::read(audit_log)
        .into_iter()
        .filter(|e| e.agent_identity().is_some())
        .filter(|e| e.resource() != "leases")
        .map(|e| {
            let o = e.object_ref.clone().unwrap_or_default();
            format!(
                "{} {}/{} {}/{} by {} at {}",
                e.verb,
                o.resource,
                o.subresource,
                o.namespace,
                o.name,
                e.agent_identity().unwrap_or_default(),
                e.request_received_timestamp
            )
        })
        .collect()
}

/// No writes at rest: over a 30 s window the apiserver counts no write to
/// the agent's kinds, and its audit log none by an agent replica (but its
/// Lease). The counter has no user label, so a write of the control
/// plane's (a finished test's namespace deleted in the background) may
/// fall in a window: up to three windows are tried and the last must be
/// zero; the audit log, which names the writer, must show none in any.
/// What the agents wrote since `since` (the upgrade's own writes) is
/// printed.
async fn quiet_at_rest(client: &Client, audit_log: &std::path::Path, since: usize, what: &str) {
    let settling = agent_writes(audit_log);
    eprintln!(
        "upgrade: the agents' writes while {what} settled ({}):\n  {}",
        settling.len().saturating_sub(since),
        settling.get(since..).unwrap_or_default().join("\n  ")
    );
    let audited_before = settling.len();
    let mut windows = Vec::new();
    for _ in 0..3 {
        let start = harness::apiserver_requests(client, harness::agent_kind_write).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
        let end = harness::apiserver_requests(client, harness::agent_kind_write).await;
        windows.push(end - start);
        if end == start {
            break;
        }
    }
    let audited = agent_writes(audit_log);
    assert_eq!(
        audited.get(audited_before..).unwrap_or_default(),
        &[] as &[String],
        "the agents' writes at rest after {what}, by the apiserver's audit log"
    );
    assert_eq!(
        windows.last(),
        Some(&0.0),
        "writes to the agent's kinds at rest after {what}, by apiserver_request_total, in every 30 s window: {windows:?}"
    );
    eprintln!("upgrade: no writes at rest after {what} (windows {windows:?})");
}

#[tokio::test]
async fn upgrade_from_the_previous_release_and_rollback_on_the_real_node() {
    let Some((cluster, info)) = real_node::real().await else {
        return;
    };
    if !crate::image::tools_present(
        "upgrade_from_the_previous_release_and_rollback_on_the_real_node",
    ) {
        return;
    }
    let started = Instant::now();
    let _exclusive = NODE.write().await;
    let client = cluster.admin_client().await;
    let node = info.nodes[0].name.clone();
    let audit_log = cluster.dir.join("logs/audit.log");

    // This tree's image first (the previous build waits for it).
    let current = imported_image(&info).await;
    let previous = tokio::task::spawn_blocking(previous::previous)
        .await
        .expect("the previous release");
    let old = import(&info, &previous.archive, &previous.reference());
    let old_chart = previous.chart();
    let new_chart = std::path::PathBuf::from(crate::chart::chart_arg());
    eprintln!(
        "upgrade: from {} ({}) to this tree ({}) ({:?})",
        previous.commit,
        old.digest,
        current.digest,
        started.elapsed()
    );

    // The tenant's namespace, its class and a grant per Runtime.
    let ns = real_node::namespace(cluster, "upgrade").await;
    let class = format!("{}-bounded-runc", ns.name);
    create_class(&ns.client, &class, "bounded-runc").await;
    let alias = |service: &str| format!("{}-{service}", ns.name);
    // `held` has a class of its own, to be deleted under it, on another
    // handler: the release's policy refuses a second class on a granted
    // handler (`berth-granted-runtimeclasses`). The finalizer that will
    // keep it deleting goes on now, before the release and its policy are
    // there; the guard that takes it off again is dropped after the
    // release's, once that policy is gone.
    let held_class = format!("{}-held", ns.name);
    create_class(&ns.client, &held_class, "runc").await;
    class_hold::hold(&client, &held_class)
        .await
        .expect("hold the class");
    let _let_go = LetGo {
        kubeconfig: cluster.kubeconfig.clone(),
        name: held_class.clone(),
    };
    let bindings: Vec<String> = RUNTIMES
        .iter()
        .map(|&s| {
            let (class, handler) = if s == "held" {
                (&held_class, "runc")
            } else {
                (&class, "bounded-runc")
            };
            binding_for_service(&alias(s), class, handler, &service_of(s))
        })
        .collect();
    let grants = berth_tests::grants_file::text(&bindings);
    let _release = Release {
        kubeconfig: cluster.kubeconfig.clone(),
        node: node.clone(),
    };
    release_namespace(&client, &grants).await;

    // The previous release, as the as-shipped test installs this one, and
    // with `--force-conflicts`: the real-node tests apply the CRDs
    // (`harness::install_crds`, field manager `berth-tests`) with this
    // tree's text, which differs from the previous chart's; forced, the
    // release takes those fields over, and is then their one manager, as
    // on a cluster where the previous release created them. The upgrade is
    // not forced.
    let mut values = this_cluster_values(&old_chart);
    values.push("--force-conflicts".to_string());
    let out = release::install_chart(&cluster.kubeconfig, &old_chart, &old, &values).await;
    assert!(out.contains("STATUS: deployed"), "{out}");
    let agents = agents_running(&client, &node, &old).await;
    built_from(&client, &agents, previous.commit).await;
    let (leader, _) = holder(&client, &agents).await;
    let crd_uids = crds_are(&client, &old_chart, None).await;
    eprintln!(
        "upgrade: previous release Ready {agents:?}, leader {leader} ({:?})",
        started.elapsed()
    );

    // The Runtimes, in their states.
    let spec = |name: &str, extra: Value| {
        let mut s = real_node::on_real_node(
            &info,
            &service_of(name),
            json!({"runtimeProfile": alias(name)}),
        );
        if let (Some(s), Some(e)) = (s.as_object_mut(), extra.as_object()) {
            s.extend(e.clone());
        }
        s
    };
    super::create_granted(&ns, "api", spec("api", json!({}))).await;
    super::create_granted(
        &ns,
        "worker",
        spec(
            "worker",
            json!({"jobs": [{"name": "migrate", "args": ["migrate"]}]}),
        ),
    )
    .await;
    super::create_granted(&ns, "idle", spec("idle", json!({"suspend": true}))).await;
    super::create_granted(&ns, "held", spec("held", json!({}))).await;
    for name in ["api", "worker", "held"] {
        // Real pods on the real node: its wait, not the simulated one's
        // (under four tests at a time 120 s ran out once on 1.34).
        wait_condition_within(&ns, name, "Ready", "True", None, WAIT).await;
    }
    job_succeeded(&ns, "worker").await;
    phase(&ns, "idle", "Suspended").await;
    // `held` Blocked: its class deleted, and held in deletion by the
    // finalizer (an update, which wakes the previous agent too; a class
    // deleted outright woke it only at its 300 s resync, the bug the
    // agent_deletions test guards). Its workloads stay as they were.
    Api::<RuntimeClass>::all(client.clone())
        .delete(&held_class, &DeleteParams::default())
        .await
        .expect("delete the held class");
    wait_condition(&ns, "held", "Blocked", "True", Some("ClassDeleting")).await;
    // Settled under the previous agent, then recorded.
    leader_settled(&client, &leader).await;
    let leader_now = holder(&client, &agents).await.0;
    let before = world(&ns).await;
    assert!(before.deployments.len() >= 2, "{before:?}");
    assert!(
        before.pods.len() >= 3,
        "two servers and the Job's pod: {before:?}"
    );
    eprintln!(
        "upgrade: recorded {} Runtimes, {} Deployments, {} pods, {} Jobs (leader {leader_now}; {:?})",
        before.statuses.len(),
        before.deployments.len(),
        before.pods.len(),
        before.jobs.len(),
        started.elapsed()
    );

    // helm upgrade to this tree's chart and image.
    let audited = agent_writes(&audit_log).len();
    let out = release::upgrade(
        &cluster.kubeconfig,
        &new_chart,
        &current,
        &this_cluster_values(&new_chart),
    )
    .await;
    assert!(out.contains("STATUS: deployed"), "{out}");
    let crd_uids_now = crds_are(&client, &new_chart, Some(&crd_uids)).await;
    let agents = agents_running(&client, &node, &current).await;
    built_from(&client, &agents, &crate::image::head_commit()).await;
    let (leader, _) = holder(&client, &agents).await;
    eprintln!(
        "upgrade: upgraded, agents {agents:?}, leader {leader} ({:?})",
        started.elapsed()
    );
    leader_settled(&client, &leader).await;
    assert_same(&before, &world(&ns).await, "the upgrade");
    stored_objects_valid(&ns, RUNTIMES.len()).await;
    quiet_at_rest(&client, &audit_log, audited, "the upgrade").await;
    assert_same(&before, &world(&ns).await, "the upgrade, at rest");

    // helm rollback to the first revision: the previous release again.
    let out = release::rollback(&cluster.kubeconfig, 1).await;
    assert!(out.contains("Rollback was a success"), "{out}");
    crds_are(&client, &old_chart, Some(&crd_uids_now)).await;
    let agents = agents_running(&client, &node, &old).await;
    built_from(&client, &agents, previous.commit).await;
    let (leader, _) = holder(&client, &agents).await;
    leader_settled(&client, &leader).await;
    assert_same(&before, &world(&ns).await, "the rollback");
    for name in ["api", "worker", "held"] {
        let pods = crate::agent_support::server_pods(&ns, name).await;
        assert!(
            !pods.is_empty() && pods.iter().all(is_ready),
            "{name}'s pods run after the rollback: {:?}",
            pods.iter().map(name_of).collect::<Vec<_>>()
        );
    }
    eprintln!(
        "upgrade: rolled back, agents {agents:?}, leader {leader}; passed in {:?}",
        started.elapsed()
    );
}

/// Lets the held class go (drops its finalizer) whatever the outcome,
/// through a client of its own: the test's client runs on the test's
/// runtime, which a `Drop` blocks (with it, a run that passed hung here).
struct LetGo {
    kubeconfig: std::path::PathBuf,
    name: String,
}

impl Drop for LetGo {
    fn drop(&mut self) {
        release::block_on_aside(async {
            let client =
                berth_tests::localcluster::health::client_from_kubeconfig(&self.kubeconfig)
                    .await
                    .expect("client");
            let _ = class_hold::let_go(&client, &self.name).await;
        });
    }
}

/// Waits until Runtime `name`'s rollout phase is `want`; the Runtime.
async fn phase(ns: &TestNamespace, name: &str, want: &str) -> Runtime {
    let api: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    wait_for_value(&format!("Runtime {name} {want}"), WAIT, || async {
        let rt = api.get(name).await.ok()?;
        let phase = rt.status.as_ref()?.rollout.as_ref()?.phase;
        (phase.as_str() == want).then_some(rt)
    })
    .await
}

/// Waits until the one-time Job of Runtime `name` has succeeded.
async fn job_succeeded(ns: &TestNamespace, name: &str) {
    let runtimes: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    let jobs: Api<Job> = Api::namespaced(ns.client.clone(), &ns.name);
    wait_for_value(&format!("the Job of {name} succeeded"), WAIT, || async {
        let rt = runtimes.get(name).await.ok()?;
        let job = rt.status?.jobs.first()?.job.clone();
        let status = jobs.get(&job).await.ok()?.status?;
        (status.succeeded.unwrap_or(0) >= 1).then_some(())
    })
    .await;
}
