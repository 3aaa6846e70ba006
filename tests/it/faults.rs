//! The fault suite (issue 15): a world of Runtimes (granted, with jobs and
//! schedules, ungranted, revoked, suspended) on a private control plane
//! with an audit log, two agents on one Lease, and faults injected one
//! after the other. After each fault every Runtime must converge again and:
//!
//! - no managed object is lost (gone, or recreated with a new uid),
//!   orphaned (its owner gone), duplicated (a new object) or adopted (a
//!   new owner) compared with the converged world before the first fault;
//! - no agent wrote while it did not hold the Lease (judged from the
//!   apiserver's audit log, by the apiserver's own timestamps);
//! - no Runtime made a spurious transition (a granted one Blocked or not
//!   granted, a revoked one not Revoked, …), watched continuously;
//! - no Warning Event was published.
//!
//! Fault (f), the console under faults: the real console runs through the
//! kube-apiserver restarts and then has its own connection cut; each time
//! it must show "reconnecting…" with the last rows dimmed, then the
//! converged world again, resuming its watches rather than listing again
//! (after the cut; after an apiserver restart a relist is counted).
//!
//! Run alone: `cargo test -p berth-tests --test it faults_ -- --nocapture`
//! (prints the table). Sizes, from the environment:
//! `BERTH_FAULTS_RUNTIMES` (Runtimes, default 100), `BERTH_FAULTS_KILLS`
//! (agent kill -9 rounds, default 10), `BERTH_FAULTS_APISERVER_RESTARTS`
//! (default 3). CI sets smaller values, see docs/testing.md.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_shared::api::Runtime;
use berth_shared::render::labels::MANAGED_BY;
use berth_tests::audit;
use berth_tests::harness::{self, SharedCluster, TestNamespace};
use berth_tests::proxy::Proxy;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use rustix::process::{Pid, Signal, kill_process};
use serde_json::json;

mod pane;

use crate::agent_support::{
    Agent, AgentOpts, ENVIRONMENT, PROJECT, binding_for_service, condition, create_class,
    write_grants,
};

const LEASE_SECONDS: f64 = 4.0;
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(240);

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn random_below(n: u64) -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(n);
    h.finish() % n.max(1)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Granted, with a job and a schedule.
    GrantedJobs,
    /// Granted; its image is changed before faults (work in flight).
    Granted,
    /// No profile: default runtime, with a job.
    Ungranted,
    /// Granted by the first agent's file, revoked by the later one's.
    Revoked,
    /// Granted and suspended, with a schedule.
    Suspended,
}

/// Four in ten Runtimes are granted, one revoked, one suspended: a grants
/// file holds at most 64 bindings (one per profile-bearing Runtime), so
/// 100 Runtimes carry 60 profiles.
fn kind(i: usize) -> Kind {
    match i % 10 {
        0 | 1 => Kind::GrantedJobs,
        2 | 3 => Kind::Granted,
        4..=7 => Kind::Ungranted,
        8 => Kind::Revoked,
        _ => Kind::Suspended,
    }
}

fn rt_name(i: usize) -> String {
    format!("rt-{i:03}")
}

fn index_of(name: &str) -> Option<usize> {
    name.strip_prefix("rt-")?.parse().ok()
}

fn grant_name(i: usize) -> String {
    format!("bw-{i:03}")
}

fn spec(i: usize) -> serde_json::Value {
    let k = kind(i);
    let mut s = json!({
        "application": "analytics",
        "service": format!("svc-{i:03}"),
        "image": {"repository": "registry.invalid/berth/app", "tag": "1"},
        "replicas": 1,
    });
    if k != Kind::Ungranted {
        s["runtimeProfile"] = json!(grant_name(i));
    }
    if matches!(k, Kind::GrantedJobs | Kind::Ungranted) {
        s["jobs"] = json!([{"name": "migrate"}]);
    }
    if matches!(k, Kind::GrantedJobs | Kind::Suspended) {
        // A schedule that does not come while the test runs (only on 29
        // February): the CronJob controller's own Jobs would otherwise
        // count as new, unowned objects (a CI run across 03:00 UTC failed
        // this way).
        s["schedules"] = json!([{"name": "nightly", "schedule": "0 3 29 2 *"}]);
    }
    if k == Kind::Suspended {
        s["suspend"] = json!(true);
    }
    s
}

/// Whether a Runtime is where it must end up (after the revocation).
fn converged(rt: &Runtime, deployments: &BTreeMap<String, String>) -> Result<(), String> {
    let name = rt.name_any();
    let i = index_of(&name).ok_or("not a world Runtime")?;
    let generation = rt.metadata.generation;
    let conds = rt
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    if conds.is_empty() || conds.iter().any(|c| c.observed_generation != generation) {
        return Err(format!("{name}: status not at generation {generation:?}"));
    }
    let is = |t: &str, status: &str, reason: Option<&str>| {
        condition(rt, t).is_some_and(|c| c.status == status && reason.is_none_or(|r| c.reason == r))
    };
    let ok = match kind(i) {
        Kind::GrantedJobs | Kind::Granted | Kind::Ungranted => {
            let tag = rt.spec.image.tag.clone().unwrap_or_default();
            let image_ok = deployments
                .get(&name)
                .is_some_and(|img| img.ends_with(&format!(":{tag}")));
            is("Ready", "True", None) && image_ok
        }
        Kind::Revoked => is("Blocked", "True", Some("Revoked")),
        Kind::Suspended => is("Ready", "False", Some("Suspended")),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{name} ({:?}) not converged", kind(i)))
    }
}

/// A condition state that must never be seen for this kind once the world
/// has converged (before the first fault).
fn spurious(rt: &Runtime) -> Option<String> {
    let i = index_of(&rt.name_any())?;
    let c = |t: &str| condition(rt, t).map(|c| (c.status.clone(), c.reason.clone()));
    let blocked = c("Blocked");
    let bad = match kind(i) {
        Kind::GrantedJobs | Kind::Granted => {
            blocked.as_ref().is_some_and(|(s, _)| s == "True")
                || c("ProfileGranted").is_some_and(|(s, _)| s != "True")
        }
        Kind::Ungranted => blocked.as_ref().is_some_and(|(s, _)| s == "True"),
        Kind::Revoked => blocked
            .as_ref()
            .is_none_or(|(s, r)| s != "True" || r != "Revoked"),
        Kind::Suspended => c("Ready").is_none_or(|(s, r)| s != "False" || r != "Suspended"),
    };
    bad.then(|| {
        format!(
            "{} {:?}: Blocked={blocked:?} ProfileGranted={:?} Ready={:?}",
            rt.name_any(),
            kind(i),
            c("ProfileGranted"),
            c("Ready")
        )
    })
}

/// Kind/name → (uid, controller owner uid) of every managed object.
type Managed = BTreeMap<String, (String, String)>;

async fn managed_of<K>(client: &Client, ns: &str, out: &mut Managed)
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let list = Api::<K>::namespaced(client.clone(), ns)
        .list_metadata(
            &ListParams::default().labels(&format!("app.kubernetes.io/managed-by={MANAGED_BY}")),
        )
        .await
        .expect("list managed objects");
    for o in list.items {
        let owner = o
            .metadata
            .owner_references
            .as_ref()
            .and_then(|os| os.iter().find(|r| r.controller == Some(true)))
            .map(|r| r.uid.clone())
            .unwrap_or_default();
        out.insert(
            format!("{}/{}", K::kind(&()), o.name_any()),
            (o.uid().unwrap_or_default(), owner),
        );
    }
}

async fn managed(client: &Client, ns: &str) -> Managed {
    let mut m = Managed::new();
    managed_of::<ConfigMap>(client, ns, &mut m).await;
    managed_of::<ServiceAccount>(client, ns, &mut m).await;
    managed_of::<Service>(client, ns, &mut m).await;
    managed_of::<Deployment>(client, ns, &mut m).await;
    managed_of::<Job>(client, ns, &mut m).await;
    managed_of::<CronJob>(client, ns, &mut m).await;
    managed_of::<PodDisruptionBudget>(client, ns, &mut m).await;
    managed_of::<NetworkPolicy>(client, ns, &mut m).await;
    managed_of::<HorizontalPodAutoscaler>(client, ns, &mut m).await;
    m
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Damage {
    lost: usize,
    orphaned: usize,
    duplicated: usize,
    adopted: usize,
}

fn damage(
    baseline: &Managed,
    now: &Managed,
    runtime_uids: &BTreeSet<String>,
) -> (Damage, Vec<String>) {
    let mut d = Damage::default();
    let mut why = Vec::new();
    for (k, (uid, owner)) in baseline {
        match now.get(k) {
            None => {
                d.lost += 1;
                why.push(format!("lost {k}"));
            }
            Some((u, _)) if u != uid => {
                d.lost += 1;
                why.push(format!("recreated {k}"));
            }
            Some((_, o)) if o != owner => {
                d.adopted += 1;
                why.push(format!("adopted {k}"));
            }
            Some(_) => {}
        }
    }
    for (k, (_, owner)) in now {
        if !baseline.contains_key(k) {
            d.duplicated += 1;
            why.push(format!("new {k}"));
        }
        if !runtime_uids.contains(owner) {
            d.orphaned += 1;
            why.push(format!("orphaned {k}"));
        }
    }
    (d, why)
}

/// Warning Events about Runtimes: name → count (a repeat raises the count).
async fn warnings(client: &Client, ns: &str) -> BTreeMap<String, i32> {
    Api::<Event>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        // The agent's, about Runtimes (the scheduler's own warnings while
        // the apiserver restarts are not berth's).
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .filter(|e| {
            e.regarding
                .as_ref()
                .is_some_and(|r| r.kind.as_deref() == Some("Runtime"))
        })
        .map(|e| {
            let count = e
                .series
                .as_ref()
                .map(|s| s.count)
                .or(e.deprecated_count)
                .unwrap_or(1);
            (e.name_any(), count)
        })
        .collect()
}

fn new_warnings(base: &BTreeMap<String, i32>, now: &BTreeMap<String, i32>) -> usize {
    now.iter()
        .filter(|(k, c)| base.get(*k).is_none_or(|b| b < c))
        .count()
}

struct World {
    cluster: SharedCluster,
    client: Client,
    ns: TestNamespace,
    grants: PathBuf,
    lease: String,
    n: usize,
    agents: Vec<Agent>,
    next_agent: usize,
    /// Spurious condition states seen by the watcher.
    spurious: Arc<Mutex<Vec<String>>>,
    baseline: Managed,
    warnings: BTreeMap<String, i32>,
    audit_log: PathBuf,
    tag: usize,
    /// Non-leader writes, spurious states and warnings counted so far (rows
    /// show what each fault added).
    counted: (usize, usize, usize),
}

#[derive(Debug)]
struct Row {
    fault: &'static str,
    injected: usize,
    damage: Damage,
    non_leader_writes: usize,
    spurious: usize,
    warnings: usize,
    converge_max: Duration,
}

impl World {
    fn opts(&self, kubeconfig: Option<PathBuf>) -> AgentOpts<'_> {
        let mut o = AgentOpts::new(&self.ns.name, Some(&self.grants));
        o.lease_name = self.lease.clone();
        o.kubeconfig = Some(kubeconfig.unwrap_or_else(|| self.cluster.kubeconfig.clone()));
        o.resync_seconds = 30;
        o
    }

    async fn spawn_agent(&mut self, kubeconfig: Option<PathBuf>) {
        let identity = format!("agent-{}", self.next_agent);
        self.next_agent += 1;
        let a = {
            let mut o = self.opts(kubeconfig);
            o.identity = identity;
            Agent::spawn(o).await
        };
        self.agents.push(a);
    }

    async fn holder(&self) -> String {
        Api::<Lease>::namespaced(self.client.clone(), &self.ns.name)
            .get_opt(&self.lease)
            .await
            .ok()
            .flatten()
            .and_then(|l| l.spec?.holder_identity)
            .unwrap_or_default()
    }

    /// The index of the agent that leads (lease holder), waiting for one.
    async fn leader(&mut self) -> usize {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let holder = self.holder().await;
            self.replace_exited().await;
            for (i, a) in self.agents.iter().enumerate() {
                if a.log
                    .file_stem()
                    .is_some_and(|s| s.to_string_lossy() == holder)
                    && a.is_ready().await
                {
                    return i;
                }
            }
            assert!(
                Instant::now() < deadline,
                "no agent leads (holder {holder:?})"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Changes the image of every `Granted` Runtime: work for the agent.
    async fn perturb(&mut self) {
        self.tag += 1;
        let api: Api<Runtime> = Api::namespaced(self.client.clone(), &self.ns.name);
        for i in (0..self.n).filter(|i| kind(*i) == Kind::Granted) {
            api.patch(
                &rt_name(i),
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"image": {"tag": format!("{}", self.tag)}}})),
            )
            .await
            .expect("patch Runtime");
        }
    }

    async fn deployments(&self) -> BTreeMap<String, String> {
        Api::<Deployment>::namespaced(self.client.clone(), &self.ns.name)
            .list(
                &ListParams::default()
                    .labels(&format!("app.kubernetes.io/managed-by={MANAGED_BY}")),
            )
            .await
            .map(|l| l.items)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|d| {
                let image = d.spec?.template.spec?.containers.first()?.image.clone()?;
                Some((d.metadata.name?, image))
            })
            .collect()
    }

    /// Replaces agents that exited, as their Deployment would: an agent
    /// that cannot renew its lease (the apiserver or etcd restarting) exits
    /// non-zero by design.
    async fn replace_exited(&mut self) {
        let before = self.agents.len();
        self.agents.retain_mut(|a| a.exit_code().is_none());
        for _ in self.agents.len()..before {
            self.spawn_agent(None).await;
        }
    }

    /// Waits until every Runtime has converged; returns how long it took.
    async fn converge(&mut self, from: Instant, what: &str) -> Duration {
        let api: Api<Runtime> = Api::namespaced(self.client.clone(), &self.ns.name);
        let mut last = String::new();
        let waiting = Instant::now();
        loop {
            self.replace_exited().await;
            if let (Ok(list), deployments) = (
                api.list(&ListParams::default()).await,
                self.deployments().await,
            ) {
                let pending: Vec<String> = list
                    .items
                    .iter()
                    .filter_map(|rt| converged(rt, &deployments).err())
                    .collect();
                if pending.is_empty() && list.items.len() == self.n {
                    return from.elapsed();
                }
                last = format!(
                    "{} pending, e.g. {:?}",
                    pending.len(),
                    pending.iter().take(3).collect::<Vec<_>>()
                );
            }
            assert!(
                waiting.elapsed() < CONVERGE_TIMEOUT,
                "{what}: not converged after {CONVERGE_TIMEOUT:?}: {last}"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Checks the invariants against the baseline; returns the row.
    async fn check(&mut self, fault: &'static str, injected: usize, converge_max: Duration) -> Row {
        let now = managed(&self.client, &self.ns.name).await;
        let uids: BTreeSet<String> = Api::<Runtime>::namespaced(self.client.clone(), &self.ns.name)
            .list(&ListParams::default())
            .await
            .expect("list runtimes")
            .items
            .iter()
            .filter_map(|r| r.uid())
            .collect();
        let (d, why) = damage(&self.baseline, &now, &uids);
        let judged = audit::judge_writes(
            &audit::read(&self.audit_log),
            &self.ns.name,
            &self.lease,
            LEASE_SECONDS,
        );
        if !judged.lapsed_holder.is_empty() {
            // Not two writers (nobody else held the lease), but worth seeing.
            eprintln!(
                "after {fault}: {} write(s) by the sole holder after its lease lapsed: {:#?}",
                judged.lapsed_holder.len(),
                judged.lapsed_holder
            );
        }
        let violations = judged.non_leader;
        let spurious = berth_shared::sync::lock(&self.spurious).clone();
        let w = new_warnings(&self.warnings, &warnings(&self.client, &self.ns.name).await);
        if !why.is_empty() || !violations.is_empty() || !spurious.is_empty() || w > 0 {
            eprintln!(
                "after {fault}: damage {why:?}\nnon-leader writes {violations:#?}\nspurious {spurious:#?}\nnew warnings {w}"
            );
        }
        let (v0, s0, w0) = self.counted;
        self.counted = (violations.len(), spurious.len(), w);
        Row {
            fault,
            injected,
            damage: d,
            non_leader_writes: violations.len().saturating_sub(v0),
            spurious: spurious.len().saturating_sub(s0),
            warnings: w.saturating_sub(w0),
            converge_max,
        }
    }
}

/// Records every spurious condition state of a world Runtime.
fn watch_transitions(client: Client, ns: &str, out: Arc<Mutex<Vec<String>>>) {
    let api: Api<Runtime> = Api::namespaced(client, ns);
    tokio::spawn(async move {
        let stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects();
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            if let Ok(rt) = item
                && let Some(s) = spurious(&rt)
            {
                berth_shared::sync::lock(&out).push(s);
            }
        }
    });
}

async fn setup_world() -> World {
    let n = env_count("BERTH_FAULTS_RUNTIMES", 100);
    let cluster =
        tokio::task::spawn_blocking(|| harness::private_cluster_with("faults", &["--audit"]))
            .await
            .expect("cluster");
    let audit_log = cluster.dir.join("logs/audit.log");
    let client = cluster.admin_client().await;
    harness::install_crds(&client).await;
    let ns = TestNamespace::create(
        client.clone(),
        "faults-world".into(),
        &[
            ("berth.dev/project", PROJECT),
            ("berth.dev/environment", ENVIRONMENT),
        ],
    )
    .await;
    let class = format!("{}-bounded", ns.name);
    create_class(&client, &class, "bounded-runc").await;
    let binding = |i: usize| {
        binding_for_service(
            &grant_name(i),
            &class,
            "bounded-runc",
            &format!("svc-{i:03}"),
        )
    };
    let first: Vec<String> = (0..n)
        .filter(|i| kind(*i) != Kind::Ungranted)
        .map(binding)
        .collect();
    let later: Vec<String> = (0..n)
        .filter(|i| !matches!(kind(*i), Kind::Ungranted | Kind::Revoked))
        .map(binding)
        .collect();
    let first_grants = write_grants(&first);
    let grants = write_grants(&later);

    let api: Api<Runtime> = Api::namespaced(client.clone(), &ns.name);
    futures::stream::iter(0..n)
        .for_each_concurrent(8, |i| {
            let api = api.clone();
            let ns = ns.name.clone();
            async move {
                let rt: Runtime = serde_json::from_value(json!({
                    "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
                    "metadata": {"name": rt_name(i), "namespace": ns},
                    "spec": spec(i),
                }))
                .expect("runtime");
                api.create(&Default::default(), &rt)
                    .await
                    .expect("create Runtime");
            }
        })
        .await;

    let mut world = World {
        cluster,
        client: client.clone(),
        lease: "faults-agent".into(),
        grants,
        n,
        agents: Vec::new(),
        next_agent: 0,
        spurious: Arc::default(),
        baseline: Managed::new(),
        warnings: BTreeMap::new(),
        audit_log,
        tag: 1,
        counted: (0, 0, 0),
        ns,
    };
    // Phase 1: everything with a profile granted once (so that the later
    // file revokes some).
    let started = Instant::now();
    {
        let start_first = || {
            let mut o = world.opts(None);
            o.grants = Some(&first_grants);
            o.identity = "agent-first".into();
            Agent::start(o)
        };
        let mut first = start_first().await;
        let granted_once = || {
            let api = api.clone();
            async move {
                api.list(&ListParams::default()).await.is_ok_and(|l| {
                    l.items.len() == n
                        && l.items.iter().all(|rt| {
                            let i = index_of(&rt.name_any()).unwrap_or(0);
                            match kind(i) {
                                Kind::Ungranted | Kind::Suspended => {
                                    condition(rt, "Ready").is_some()
                                }
                                _ => condition(rt, "ProfileGranted")
                                    .is_some_and(|c| c.status == "True"),
                            }
                        })
                })
            }
        };
        // The agent exits when it cannot renew its Lease in time (as
        // designed: a Deployment starts it again). On a loaded CI machine
        // the apiserver once left a renewal unanswered 26 s into this
        // phase; started again here as a Deployment would, and said.
        let deadline = Instant::now() + CONVERGE_TIMEOUT;
        let mut restarts = 0;
        while !granted_once().await {
            if let Some(code) = first.exit_code() {
                restarts += 1;
                eprintln!("faults: agent-first exited ({code:?}); started again ({restarts})");
                first = start_first().await;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {CONVERGE_TIMEOUT:?} waiting for every profile granted once ({restarts} restarts of the agent)"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        first.kill();
    }
    eprintln!(
        "world of {n} Runtimes granted once in {:?}",
        started.elapsed()
    );
    // Phase 2: two agents with the later file; converge; baseline.
    world.spawn_agent(None).await;
    world.spawn_agent(None).await;
    world.leader().await;
    let took = world.converge(started, "initial convergence").await;
    eprintln!("world converged (revocations included) in {took:?}");
    world.baseline = managed(&world.client, &world.ns.name).await;
    world.warnings = warnings(&world.client, &world.ns.name).await;
    watch_transitions(world.client.clone(), &world.ns.name, world.spurious.clone());
    world
}

/// A console pane showing the converged world of `n` Runtimes: all listed,
/// connected, nothing dimmed, the revoked rt-008 shown Revoked.
fn world_shown(n: usize) -> impl Fn(&str) -> bool {
    move |p: &str| {
        p.contains(&format!(" {n}/{n} "))
            && p.contains("connected")
            && !p.contains("reconnecting")
            && !p.contains("last known data")
            && p.lines()
                .any(|l| l.contains(&rt_name(8)) && l.contains("Revoked"))
    }
}

fn print_table(rows: &[Row]) {
    eprintln!(
        "\n| fault | injected | lost | orphaned | duplicated | adopted | writes by non-leaders | spurious transitions | spurious warnings | max time to converge |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        eprintln!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} s |",
            r.fault,
            r.injected,
            r.damage.lost,
            r.damage.orphaned,
            r.damage.duplicated,
            r.damage.adopted,
            r.non_leader_writes,
            r.spurious,
            r.warnings,
            r.converge_max.as_secs_f64()
        );
    }
}

fn sig(pid: u32, s: Signal) {
    if let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process(p, s);
    }
}

/// Process ids whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    berth_tests::procfs::command_lines()
        .into_iter()
        .filter(|(_, args)| args.iter().any(|a| a.contains(needle)))
        .map(|(pid, _)| pid)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_world_survives_every_fault() {
    let mut w = setup_world().await;
    let mut rows = Vec::new();

    // (a) the leader killed (SIGKILL) at a random point of convergence.
    let kills = env_count("BERTH_FAULTS_KILLS", 10);
    let mut worst = Duration::ZERO;
    for _ in 0..kills {
        let leader = w.leader().await;
        w.perturb().await;
        tokio::time::sleep(Duration::from_millis(random_below(3000))).await;
        let t = Instant::now();
        w.agents[leader].kill();
        w.agents.remove(leader);
        w.spawn_agent(None).await;
        worst = worst.max(w.converge(t, "after agent kill -9").await);
    }
    rows.push(
        w.check("agent kill -9 during convergence", kills, worst)
            .await,
    );

    // (b) kube-apiserver restarted, agents and the console running, work
    // in flight.
    let console = Arc::new(
        pane::Console::start(
            &w.cluster.kubeconfig,
            w.cluster.apiserver_addr(),
            &w.cluster.dir,
            &w.ns.name,
            &w.lease,
        )
        .await,
    );
    let shows_world = world_shown(w.n);
    tokio::task::block_in_place(|| {
        console.wait(
            "the converged world",
            Duration::from_secs(120),
            &shows_world,
        )
    });
    let lists_at_start = pane::console_lists(&w.audit_log);
    let restarts = env_count("BERTH_FAULTS_APISERVER_RESTARTS", 3);
    let mut worst = Duration::ZERO;
    let mut console_worst = Duration::ZERO;
    let mut console_seen = Vec::new();
    for _ in 0..restarts {
        w.perturb().await;
        let t = Instant::now();
        let observer = console.observe();
        let c = &w.cluster;
        tokio::task::block_in_place(|| c.restart("kube-apiserver", Duration::from_secs(180)))
            .expect("restart kube-apiserver");
        // From the moment the apiserver answers again, beside the agents'
        // convergence (which replaces the agents that exited).
        let shown = tokio::task::spawn_blocking({
            let (console, n) = (console.clone(), w.n);
            move || {
                console.wait(
                    "the world after a kube-apiserver restart",
                    Duration::from_secs(120),
                    world_shown(n),
                )
            }
        });
        worst = worst.max(w.converge(t, "after kube-apiserver restart").await);
        let (_, back) = shown.await.expect("console wait");
        console_worst = console_worst.max(back);
        console_seen.push(observer.finish());
    }
    rows.push(w.check("kube-apiserver restart", restarts, worst).await);
    let relists_after_restarts = pane::console_lists(&w.audit_log) - lists_at_start;

    // (f) the console's own connection cut (refused for a while) and
    // restored; the world changes meanwhile (rt-004 scaled to 2).
    let lists_before_cut = pane::console_lists(&w.audit_log);
    let watches_before_cut = pane::console_watches(&w.audit_log);
    let observer = console.observe();
    console.proxy.refuse();
    let scale = |replicas: i32| {
        let api: Api<Runtime> = Api::namespaced(w.client.clone(), &w.ns.name);
        async move {
            api.patch(
                &rt_name(4),
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": replicas}})),
            )
            .await
            .expect("scale rt-004");
        }
    };
    scale(2).await;
    tokio::task::block_in_place(|| {
        console.wait(
            "reconnecting… after the cut",
            Duration::from_secs(30),
            |p| p.contains("reconnecting…"),
        )
    });
    // The agent (on its own path) publishes the new size meanwhile: the
    // console must show what the cluster says, so wait for the cluster to
    // say it first (a slow agent is not the console's recovery time, and a
    // timeout here names the agent, not the console).
    let t_cut = Instant::now();
    let desired = |rt: &Runtime| {
        rt.status
            .as_ref()
            .and_then(|s| s.rollout.as_ref())
            .map(|r| (r.ready, r.desired))
    };
    let runtimes: Api<Runtime> = Api::namespaced(w.client.clone(), &w.ns.name);
    harness::wait_for_ok(
        "the agent to publish rt-004's new size (desired 2)",
        Duration::from_secs(60),
        || async {
            let rt = runtimes.get(&rt_name(4)).await.map_err(|e| e.to_string())?;
            match desired(&rt) {
                Some((_, 2)) => Ok(()),
                seen => Err(format!(
                    "(ready, desired) = {seen:?}, generation {:?}, status {:?}",
                    rt.metadata.generation, rt.status
                )),
            }
        },
    )
    .await;
    // Unreachable for a few seconds at least, as a short outage would be.
    tokio::time::sleep(Duration::from_secs(3).saturating_sub(t_cut.elapsed())).await;
    let t_restore = Instant::now();
    console.proxy.accept();
    let scaled_shown = |p: &str| {
        shows_world(p)
            && p.lines()
                .any(|l| l.contains(&rt_name(4)) && l.contains("/2 "))
    };
    tokio::task::block_in_place(|| {
        console.wait(
            "the world (rt-004 scaled to 2) after the cut",
            Duration::from_secs(60),
            scaled_shown,
        )
    });
    let cut_recovered = t_restore.elapsed();
    console_worst = console_worst.max(cut_recovered);
    let cut_seen = observer.finish();
    let relists_after_cut = pane::console_lists(&w.audit_log) - lists_before_cut;
    let rewatches_after_cut = pane::console_watches(&w.audit_log) - watches_before_cut;
    drop(console);
    scale(1).await;
    w.converge(Instant::now(), "after the console's cut").await;
    rows.push(
        w.check(
            "console: apiserver restarts + connection cut (proxy)",
            restarts + 1,
            console_worst,
        )
        .await,
    );
    eprintln!(
        "console: kube-apiserver restarts: shown reconnecting {}/{restarts}, rows dimmed {}/{restarts}, relists {relists_after_restarts} (Runtimes LISTs by berth-console/ in the audit log); cut: reconnecting {}, dimmed {}, relists {relists_after_cut}, watches resumed {rewatches_after_cut}, recovered {cut_recovered:.1?} after the path was restored; the table's time for the console is the longest from the apiserver (path) being back to the console showing the world",
        console_seen.iter().filter(|s| s.reconnecting).count(),
        console_seen.iter().filter(|s| s.dimmed).count(),
        cut_seen.reconnecting,
        cut_seen.dimmed,
    );
    for s in console_seen.iter().chain([&cut_seen]) {
        eprintln!("console errors shown: {:?}", s.errors);
    }
    // The Runtime watch of a restart may fail only for the moment between
    // its 410 and the end of its relist (when the new apiserver answered
    // before the watch was retried), too short to be sure to see it dimmed
    // here: that is asserted for the cut, and counted for the restarts.
    for (i, s) in console_seen.iter().enumerate() {
        assert!(
            s.reconnecting,
            "console during kube-apiserver restart {}: {s:?}",
            i + 1
        );
    }
    assert!(
        cut_seen.reconnecting && cut_seen.dimmed,
        "console during the cut: {cut_seen:?}"
    );
    assert_eq!(
        relists_after_cut, 0,
        "the console listed Runtimes again after a cut it could resume from"
    );
    assert!(
        rewatches_after_cut >= 1,
        "the console's Runtime watch was not started again after the cut"
    );

    // (c) etcd restarted.
    w.perturb().await;
    let t = Instant::now();
    let c = &w.cluster;
    tokio::task::block_in_place(|| c.restart("etcd", Duration::from_secs(180)))
        .expect("restart etcd");
    let took = w.converge(t, "after etcd restart").await;
    rows.push(w.check("etcd restart", 1, took).await);

    // (d) the leader frozen past its lease, then resumed (a frozen process
    // has not exited: it is not replaced meanwhile).
    let leader = w.leader().await;
    let frozen_pid = w.agents[leader].pid();
    let frozen_name = w.holder().await;
    let t = Instant::now();
    sig(frozen_pid, Signal::STOP);
    let mut taken_over = None;
    while t.elapsed() < Duration::from_secs(30) {
        let h = w.holder().await;
        if !h.is_empty() && h != frozen_name {
            taken_over = Some(t.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let takeover = taken_over.expect("the standby takes over from a frozen leader");
    eprintln!("standby took over {takeover:?} after SIGSTOP");
    w.perturb().await;
    let took = w.converge(t, "with the old leader frozen").await;
    sig(frozen_pid, Signal::CONT);
    // Resumed, it must notice it lost and exit without writing (the audit
    // check below covers the writing).
    harness::wait_for(
        "the resumed old leader exits",
        Duration::from_secs(30),
        || {
            let exited = w.agents[leader].exit_code().is_some();
            async move { exited }
        },
    )
    .await;
    w.agents.remove(leader);
    w.spawn_agent(None).await;
    w.perturb().await;
    let took = took.max(
        w.converge(Instant::now(), "after the old leader resumed")
            .await,
    );
    assert!(
        takeover <= Duration::from_secs_f64(LEASE_SECONDS + 5.0),
        "takeover took {takeover:?} (lease {LEASE_SECONDS} s)"
    );
    rows.push(
        w.check("leader SIGSTOP past its lease, resumed", 1, took)
            .await,
    );

    // (e) the leader's network path stalled through a proxy longer than the lease.
    for mut a in std::mem::take(&mut w.agents) {
        a.kill();
    }
    let proxy = Proxy::start(w.cluster.apiserver_addr())
        .await
        .expect("proxy");
    let proxied = proxy.kubeconfig(&w.cluster.kubeconfig, "faults-proxied");
    w.spawn_agent(Some(proxied)).await;
    w.leader().await;
    w.spawn_agent(None).await;
    w.perturb().await;
    tokio::time::sleep(Duration::from_millis(random_below(1500))).await;
    let t = Instant::now();
    proxy.stall();
    tokio::time::sleep(Duration::from_secs_f64(LEASE_SECONDS * 2.0)).await;
    proxy.restore();
    let took = w.converge(t, "after a network stall").await;
    rows.push(
        w.check("apiserver path stalled 2x lease (proxy)", 1, took)
            .await,
    );

    print_table(&rows);

    // Last: berth-localcluster SIGKILLed; its supervisors stop every component.
    for mut a in std::mem::take(&mut w.agents) {
        a.kill();
    }
    let dir = w.cluster.dir.display().to_string();
    assert!(!processes_mentioning(&dir).is_empty(), "components run");
    sig(w.cluster.pid(), Signal::KILL);
    let t = Instant::now();
    harness::wait_for(
        "every component stops after berth-localcluster is SIGKILLed",
        Duration::from_secs(30),
        || {
            let left = processes_mentioning(&dir);
            async move { left.is_empty() }
        },
    )
    .await;
    eprintln!(
        "components stopped {:?} after berth-localcluster was SIGKILLed",
        t.elapsed()
    );

    // The audit judgement is not vacuous: it saw the agents' writes.
    let agent_writes = audit::read(&w.audit_log)
        .iter()
        .filter(|e| e.agent_identity().is_some() && e.resource() != "leases")
        .count();
    eprintln!("{agent_writes} agent writes (other than the lease) judged from the audit log");
    assert!(
        agent_writes >= w.n,
        "the audit log shows the agents' writes"
    );
    for r in &rows {
        assert_eq!(
            r.damage,
            Damage::default(),
            "{}: managed objects damaged",
            r.fault
        );
        assert_eq!(
            r.non_leader_writes, 0,
            "{}: writes by a non-leader",
            r.fault
        );
        assert_eq!(r.spurious, 0, "{}: spurious transitions", r.fault);
        assert_eq!(r.warnings, 0, "{}: spurious Warning events", r.fault);
    }
}
