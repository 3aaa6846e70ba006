//! Publishes one `RuntimeGrant` per loaded binding (docs/architecture.md §4): created,
//! updated and pruned to match the file, with a status computed from the
//! caches — class present, handler match, overhead/scheduling, deleting,
//! nodes reporting the handler, Runtimes using the grant, retained
//! workloads, the file's sha256 and load time, and `RestartRequired` when
//! the file on disk no longer matches what was loaded. Writes only what
//! changed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use berth_shared::analysis::{self, NodeInfo, WorkloadSources};
use berth_shared::api::condition;
use berth_shared::api::meta::{MANAGED_BY_AGENT, MANAGED_BY_LABEL};
use berth_shared::api::{
    API_VERSION, GrantSource, NodeCoverage, ObjectRef as ApiObjectRef, RuntimeGrant,
    RuntimeGrantSpec, RuntimeGrantStatus, WorkloadRef, grant_condition_types as gct, reasons,
};
use berth_shared::decide::{self, GrantBinding, ObservedClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, ResourceExt};

use crate::controller::context::{Context, FIELD_MANAGER};
use crate::controller::status;

/// Most retained workloads listed per grant.
pub const MAX_RETAINED: usize = 100;
pub use berth_shared::api::meta::PUBLISHED_BY_LABEL;

fn seconds(t: SystemTime) -> Time {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(0))
        .unwrap_or(0);
    Time(Timestamp::from_second(secs).unwrap_or(Timestamp::UNIX_EPOCH))
}

fn cond(
    type_: &str,
    ok: bool,
    reason: &str,
    message: String,
    generation: Option<i64>,
) -> Condition {
    Condition {
        observed_generation: generation,
        ..condition::build(type_, ok, reason, message)
    }
}

/// Whether the file on disk differs (or can no longer be read safely).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileState {
    /// No file configured.
    None,
    /// Same content as loaded.
    Current,
    /// Changed or unreadable: restart required.
    Stale(String),
}

/// The status of one grant (lastTransitionTimes not yet merged).
pub fn grant_status(
    ctx: &Context,
    binding: &GrantBinding,
    generation: Option<i64>,
    nodes: &[NodeInfo],
    retained: &[WorkloadRef],
    file: &FileState,
) -> RuntimeGrantStatus {
    let class = ctx
        .stores
        .classes
        .get(&ObjectRef::new(&binding.runtime_class))
        .map(|c| ObservedClass::from_runtime_class(&c));
    let cov = analysis::coverage(nodes, &binding.handler);
    let ns_labels: BTreeMap<String, BTreeMap<String, String>> = ctx
        .stores
        .namespaces
        .state()
        .iter()
        .map(|n| (n.name_any(), n.metadata.labels.clone().unwrap_or_default()))
        .collect();
    let mut runtimes: Vec<ApiObjectRef> = ctx
        .stores
        .runtimes
        .state()
        .iter()
        .filter(|r| r.spec.runtime_profile.as_deref() == Some(binding.name.as_str()))
        .filter(|r| {
            let ns = r.namespace().unwrap_or_default();
            let empty = BTreeMap::new();
            let labels = ns_labels.get(&ns).unwrap_or(&empty);
            decide::namespace_scope(&ns, labels).is_ok_and(|(p, e)| {
                binding.matches(&decide::Identity {
                    project: p,
                    environment: e,
                    application: r.spec.application.clone(),
                    service: r.spec.service.clone(),
                })
            })
        })
        .map(|r| ApiObjectRef {
            namespace: r.namespace().unwrap_or_default(),
            name: r.name_any(),
        })
        .collect();
    runtimes.sort();
    // Sorted and deduplicated by `retained_by_class`.
    let mut retained = retained.to_vec();
    retained.truncate(MAX_RETAINED);

    let (class_ok, reason, message) = match &class {
        None => (
            false,
            reasons::CLASS_MISSING,
            format!("RuntimeClass {} does not exist", binding.runtime_class),
        ),
        Some(c) if c.deleting => (
            false,
            reasons::CLASS_DELETING,
            format!("RuntimeClass {} is being deleted", c.name),
        ),
        Some(c) if c.handler != binding.handler => (
            false,
            reasons::HANDLER_MISMATCH,
            format!(
                "RuntimeClass {} names handler {}, the grant expects {}",
                c.name, c.handler, binding.handler
            ),
        ),
        Some(c) if c.has_overhead || c.has_scheduling => (
            false,
            reasons::CLASS_UNSUPPORTED,
            format!(
                "RuntimeClass {} sets overhead or scheduling, which berth does not support",
                c.name
            ),
        ),
        Some(c) => (
            true,
            reasons::CLASS_READY,
            format!(
                "RuntimeClass {} names handler {}; {} Ready nodes report it",
                c.name,
                c.handler,
                cov.summary()
            ),
        ),
    };
    let loaded = ctx.grants.loaded.as_ref();
    let (stale, stale_reason, stale_message) = match file {
        FileState::Stale(why) => (
            true,
            reasons::FILE_CHANGED,
            format!(
                "the grants file changed on disk since it was loaded; restart the agent to apply it ({why})"
            ),
        ),
        _ => (
            false,
            reasons::FILE_CURRENT,
            "the grants file on disk is the one loaded".to_string(),
        ),
    };
    RuntimeGrantStatus {
        observed_generation: generation,
        class_present: class.is_some(),
        class_handler: class.as_ref().map(|c| c.handler.clone()),
        handler_matches: class.as_ref().is_some_and(|c| c.handler == binding.handler),
        class_has_overhead: class.as_ref().is_some_and(|c| c.has_overhead),
        class_has_scheduling: class.as_ref().is_some_and(|c| c.has_scheduling),
        class_deleting: class.as_ref().is_some_and(|c| c.deleting),
        nodes: Some(NodeCoverage::new(
            i32::try_from(cov.with_handler).unwrap_or(i32::MAX),
            i32::try_from(cov.total).unwrap_or(i32::MAX),
            i32::try_from(cov.unknown).unwrap_or(i32::MAX),
        )),
        runtimes,
        retained,
        source: loaded.map(|l| GrantSource {
            sha256: Some(l.sha256.clone()),
            loaded_at: Some(seconds(l.loaded_at)),
        }),
        conditions: vec![
            cond(gct::CLASS_READY, class_ok, reason, message, generation),
            cond(
                gct::RESTART_REQUIRED,
                stale,
                stale_reason,
                stale_message,
                generation,
            ),
            bare_pods_condition(ctx.settings.watch_bare_pods, generation),
        ],
    }
}

/// `BarePodsChecked`: whether `retained` can list bare pods at all. An
/// agent without `--watch-bare-pods` reads no Pod, so an empty list says
/// nothing about them, and the condition says so.
pub fn bare_pods_condition(watched: bool, generation: Option<i64>) -> Condition {
    if watched {
        cond(
            gct::BARE_PODS_CHECKED,
            true,
            reasons::PODS_WATCHED,
            "bare pods (pods without a controller) that use the class are listed in retained"
                .into(),
            generation,
        )
    } else {
        cond(
            gct::BARE_PODS_CHECKED,
            false,
            reasons::NO_POD_ACCESS,
            BARE_PODS_NOT_CHECKED.into(),
            generation,
        )
    }
}

/// What an agent without Pod access says about bare pods.
pub const BARE_PODS_NOT_CHECKED: &str = "bare pods not checked (agent has no Pod access): retained lists controllers and rollback revisions only; start the agent with --watch-bare-pods and the Pod RBAC overlay to count bare pods, or look with your own rights (berth console, Retained view)";

fn merge_times(new: &mut RuntimeGrantStatus, old: Option<&RuntimeGrantStatus>) {
    let old = old.map_or(&[][..], |o| o.conditions.as_slice());
    condition::merge_transition_times(&mut new.conditions, old, &condition::now());
}

fn file_state(ctx: &Context) -> FileState {
    match ctx.grants.loaded.as_ref() {
        None => FileState::None,
        Some(l) => match l.changed_on_disk() {
            Ok(false) => FileState::Current,
            Ok(true) => FileState::Stale("content differs".to_string()),
            Err(e) => FileState::Stale(e.to_string()),
        },
    }
}

/// One pass: publish, update, prune; metrics. Returns writes sent.
pub async fn sync_once(ctx: &Context, grants: &Store<RuntimeGrant>) -> usize {
    let api: Api<RuntimeGrant> = Api::all(ctx.client.clone());
    let mut writes = 0;
    let file = file_state(ctx);
    ctx.metrics
        .grants_file_stale
        .set(i64::from(matches!(file, FileState::Stale(_))));
    crate::metrics::state::runtimes(&ctx.metrics, &ctx.stores.runtimes.state());
    crate::metrics::state::grants(&ctx.metrics, &grants.state(), &ctx.settings.publisher);

    let s = &ctx.stores;
    // Once per pass, by class: each grant then reads its class's list
    // instead of analysing every workload again. In a block: the cache
    // snapshots and the workloads are gone before the first write, so a
    // slow pass does not keep replaced objects alive.
    let retained_by_class = {
        // The caches' own objects, shared (Arc), not copied: at scale a
        // deep copy of every workload each pass doubled the agent's memory.
        let (deps, rss, stss, dss, jobs, crons, revisions, pods) = (
            s.deployments.state(),
            s.replica_sets.state(),
            s.stateful_sets.state(),
            s.daemon_sets.state(),
            s.jobs.state(),
            s.cron_jobs.state(),
            s.controller_revisions.state(),
            s.pods.state(),
        );
        // Only bare pods: a controller's pods are counted through it (the
        // Pod cache holds no others; the filter keeps that explicit).
        let bare_pods: Vec<&k8s_openapi::api::core::v1::Pod> = pods
            .iter()
            .filter(|p| {
                p.metadata
                    .owner_references
                    .as_ref()
                    .is_none_or(|refs| refs.iter().all(|r| r.controller != Some(true)))
            })
            .map(|p| &**p)
            .collect();
        let workloads = WorkloadSources {
            deployments: &refs(&deps),
            replica_sets: &refs(&rss),
            stateful_sets: &refs(&stss),
            daemon_sets: &refs(&dss),
            jobs: &refs(&jobs),
            cron_jobs: &refs(&crons),
            pods: &bare_pods,
            controller_revisions: &refs(&revisions),
        }
        .collect();
        retained_by_class(ctx, &workloads)
    };
    ctx.metrics.retained_workloads.clear();
    for (class, refs) in &retained_by_class {
        ctx.metrics
            .retained_workloads
            .get_or_create(&crate::metrics::ClassLabels {
                runtime_class: class.clone(),
            })
            .set(i64::try_from(refs.len()).unwrap_or(i64::MAX));
    }
    let nodes: Vec<NodeInfo> = s
        .nodes
        .state()
        .iter()
        .map(|n| NodeInfo::from_node(n))
        .collect();

    for binding in &ctx.grants.bindings {
        let existing = grants.get(&ObjectRef::new(&binding.name));
        let spec = RuntimeGrantSpec::of(binding);
        let publisher = ctx.settings.publisher.as_str();
        let labelled = existing.as_ref().is_some_and(|g| {
            g.labels().get(PUBLISHED_BY_LABEL).map(String::as_str) == Some(publisher)
                && g.labels().get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY_AGENT)
        });
        if existing
            .as_ref()
            .is_none_or(|g| g.spec != spec || !labelled)
        {
            let body = serde_json::json!({
                "apiVersion": API_VERSION,
                "kind": "RuntimeGrant",
                "metadata": {"name": binding.name, "labels": {
                    MANAGED_BY_LABEL: MANAGED_BY_AGENT,
                    PUBLISHED_BY_LABEL: publisher,
                }},
                "spec": spec,
            });
            match api
                .patch(
                    &binding.name,
                    &PatchParams::apply(FIELD_MANAGER).force(),
                    &Patch::Apply(&body),
                )
                .await
            {
                Ok(_) => {
                    writes += 1;
                    ctx.metrics.write("RuntimeGrant", "apply");
                }
                Err(e) => {
                    tracing::warn!(grant = %binding.name, error = %e, "publishing RuntimeGrant failed");
                    continue;
                }
            }
        }
        // Status needs the object; the next pass handles a fresh one.
        let Some(existing) = existing else { continue };
        let mut status = grant_status(
            ctx,
            binding,
            existing.metadata.generation,
            &nodes,
            retained_by_class
                .get(&binding.runtime_class)
                .map_or(&[][..], Vec::as_slice),
            &file,
        );
        merge_times(&mut status, existing.status.as_ref());
        if existing.status.as_ref() != Some(&status) {
            tracing::info!(grant = %binding.name, "writing RuntimeGrant status");
            match status::write(ctx, &api, &binding.name, &status).await {
                Ok(()) => writes += 1,
                Err(e) => {
                    tracing::warn!(grant = %binding.name, error = %e, "RuntimeGrant status failed")
                }
            }
        }
    }

    // Grants whose binding left the file: kept, marked Retired, while
    // workloads still need their class's handler ("keep a handler
    // installed while any retained workload or rollback revision needs
    // it"); pruned once none does.
    for g in grants.state() {
        let name = g.name_any();
        let ours = g.labels().get(PUBLISHED_BY_LABEL).map(String::as_str)
            == Some(ctx.settings.publisher.as_str());
        if !ours
            || ctx.grants.bindings.iter().any(|b| b.name == name)
            || g.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        // A class another current binding grants is published there.
        let class_granted = ctx
            .grants
            .bindings
            .iter()
            .any(|b| b.runtime_class == g.spec.runtime_class);
        if let Some(still) = retained_by_class
            .get(&g.spec.runtime_class)
            .filter(|r| !r.is_empty() && !class_granted)
        {
            writes += publish_retired(ctx, &api, &g, still).await;
            continue;
        }
        // Pruning says "nothing needs this handler any more". Without Pod
        // access a bare pod may still use the class: the grant stays
        // Retired, saying what was not checked, until the operator (who
        // can see pods) deletes it.
        if !class_granted && !ctx.settings.watch_bare_pods {
            writes += publish_retired(ctx, &api, &g, &[]).await;
            continue;
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: g.metadata.uid.clone(),
                resource_version: None,
            }),
            ..Default::default()
        };
        match api.delete(&name, &params).await {
            Ok(_) => {
                writes += 1;
                ctx.metrics.write("RuntimeGrant", "delete");
                tracing::info!(grant = %name, "pruned RuntimeGrant whose binding left the grants file");
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => tracing::warn!(grant = %name, error = %e, "pruning RuntimeGrant failed"),
        }
    }
    writes
}

/// Every workload no current grant covers, by the RuntimeClass it needs
/// (every class, granted or not), sorted and bounded.
fn retained_by_class(
    ctx: &Context,
    workloads: &[analysis::Workload],
) -> BTreeMap<String, Vec<WorkloadRef>> {
    let mut out: BTreeMap<String, Vec<WorkloadRef>> = BTreeMap::new();
    for r in analysis::retained(workloads, &ctx.grants.bindings, None) {
        out.entry(r.class).or_default().push(WorkloadRef {
            kind: r.workload.kind.as_str().to_string(),
            namespace: r.workload.namespace,
            name: r.workload.name,
        });
    }
    for refs in out.values_mut() {
        refs.sort();
        refs.dedup();
    }
    out
}

/// The `Retired` message: what still needs the handler, and, without Pod
/// access, that bare pods were not looked at (so "nothing" is never
/// claimed from missing data).
pub fn retired_message(retained: usize, handler: &str, class: &str, pods_watched: bool) -> String {
    match (retained, pods_watched) {
        (0, false) => format!(
            "the binding left the grants file; no controller or rollback revision still needs handler {handler} of RuntimeClass {class}, but bare pods were not checked (agent has no Pod access): delete this RuntimeGrant once no bare pod uses RuntimeClass {class}"
        ),
        (n, true) => format!(
            "the binding left the grants file; {n} workload(s) still need handler {handler} of RuntimeClass {class}: keep it installed until they are retired"
        ),
        (n, false) => format!(
            "the binding left the grants file; {n} workload(s) still need handler {handler} of RuntimeClass {class}: keep it installed until they are retired (bare pods not checked: agent has no Pod access)"
        ),
    }
}

/// Keeps a retired grant's status current: which workloads still need
/// its handler. Returns writes sent.
async fn publish_retired(
    ctx: &Context,
    api: &Api<RuntimeGrant>,
    grant: &RuntimeGrant,
    retained: &[WorkloadRef],
) -> usize {
    let name = grant.name_any();
    let mut status = grant.status.clone().unwrap_or_default();
    status.observed_generation = grant.metadata.generation;
    status.runtimes.clear();
    let mut listed = retained.to_vec();
    listed.truncate(MAX_RETAINED);
    status.retained = listed;
    let message = retired_message(
        retained.len(),
        &grant.spec.handler,
        &grant.spec.runtime_class,
        ctx.settings.watch_bare_pods,
    );
    status
        .conditions
        .retain(|c| c.type_ != gct::RETIRED && c.type_ != gct::BARE_PODS_CHECKED);
    status.conditions.push(cond(
        gct::RETIRED,
        true,
        reasons::BINDING_REMOVED,
        message,
        grant.metadata.generation,
    ));
    status.conditions.push(bare_pods_condition(
        ctx.settings.watch_bare_pods,
        grant.metadata.generation,
    ));
    merge_times(&mut status, grant.status.as_ref());
    if grant.status.as_ref() == Some(&status) {
        return 0;
    }
    tracing::info!(grant = %name, retained = retained.len(), "RuntimeGrant retired: its class is still needed");
    match status::write(ctx, api, &name, &status).await {
        Ok(()) => 1,
        Err(e) => {
            tracing::warn!(grant = %name, error = %e, "RuntimeGrant status failed");
            0
        }
    }
}

/// Runs the publisher until the process ends: one pass every `interval`.
pub async fn run(ctx: Arc<Context>, grants: Store<RuntimeGrant>, interval: Duration) {
    if grants.wait_until_ready().await.is_err() {
        return;
    }
    // A status computed from a cache that has not listed yet would say
    // "class missing" or "no node reports the handler" for nothing.
    ctx.synced.wait().await;
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut pending = crate::pending_grants::Published::default();
    loop {
        tick.tick().await;
        sync_once(&ctx, &grants).await;
        crate::pending_grants::sync_once(&ctx, &mut pending).await;
    }
}

/// The cached objects of one kind, owned (the analysis takes slices).
/// References into a cache's snapshot.
fn refs<K>(objs: &[std::sync::Arc<K>]) -> Vec<&K> {
    objs.iter().map(|o| &**o).collect()
}

#[cfg(test)]
mod tests;
