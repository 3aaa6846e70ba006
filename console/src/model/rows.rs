//! The rows of every view, derived from the [`Store`] by pure functions.
//! The TUI tables and `berth get` print the same rows.

use std::collections::BTreeMap;

use berth_shared::analysis::{
    self, NodeInfo, RemovalVerdict, RetainReason, Workload, WorkloadKind, WorkloadSources,
};
use berth_shared::api::{ProfileState, RolloutPhase, Runtime, RuntimeGrant, condition_types};
use berth_shared::decide::{GrantBinding, ObservedClass};
use berth_shared::sanitize;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::store::{Kind, ObjKey, Store};

/// Placeholder for an absent value.
pub const NONE: &str = "-";

/// A kubectl-style age: `42s`, `5m`, `3h`, `2d`.
pub fn age(ts: Option<&Time>, now: Timestamp) -> String {
    let Some(ts) = ts else {
        return NONE.to_string();
    };
    let secs = now.as_second() - ts.0.as_second();
    human_duration(secs)
}

/// Seconds as `42s`, `5m`, `3h`, `2d` (negative clamps to 0s).
pub fn human_duration(secs: i64) -> String {
    let secs = secs.max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

fn condition<'a>(conds: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conds.iter().find(|c| c.type_ == type_)
}

/// One Runtime.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeRow {
    pub namespace: String,
    pub name: String,
    pub application: String,
    pub service: String,
    pub profile: String,
    pub grant: String,
    pub handler: String,
    pub ready: i32,
    pub desired: i32,
    pub phase: String,
    pub age: String,
    /// The agent will not change anything for it (grant gone, class
    /// missing, …): highlighted.
    pub blocked: bool,
    /// Why it is blocked or degraded (condition message), if it is.
    pub message: String,
}

/// Whether a grant state blocks the Runtime.
pub fn state_blocks(state: ProfileState) -> bool {
    !matches!(state, ProfileState::NotRequested | ProfileState::Granted)
}

/// Rows of the Runtimes view.
pub fn runtime_rows(store: &Store, now: Timestamp) -> Vec<RuntimeRow> {
    store
        .runtimes
        .values()
        .map(|r| runtime_row(r, now))
        .collect()
}

fn runtime_row(r: &Runtime, now: Timestamp) -> RuntimeRow {
    let status = r.status.clone().unwrap_or_default();
    let profile = status.profile.clone();
    let rollout = status.rollout.clone();
    let blocked_cond = condition(&status.conditions, condition_types::BLOCKED);
    let blocked = blocked_cond.is_some_and(|c| c.status == "True")
        || profile.as_ref().is_some_and(|p| state_blocks(p.state))
        || rollout
            .as_ref()
            .is_some_and(|ro| ro.phase == RolloutPhase::Blocked);
    let message = [
        condition_types::BLOCKED,
        condition_types::PROFILE_GRANTED,
        condition_types::DEGRADED,
    ]
    .iter()
    .filter_map(|t| condition(&status.conditions, t))
    .find(|c| {
        (c.type_ == condition_types::PROFILE_GRANTED && c.status == "False")
            || (c.type_ != condition_types::PROFILE_GRANTED && c.status == "True")
    })
    .map(|c| c.message.clone())
    .unwrap_or_default();
    RuntimeRow {
        namespace: r.metadata.namespace.clone().unwrap_or_default(),
        name: r.metadata.name.clone().unwrap_or_default(),
        application: r.spec.application.clone(),
        service: r.spec.service.clone(),
        profile: r
            .spec
            .runtime_profile
            .clone()
            .unwrap_or_else(|| NONE.into()),
        grant: profile
            .as_ref()
            .map(|p| p.state.as_str().to_string())
            .unwrap_or_else(|| NONE.into()),
        handler: profile
            .and_then(|p| p.handler)
            .unwrap_or_else(|| NONE.into()),
        ready: rollout.as_ref().map(|r| r.ready).unwrap_or(0),
        desired: rollout.as_ref().map(|r| r.desired).unwrap_or(0),
        phase: rollout
            .map(|r| r.phase.as_str().to_string())
            .unwrap_or_else(|| NONE.into()),
        age: age(r.metadata.creation_timestamp.as_ref(), now),
        blocked,
        message,
    }
}

/// One RuntimeGrant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantRow {
    pub name: String,
    pub project: String,
    pub environment: String,
    pub application: String,
    pub service: String,
    pub class: String,
    pub handler: String,
    /// `ok`, or what is wrong with the class.
    pub check: String,
    /// Nodes reporting the handler, `n/m`.
    pub nodes: String,
    pub runtimes: usize,
    pub retained: usize,
    /// First 12 hex digits of the grants file's sha256.
    pub digest: String,
    pub loaded: String,
    /// The grants file changed on disk: the agent must be restarted.
    pub restart_required: bool,
    /// Something is wrong (highlighted).
    pub problem: bool,
}

/// Rows of the Grants view.
pub fn grant_rows(store: &Store, now: Timestamp) -> Vec<GrantRow> {
    store.grants.values().map(|g| grant_row(g, now)).collect()
}

fn grant_row(g: &RuntimeGrant, now: Timestamp) -> GrantRow {
    let status = g.status.clone();
    let check = match &status {
        None => "unknown".to_string(),
        Some(s) if !s.class_present => "class missing".into(),
        Some(s) if s.class_deleting => "class deleting".into(),
        Some(s) if !s.handler_matches => format!(
            "handler mismatch ({})",
            s.class_handler.clone().unwrap_or_else(|| NONE.into())
        ),
        Some(s) if s.class_has_overhead || s.class_has_scheduling => {
            "unsupported (overhead/scheduling)".into()
        }
        Some(_) => "ok".into(),
    };
    let restart_required = status.as_ref().is_some_and(|s| {
        s.conditions.iter().any(|c| {
            c.status == "True"
                && (c.type_.contains("Stale")
                    || c.type_.contains("RestartRequired")
                    || c.reason.contains("RestartRequired"))
        })
    });
    let nodes_incomplete = status
        .as_ref()
        .and_then(|s| s.nodes.as_ref())
        .is_some_and(|n| n.with_handler < n.total || n.total == 0);
    let source = status.as_ref().and_then(|s| s.source.clone());
    GrantRow {
        name: g.metadata.name.clone().unwrap_or_default(),
        project: g.spec.project.clone(),
        environment: g.spec.environment.clone(),
        application: g.spec.application.clone(),
        service: g.spec.service.clone(),
        class: g.spec.runtime_class.clone(),
        handler: g.spec.handler.clone(),
        problem: check != "ok" || restart_required || nodes_incomplete,
        check,
        nodes: status
            .as_ref()
            .and_then(|s| s.nodes.as_ref())
            .map(|n| n.summary.clone())
            .unwrap_or_else(|| NONE.into()),
        runtimes: status.as_ref().map(|s| s.runtimes.len()).unwrap_or(0),
        retained: status.as_ref().map(|s| s.retained.len()).unwrap_or(0),
        digest: source
            .as_ref()
            .and_then(|s| s.sha256.as_ref())
            .map(|d| d.chars().take(12).collect())
            .unwrap_or_else(|| NONE.into()),
        loaded: age(source.as_ref().and_then(|s| s.loaded_at.as_ref()), now),
        restart_required,
    }
}

/// Every workload the store knows, as the shared analysis sees them.
pub fn workloads(store: &Store) -> Vec<Workload> {
    let deployments: Vec<_> = store.deployments.values().cloned().collect();
    let replica_sets: Vec<_> = store.replicasets.values().cloned().collect();
    let stateful_sets: Vec<_> = store.statefulsets.values().cloned().collect();
    let daemon_sets: Vec<_> = store.daemonsets.values().cloned().collect();
    let jobs: Vec<_> = store.jobs.values().cloned().collect();
    let cron_jobs: Vec<_> = store.cronjobs.values().cloned().collect();
    let pods: Vec<_> = store.pods.values().cloned().collect();
    WorkloadSources {
        deployments: &deployments,
        replica_sets: &replica_sets,
        stateful_sets: &stateful_sets,
        daemon_sets: &daemon_sets,
        jobs: &jobs,
        cron_jobs: &cron_jobs,
        pods: &pods,
    }
    .collect()
}

fn bindings(store: &Store) -> Vec<GrantBinding> {
    store
        .grants
        .values()
        .map(analysis::binding_from_grant)
        .collect()
}

/// One workload referencing a class, for the handler detail and JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadEntry {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub ready: i32,
    pub replicas: i32,
    pub managed_by_berth: bool,
    /// `rollback`, `suspended`, `bare pod`, `idle` or empty.
    pub note: String,
}

impl WorkloadEntry {
    fn from_workload(w: &Workload) -> Self {
        let note = if w.is_rollback_revision {
            "rollback revision"
        } else if w.suspended {
            "suspended"
        } else if w.is_bare_pod() {
            "bare pod"
        } else if !w.is_active() {
            "idle"
        } else {
            ""
        };
        Self {
            kind: w.kind.as_str().to_string(),
            namespace: w.namespace.clone(),
            name: w.name.clone(),
            ready: w.ready,
            replicas: w.replicas,
            managed_by_berth: w.managed_by_berth,
            note: note.to_string(),
        }
    }
}

/// One RuntimeClass (or a class name workloads reference that does not
/// exist).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HandlerRow {
    pub class: String,
    pub handler: String,
    /// The class object exists.
    pub present: bool,
    /// Grants naming the class.
    pub granted_by: Vec<String>,
    /// `overhead`, `scheduling`, `deleting`, `handler mismatch` flags.
    pub flags: String,
    /// Ready nodes reporting the handler, `n/m`.
    pub nodes: String,
    pub workloads: Vec<WorkloadEntry>,
    pub safe_to_remove: bool,
    /// The verdict in words.
    pub verdict: String,
}

/// Rows of the Handlers view: every RuntimeClass, granted or not, plus
/// referenced classes that are missing.
pub fn handler_rows(store: &Store) -> Vec<HandlerRow> {
    let classes: Vec<ObservedClass> = store
        .classes
        .values()
        .map(ObservedClass::from_runtime_class)
        .collect();
    let nodes: Vec<NodeInfo> = store.nodes.values().map(NodeInfo::from_node).collect();
    let grants = bindings(store);
    let all = workloads(store);
    let reports = analysis::handler_reports(&classes, &grants, &nodes, &all);
    let mut rows: Vec<HandlerRow> = reports
        .iter()
        .map(|r| {
            let mut flags = Vec::new();
            if r.class.has_overhead {
                flags.push("overhead".to_string());
            }
            if r.class.has_scheduling {
                flags.push("scheduling".to_string());
            }
            if r.class.deleting {
                flags.push("deleting".to_string());
            }
            if !r.handler_mismatch.is_empty() {
                flags.push(format!("mismatch: {}", r.handler_mismatch.join(",")));
            }
            HandlerRow {
                class: r.class.name.clone(),
                handler: r.class.handler.clone(),
                present: true,
                granted_by: r.granted_by.clone(),
                flags: flags.join(" "),
                nodes: r.nodes.summary(),
                workloads: r
                    .workloads
                    .iter()
                    .map(WorkloadEntry::from_workload)
                    .collect(),
                safe_to_remove: r.verdict.is_safe(),
                verdict: verdict_text(&r.verdict),
            }
        })
        .collect();
    // Classes referenced by workloads or grants that do not exist.
    let usage = analysis::class_usage(&all);
    let mut missing: BTreeMap<String, Vec<&Workload>> = BTreeMap::new();
    for (class, ws) in usage {
        if !store.classes.contains_key(&(String::new(), class.clone())) {
            missing.insert(class, ws);
        }
    }
    for g in &grants {
        if !store
            .classes
            .contains_key(&(String::new(), g.runtime_class.clone()))
        {
            missing.entry(g.runtime_class.clone()).or_default();
        }
    }
    for (class, ws) in missing {
        let granted_by: Vec<String> = grants
            .iter()
            .filter(|g| g.runtime_class == class)
            .map(|g| g.name.clone())
            .collect();
        let verdict = analysis::removal_verdict(&ws, granted_by.len());
        let handler = grants
            .iter()
            .find(|g| g.runtime_class == class)
            .map(|g| g.handler.clone())
            .unwrap_or_else(|| NONE.into());
        rows.push(HandlerRow {
            nodes: analysis::coverage(&nodes, &handler).summary(),
            class,
            handler,
            present: false,
            granted_by,
            flags: "class missing".into(),
            workloads: ws.iter().map(|w| WorkloadEntry::from_workload(w)).collect(),
            safe_to_remove: false,
            verdict: format!("already removed; {}", verdict_text(&verdict)),
        });
    }
    rows.sort_by(|a, b| a.class.cmp(&b.class));
    rows
}

fn verdict_text(v: &RemovalVerdict) -> String {
    match v {
        RemovalVerdict::Safe => "safe to remove".into(),
        RemovalVerdict::Unsafe { why, .. } => format!("in use: {why}"),
    }
}

/// One retained workload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetainedRow {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub class: String,
    /// The class's handler, if the class exists.
    pub handler: String,
    /// `grant gone (alias)` or `never granted`.
    pub reason: String,
    pub ready: i32,
    pub replicas: i32,
    pub managed_by_berth: bool,
    pub note: String,
}

/// Rows of the Retained view.
pub fn retained_rows(store: &Store) -> Vec<RetainedRow> {
    let grants = bindings(store);
    let all = workloads(store);
    analysis::retained(&all, &grants, None)
        .into_iter()
        .map(|r| {
            let entry = WorkloadEntry::from_workload(&r.workload);
            RetainedRow {
                kind: entry.kind,
                namespace: entry.namespace,
                name: entry.name,
                handler: store
                    .classes
                    .get(&(String::new(), r.class.clone()))
                    .map(|c| c.handler.clone())
                    .unwrap_or_else(|| "(class missing)".into()),
                class: r.class,
                reason: match r.reason {
                    RetainReason::GrantGone { alias } => format!("grant gone ({alias})"),
                    RetainReason::NotGranted => "never granted".into(),
                },
                ready: entry.ready,
                replicas: entry.replicas,
                managed_by_berth: entry.managed_by_berth,
                note: entry.note,
            }
        })
        .collect()
}

/// A ReplicaSet of a rollout with its pods.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSetEntry {
    pub name: String,
    pub revision: String,
    pub current: bool,
    pub desired: i32,
    pub ready: i32,
    pub image: String,
    pub pods: Vec<PodEntry>,
}

/// One pod of a rollout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodEntry {
    pub name: String,
    pub phase: String,
    pub ready: bool,
    pub node: String,
}

/// One event line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventEntry {
    pub age: String,
    #[serde(rename = "type")]
    pub type_: String,
    pub reason: String,
    pub object: String,
    pub message: String,
}

/// The live rollout of one Runtime.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutRow {
    pub namespace: String,
    pub name: String,
    pub revision: String,
    pub phase: String,
    pub desired: i32,
    pub updated: i32,
    pub ready: i32,
    pub available: i32,
    pub unavailable: i32,
    pub image_from: String,
    pub image_to: String,
    pub last_successful_image: String,
    /// `in 9m`, `exceeded`, or `-`.
    pub deadline: String,
    pub blocked: bool,
    pub replica_sets: Vec<ReplicaSetEntry>,
    pub events: Vec<EventEntry>,
}

/// Rollouts of every Runtime (for `berth get rollouts`).
pub fn rollout_rows(store: &Store, now: Timestamp) -> Vec<RolloutRow> {
    store
        .runtimes
        .keys()
        .filter_map(|k| rollout(store, k, now))
        .collect()
}

fn owned_by(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    kind: &str,
    name: &str,
) -> bool {
    meta.owner_references
        .as_ref()
        .is_some_and(|refs| refs.iter().any(|r| r.kind == kind && r.name == name))
}

fn revision_of(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<String> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(analysis::REVISION_ANNOTATION).cloned())
}

fn first_image(t: Option<&k8s_openapi::api::core::v1::PodTemplateSpec>) -> String {
    t.and_then(|t| t.spec.as_ref())
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_else(|| NONE.into())
}

fn pod_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The Deployment managed for a Runtime: owned by it, or named like it.
pub fn deployment_of<'a>(store: &'a Store, key: &ObjKey) -> Option<&'a Deployment> {
    store
        .deployments
        .iter()
        .filter(|((ns, _), _)| *ns == key.0)
        .map(|(_, d)| d)
        .find(|d| owned_by(&d.metadata, "Runtime", &key.1))
        .or_else(|| store.deployments.get(key))
}

/// The rollout of one Runtime, if it is known.
pub fn rollout(store: &Store, key: &ObjKey, now: Timestamp) -> Option<RolloutRow> {
    let rt = store.runtimes.get(key)?;
    let status = rt.status.clone().unwrap_or_default();
    let ro = status.rollout.clone().unwrap_or_default();
    let up = status.upgrade.clone().unwrap_or_default();
    let deployment = deployment_of(store, key);
    let dep_name = deployment
        .and_then(|d| d.metadata.name.clone())
        .unwrap_or_default();
    let dep_rev = deployment.and_then(|d| revision_of(&d.metadata));
    let mut rss: Vec<&ReplicaSet> = store
        .replicasets
        .iter()
        .filter(|((ns, _), rs)| *ns == key.0 && owned_by(&rs.metadata, "Deployment", &dep_name))
        .map(|(_, rs)| rs)
        .collect();
    rss.sort_by_key(|rs| {
        std::cmp::Reverse(
            revision_of(&rs.metadata)
                .and_then(|r| r.parse::<i64>().ok())
                .unwrap_or(0),
        )
    });
    let replica_sets: Vec<ReplicaSetEntry> = rss
        .iter()
        .map(|rs| {
            let name = rs.metadata.name.clone().unwrap_or_default();
            let revision = revision_of(&rs.metadata).unwrap_or_else(|| NONE.into());
            let pods = store
                .pods
                .iter()
                .filter(|((ns, _), p)| *ns == key.0 && owned_by(&p.metadata, "ReplicaSet", &name))
                .map(|(_, p)| PodEntry {
                    name: p.metadata.name.clone().unwrap_or_default(),
                    phase: p
                        .status
                        .as_ref()
                        .and_then(|s| s.phase.clone())
                        .unwrap_or_else(|| NONE.into()),
                    ready: pod_ready(p),
                    node: p
                        .spec
                        .as_ref()
                        .and_then(|s| s.node_name.clone())
                        .unwrap_or_else(|| NONE.into()),
                })
                .collect();
            ReplicaSetEntry {
                current: dep_rev.as_deref() == Some(revision.as_str()),
                revision,
                desired: rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0),
                ready: rs
                    .status
                    .as_ref()
                    .and_then(|s| s.ready_replicas)
                    .unwrap_or(0),
                image: first_image(rs.spec.as_ref().and_then(|s| s.template.as_ref())),
                name,
                pods,
            }
        })
        .collect();
    let deadline = deployment
        .map(|d| deadline_text(d, ro.phase, now))
        .unwrap_or_else(|| NONE.into());
    let mut names: Vec<(String, String)> = vec![("Runtime".into(), key.1.clone())];
    if !dep_name.is_empty() {
        names.push(("Deployment".into(), dep_name.clone()));
    }
    for rs in &replica_sets {
        names.push(("ReplicaSet".into(), rs.name.clone()));
        for p in &rs.pods {
            names.push(("Pod".into(), p.name.clone()));
        }
    }
    let events = events_for(store, &key.0, &names, now, 10);
    let state_blocked = status
        .profile
        .as_ref()
        .is_some_and(|p| state_blocks(p.state));
    Some(RolloutRow {
        namespace: key.0.clone(),
        name: key.1.clone(),
        revision: ro
            .revision
            .map(|r| r.to_string())
            .or(dep_rev)
            .unwrap_or_else(|| NONE.into()),
        phase: ro.phase.as_str().to_string(),
        desired: ro.desired,
        updated: ro.updated,
        ready: ro.ready,
        available: ro.available,
        unavailable: ro.unavailable,
        image_from: up.current_image.unwrap_or_else(|| NONE.into()),
        image_to: up.desired_image.unwrap_or_else(|| NONE.into()),
        last_successful_image: up.last_successful_image.unwrap_or_else(|| NONE.into()),
        deadline,
        blocked: state_blocked || ro.phase == RolloutPhase::Blocked,
        replica_sets,
        events,
    })
}

fn deadline_text(d: &Deployment, phase: RolloutPhase, now: Timestamp) -> String {
    let conds = d
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let progressing = conds.iter().find(|c| c.type_ == "Progressing");
    if progressing.is_some_and(|c| c.reason.as_deref() == Some("ProgressDeadlineExceeded")) {
        return "exceeded".into();
    }
    if phase == RolloutPhase::Complete
        || progressing.is_some_and(|c| c.reason.as_deref() == Some("NewReplicaSetAvailable"))
    {
        return "met".into();
    }
    let secs = d
        .spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .unwrap_or(600);
    let Some(since) = progressing.and_then(|c| c.last_update_time.as_ref()) else {
        return format!("{secs}s");
    };
    let left = i64::from(secs) - (now.as_second() - since.0.as_second());
    if left <= 0 {
        "exceeded".into()
    } else {
        format!("in {}", human_duration(left))
    }
}

fn event_time(e: &Event) -> Option<i64> {
    e.last_timestamp
        .as_ref()
        .or(e.first_timestamp.as_ref())
        .map(|t| t.0.as_second())
        .or_else(|| e.event_time.as_ref().map(|t| t.0.as_second()))
        .or_else(|| {
            e.metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.as_second())
        })
}

/// Recent events (newest first) about any of `objects` (`(kind, name)`) in
/// `namespace`.
pub fn events_for(
    store: &Store,
    namespace: &str,
    objects: &[(String, String)],
    now: Timestamp,
    limit: usize,
) -> Vec<EventEntry> {
    let mut evs: Vec<&Event> = store
        .events
        .iter()
        .filter(|((ns, _), _)| ns == namespace)
        .map(|(_, e)| e)
        .filter(|e| {
            let io = &e.involved_object;
            objects.iter().any(|(k, n)| {
                io.kind.as_deref() == Some(k.as_str()) && io.name.as_deref() == Some(n.as_str())
            })
        })
        .collect();
    evs.sort_by_key(|e| std::cmp::Reverse(event_time(e).unwrap_or(0)));
    evs.into_iter()
        .take(limit)
        .map(|e| EventEntry {
            age: event_time(e)
                .map(|t| human_duration(now.as_second() - t))
                .unwrap_or_else(|| NONE.into()),
            type_: e.type_.clone().unwrap_or_default(),
            reason: e.reason.clone().unwrap_or_default(),
            object: format!(
                "{}/{}",
                e.involved_object.kind.clone().unwrap_or_default(),
                e.involved_object.name.clone().unwrap_or_default()
            ),
            message: sanitize::value(e.message.as_deref().unwrap_or_default()),
        })
        .collect()
}

/// Events about one object of the store.
pub fn events_of(store: &Store, kind: Kind, key: &ObjKey, now: Timestamp) -> Vec<EventEntry> {
    events_for(
        store,
        &key.0,
        &[(kind.label().to_string(), key.1.clone())],
        now,
        50,
    )
}

/// Kinds of the analysis mapped to the console's store kinds.
pub fn store_kind(kind: &str) -> Option<Kind> {
    Some(match kind {
        k if k == WorkloadKind::Deployment.as_str() => Kind::Deployment,
        k if k == WorkloadKind::ReplicaSet.as_str() => Kind::ReplicaSet,
        k if k == WorkloadKind::StatefulSet.as_str() => Kind::StatefulSet,
        k if k == WorkloadKind::DaemonSet.as_str() => Kind::DaemonSet,
        k if k == WorkloadKind::Job.as_str() => Kind::Job,
        k if k == WorkloadKind::CronJob.as_str() => Kind::CronJob,
        k if k == WorkloadKind::Pod.as_str() => Kind::Pod,
        _ => return None,
    })
}
