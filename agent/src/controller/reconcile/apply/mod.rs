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
use berth_shared::contract::{self, Violation};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::Value;

mod all;
mod delete;
mod diff;
mod frozen;
mod handover;
mod held_target;
mod jobs;
mod take_back;

pub use diff::{Governed, contains, overlay, with_hash};
pub use held_target::HeldTarget;

use self::delete::delete_owned;
use self::diff::{applied_hash, hash};
use self::jobs::{Runs, run_jobs_once};
use super::apply_error::{ApplyError, Cause, Step};
use super::cached_objects::Cached;
use crate::controller::cache::Parsed;
use crate::controller::cache::stored::Stored;
use crate::controller::context::{Context, FIELD_MANAGER};
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
    /// The uids of the objects created, by name (a one-time Job's record).
    pub created: Vec<String>,
    /// Jobs planted at a one-time job's name, deleted (each a Warning Event).
    pub planted: Vec<Planted>,
}

/// A Job at a one-time job's name that berth did not create (`jobs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planted {
    /// The Job's name.
    pub job: String,
    /// What tells it from berth's (another uid, the parts that differ).
    pub differences: Vec<String>,
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
    /// the contract forbids is removed (against [`HeldTarget::held_target`]).
    Protect,
    /// Held, a workload: never created; when present, only what the
    /// contract forbids is removed (against [`HeldTarget::held_target`]).
    Correct,
}

/// What each mode may do, in one place (`ensure` asks these gates).
impl Mode {
    /// Measured against what the Runtime is held to ([`HeldTarget::held_target`]).
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
async fn ensure<K: Managed + Governed + HeldTarget>(
    ctx: &Context,
    cached: &Cached<K>,
    rendered: &K,
    owner: Owner<'_>,
    mode: Mode,
    out: &mut ApplyOutcome,
) {
    Box::pin(ensure_one(ctx, cached, rendered, owner, mode, out)).await;
}

/// Keeps one object in line, in steps: read what is at its name
/// ([`read_live`]), choose what it is measured against, then — when it is
/// this Runtime's or nothing is there — correct it or decide whether it
/// needs applying ([`needs_apply`]), and apply it ([`apply_one`]).
async fn ensure_one<K: Managed + Governed + HeldTarget>(
    ctx: &Context,
    cached: &Cached<K>,
    rendered: &K,
    owner: Owner<'_>,
    mode: Mode,
    out: &mut ApplyOutcome,
) {
    let at = At::of(rendered);
    let Some(live) = read_live(ctx, cached, &at, owner.uid, mode, out).await else {
        return;
    };
    let held;
    let desired = match &live {
        Some(live) if mode.held() => {
            // Held to what berth last applied (the Runtime's status, which
            // only the agent writes), not to the live object: an edit made
            // while held is not the tenant's part (issue 52). A status
            // that records nothing yet (written by an older agent): the
            // live object, as before.
            let recorded = owner.last_applied.and_then(|r| K::recorded(r, &at.name));
            held = K::held_target(rendered, recorded.as_ref().unwrap_or(&live.typed));
            &held
        }
        _ => rendered,
    };
    let desired_value = match with_hash(desired) {
        Ok(v) => v,
        Err(source) => {
            out.errors
                .push(ApplyError::new(at.label, Step::Apply, source));
            return;
        }
    };
    if let Some(live) = &live
        && !owned_by(live.meta(), owner.uid)
    {
        // Never a Job: one planted at the name is not one berth ran.
        if mode != Mode::CreateOnly && take_back::take_back(live, rendered, &desired_value) {
            // berth's by name, labels and content, and nobody else's: the
            // owner reference was removed, or the object replaced by an
            // exact copy. Owning it again gives no one anything.
            take_back::take(ctx, &at.label, live, rendered, out).await;
        } else {
            out.conflicts.push(at.label);
        }
        return;
    }
    if let Some(live) = &live {
        if !needs_apply(ctx, live, &desired_value, mode, &at, out).await {
            return;
        }
        tracing::info!(object = %at.label, namespace = %at.ns, "applying drifted or changed object");
    } else {
        tracing::info!(object = %at.label, namespace = %at.ns, "creating object");
    }
    apply_one(ctx, &at, owner.uid, live.as_ref(), &desired_value, out).await;
}

/// Where an object goes, and the names it is reported and remembered by.
struct At {
    kind: String,
    name: String,
    ns: String,
    /// `Kind/name`, as reports name it.
    label: String,
    /// What the write memory keeps it under.
    memory_key: String,
}

impl At {
    fn of<K: Managed>(rendered: &K) -> Self {
        let kind = K::kind(&()).to_string();
        let name = rendered.name_any();
        let ns = rendered.namespace().unwrap_or_default();
        let label = format!("{kind}/{name}");
        let memory_key = format!("{label}/{ns}");
        At {
            kind,
            name,
            ns,
            label,
            memory_key,
        }
    }
}

/// What is at the object's name, whole: `Some(None)` when nothing is,
/// `None` when there is nothing more to do (a conflict or a read error,
/// recorded in `out`; a held workload that is absent). What the apiserver
/// stores, not its typed form: a field the compiled API types do not know
/// is compared too (`stored`).
async fn read_live<K: Managed>(
    ctx: &Context,
    cached: &Cached<K>,
    at: &At,
    uid: &str,
    mode: Mode,
    out: &mut ApplyOutcome,
) -> Option<Option<Stored<K>>> {
    let found = match cached.get(&at.name) {
        Some(obj) => match cached.stored(&at.name) {
            Some(whole) => return Some(Some(whole)),
            // Someone else's object at the name (another controller's): a
            // conflict, compared with nothing. One without any controller
            // is read whole: it may be berth's own that lost its owner
            // reference (taken back below).
            None if !owned_by(obj.meta(), uid)
                && berth_shared::api::meta::controller_of(obj.meta()).is_some() =>
            {
                out.conflicts.push(at.label.clone());
                return None;
            }
            None => read_stored(&ctx.client, &at.ns, &at.name).await,
        },
        // Held: a missing workload is not created (the caches list every
        // workload, whoever's, so absent is absent). One the cache holds
        // only reduced (its whole body not kept yet) is read below.
        None if !mode.creates() && !cached.unread(&at.name) => return None,
        // Nothing is at the name, the caches say (the names index of a
        // label-filtered kind, or the whole-kind cache), and this agent has
        // not just created it: create without reading first.
        None if cached.is_free(&at.name) && !ctx.pacing.written.created(&at.memory_key) => {
            return Some(None);
        }
        // Not in the (label-filtered) cache: it may still exist without
        // berth's labels. Look before creating, so nothing is adopted —
        // the one read apply makes itself: a precondition of the create.
        // Or the cache holds it only reduced: read it whole.
        None => read_stored(&ctx.client, &at.ns, &at.name).await,
    };
    match found {
        Ok(found) => Some(found),
        Err(source) => {
            out.errors
                .push(ApplyError::new(at.label.clone(), Step::Read, source));
            None
        }
    }
}

/// Whether this Runtime's own object needs applying: what the contract
/// forbids is corrected here (and nothing more is done); otherwise an
/// object that differs is applied, unless the mode keeps the tenant's
/// changes waiting or this very version was applied already.
async fn needs_apply<K: Managed + Governed>(
    ctx: &Context,
    live: &Stored<K>,
    desired_value: &Value,
    mode: Mode,
    at: &At,
    out: &mut ApplyOutcome,
) -> bool {
    if !mode.corrects() {
        return false;
    }
    let live_value = &live.json;
    let violations = contract::violations(K::KIND, live_value, desired_value);
    // Only against the rendering applied last: a changed Runtime is
    // applied first (below), and what that apply cannot remove is
    // corrected by the next reconcile. A held Runtime is never applied:
    // its objects are corrected against what it is held to (the live
    // workload with the contract re-imposed; the rendered dependencies).
    if !violations.is_empty()
        && (mode.held() || applied_hash(live_value) == applied_hash(desired_value))
    {
        correct(ctx, live, desired_value, &violations, mode.creates(), out).await;
        return false;
    }
    if !mode.applies() {
        // Held: the tenant's changes wait for the hold to end.
        return false;
    }
    if contains(Some(live_value), desired_value) {
        return false;
    }
    // Applied from this very version already: the cache lags.
    !ctx.pacing.written.already_sent(
        &at.memory_key,
        live.meta().resource_version.as_deref(),
        &hash(desired_value),
    )
}

/// Applies the object (server-side, forced), remembers the write, and
/// replaces the desired fields where the apply's merge left drift or an
/// invalid object.
async fn apply_one<K: Managed + Governed>(
    ctx: &Context,
    at: &At,
    uid: &str,
    live: Option<&Stored<K>>,
    desired_value: &Value,
    out: &mut ApplyOutcome,
) {
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &at.ns);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    match api
        .patch(&at.name, &params, &Patch::Apply(desired_value))
        .await
    {
        Ok(applied) => {
            out.writes += 1;
            ctx.metrics.write(&at.kind, "apply");
            if live.is_none() {
                out.created.extend(applied.meta().uid.clone());
            }
            ctx.pacing.written.sent(
                &at.memory_key,
                live.and_then(|l| l.meta().resource_version.as_deref()),
                applied.meta().resource_version.as_deref(),
                &hash(desired_value),
            );
            // Server-side apply merges keyed lists: an entry someone else
            // changed in place (a Service port renumbered by another
            // manager) can survive next to ours. What the apply did not
            // converge, a replace does — otherwise every reconcile would
            // apply again.
            let result = serde_json::to_value(&applied).unwrap_or(Value::Null);
            if live.is_some() && !contains(Some(&result), desired_value) {
                tracing::info!(object = %at.label, namespace = %at.ns, "apply left drift; replacing the desired fields");
                replace::<K>(ctx, &at.label, uid, desired_value, K::WHOLE, out).await;
            }
        }
        // The same merge can make the result invalid (two ports named
        // `http`, a PDB with both minAvailable and maxUnavailable). Only
        // for an object this Runtime owns (checked above).
        Err(kube::Error::Api(s)) if s.code == 422 && live.is_some() => {
            tracing::info!(object = %at.label, namespace = %at.ns, error = %s.message, "apply invalid; replacing the desired fields");
            replace::<K>(ctx, &at.label, uid, desired_value, K::WHOLE, out).await;
        }
        Err(source) => out
            .errors
            .push(ApplyError::new(at.label.clone(), Step::Apply, source)),
    }
}

/// Makes the governed parts of `live` exactly the `desired` ones, in one
/// merge patch: server-side apply cannot remove another manager's fields.
/// What no patch can change (`frozen`) is recreated instead, where the mode
/// `creates`. Counts the write or records the error.
async fn correct<K: Managed + Governed>(
    ctx: &Context,
    live: &Stored<K>,
    desired: &Value,
    violations: &[Violation],
    creates: bool,
    out: &mut ApplyOutcome,
) {
    let kind = K::kind(&());
    let name = live.name_any();
    let ns = live.namespace().unwrap_or_default();
    let label = format!("{kind}/{name}");
    let memory_key = format!("{label}/{ns}");
    let found: Vec<String> = violations.iter().map(ToString::to_string).collect();
    tracing::warn!(object = %label, namespace = %ns, violations = ?found, "removing what the production contract forbids");
    let patch = contract::correction(K::KIND, &live.json, desired, live.meta().uid.as_deref());
    let version = live.meta().resource_version.as_deref();
    if ctx
        .pacing
        .written
        .already_sent(&memory_key, version, &hash(&patch))
    {
        // Sent from this very version already; the cache lags.
        return;
    }
    if frozen::frozen(&live.json, desired) {
        // No patch can change it: a new object is the correction.
        if creates {
            let created = frozen::recreate(ctx, &label, live, desired, out).await;
            if let Some(created) = created {
                ctx.pacing
                    .written
                    .sent(&memory_key, version, Some(&created), &hash(&patch));
            }
        }
        return;
    }
    // A merge patch, not a replace: no resourceVersion to lose to the
    // controllers' status updates, and the uid in the patch makes it fail
    // rather than touch a recreated object.
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &ns);
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..Default::default()
    };
    match api.patch(&name, &params, &Patch::Merge(&patch)).await {
        Ok(corrected) => {
            out.writes += 1;
            ctx.metrics.write(&kind, "correct");
            ctx.pacing.written.sent(
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

impl ApplyOutcome {
    /// Adds what another step did (its failures after this one's, so the
    /// first failure named stays the first step's).
    fn merge(&mut self, other: ApplyOutcome) {
        self.conflicts.extend(other.conflicts);
        self.dependencies.extend(other.dependencies);
        self.errors.extend(other.errors);
        self.writes += other.writes;
        self.jobs.extend(other.jobs);
        self.created.extend(other.created);
        self.planted.extend(other.planted);
        self.last_applied = self.last_applied.take().or(other.last_applied);
    }
}

pub use all::{Protection, apply_all};
