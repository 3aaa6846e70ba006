//! Step 4 (apply): server-side apply of the rendered objects with one field
//! manager — but only of objects that differ from the cache, so a reconcile
//! that changes nothing sends nothing.
//!
//! "Differs" means: some field of the desired object is not in the live one
//! with the same value (drift), or the live object's
//! `berth.dev/applied-hash` annotation is not the hash of the desired object
//! (the spec changed, which also covers fields that were *removed* from the
//! desired object). For that decision keyed lists (entries with a `name`)
//! are compared entry by entry; whether an entry another party added may
//! stay is the contract's question (below): in a governed part it may not.
//! Labels and annotations others add on the object itself are not drift.
//!
//! Server-side apply cannot remove a field another manager owns, so the
//! governed parts of each object (`berth_shared::contract`: deny by
//! default, one table of what is tolerated) are compared exactly with the
//! rendered ones, and any foreign difference is corrected by one merge
//! patch carrying the object's uid: one write.
//!
//! Objects are never adopted: an existing object with a managed name and no
//! controller reference to this Runtime is a conflict and is left untouched.
//! Nothing berth does not own is consumed either: while the ConfigMap or
//! the ServiceAccount the pods reference is someone else's (or could not be
//! applied), the Deployment, Jobs and CronJobs are not created or changed.
//!
//! A held (Blocked) Runtime keeps its protection ([`apply_all`] with
//! `held`): missing dependencies are recreated, forbidden drift is removed,
//! and nothing else changes — the workloads are measured against the
//! rendered contract with the tenant's part taken from the live objects
//! (`berth_shared::render::protect`), so the pods keep their class, image
//! and template.

use std::fmt::Debug;

use berth_shared::api::{JobRunStatus, LastApplied, Runtime};
use berth_shared::contract;
use berth_shared::render::{self, Rendered};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::Value;

mod all;
mod delete;
mod diff;
mod frozen;
mod handover;
mod held;
mod take_back;

pub use diff::{Governed, contains, overlay, with_hash};
pub use held::Held;

use self::delete::delete_owned;
use self::diff::{applied_hash, hash};
use super::apply_error::{ApplyError, Cause, Step};
use super::caches::Parsed;
use super::context::{Context, FIELD_MANAGER};
use super::live::Cached;
use super::stored::Stored;
// Only objects whose controller is the Runtime are ever changed or deleted.
use berth_shared::api::meta::controlled_by_uid as owned_by;

/// What the apply step did.
#[derive(Debug, Default)]
pub struct ApplyOutcome {
    /// `Kind/name` of objects that exist and are not ours.
    pub conflicts: Vec<String>,
    /// Of those, the ones the pods reference: the workloads were left
    /// alone because of them.
    pub dependencies: Vec<String>,
    /// Failures, one per object.
    pub errors: Vec<ApplyError>,
    /// Writes sent.
    pub writes: usize,
    /// The one-time Jobs started so far (the status record).
    pub jobs: Vec<JobRunStatus>,
    /// What was applied of the workloads' tenant part, when the whole
    /// rendering went out (the status record a hold keeps them at).
    pub last_applied: Option<LastApplied>,
}

/// A namespaced kind the apply step reads from a cache and writes (every
/// managed kind is one; written once here rather than on each function).
pub trait Managed: Parsed + Resource<Scope = kube::core::NamespaceResourceScope> {}

impl<K> Managed for K where K: Parsed + Resource<Scope = kube::core::NamespaceResourceScope> {}

/// The Runtime an object is applied for: its uid (only objects it
/// controls are changed) and what its status records berth last applied
/// (what a held workload is measured against).
#[derive(Clone, Copy, Debug)]
pub struct Owner<'a> {
    /// The Runtime's uid.
    pub uid: &'a str,
    /// `status.lastApplied`.
    pub last_applied: Option<&'a LastApplied>,
}

impl<'a> Owner<'a> {
    /// The owner `runtime` is.
    pub fn of(runtime: &'a Runtime, uid: &'a str) -> Self {
        Owner {
            uid,
            last_applied: runtime
                .status
                .as_ref()
                .and_then(|s| s.last_applied.as_ref()),
        }
    }
}

/// How an object is kept in line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Applied whenever it differs.
    Converge,
    /// Created when absent, never changed (Jobs: their template is immutable
    /// and a finished Job stays as it ran).
    CreateOnly,
    /// Held, a dependency: created when absent; when present, only what
    /// the contract forbids is removed (against [`Held::held`]).
    Protect,
    /// Held, a workload: never created; when present, only what the
    /// contract forbids is removed (against [`Held::held`]).
    Correct,
}

/// What each mode may do, in one place (`ensure` asks these gates).
impl Mode {
    /// Measured against what the Runtime is held to ([`Held::held`]).
    fn held(self) -> bool {
        matches!(self, Mode::Protect | Mode::Correct)
    }

    /// An absent object is created.
    fn creates(self) -> bool {
        self != Mode::Correct
    }

    /// A present object has what the contract forbids removed.
    fn corrects(self) -> bool {
        self != Mode::CreateOnly
    }

    /// A present object that differs is applied (the tenant's changes).
    fn applies(self) -> bool {
        self == Mode::Converge
    }
}

/// [`ensure_one`] on the heap: a reconcile joins a dozen of these (each
/// holding typed and JSON copies of its object), and a debug build's
/// tokio worker overflowed its stack when they were all inline.
async fn ensure<K: Managed + Governed + Held>(
    ctx: &Context,
    cached: &Cached<K>,
    rendered: &K,
    owner: Owner<'_>,
    mode: Mode,
    out: &mut ApplyOutcome,
) {
    Box::pin(ensure_one(ctx, cached, rendered, owner, mode, out)).await;
}

async fn ensure_one<K: Managed + Governed + Held>(
    ctx: &Context,
    cached: &Cached<K>,
    rendered: &K,
    owner: Owner<'_>,
    mode: Mode,
    out: &mut ApplyOutcome,
) {
    let uid = owner.uid;
    let kind = K::kind(&());
    let name = rendered.name_any();
    let ns = rendered.namespace().unwrap_or_default();
    let label = format!("{kind}/{name}");
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &ns);
    let memory_key = format!("{label}/{ns}");
    // What the apiserver stores, not its typed form: a field the compiled
    // API types do not know is compared too (`stored`).
    let live: Option<Stored<K>> = match cached.get(&name) {
        Some(obj) => match cached.stored(&name) {
            Some(whole) => Some(whole),
            // Someone else's object at the name (another controller's): a
            // conflict, compared with nothing. One without any controller
            // is read whole: it may be berth's own that lost its owner
            // reference (taken back below).
            None if !owned_by(obj.meta(), uid)
                && berth_shared::api::meta::controller_of(obj.meta()).is_some() =>
            {
                out.conflicts.push(label);
                return;
            }
            None => match read_stored(&ctx.client, &ns, &name).await {
                Ok(found) => found,
                Err(source) => {
                    out.errors.push(ApplyError::new(label, Step::Read, source));
                    return;
                }
            },
        },
        // Held: a missing workload is not created (the caches list every
        // workload, whoever's, so absent is absent). One the cache holds
        // only reduced (its whole body not kept yet) is read below.
        None if !mode.creates() && !cached.unread(&name) => return,
        // Nothing is at the name, the caches say (the names index of a
        // label-filtered kind, or the whole-kind cache), and this agent has
        // not just created it: create without reading first.
        None if cached.is_free(&name) && !ctx.written.created(&memory_key) => None,
        // Not in the (label-filtered) cache: it may still exist without
        // berth's labels. Look before creating, so nothing is adopted —
        // the one read apply makes itself: a precondition of the create.
        // Or the cache holds it only reduced: read it whole.
        None => match read_stored(&ctx.client, &ns, &name).await {
            Ok(found) => found,
            Err(source) => {
                out.errors.push(ApplyError::new(label, Step::Read, source));
                return;
            }
        },
    };
    let held;
    let desired = match &live {
        Some(live) if mode.held() => {
            // Held to what berth last applied (the Runtime's status, which
            // only the agent writes), not to the live object: an edit made
            // while held is not the tenant's part (issue 52). A status
            // that records nothing yet (written by an older agent): the
            // live object, as before.
            let recorded = owner.last_applied.and_then(|r| K::recorded(r, &name));
            held = K::held(rendered, recorded.as_ref().unwrap_or(&live.typed));
            &held
        }
        _ => rendered,
    };
    let desired_value = match with_hash(desired) {
        Ok(v) => v,
        Err(source) => {
            out.errors.push(ApplyError::new(label, Step::Apply, source));
            return;
        }
    };
    if let Some(live) = &live
        && !owned_by(live.meta(), uid)
    {
        // Never a Job: one planted at the name is not one berth ran.
        if mode != Mode::CreateOnly && take_back::take_back(live, rendered, &desired_value) {
            // berth's by name, labels and content, and nobody else's: the
            // owner reference was removed, or the object replaced by an
            // exact copy. Owning it again gives no one anything.
            take_back::take(ctx, &label, live, rendered, out).await;
        } else {
            out.conflicts.push(label);
        }
        return;
    }
    if let Some(live) = &live {
        if !mode.corrects() {
            return;
        }
        let live_value = &live.json;
        let violations = contract::violations(K::KIND, live_value, &desired_value);
        // Only against the rendering applied last: a changed Runtime is
        // applied first (below), and what that apply cannot remove is
        // corrected by the next reconcile. A held Runtime is never applied:
        // its objects are corrected against what it is held to (the live
        // workload with the contract re-imposed; the rendered dependencies).
        if !violations.is_empty()
            && (mode.held() || applied_hash(live_value) == applied_hash(&desired_value))
        {
            // Apply cannot remove another manager's fields: make the
            // governed parts exactly the rendered ones, in one write.
            let found: Vec<String> = violations.iter().map(ToString::to_string).collect();
            tracing::warn!(object = %label, namespace = %ns, violations = ?found, "removing what the production contract forbids");
            let patch = contract::correction(
                K::KIND,
                live_value,
                &desired_value,
                live.meta().uid.as_deref(),
            );
            let version = live.meta().resource_version.as_deref();
            if ctx
                .written
                .already_sent(&memory_key, version, &hash(&patch))
            {
                // Sent from this very version already; the cache lags.
                return;
            }
            if frozen::frozen(live_value, &desired_value) {
                // No patch can change it: a new object is the correction.
                if mode.creates() {
                    let created = frozen::recreate(ctx, &label, live, &desired_value, out).await;
                    if let Some(created) = created {
                        ctx.written
                            .sent(&memory_key, version, Some(&created), &hash(&patch));
                    }
                }
                return;
            }
            // A merge patch, not a replace: no resourceVersion to lose to
            // the controllers' status updates, and the uid in the patch
            // makes it fail rather than touch a recreated object.
            match api
                .patch(
                    &name,
                    &PatchParams {
                        field_manager: Some(FIELD_MANAGER.to_string()),
                        ..Default::default()
                    },
                    &Patch::Merge(&patch),
                )
                .await
            {
                Ok(corrected) => {
                    out.writes += 1;
                    ctx.metrics.write(&kind, "correct");
                    ctx.written.sent(
                        &memory_key,
                        version,
                        corrected.meta().resource_version.as_deref(),
                        &hash(&patch),
                    );
                }
                Err(source) => out
                    .errors
                    .push(ApplyError::new(label, Step::Correct, source)),
            }
            return;
        }
        if !mode.applies() {
            // Held: the tenant's changes wait for the hold to end.
            return;
        }
        if contains(Some(live_value), &desired_value) {
            return;
        }
        if ctx.written.already_sent(
            &memory_key,
            live.meta().resource_version.as_deref(),
            &hash(&desired_value),
        ) {
            // Applied from this very version already; the cache lags.
            return;
        }
        tracing::info!(object = %label, namespace = %ns, "applying drifted or changed object");
    } else {
        tracing::info!(object = %label, namespace = %ns, "creating object");
    }
    let params = PatchParams::apply(FIELD_MANAGER).force();
    match api
        .patch(&name, &params, &Patch::Apply(&desired_value))
        .await
    {
        Ok(applied) => {
            out.writes += 1;
            ctx.metrics.write(&kind, "apply");
            ctx.written.sent(
                &memory_key,
                live.as_ref()
                    .and_then(|l| l.meta().resource_version.as_deref()),
                applied.meta().resource_version.as_deref(),
                &hash(&desired_value),
            );
            // Server-side apply merges keyed lists: an entry someone else
            // changed in place (a Service port renumbered by another
            // manager) can survive next to ours. What the apply did not
            // converge, a replace does — otherwise every reconcile would
            // apply again.
            let result = serde_json::to_value(&applied).unwrap_or(Value::Null);
            if live.is_some() && !contains(Some(&result), &desired_value) {
                tracing::info!(object = %label, namespace = %ns, "apply left drift; replacing the desired fields");
                replace::<K>(ctx, &label, uid, &desired_value, K::WHOLE, out).await;
            }
        }
        // The same merge can make the result invalid (two ports named
        // `http`, a PDB with both minAvailable and maxUnavailable). Only
        // for an object this Runtime owns (checked above).
        Err(kube::Error::Api(s)) if s.code == 422 && live.is_some() => {
            tracing::info!(object = %label, namespace = %ns, error = %s.message, "apply invalid; replacing the desired fields");
            replace::<K>(ctx, &label, uid, &desired_value, K::WHOLE, out).await;
        }
        Err(source) => out.errors.push(ApplyError::new(label, Step::Apply, source)),
    }
}

/// Replaces the object with the desired fields (see [`overlay`]), counting
/// the write or recording the error.
async fn replace<K: Managed>(
    ctx: &Context,
    label: &str,
    uid: &str,
    desired: &Value,
    whole: &[&str],
    out: &mut ApplyOutcome,
) {
    let name = desired
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let ns = desired
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let api: Api<Stored<K>> = Api::namespaced(ctx.client.clone(), ns);
    match replace_spec(&api, label, name, uid, desired, whole).await {
        Ok(()) => {
            out.writes += 1;
            ctx.metrics.write(&K::kind(&()), "replace");
        }
        Err(e) => out.errors.push(e),
    }
}

/// Reads `ns`/`name` as the apiserver stores it (`None`: not there).
async fn read_stored<K: Managed>(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<Option<Stored<K>>, kube::Error> {
    Api::<Stored<K>>::namespaced(client.clone(), ns)
        .get_opt(name)
        .await
}

/// Reads the object fresh, checks it is still this Runtime's, and replaces
/// it (with its resourceVersion: a concurrent change makes it a conflict,
/// retried by the next reconcile) with the desired spec fields.
async fn replace_spec<K: Managed>(
    api: &Api<Stored<K>>,
    label: &str,
    name: &str,
    uid: &str,
    desired: &Value,
    whole: &[&str],
) -> Result<(), ApplyError> {
    // Controllers update status (and so the resourceVersion) all the time:
    // a conflict is read again and retried, a few times.
    let mut attempt = 0;
    loop {
        attempt += 1;
        let fail = |cause: Cause| ApplyError::new(label, Step::Replace, cause);
        // As the apiserver stores it: the replace keeps (or, in the
        // governed parts, overwrites) every field, known to the compiled
        // types or not.
        let live = api
            .get(name)
            .await
            .map_err(|source| ApplyError::new(label, Step::Read, source))?;
        if !owned_by(live.meta(), uid) {
            return Err(fail(Cause::NotOwned));
        }
        let json = |source: serde_json::Error| fail(source.into());
        let mut value = live.json;
        overlay(&mut value, desired, whole);
        let obj = Stored::<K>::from_json(value).map_err(json)?;
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..Default::default()
        };
        match api.replace(name, &params, &obj).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 && attempt < 3 => continue,
            Err(source) => return Err(fail(source.into())),
        }
    }
}

/// One-time Jobs run once per definition (`render::job_definition_hash`:
/// image, command, args — not the class, pod metadata or anything else): a
/// Job recorded in status with the same definition is never created again
/// (TTL cleanup, a manual delete, a resume), and a live Job that runs the
/// same definition is kept as it is, finished or running, whatever else
/// changed (a retirement to the default runtime, a grant that rolls). An
/// entry whose definition changed replaces its old Job (deleted first,
/// uid-preconditioned) and runs once more.
async fn run_jobs_once(
    ctx: &Context,
    runtime: &Runtime,
    rendered: &Rendered,
    cached: &Cached<Job>,
    out: &mut ApplyOutcome,
) {
    let uid = runtime.uid().unwrap_or_default();
    let owner = Owner::of(runtime, &uid);
    let ns = runtime.namespace().unwrap_or_default();
    let name = runtime.name_any();
    let previous: Vec<JobRunStatus> = runtime
        .status
        .as_ref()
        .map(|s| s.jobs.clone())
        .unwrap_or_default();
    let mut records = Vec::new();
    for entry in &runtime.spec.jobs {
        let job_name = render::names::job_name(&name, &entry.name);
        let recorded = previous.iter().find(|r| r.name == entry.name);
        let Some(desired) = rendered.jobs.iter().find(|j| j.name_any() == job_name) else {
            // Not rendered (suspended): keep what was recorded.
            records.extend(recorded.cloned());
            continue;
        };
        let Some(definition) = render::job_definition_hash(desired) else {
            continue;
        };
        // Records written before definitions were the identity hold the
        // hash of the whole rendered Job: still "it ran" when that matches.
        let legacy = with_hash(desired).ok().as_ref().and_then(applied_hash);
        let ran = |r: &JobRunStatus| {
            r.template_hash == definition || legacy.as_deref() == Some(r.template_hash.as_str())
        };
        let record = JobRunStatus {
            name: entry.name.clone(),
            job: job_name.clone(),
            template_hash: definition.clone(),
        };
        match cached.get(&job_name) {
            Some(job) if owned_by(job.meta(), &uid) => {
                if render::job_definition_hash(job).as_deref() == Some(definition.as_str()) {
                    // Same definition: kept as it ran (or runs).
                    records.push(record);
                } else {
                    // Changed definition: the old Job goes first (a Job's
                    // template is immutable), the new one is created by a
                    // later reconcile.
                    records.extend(recorded.cloned());
                    if job.meta().deletion_timestamp.is_none() {
                        tracing::info!(job = %job_name, namespace = %ns, "job definition changed; replacing the old Job to run it once more");
                        delete_owned(ctx, &**job, out).await;
                    }
                }
            }
            Some(_) => {
                // Not ours: ensure reports the conflict and touches nothing.
                ensure(ctx, cached, desired, owner, Mode::CreateOnly, out).await;
                records.extend(recorded.cloned());
            }
            None if recorded.is_some_and(ran) => {
                // It ran; it is gone (TTL, deleted). Never again.
                records.push(record);
            }
            None => {
                let before = out.writes;
                ensure(ctx, cached, desired, owner, Mode::CreateOnly, out).await;
                if out.writes > before {
                    records.push(record);
                } else {
                    records.extend(recorded.cloned());
                }
            }
        }
    }
    out.jobs = records;
}

impl ApplyOutcome {
    /// Adds what another step did (its failures after this one's, so the
    /// first failure named stays the first step's).
    fn merge(&mut self, other: ApplyOutcome) {
        self.conflicts.extend(other.conflicts);
        self.dependencies.extend(other.dependencies);
        self.errors.extend(other.errors);
        self.writes += other.writes;
        self.jobs.extend(other.jobs);
        self.last_applied = self.last_applied.take().or(other.last_applied);
    }
}

pub use all::{Protection, apply_all};
