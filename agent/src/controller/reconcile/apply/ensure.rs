//! One object kept in line: read from the cache (or the apiserver when
//! the cache lags), compared with what is rendered, then applied,
//! corrected by one merge patch, or left alone, as its [`Mode`] allows.

// Only objects whose controller is the Runtime are ever changed or deleted.
use berth_shared::api::meta::controlled_by_uid as owned_by;
use berth_shared::contract::{self, Violation};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::Value;

use super::diff::{Governed, applied_hash, contains, hash, overlay, with_hash};
use super::held_target::HeldTarget;
use super::outcome::{ApplyOutcome, Managed, Mode, Owner};
use super::{frozen, take_back};
use crate::controller::cache::stored::Stored;
use crate::controller::context::{Context, FIELD_MANAGER};
use crate::controller::reconcile::apply_error::{ApplyError, Cause, Step};
use crate::controller::reconcile::cached_objects::Cached;

/// [`ensure_one`] on the heap: a reconcile joins a dozen of these (each
/// holding typed and JSON copies of its object), and a debug build's
/// tokio worker overflowed its stack when they were all inline.
pub(super) async fn ensure<K: Managed + Governed + HeldTarget>(
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
            None => read_stored(&ctx.access.client, &at.ns, &at.name).await,
        },
        // Held: a missing workload is not created (the caches list every
        // workload, whoever's, so absent is absent). One the cache holds
        // only reduced (its whole body not kept yet) is read below.
        None if !mode.creates() && !cached.unread(&at.name) => return None,
        // Nothing is at the name, the caches say (the names index of a
        // label-filtered kind, or the whole-kind cache), and this agent has
        // not just created it: create without reading first.
        None if cached.is_free(&at.name) && !ctx.record.pacing.written.created(&at.memory_key) => {
            return Some(None);
        }
        // Not in the (label-filtered) cache: it may still exist without
        // berth's labels. Look before creating, so nothing is adopted —
        // the one read apply makes itself: a precondition of the create.
        // Or the cache holds it only reduced: read it whole.
        None => read_stored(&ctx.access.client, &at.ns, &at.name).await,
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
    !ctx.record.pacing.written.already_sent(
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
    let api: Api<K> = Api::namespaced(ctx.access.client.clone(), &at.ns);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    match api
        .patch(&at.name, &params, &Patch::Apply(desired_value))
        .await
    {
        Ok(applied) => {
            out.writes += 1;
            ctx.record.metrics.write(&at.kind, "apply");
            if live.is_none() {
                out.created.extend(applied.meta().uid.clone());
            }
            ctx.record.pacing.written.sent(
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
pub(super) async fn correct<K: Managed + Governed>(
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
        .record
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
                ctx.record
                    .pacing
                    .written
                    .sent(&memory_key, version, Some(&created), &hash(&patch));
            }
        }
        return;
    }
    // A merge patch, not a replace: no resourceVersion to lose to the
    // controllers' status updates, and the uid in the patch makes it fail
    // rather than touch a recreated object.
    let api: Api<K> = Api::namespaced(ctx.access.client.clone(), &ns);
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..Default::default()
    };
    match api.patch(&name, &params, &Patch::Merge(&patch)).await {
        Ok(corrected) => {
            out.writes += 1;
            ctx.record.metrics.write(&kind, "correct");
            ctx.record.pacing.written.sent(
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
    let api: Api<Stored<K>> = Api::namespaced(ctx.access.client.clone(), ns);
    match replace_spec(&api, label, name, uid, desired, whole).await {
        Ok(()) => {
            out.writes += 1;
            ctx.record.metrics.write(&K::kind(&()), "replace");
        }
        Err(e) => out.errors.push(e),
    }
}

/// Reads `ns`/`name` as the apiserver stores it (`None`: not there).
pub(super) async fn read_stored<K: Managed>(
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
