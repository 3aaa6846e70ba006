//! The apply step's order: the dependencies the pods reference first, then
//! the workloads — only once those dependencies are the Runtime's own —
//! and everything around them; or, for a held Runtime, only the protection.

use std::collections::BTreeSet;
use std::sync::Arc;

use berth_shared::api::meta::controlled_by_uid as owned_by;
use berth_shared::api::{LastApplied, Runtime};
use berth_shared::render::{self, Rendered};
use kube::{Resource, ResourceExt};

use super::delete::delete_owned;
use super::ensure::ensure;
use super::handover::{Scaled, hand_over_replicas, raise_from_zero};
use super::jobs::{Runs, run_jobs_once};
use super::outcome::{ApplyOutcome, Managed, Mode, Owner};
use super::{Governed, HeldTarget};
use crate::controller::context::Context;
use crate::controller::reconcile::cached_objects::{Cached, Live};

/// Applies every rendered object and deletes the Runtime's own objects that
/// are no longer desired (NetworkPolicy/HPA turned off, a job or schedule
/// removed from the spec). Jobs are not deleted because the Runtime is
/// suspended — only when their entry left `spec.jobs`.
///
/// Two phases, each a set of independent steps sent together: first what
/// the pods need to start (ConfigMap, ServiceAccount, Service), then the
/// Deployment and everything around it. A Runtime's first reconcile thus
/// waits for two round trips instead of one per object; at most
/// `--concurrency` Runtimes reconcile at once, so at most six times that
/// many requests are in flight. Outcomes are merged in a fixed order.
///
/// The second phase's workloads (Deployment, Jobs, CronJobs) go out only
/// when the first phase left the ConfigMap and the ServiceAccount the
/// Runtime's own: one that is someone else's (a conflict) or could not be
/// applied (recreated after a delete, say) is a dependency the pods would
/// consume or miss, and the workloads wait (`dependencies` names the
/// objects in the way).
///
/// [`Protection::Protect`] (the Runtime is Blocked, or being deleted):
/// only the protection runs — missing ConfigMap, ServiceAccount, Service,
/// PodDisruptionBudget and NetworkPolicy are recreated from the current
/// spec, forbidden drift is removed from those and from the Deployment,
/// CronJobs and HPA (measured against [`HeldTarget::held_target`]: the pods keep their
/// class, image and template, the replica count and the autoscaler's
/// bounds as berth last applied them, whoever edits them meanwhile), a
/// missing HPA berth last applied is recreated; nothing is created
/// otherwise, nothing pruned, no Job run. [`Protection::CorrectOnly`]
/// (the garbage collector is removing the objects): the same without
/// recreating anything.
pub async fn apply_all(
    ctx: &Context,
    runtime: &Runtime,
    rendered: &Rendered,
    live: &Live,
    protection: Protection,
) -> ApplyOutcome {
    let uid = runtime.uid().unwrap_or_default();
    let uid = uid.as_str();
    let owner = Owner::of(runtime, uid);
    let s = live;
    let held = protection != Protection::Converge;
    if held && !runs(live, uid) {
        // Held before anything ran (not granted, identity taken from the
        // start): there is nothing to protect, and creating the
        // dependencies would carry out the tenant's new Runtime.
        return ApplyOutcome {
            jobs: recorded_jobs(runtime),
            ..ApplyOutcome::default()
        };
    }
    let dependency = match protection {
        Protection::Converge => Mode::Converge,
        Protection::Protect => Mode::Protect,
        Protection::CorrectOnly => Mode::Correct,
    };
    let one = Step { ctx, owner };
    let (config_map, service_account, service) = futures::join!(
        one.ensure(&s.config_maps, &rendered.config_map, dependency),
        one.ensure(&s.service_accounts, &rendered.service_account, dependency),
        one.ensure(&s.services, &rendered.service, dependency),
    );
    // What the pod templates reference, by name: the ConfigMap (envFrom)
    // and the ServiceAccount. (The Service is not referenced by a pod.)
    let dependencies: Vec<String> = [&config_map, &service_account]
        .iter()
        .flat_map(|o| o.conflicts.iter().cloned())
        .collect();
    let in_place = dependencies.is_empty()
        && config_map.errors.is_empty()
        && service_account.errors.is_empty();
    if !in_place {
        tracing::warn!(
            runtime = %runtime.name_any(),
            namespace = ?runtime.namespace(),
            not_owned = ?dependencies,
            "a dependency of the pods is not the Runtime's own; the workloads are left unchanged"
        );
    }
    let rest = if held {
        protect(ctx, runtime, rendered, live, dependency).await
    } else if in_place {
        let mut out = converge(ctx, runtime, rendered, live).await;
        // Everything went out: what a hold keeps the workloads at from now
        // on (recorded in status). Otherwise the record stays as it was.
        if out.errors.is_empty() && out.conflicts.is_empty() {
            let parts = render::protect::last_applied(rendered);
            match LastApplied::new(&parts) {
                Ok(record) => out.last_applied = Some(record),
                // Not expected (k8s-openapi's objects serialize): the
                // record then stays as it was, and a hold keeps to it.
                Err(error) => tracing::error!(%error, "status.lastApplied not recorded"),
            }
        }
        out
    } else {
        around_workloads(ctx, runtime, rendered, live).await
    };
    let mut out = ApplyOutcome::default();
    for step in [config_map, service_account, service, rest] {
        out.merge(step);
    }
    out.dependencies = dependencies;
    out
}

/// The second phase: the Deployment and everything around it.
async fn converge(
    ctx: &Context,
    runtime: &Runtime,
    rendered: &Rendered,
    live: &Live,
) -> ApplyOutcome {
    let uid = runtime.uid().unwrap_or_default();
    let ns = runtime.namespace().unwrap_or_default();
    let name = runtime.name_any();
    let s = live;
    let uid = uid.as_str();
    let owner = Owner::of(runtime, uid);
    let one = Step { ctx, owner };
    let deployment = async {
        let mut out = ApplyOutcome::default();
        let scaled = Scaled {
            ctx,
            cached: &s.deployments,
            desired: &rendered.deployment,
            uid,
            min_replicas: runtime.spec.wanted_replicas(),
        };
        if rendered
            .deployment
            .spec
            .as_ref()
            .is_some_and(|d| d.replicas.is_none())
        {
            hand_over_replicas(&scaled, &mut out).await;
            // Without the handover the apply would drop the replica count:
            // retried.
            if !out.errors.is_empty() {
                return out;
            }
        }
        ensure(
            ctx,
            &s.deployments,
            &rendered.deployment,
            owner,
            Mode::Converge,
            &mut out,
        )
        .await;
        if rendered.horizontal_pod_autoscaler.is_some() {
            raise_from_zero(&scaled, &mut out).await;
        }
        out
    };
    // The kinds a Runtime has zero or more of: each is an owned set.
    let owned = OwnedSet {
        ctx,
        ns: &ns,
        owner,
    };
    let np: Vec<_> = rendered.network_policy.iter().collect();
    let hpa: Vec<_> = rendered.horizontal_pod_autoscaler.iter().collect();
    let crons: Vec<_> = rendered.cron_jobs.iter().collect();
    let jobs = async {
        let mut out = ApplyOutcome::default();
        // Jobs are created once per definition (run_jobs_once), and one
        // stays while its entry is in the spec, even suspended (not
        // rendered then).
        run_jobs_once(ctx, runtime, rendered, &s.jobs, Runs::Start, &mut out).await;
        let entries: BTreeSet<String> = runtime
            .spec
            .jobs
            .iter()
            .map(|j| render::names::job_name(&name, &j.name))
            .collect();
        owned.prune(&s.jobs, &entries, &mut out).await;
        out
    };
    let (deployment, pdb, network_policies, hpas, jobs, cron_jobs) = futures::join!(
        deployment,
        one.ensure(&s.pdbs, &rendered.pod_disruption_budget, Mode::Converge),
        owned.converged(&s.network_policies, &np),
        owned.converged(&s.hpas, &hpa),
        jobs,
        owned.converged(&s.cron_jobs, &crons),
    );
    let mut out = ApplyOutcome::default();
    for step in [deployment, pdb, network_policies, hpas, jobs, cron_jobs] {
        out.merge(step);
    }
    out
}

/// The second phase while a dependency of the pods is not in place: what
/// surrounds the workloads (the PodDisruptionBudget, the NetworkPolicy,
/// the HPA) converges; the Deployment, Jobs and CronJobs are neither
/// created nor pruned, and the Job records stay as they are, but the
/// contract is still enforced on the live Deployment and CronJobs (issue
/// 52: enforcement is never switched off because something else went
/// wrong; they are measured against what a held Runtime's are, so the
/// tenant's changes wait).
async fn around_workloads(
    ctx: &Context,
    runtime: &Runtime,
    rendered: &Rendered,
    live: &Live,
) -> ApplyOutcome {
    let uid = runtime.uid().unwrap_or_default();
    let ns = runtime.namespace().unwrap_or_default();
    let s = live;
    let uid = uid.as_str();
    let owner = Owner::of(runtime, uid);
    let one = Step { ctx, owner };
    let owned = OwnedSet {
        ctx,
        ns: &ns,
        owner,
    };
    let np: Vec<_> = rendered.network_policy.iter().collect();
    let hpa: Vec<_> = rendered.horizontal_pod_autoscaler.iter().collect();
    let (pdb, network_policies, hpas, workloads) = futures::join!(
        one.ensure(&s.pdbs, &rendered.pod_disruption_budget, Mode::Converge),
        owned.converged(&s.network_policies, &np),
        owned.converged(&s.hpas, &hpa),
        correct_workloads(ctx, rendered, live, owner),
    );
    let mut out = ApplyOutcome {
        jobs: recorded_jobs(runtime),
        ..ApplyOutcome::default()
    };
    for step in [pdb, network_policies, hpas, workloads] {
        out.merge(step);
    }
    out
}

/// The contract re-imposed on the live Deployment and CronJobs, nothing
/// else: measured against [`HeldTarget::held_target`] (the rendered contract with the
/// tenant's part as berth last applied it), never created.
async fn correct_workloads(
    ctx: &Context,
    rendered: &Rendered,
    live: &Live,
    owner: Owner<'_>,
) -> ApplyOutcome {
    let mut out = ApplyOutcome::default();
    ensure(
        ctx,
        &live.deployments,
        &rendered.deployment,
        owner,
        Mode::Correct,
        &mut out,
    )
    .await;
    for cron in &rendered.cron_jobs {
        ensure(ctx, &live.cron_jobs, cron, owner, Mode::Correct, &mut out).await;
    }
    out
}

/// A held Runtime's HPA: the one berth last applied (its bounds and
/// target), also when the current spec renders none (autoscaling
/// switched off while held waits like any other change), corrected, and
/// recreated when missing if `mode` creates (a deleted autoscaler would
/// leave the replica count to anyone). Without a record, only corrected
/// (the live bounds are the reference).
async fn held_autoscaler(
    ctx: &Context,
    rendered: &Rendered,
    live: &Live,
    owner: Owner<'_>,
    mode: Mode,
) -> ApplyOutcome {
    let mut out = ApplyOutcome::default();
    let recorded = owner
        .last_applied
        .and_then(|r| r.parts().ok())
        .and_then(|p| p.autoscaler);
    let base = rendered
        .horizontal_pod_autoscaler
        .clone()
        .unwrap_or_else(|| render::protect::autoscaler_stand_in(&rendered.deployment));
    let (desired, mode) = match recorded {
        Some(spec) => (render::protect::held_autoscaler(&base, &spec), mode),
        None => (base, Mode::Correct),
    };
    ensure(ctx, &live.hpas, &desired, owner, mode, &mut out).await;
    out
}

/// The second phase of a held Runtime: the PodDisruptionBudget, the
/// NetworkPolicy and the HPA berth last applied recreated when missing
/// (`dependency` is [`Mode::Protect`]; [`Mode::Correct`] while the
/// garbage collector removes them) and corrected; the Deployment and
/// CronJobs only corrected — also while a dependency is not in place
/// (issue 52: a correction may roll pods that then consume what is in the
/// way, which the Runtime reports; leaving a forbidden field on the
/// workload would be worse). Nothing is pruned, no Job is run (the Jobs
/// that ran are governed: `jobs::Runs::Held`).
async fn protect(
    ctx: &Context,
    runtime: &Runtime,
    rendered: &Rendered,
    live: &Live,
    dependency: Mode,
) -> ApplyOutcome {
    let uid = runtime.uid().unwrap_or_default();
    let s = live;
    let owner = Owner::of(runtime, &uid);
    let one = Step { ctx, owner };
    let network_policy = async {
        match &rendered.network_policy {
            Some(np) => one.ensure(&s.network_policies, np, dependency).await,
            None => ApplyOutcome::default(),
        }
    };
    let (pdb, network_policy, workloads, hpa) = futures::join!(
        one.ensure(&s.pdbs, &rendered.pod_disruption_budget, dependency),
        network_policy,
        correct_workloads(ctx, rendered, live, owner),
        held_autoscaler(ctx, rendered, live, owner, dependency),
    );
    let mut out = ApplyOutcome::default();
    for step in [pdb, network_policy, workloads, hpa] {
        out.merge(step);
    }
    // Nothing runs while held; what runs stays governed (planted Jobs
    // deleted, berth's own Jobs' mutable fields corrected).
    run_jobs_once(ctx, runtime, rendered, &s.jobs, Runs::Held, &mut out).await;
    out
}

/// How far the apply step carries out a Runtime's spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protection {
    /// Everything: the rendered objects are applied, the rest pruned.
    Converge,
    /// Held (Blocked, or being deleted): only the protection runs —
    /// missing dependencies recreated, forbidden drift removed.
    Protect,
    /// Being deleted while the garbage collector removes the objects:
    /// forbidden drift removed from what is there, nothing recreated.
    CorrectOnly,
}

/// Whether the Runtime owns a workload that runs pods (its Deployment or a
/// CronJob): what a held Runtime's protection is for.
fn runs(live: &Live, uid: &str) -> bool {
    live.deployments.all().any(|d| owned_by(d.meta(), uid))
        || live.cron_jobs.all().any(|c| owned_by(c.meta(), uid))
}

/// The one-time Jobs recorded in status (kept when no Job step ran).
fn recorded_jobs(runtime: &Runtime) -> Vec<berth_shared::api::JobRunStatus> {
    runtime
        .status
        .as_ref()
        .map(|s| s.jobs.clone())
        .unwrap_or_default()
}

/// One object's apply as a step of its own (run beside others).
struct Step<'a> {
    ctx: &'a Context,
    owner: Owner<'a>,
}

impl Step<'_> {
    async fn ensure<K: Managed + Governed + HeldTarget>(
        &self,
        cached: &Cached<K>,
        desired: &K,
        mode: Mode,
    ) -> ApplyOutcome {
        let mut out = ApplyOutcome::default();
        ensure(self.ctx, cached, desired, self.owner, mode, &mut out).await;
        out
    }
}

/// The objects of one kind a Runtime owns in its namespace, kept equal to
/// a declared desired set: what is desired is applied where it differs,
/// what the Runtime owns and is not desired is deleted (uid-preconditioned).
struct OwnedSet<'a> {
    ctx: &'a Context,
    ns: &'a str,
    owner: Owner<'a>,
}

impl OwnedSet<'_> {
    /// [`OwnedSet::converge`] as a step of its own.
    async fn converged<K: Managed + Governed + HeldTarget>(
        &self,
        cached: &Cached<K>,
        desired: &[&K],
    ) -> ApplyOutcome {
        let mut out = ApplyOutcome::default();
        self.converge(cached, desired, &mut out).await;
        out
    }

    /// Applies `desired` and deletes the rest of the owned set.
    async fn converge<K: Managed + Governed + HeldTarget>(
        &self,
        cached: &Cached<K>,
        desired: &[&K],
        out: &mut ApplyOutcome,
    ) {
        for obj in desired {
            ensure(self.ctx, cached, obj, self.owner, Mode::Converge, out).await;
        }
        let names = desired.iter().map(|o| o.name_any()).collect();
        self.prune(cached, &names, out).await;
    }

    /// Deletes every owned object whose name is not in `keep`.
    async fn prune<K: Managed>(
        &self,
        cached: &Cached<K>,
        keep: &BTreeSet<String>,
        out: &mut ApplyOutcome,
    ) {
        let kind = K::kind(&());
        for obj in not_desired(cached.all(), self.ns, self.owner.uid, keep) {
            tracing::info!(object = %format!("{kind}/{}", obj.name_any()), namespace = %self.ns, "deleting own object no longer desired");
            delete_owned(self.ctx, obj, out).await;
        }
    }
}

/// Of the cached objects of one kind, those this Runtime (`uid`) owns in
/// `ns`, not being deleted already, whose name is not in `keep`.
fn not_desired<'a, K: Resource + 'a>(
    cached: impl IntoIterator<Item = &'a Arc<K>>,
    ns: &str,
    uid: &str,
    keep: &BTreeSet<String>,
) -> Vec<&'a K> {
    cached
        .into_iter()
        .map(|o| &**o)
        .filter(|o| {
            let meta = o.meta();
            meta.namespace.as_deref() == Some(ns)
                && owned_by(meta, uid)
                && meta.deletion_timestamp.is_none()
                && !meta.name.as_ref().is_some_and(|n| keep.contains(n))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::reconcile::cached_objects::tests::owned_cm;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(ns: &str, name: &str, controller_uid: Option<&str>, deleting: bool) -> Arc<ConfigMap> {
        Arc::new(owned_cm(ns, name, controller_uid, deleting))
    }

    #[test]
    fn only_owned_undesired_objects_in_the_namespace_are_deleted() {
        // (object, desired names, deleted?)
        let cases = [
            (cm("team", "web-np", Some("u"), false), vec![], true),
            (
                cm("team", "web-np", Some("u"), false),
                vec!["web-np"],
                false,
            ),
            (
                cm("team", "web-np", Some("u"), false),
                vec!["web-other"],
                true,
            ),
            // Another Runtime's, nobody's, elsewhere, or already going.
            (cm("team", "web-np", Some("other"), false), vec![], false),
            (cm("team", "web-np", None, false), vec![], false),
            (cm("elsewhere", "web-np", Some("u"), false), vec![], false),
            (cm("team", "web-np", Some("u"), true), vec![], false),
        ];
        for (obj, keep, deleted) in cases {
            let keep: BTreeSet<String> = keep.into_iter().map(String::from).collect();
            let cached = [obj.clone()];
            let got = not_desired(&cached, "team", "u", &keep);
            assert_eq!(got.len() == 1, deleted, "{:?} keep={keep:?}", obj.metadata);
        }
        // Several at once: exactly the undesired owned ones, in cache order.
        let cached = [
            cm("team", "a", Some("u"), false),
            cm("team", "b", Some("u"), false),
            cm("team", "c", Some("x"), false),
        ];
        let keep = BTreeSet::from(["b".to_string()]);
        let names: Vec<_> = not_desired(&cached, "team", "u", &keep)
            .into_iter()
            .map(|o| o.name_any())
            .collect();
        assert_eq!(names, vec!["a"]);
    }
}
