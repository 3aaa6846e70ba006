//! What adds up around a Runtime's pods (issue 52, docs/architecture.md
//! §5 "Exposure"): each reconcile asks [`check`] which foreign Services,
//! NetworkPolicies, EndpointSlices and orphans reach or run as its
//! Runtime's pods, from what the caches keep of them
//! (`cache::surroundings`) and the reconcile's snapshot.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use berth_shared::analysis::WorkloadKind;
use berth_shared::api::Runtime;
use berth_shared::api::meta::controlled_by_uid;
use berth_shared::exposure::endpoint_slice::pod_bases;
use berth_shared::exposure::hashed::LabelHashes;
use berth_shared::exposure::network_policy::{self, OwnPolicy};
use berth_shared::exposure::{Exposing, Exposure, PodLabels};
use berth_shared::render::names::label_value;
use berth_shared::render::{Names, Rendered, names};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use super::read::Snapshot;
use crate::controller::context::Context;

/// The Runtimes of namespace `ns` in `runtimes` (what a change there
/// wakes).
pub fn runtimes_in(
    runtimes: &kube::runtime::reflector::Store<Runtime>,
    ns: &str,
) -> Vec<ObjectRef<Runtime>> {
    runtimes
        .state()
        .iter()
        .filter(|r| r.namespace().as_deref() == Some(ns))
        .map(|r| ObjectRef::from_obj(&**r))
        .collect()
}

fn template_labels(t: Option<&PodTemplateSpec>) -> Option<&BTreeMap<String, String>> {
    t?.metadata.as_ref()?.labels.as_ref()
}

/// What reaches or runs as `runtime`'s pods and is not its own: from the
/// surroundings kept, the reconcile's snapshot and (when rendering
/// succeeded) what it rendered.
pub fn check(
    ctx: &Context,
    runtime: &Runtime,
    rendered: Option<&Rendered>,
    snapshot: &Snapshot,
) -> Exposure {
    let s = &ctx.view.stores.surroundings;
    let h = &s.hashes;
    let ns = runtime.namespace().unwrap_or_default();
    let uid = runtime.uid().unwrap_or_default();
    let name = runtime.name_any();
    let live = &snapshot.live;
    let own = |m: &kube::api::ObjectMeta| controlled_by_uid(m, &uid);
    let workload = Names::for_runtime(&name).workload;
    let own_deployment = live.deployments.get(&workload).filter(|d| own(d.meta()));
    let own_jobs: Vec<_> = live.jobs.all().filter(|j| own(j.meta())).collect();
    let own_crons: Vec<_> = live.cron_jobs.all().filter(|c| own(c.meta())).collect();
    let templates = template_labels_run(
        own_deployment.map(|d| d.as_ref()),
        &own_jobs,
        &own_crons,
        rendered,
    );
    let pods = PodLabels::new(h, templates);
    let mut found = Vec::new();

    s.services.each_in(&ns, |n, svc| {
        if svc.selects(&pods) {
            found.push(Exposing::service(&ns, n));
        }
    });

    // Policies add up only where the Runtime's own isolates the pods.
    let own_policy = own_policy(ctx, runtime, &ns, h);
    if let Some(own_policy) = &own_policy {
        s.policies.each_in(&ns, |n, p| {
            if let Some(beyond) = network_policy::beyond(own_policy, p, &pods) {
                found.push(Exposing::policy(&ns, n, &beyond));
            }
        });
    }

    let owners = pod_owners(ctx, snapshot, &own_jobs, &own_crons);
    let bases = pod_bases(h, &ns, owners.iter().map(String::as_str));
    s.slices.each_in(&ns, |n, kept| {
        if kept.slice.lists(&bases) {
            found.push(Exposing::slice(&ns, n, kept.service.as_deref()));
        }
    });

    orphans_naming(ctx, runtime, &ns, &workload, &mut found);
    Exposure::new(found, own_policy.is_some())
}

/// The labels of every pod template the Runtime runs, live and
/// rendered: a selector matching either selects its pods (now or once
/// the rendering is applied).
fn template_labels_run<'a>(
    own_deployment: Option<&'a k8s_openapi::api::apps::v1::Deployment>,
    own_jobs: &[&'a Arc<Job>],
    own_crons: &[&'a Arc<CronJob>],
    rendered: Option<&'a Rendered>,
) -> Vec<&'a BTreeMap<String, String>> {
    let cron_template = |c: &'a CronJob| {
        template_labels(
            c.spec
                .as_ref()
                .and_then(|s| s.job_template.spec.as_ref())
                .map(|s| &s.template),
        )
    };
    let mut templates: Vec<&BTreeMap<String, String>> = Vec::new();
    if let Some(d) = own_deployment {
        templates.extend(template_labels(d.spec.as_ref().map(|s| &s.template)));
    }
    for j in own_jobs {
        templates.extend(template_labels(j.spec.as_ref().map(|s| &s.template)));
    }
    for c in own_crons {
        templates.extend(cron_template(c));
    }
    if let Some(r) = rendered {
        templates.extend(template_labels(
            r.deployment.spec.as_ref().map(|s| &s.template),
        ));
        for j in &r.jobs {
            templates.extend(template_labels(j.spec.as_ref().map(|s| &s.template)));
        }
        for c in &r.cron_jobs {
            templates.extend(cron_template(c));
        }
    }
    templates
}

/// The Runtime's own NetworkPolicy, when enabled: what it lets in, against
/// which foreign policies are measured.
fn own_policy(ctx: &Context, runtime: &Runtime, ns: &str, h: &LabelHashes) -> Option<OwnPolicy> {
    let p = runtime.spec.network_policy.as_ref().filter(|p| p.enabled)?;
    let port = runtime
        .spec
        .expose
        .as_ref()
        .and_then(|e| e.port)
        .unwrap_or(berth_shared::api::DEFAULT_PORT);
    let labels = ctx
        .view
        .stores
        .namespaces
        .get(&ObjectRef::new(ns))
        .and_then(|n| n.metadata.labels.clone())
        .unwrap_or_default();
    Some(OwnPolicy::new(&p.ingress, port, ns, &labels, h))
}

/// The names the pods are named after: the Runtime's ReplicaSets and Jobs
/// (its own, and those its CronJobs made).
fn pod_owners(
    ctx: &Context,
    snapshot: &Snapshot,
    own_jobs: &[&Arc<Job>],
    own_crons: &[&Arc<CronJob>],
) -> Vec<String> {
    let mut owners: Vec<String> = snapshot
        .replica_sets
        .iter()
        .map(|rs| rs.name_any())
        .collect();
    owners.extend(own_jobs.iter().map(|j| j.name_any()));
    for c in own_crons {
        let cron_uid = c.uid().unwrap_or_default();
        owners.extend(
            ctx.view
                .stores
                .owners
                .jobs
                .keys_of(&cron_uid)
                .iter()
                .map(|k| k.name().to_string()),
        );
    }
    owners
}

/// Orphans naming this Runtime on a granted class; one at a name the
/// Runtime renders is the apply step's (taken back, or a Conflict).
fn orphans_naming(
    ctx: &Context,
    runtime: &Runtime,
    ns: &str,
    workload: &str,
    found: &mut Vec<Exposing>,
) {
    let name = runtime.name_any();
    let label = label_value(&name);
    let granted: HashSet<&str> = ctx
        .config
        .grants
        .bindings
        .iter()
        .map(|b| b.runtime_class.as_str())
        .collect();
    let managed: HashSet<String> = std::iter::once(workload.to_string())
        .chain(
            runtime
                .spec
                .jobs
                .iter()
                .map(|j| names::job_name(&name, &j.name)),
        )
        .chain(
            runtime
                .spec
                .schedules
                .iter()
                .map(|c| names::cronjob_name(&name, &c.name)),
        )
        .collect();
    for (kind, mirror) in ctx.view.stores.surroundings.orphans.each() {
        mirror.each_in(ns, |n, o| {
            let at_managed_name = kind != WorkloadKind::ReplicaSet
                && kind != WorkloadKind::Pod
                && managed.contains(n);
            if *o.runtime == *label && granted.contains(&*o.class) && !at_managed_name {
                found.push(Exposing::orphan(kind.as_str(), ns, n, &o.class));
            }
        });
    }
}
