//! Step 1 of a publishing pass, read: one [`Snapshot`] of everything the
//! pass reads from the caches (and the grants file on disk), taken once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use berth_shared::analysis::{self, DeploymentRevisions, NodeInfo, Workload, WorkloadSources};
use berth_shared::api::{GrantSource, ObjectRef as ApiObjectRef, RuntimeGrant, WorkloadRef};
use berth_shared::decide::{self, ObservedClass};
use berth_shared::status::{FileState, GrantUser};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::reflector::Store;

use crate::controller::context::Context;

fn seconds(t: SystemTime) -> Time {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(0))
        .unwrap_or(0);
    Time(Timestamp::from_second(secs).unwrap_or(Timestamp::UNIX_EPOCH))
}

pub(super) fn file_state(ctx: &Context) -> FileState {
    match ctx.config.grants.loaded.as_ref() {
        None => FileState::None,
        Some(l) => match l.changed_on_disk() {
            Ok(false) => FileState::Current,
            Ok(true) => FileState::Stale("content differs".to_string()),
            Err(e) => FileState::Stale(e.to_string()),
        },
    }
}

/// Step 1, read: everything a pass reads, from the caches, once.
pub(super) struct Snapshot {
    pub(super) file: FileState,
    pub(super) grants: Vec<Arc<RuntimeGrant>>,
    pub(super) classes: BTreeMap<String, ObservedClass>,
    pub(super) nodes: Vec<NodeInfo>,
    pub(super) users: Vec<GrantUser>,
    /// Every workload no current grant covers, by the class it needs.
    pub(super) retained: BTreeMap<String, Vec<WorkloadRef>>,
    pub(super) source: Option<GrantSource>,
}

pub(super) fn read(ctx: &Context, grants: &Store<RuntimeGrant>, file: FileState) -> Snapshot {
    let s = &ctx.view.stores;
    // In a block: the cache snapshots and the workloads are gone before
    // the first write, so a slow pass does not keep replaced objects alive.
    let retained = {
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
        let mut workloads = WorkloadSources {
            deployments: &[],
            replica_sets: &[],
            stateful_sets: &refs(&stss),
            daemon_sets: &refs(&dss),
            jobs: &refs(&jobs),
            cron_jobs: &refs(&crons),
            pods: &bare_pods,
            controller_revisions: &refs(&revisions),
        }
        .collect();
        // Deployments and ReplicaSets are cached in a smaller form than
        // the analysis takes: each is made whole for its turn only, so a
        // pass never holds thousands of whole ones at once.
        let revisions = DeploymentRevisions::of(deps.iter().map(|d| kube::Resource::meta(&**d)));
        workloads.extend(deps.iter().map(|d| Workload::from_deployment(&d.whole())));
        workloads.extend(rss.iter().map(|kept| {
            let rs = kept.whole();
            Workload::from_replica_set(&rs, revisions.of_owner(&rs.metadata))
        }));
        retained_by_class(ctx, &workloads)
    };
    let users = grant_users(ctx);
    Snapshot {
        file,
        grants: grants.state(),
        classes: s
            .classes
            .state()
            .iter()
            .map(|c| (c.name_any(), ObservedClass::from_runtime_class(c)))
            .collect(),
        nodes: s
            .nodes
            .state()
            .iter()
            .map(|n| NodeInfo::from_node(n))
            .collect(),
        users,
        retained,
        source: ctx.config.grants.loaded.as_ref().map(|l| GrantSource {
            sha256: Some(l.sha256.clone()),
            loaded_at: Some(seconds(l.loaded_at)),
        }),
    }
}

/// Every Runtime as a grant's user: where it is, the profile it asks for
/// and the identity its namespace's labels give it.
fn grant_users(ctx: &Context) -> Vec<GrantUser> {
    let s = &ctx.view.stores;
    let ns_labels: BTreeMap<String, BTreeMap<String, String>> = s
        .namespaces
        .state()
        .iter()
        .map(|n| (n.name_any(), n.metadata.labels.clone().unwrap_or_default()))
        .collect();
    s.runtimes
        .state()
        .iter()
        .map(|r| {
            let namespace = r.namespace().unwrap_or_default();
            let empty = BTreeMap::new();
            let labels = ns_labels.get(&namespace).unwrap_or(&empty);
            let identity =
                decide::namespace_scope(&namespace, labels)
                    .ok()
                    .map(|(project, environment)| decide::Identity {
                        project,
                        environment,
                        application: r.spec.application.clone(),
                        service: r.spec.service.clone(),
                    });
            GrantUser {
                at: ApiObjectRef {
                    namespace,
                    name: r.name_any(),
                },
                profile: r.spec.runtime_profile.clone(),
                identity,
            }
        })
        .collect()
}

/// Every workload no current grant covers, by the RuntimeClass it needs
/// (every class, granted or not), sorted and bounded.
fn retained_by_class(
    ctx: &Context,
    workloads: &[analysis::Workload],
) -> BTreeMap<String, Vec<WorkloadRef>> {
    let mut out: BTreeMap<String, Vec<WorkloadRef>> = BTreeMap::new();
    for r in analysis::retained(workloads, &ctx.config.grants.bindings, None) {
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

/// References into a cache's snapshot.
fn refs<K>(objs: &[std::sync::Arc<K>]) -> Vec<&K> {
    objs.iter().map(|o| &**o).collect()
}
