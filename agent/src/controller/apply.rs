//! Step 4 (apply): server-side apply of the rendered objects with one field
//! manager — but only of objects that differ from the cache, so a reconcile
//! that changes nothing sends nothing.
//!
//! "Differs" means: some field of the desired object is not in the live one
//! with the same value (drift), or the live object's
//! `berth.dev/applied-hash` annotation is not the hash of the desired object
//! (the spec changed, which also covers fields that were *removed* from the
//! desired object). Keyed lists (entries with a `name`) are compared entry
//! by entry, so entries another party added, and the order they put them
//! in, are not drift; labels and annotations others add are not either.
//!
//! Server-side apply cannot remove a field another manager owns, so what
//! the production contract forbids (`berth_shared::contract`: host
//! namespaces, extra containers or volumes, privilege, a reshaped PDB, …)
//! is corrected by replacing the governed part of the object with the
//! rendered one, conditional on the resourceVersion read: one write.
//!
//! Objects are never adopted: an existing object with a managed name and no
//! controller reference to this Runtime is a conflict and is left untouched.

use std::collections::BTreeSet;
use std::fmt::Debug;

use berth_shared::api::{JobRunStatus, Runtime};
use berth_shared::contract::{self, Violation};
use berth_shared::render::{self, Rendered};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::apply_error::ApplyError;
use super::context::{Context, FIELD_MANAGER};
// Only objects whose controller is the Runtime are ever changed or deleted.
use berth_shared::api::meta::controlled_by_uid as owned_by;

/// Annotation holding the hash of the object as last applied.
pub const APPLIED_HASH_ANNOTATION: &str = "berth.dev/applied-hash";

/// What the apply step did.
#[derive(Debug, Default)]
pub struct ApplyOutcome {
    /// `Kind/name` of objects that exist and are not ours.
    pub conflicts: Vec<String>,
    /// Failures, one per object.
    pub errors: Vec<ApplyError>,
    /// Writes sent.
    pub writes: usize,
    /// The one-time Jobs started so far (the status record).
    pub jobs: Vec<JobRunStatus>,
}

/// Whether every field of `desired` is present in `actual` with the same
/// value. Empty objects/arrays and nulls in `desired` match an absent field
/// (the apiserver drops them). Lists whose desired entries all carry a
/// `name` are keyed lists: each desired entry must be present (by name),
/// extra entries and their order are someone else's business (the contract
/// check decides whether they are allowed). Other lists are atomic and
/// compared position by position.
pub fn contains(actual: Option<&Value>, desired: &Value) -> bool {
    match desired {
        Value::Null => true,
        Value::Object(d) if d.is_empty() => actual.is_none_or(|a| a.is_object() || a.is_null()),
        Value::Array(d) if d.is_empty() => {
            actual.is_none_or(|a| a.is_null() || a.as_array().is_some_and(Vec::is_empty))
        }
        Value::Object(d) => {
            let Some(Value::Object(a)) = actual else {
                return false;
            };
            d.iter().all(|(k, dv)| contains(a.get(k), dv))
        }
        Value::Array(d) => {
            let Some(Value::Array(a)) = actual else {
                return false;
            };
            let key = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_string);
            if d.iter().all(|dv| key(dv).is_some()) {
                d.iter().all(|dv| {
                    let name = key(dv);
                    a.iter()
                        .find(|av| key(av) == name)
                        .is_some_and(|av| contains(Some(av), dv))
                })
            } else {
                a.len() == d.len() && a.iter().zip(d).all(|(av, dv)| contains(Some(av), dv))
            }
        }
        scalar => actual == Some(scalar),
    }
}

/// How the production contract governs a managed kind: which live
/// differences are forbidden, and which top-level fields a correction
/// replaces whole (the others are overlaid field by field under `spec`).
pub trait Governed: Sized {
    /// Forbidden differences between `live` and `desired`.
    fn violations(_live: &Self, _desired: &Self) -> Vec<Violation> {
        Vec::new()
    }
    /// Top-level fields a replace (the fallback when an apply cannot
    /// converge) sets whole.
    const WHOLE: &'static [&'static str] = &[];
    /// JSON pointers of the parts the contract governs whole: a contract
    /// correction makes each exactly the rendered one.
    const GOVERNED: &'static [&'static str] = &[];
}

impl Governed for ServiceAccount {}
impl Governed for Service {}
impl Governed for NetworkPolicy {}
impl Governed for HorizontalPodAutoscaler {}
impl Governed for Job {}

impl Governed for ConfigMap {
    fn violations(live: &Self, desired: &Self) -> Vec<Violation> {
        contract::config_map_violations(live, desired)
    }
    const WHOLE: &'static [&'static str] = &["data", "binaryData"];
    const GOVERNED: &'static [&'static str] = &["/data", "/binaryData"];
}

impl Governed for PodDisruptionBudget {
    fn violations(live: &Self, desired: &Self) -> Vec<Violation> {
        match (&live.spec, &desired.spec) {
            (Some(l), Some(d)) => contract::pdb_violations(l, d),
            _ => Vec::new(),
        }
    }
    const WHOLE: &'static [&'static str] = &["spec"];
    const GOVERNED: &'static [&'static str] = &["/spec"];
}

impl Governed for Deployment {
    fn violations(live: &Self, desired: &Self) -> Vec<Violation> {
        let pod = |d: &Deployment| d.spec.as_ref().and_then(|s| s.template.spec.clone());
        match (pod(live), pod(desired)) {
            (Some(l), Some(d)) => contract::pod_spec_violations("spec.template.spec", &l, &d),
            _ => Vec::new(),
        }
    }
    const GOVERNED: &'static [&'static str] = &["/spec/template/spec"];
}

impl Governed for CronJob {
    fn violations(live: &Self, desired: &Self) -> Vec<Violation> {
        let pod = |c: &CronJob| {
            c.spec
                .as_ref()
                .and_then(|s| s.job_template.spec.as_ref())
                .and_then(|j| j.template.spec.clone())
        };
        match (pod(live), pod(desired)) {
            (Some(l), Some(d)) => {
                contract::pod_spec_violations("spec.jobTemplate.spec.template.spec", &l, &d)
            }
            _ => Vec::new(),
        }
    }
    const GOVERNED: &'static [&'static str] = &["/spec/jobTemplate/spec/template/spec"];
}

fn hash(value: &Value) -> String {
    let digest = Sha256::digest(value.to_string().as_bytes());
    digest.iter().take(10).map(|b| format!("{b:02x}")).collect()
}

/// The desired object as JSON with its hash annotation.
pub fn with_hash<K: Serialize>(desired: &K) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(desired)?;
    let h = hash(&value);
    let meta = value
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| {
            <serde_json::Error as serde::ser::Error>::custom("rendered object without metadata")
        })?;
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(a) = annotations.as_object_mut() {
        a.insert(APPLIED_HASH_ANNOTATION.to_string(), Value::String(h));
    }
    Ok(value)
}

/// How an object is kept in line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Applied whenever it differs.
    Converge,
    /// Created when absent, never changed (Jobs: their template is immutable
    /// and a finished Job stays as it ran).
    CreateOnly,
}

async fn ensure<K>(
    ctx: &Context,
    store: &Store<K>,
    desired: &K,
    uid: &str,
    mode: Mode,
    out: &mut ApplyOutcome,
) where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Governed
        + Clone
        + Serialize
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
{
    let kind = K::kind(&());
    let name = desired.name_any();
    let ns = desired.namespace().unwrap_or_default();
    let label = format!("{kind}/{name}");
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &ns);
    let cached = store.get(&ObjectRef::new(&name).within(&ns));
    let live: Option<K> = match cached {
        Some(obj) => Some((*obj).clone()),
        // Not in the (label-filtered) cache: it may still exist without
        // berth's labels. Look before creating, so nothing is adopted.
        None => match api.get_opt(&name).await {
            Ok(found) => found,
            Err(source) => {
                out.errors.push(ApplyError::Read {
                    object: label,
                    source,
                });
                return;
            }
        },
    };
    let desired_value = match with_hash(desired) {
        Ok(v) => v,
        Err(source) => {
            out.errors.push(ApplyError::Json {
                object: label,
                source,
            });
            return;
        }
    };
    if let Some(live) = &live {
        if !owned_by(live.meta(), uid) {
            out.conflicts.push(label);
            return;
        }
        if mode == Mode::CreateOnly {
            return;
        }
        let violations = K::violations(live, desired);
        if !violations.is_empty() {
            // Apply cannot remove another manager's fields: replace the
            // governed part with the rendered one, in one write.
            let found: Vec<String> = violations.iter().map(ToString::to_string).collect();
            tracing::warn!(object = %label, namespace = %ns, violations = ?found, "removing what the production contract forbids");
            let live_value = serde_json::to_value(live).unwrap_or(Value::Null);
            let patch = correction_patch(
                &live_value,
                &desired_value,
                K::GOVERNED,
                live.meta().uid.as_deref(),
            );
            let memory_key = format!("{label}/{ns}");
            let version = live.meta().resource_version.as_deref();
            if ctx
                .written
                .already_sent(&memory_key, version, &hash(&patch))
            {
                // Sent from this very version already; the cache lags.
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
                Ok(_) => {
                    out.writes += 1;
                    ctx.metrics.write(&kind, "correct");
                    ctx.written.sent(&memory_key, version, &hash(&patch));
                }
                Err(source) => out.errors.push(ApplyError::Correct {
                    object: label,
                    source,
                }),
            }
            return;
        }
        let live_value = serde_json::to_value(live).unwrap_or(Value::Null);
        if contains(Some(&live_value), &desired_value) {
            return;
        }
        if ctx.written.already_sent(
            &format!("{label}/{ns}"),
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
                &format!("{label}/{ns}"),
                live.as_ref()
                    .and_then(|l| l.meta().resource_version.as_deref()),
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
                replace(ctx, &api, &label, uid, &desired_value, K::WHOLE, out).await;
            }
        }
        // The same merge can make the result invalid (two ports named
        // `http`, a PDB with both minAvailable and maxUnavailable). Only
        // for an object this Runtime owns (checked above).
        Err(kube::Error::Api(s)) if s.code == 422 && live.is_some() => {
            tracing::info!(object = %label, namespace = %ns, error = %s.message, "apply invalid; replacing the desired fields");
            replace(ctx, &api, &label, uid, &desired_value, K::WHOLE, out).await;
        }
        Err(source) => out.errors.push(ApplyError::Apply {
            object: label,
            source,
        }),
    }
}

/// Replaces the object with the desired fields (see [`overlay`]), counting
/// the write or recording the error.
async fn replace<K>(
    ctx: &Context,
    api: &Api<K>,
    label: &str,
    uid: &str,
    desired: &Value,
    whole: &[&str],
    out: &mut ApplyOutcome,
) where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug,
{
    let name = desired
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match replace_spec(api, name, uid, desired, whole).await {
        Ok(()) => {
            out.writes += 1;
            ctx.metrics.write(&K::kind(&()), "replace");
        }
        Err(e) => out.errors.push(e.for_object(label)),
    }
}

/// A JSON merge patch that makes each part of `live` at the `governed`
/// pointers exactly the rendered one: the desired content, plus an
/// explicit null for every key `live` has and `desired` does not, at every
/// depth (lists are replaced whole by a merge patch anyway). Fields the
/// apiserver defaults come back with their defaults; fields someone else
/// added are gone. The desired labels and annotations are set too.
pub fn correction_patch(
    live: &Value,
    desired: &Value,
    governed: &[&str],
    uid: Option<&str>,
) -> Value {
    fn exact(live: Option<&Value>, desired: &Value) -> Value {
        match (live, desired) {
            (Some(Value::Object(l)), Value::Object(d)) => {
                let mut out = serde_json::Map::new();
                for (k, dv) in d {
                    out.insert(k.clone(), exact(l.get(k), dv));
                }
                for k in l.keys() {
                    if !d.contains_key(k) {
                        out.insert(k.clone(), Value::Null);
                    }
                }
                Value::Object(out)
            }
            (_, d) => d.clone(),
        }
    }
    let mut patch = serde_json::json!({"metadata": {"uid": uid}});
    for key in ["labels", "annotations"] {
        if let Some(v) = desired.pointer(&format!("/metadata/{key}")) {
            patch["metadata"][key] = v.clone();
        }
    }
    for pointer in governed {
        let part = match desired.pointer(pointer) {
            Some(d) => exact(live.pointer(pointer), d),
            None => Value::Null,
        };
        // Build the nesting down to the pointer.
        let mut at = &mut patch;
        let segments: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
        for (i, segment) in segments.iter().enumerate() {
            if i + 1 == segments.len() {
                at[*segment] = part.clone();
            } else {
                if !at.get(*segment).is_some_and(Value::is_object) {
                    at[*segment] = serde_json::json!({});
                }
                at = &mut at[*segment];
            }
        }
    }
    patch
}

/// `live` with the fields in `whole` replaced by `desired`'s (removed when
/// `desired` has none), every other top-level `spec` field of `desired`
/// replacing the live one (fields the agent does not render, such as a
/// Service's clusterIP, stay), and `desired`'s labels and annotations set
/// (others' labels and annotations stay).
pub fn overlay(live: &mut Value, desired: &Value, whole: &[&str]) {
    if let Some(l) = live.as_object_mut() {
        for key in whole {
            match desired.get(*key) {
                Some(v) => {
                    l.insert((*key).to_string(), v.clone());
                }
                None => {
                    l.remove(*key);
                }
            }
        }
    }
    if !whole.contains(&"spec")
        && let (Some(l), Some(d)) = (
            live.get_mut("spec").and_then(Value::as_object_mut),
            desired.get("spec").and_then(Value::as_object),
        )
    {
        for (k, v) in d {
            l.insert(k.clone(), v.clone());
        }
    }
    for key in ["labels", "annotations"] {
        let Some(d) = desired
            .get("metadata")
            .and_then(|m| m.get(key))
            .and_then(Value::as_object)
        else {
            continue;
        };
        let Some(meta) = live.get_mut("metadata").and_then(Value::as_object_mut) else {
            continue;
        };
        let entry = meta
            .entry(key)
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(l) = entry.as_object_mut() {
            for (k, v) in d {
                l.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Reads the object fresh, checks it is still this Runtime's, and replaces
/// it (with its resourceVersion: a concurrent change makes it a conflict,
/// retried by the next reconcile) with the desired spec fields.
async fn replace_spec<K>(
    api: &Api<K>,
    name: &str,
    uid: &str,
    desired: &Value,
    whole: &[&str],
) -> Result<(), ApplyError>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
{
    // Controllers update status (and so the resourceVersion) all the time:
    // a conflict is read again and retried, a few times.
    let mut attempt = 0;
    loop {
        attempt += 1;
        // The caller names the object (`for_object`).
        let object = String::new();
        let live = api.get(name).await.map_err(|source| ApplyError::Read {
            object: object.clone(),
            source,
        })?;
        if !owned_by(live.meta(), uid) {
            return Err(ApplyError::NotOwned { object });
        }
        let json = |source| ApplyError::Json {
            object: String::new(),
            source,
        };
        let mut value = serde_json::to_value(&live).map_err(json)?;
        overlay(&mut value, desired, whole);
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        let obj: K = serde_json::from_value(value).map_err(json)?;
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..Default::default()
        };
        match api.replace(name, &params, &obj).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 && attempt < 3 => continue,
            Err(source) => return Err(ApplyError::Replace { object, source }),
        }
    }
}

/// Field manager that holds a Deployment's replica count while it passes
/// from the agent to the HorizontalPodAutoscaler.
pub const HANDOVER_MANAGER: &str = "berth-agent-hpa-handover";

/// Whether the `Apply` entry of the agent in `managed` owns spec.replicas.
fn agent_owns_replicas(managed: &[ManagedFieldsEntry]) -> bool {
    managed.iter().any(|m| {
        m.manager.as_deref() == Some(FIELD_MANAGER)
            && m.operation.as_deref() == Some("Apply")
            && m.fields_v1.as_ref().is_some_and(|f| {
                f.0.get("f:spec")
                    .and_then(|s| s.get("f:replicas"))
                    .is_some()
            })
    })
}

/// Autoscaling turned on: the rendered Deployment no longer sets replicas.
/// Server-side apply would *remove* a field its only owner stops applying
/// (the Deployment would fall to the default of 1 replica until the HPA
/// acts). So before that apply, a second field manager applies the current
/// count, becoming co-owner; the agent's apply then only gives its share
/// up, and the HPA takes the count over from there (Kubernetes' documented
/// ownership transfer). Only when the agent still owns the field, i.e. once
/// per transition; the write is conditional on the resourceVersion read.
async fn hand_over_replicas(
    ctx: &Context,
    store: &Store<Deployment>,
    desired: &Deployment,
    uid: &str,
    min_replicas: i32,
    out: &mut ApplyOutcome,
) {
    let name = desired.name_any();
    let ns = desired.namespace().unwrap_or_default();
    let label = format!("Deployment/{name}");
    let Some(cached) = store.get(&ObjectRef::new(&name).within(&ns)) else {
        return;
    };
    if !owned_by(cached.meta(), uid) || cached.spec.as_ref().and_then(|s| s.replicas).is_none() {
        return;
    }
    let Ok(desired_value) = with_hash(desired) else {
        return;
    };
    let cached_value = serde_json::to_value(&*cached).unwrap_or(Value::Null);
    if contains(Some(&cached_value), &desired_value) {
        // Nothing to apply, so nothing to hand over.
        return;
    }
    let api: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ns);
    let live = match api.get(&name).await {
        Ok(d) => d,
        Err(source) => {
            out.errors.push(ApplyError::Read {
                object: label,
                source,
            });
            return;
        }
    };
    let live_replicas = live.spec.as_ref().and_then(|s| s.replicas);
    if !owned_by(live.meta(), uid)
        || live_replicas.is_none()
        || !agent_owns_replicas(live.metadata.managed_fields.as_deref().unwrap_or_default())
    {
        return;
    }
    // Never hand over fewer than minReplicas: coming back from suspend (or
    // turning autoscaling on at 0) the live count is 0, and the HPA does
    // nothing for a target at 0 replicas.
    let replicas = live_replicas.map(|r| r.max(min_replicas));
    tracing::info!(object = %label, namespace = %ns, ?replicas, "handing the replica count over to the HorizontalPodAutoscaler");
    let body = serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "resourceVersion": live.metadata.resource_version},
        "spec": {"replicas": replicas},
    });
    match api
        .patch(
            &name,
            // Forced: raising the count to minReplicas changes a value the
            // agent's own apply still owns (that would be a conflict).
            &PatchParams::apply(HANDOVER_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await
    {
        Ok(_) => {
            out.writes += 1;
            ctx.metrics.write("Deployment", "apply");
        }
        Err(source) => out.errors.push(ApplyError::Handover {
            object: label,
            source,
        }),
    }
}

async fn prune<K>(
    ctx: &Context,
    store: &Store<K>,
    ns: &str,
    uid: &str,
    keep: &BTreeSet<String>,
    out: &mut ApplyOutcome,
) where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + Serialize
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
{
    let kind = K::kind(&());
    for obj in store.state() {
        let name = obj.name_any();
        if obj.namespace().as_deref() != Some(ns)
            || !owned_by(obj.meta(), uid)
            || keep.contains(&name)
            || obj.meta().deletion_timestamp.is_some()
        {
            continue;
        }
        tracing::info!(object = %format!("{kind}/{name}"), namespace = %ns, "deleting own object no longer desired");
        delete_owned(ctx, &*obj, out).await;
    }
}

/// The hash a rendered object is recorded under (its applied-hash).
fn applied_hash(value: &Value) -> Option<String> {
    value
        .pointer(&format!(
            "/metadata/annotations/{}",
            APPLIED_HASH_ANNOTATION.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// One-time Jobs run once per template: a Job recorded in status with the
/// same template hash is never created again (TTL cleanup, a manual
/// delete, a resume); an entry whose definition changed replaces its old
/// Job (deleted first, uid-preconditioned) and runs once more.
async fn run_jobs_once(
    ctx: &Context,
    runtime: &Runtime,
    rendered: &Rendered,
    out: &mut ApplyOutcome,
) {
    let uid = runtime.uid().unwrap_or_default();
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
        let Some(hash) = with_hash(desired).ok().as_ref().and_then(applied_hash) else {
            continue;
        };
        let record = JobRunStatus {
            name: entry.name.clone(),
            job: job_name.clone(),
            template_hash: hash.clone(),
        };
        let live = ctx.stores.jobs.get(&ObjectRef::new(&job_name).within(&ns));
        match live {
            Some(job) if owned_by(job.meta(), &uid) => {
                let live_hash = job.annotations().get(APPLIED_HASH_ANNOTATION).cloned();
                if live_hash.as_deref() == Some(hash.as_str()) {
                    records.push(record);
                } else {
                    // Changed definition: the old Job goes first (a Job's
                    // template is immutable), the new one is created by a
                    // later reconcile.
                    records.extend(recorded.cloned());
                    if job.meta().deletion_timestamp.is_none() {
                        tracing::info!(job = %job_name, namespace = %ns, "job definition changed; replacing the old Job to run it once more");
                        delete_owned(ctx, &*job, out).await;
                    }
                }
            }
            Some(_) => {
                // Not ours: ensure reports the conflict and touches nothing.
                ensure(ctx, &ctx.stores.jobs, desired, &uid, Mode::CreateOnly, out).await;
                records.extend(recorded.cloned());
            }
            None if recorded.is_some_and(|r| r.template_hash == hash) => {
                // It ran; it is gone (TTL, deleted). Never again.
                records.extend(recorded.cloned());
            }
            None => {
                let before = out.writes;
                ensure(ctx, &ctx.stores.jobs, desired, &uid, Mode::CreateOnly, out).await;
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

/// Deletes one owned object (uid precondition, background propagation).
async fn delete_owned<K>(ctx: &Context, obj: &K, out: &mut ApplyOutcome)
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug,
{
    let kind = K::kind(&());
    let name = obj.name_any();
    let ns = obj.namespace().unwrap_or_default();
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &ns);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: obj.meta().uid.clone(),
            resource_version: None,
        }),
        propagation_policy: Some(PropagationPolicy::Background),
        ..Default::default()
    };
    match api.delete(&name, &params).await {
        Ok(_) => {
            out.writes += 1;
            ctx.metrics.write(&kind, "delete");
        }
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(source) => out.errors.push(ApplyError::Delete {
            object: format!("{kind}/{name}"),
            source,
        }),
    }
}

/// Applies every rendered object and deletes the Runtime's own objects that
/// are no longer desired (NetworkPolicy/HPA turned off, a job or schedule
/// removed from the spec). Jobs are not deleted because the Runtime is
/// suspended — only when their entry left `spec.jobs`.
pub async fn apply_all(ctx: &Context, runtime: &Runtime, rendered: &Rendered) -> ApplyOutcome {
    let mut out = ApplyOutcome::default();
    let uid = runtime.uid().unwrap_or_default();
    let ns = runtime.namespace().unwrap_or_default();
    let name = runtime.name_any();
    let s = &ctx.stores;
    ensure(
        ctx,
        &s.config_maps,
        &rendered.config_map,
        &uid,
        Mode::Converge,
        &mut out,
    )
    .await;
    ensure(
        ctx,
        &s.service_accounts,
        &rendered.service_account,
        &uid,
        Mode::Converge,
        &mut out,
    )
    .await;
    ensure(
        ctx,
        &s.services,
        &rendered.service,
        &uid,
        Mode::Converge,
        &mut out,
    )
    .await;
    let mut handed_over = true;
    if rendered
        .deployment
        .spec
        .as_ref()
        .is_some_and(|d| d.replicas.is_none())
    {
        let errors = out.errors.len();
        let min = runtime.spec.wanted_replicas();
        hand_over_replicas(
            ctx,
            &s.deployments,
            &rendered.deployment,
            &uid,
            min,
            &mut out,
        )
        .await;
        handed_over = out.errors.len() == errors;
    }
    // Without the handover the apply would drop the replica count: retried.
    if handed_over {
        ensure(
            ctx,
            &s.deployments,
            &rendered.deployment,
            &uid,
            Mode::Converge,
            &mut out,
        )
        .await;
    }
    ensure(
        ctx,
        &s.pdbs,
        &rendered.pod_disruption_budget,
        &uid,
        Mode::Converge,
        &mut out,
    )
    .await;
    let mut keep = BTreeSet::new();
    if let Some(np) = &rendered.network_policy {
        keep.insert(np.name_any());
        ensure(ctx, &s.network_policies, np, &uid, Mode::Converge, &mut out).await;
    }
    prune(ctx, &s.network_policies, &ns, &uid, &keep, &mut out).await;
    let mut keep = BTreeSet::new();
    if let Some(hpa) = &rendered.horizontal_pod_autoscaler {
        keep.insert(hpa.name_any());
        ensure(ctx, &s.hpas, hpa, &uid, Mode::Converge, &mut out).await;
    }
    prune(ctx, &s.hpas, &ns, &uid, &keep, &mut out).await;
    run_jobs_once(ctx, runtime, rendered, &mut out).await;
    let keep: BTreeSet<String> = runtime
        .spec
        .jobs
        .iter()
        .map(|j| render::names::job_name(&name, &j.name))
        .collect();
    prune(ctx, &s.jobs, &ns, &uid, &keep, &mut out).await;
    let mut keep = BTreeSet::new();
    for cron in &rendered.cron_jobs {
        keep.insert(cron.name_any());
        ensure(ctx, &s.cron_jobs, cron, &uid, Mode::Converge, &mut out).await;
    }
    prune(ctx, &s.cron_jobs, &ns, &uid, &keep, &mut out).await;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containment() {
        let actual = json!({"a": 1, "b": {"c": "x", "d": [ {"e": 1, "f": 2} ]}, "extra": true});
        assert!(contains(Some(&actual), &json!({"a": 1})));
        assert!(contains(Some(&actual), &json!({"b": {"d": [{"e": 1}]}})));
        assert!(!contains(Some(&actual), &json!({"b": {"d": [{"e": 2}]}})));
        assert!(!contains(
            Some(&actual),
            &json!({"b": {"d": [{"e": 1}, {"e": 1}]}})
        ));
        assert!(!contains(Some(&actual), &json!({"z": 1})));
        assert!(contains(
            Some(&actual),
            &json!({"z": {}, "y": [], "n": null})
        ));
        assert!(!contains(Some(&actual), &json!({"a": "1"})));
    }

    #[test]
    fn keyed_lists_tolerate_foreign_entries_and_order() {
        let desired = json!({"containers": [{"name": "app", "image": "x"}]});
        let appended = json!({"containers": [
            {"name": "mesh-proxy", "image": "envoy"},
            {"name": "app", "image": "x", "imagePullPolicy": "IfNotPresent"}]});
        assert!(contains(Some(&appended), &desired));
        let changed = json!({"containers": [{"name": "app", "image": "y"}]});
        assert!(!contains(Some(&changed), &desired));
        let missing = json!({"containers": [{"name": "other", "image": "x"}]});
        assert!(!contains(Some(&missing), &desired));
        // Unkeyed lists stay atomic: an extra entry is a difference.
        let desired = json!({"args": ["a"]});
        assert!(!contains(Some(&json!({"args": ["a", "b"]})), &desired));
    }

    #[test]
    fn overlay_replaces_whole_fields_when_asked() {
        let mut live = json!({
            "metadata": {"name": "web", "labels": {"theirs": "x"}},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}
        });
        let desired = json!({
            "metadata": {"name": "web"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"a": "b"}}}
        });
        overlay(&mut live, &desired, &["spec"]);
        assert_eq!(
            live["spec"],
            json!({"maxUnavailable": 1, "selector": {"matchLabels": {"a": "b"}}})
        );
        assert_eq!(live["metadata"]["labels"]["theirs"], "x");
        let mut cm = json!({"metadata": {"name": "c"}, "data": {"A": "1", "EVIL": "2"}, "binaryData": {"B": "AA=="}});
        overlay(
            &mut cm,
            &json!({"metadata": {"name": "c"}, "data": {"A": "1"}}),
            &["data", "binaryData"],
        );
        assert_eq!(cm, json!({"metadata": {"name": "c"}, "data": {"A": "1"}}));
    }

    #[test]
    fn correction_patch_makes_the_governed_part_exact() {
        let live = json!({
            "metadata": {"name": "web", "uid": "u1", "labels": {"theirs": "x"}},
            "spec": {"replicas": 3, "template": {
                "metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "t"}},
                "spec": {
                    "hostNetwork": true,
                    "dnsPolicy": "ClusterFirst",
                    "securityContext": {"runAsNonRoot": true, "sysctls": [{"name": "x", "value": "1"}]},
                    "containers": [{"name": "app", "image": "a", "securityContext": {"privileged": true}},
                                   {"name": "sidecar", "image": "b"}]
                }}}
        });
        let desired = json!({
            "metadata": {"name": "web", "labels": {"berth": "y"}},
            "spec": {"template": {"spec": {
                "securityContext": {"runAsNonRoot": true},
                "containers": [{"name": "app", "image": "a"}]
            }}}
        });
        let patch = correction_patch(&live, &desired, &["/spec/template/spec"], Some("u1"));
        assert_eq!(
            patch,
            json!({
                "metadata": {"uid": "u1", "labels": {"berth": "y"}},
                "spec": {"template": {"spec": {
                    "hostNetwork": null,
                    "dnsPolicy": null,
                    "securityContext": {"runAsNonRoot": true, "sysctls": null},
                    "containers": [{"name": "app", "image": "a"}]
                }}}
            })
        );
        // Replicas and the template's metadata are not governed: untouched.
        assert!(patch["spec"].get("replicas").is_none());
        assert!(patch["spec"]["template"].get("metadata").is_none());
    }

    #[test]
    fn overlay_replaces_desired_fields_only() {
        let mut live = json!({
            "metadata": {"name": "web", "labels": {"theirs": "x"}, "resourceVersion": "7"},
            "spec": {"clusterIP": "10.0.0.1", "ports": [
                {"name": "http", "port": 9999}, {"name": "extra", "port": 1}]}
        });
        let desired = json!({
            "metadata": {"name": "web", "labels": {"berth": "y"}, "annotations": {"a": "b"}},
            "spec": {"ports": [{"name": "http", "port": 80}]}
        });
        overlay(&mut live, &desired, &[]);
        assert_eq!(
            live,
            json!({
                "metadata": {"name": "web", "labels": {"theirs": "x", "berth": "y"},
                    "annotations": {"a": "b"}, "resourceVersion": "7"},
                "spec": {"clusterIP": "10.0.0.1", "ports": [{"name": "http", "port": 80}]}
            })
        );
    }

    #[test]
    fn replica_ownership_from_managed_fields() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
        let entry = |manager: &str, op: &str, fields: Value| ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(op.into()),
            fields_v1: Some(FieldsV1(fields)),
            ..Default::default()
        };
        let replicas = json!({"f:spec": {"f:replicas": {}}});
        assert!(agent_owns_replicas(&[entry(
            FIELD_MANAGER,
            "Apply",
            replicas.clone()
        )]));
        assert!(!agent_owns_replicas(&[entry(
            FIELD_MANAGER,
            "Update",
            replicas.clone()
        )]));
        assert!(!agent_owns_replicas(&[entry(
            "kube-controller-manager",
            "Apply",
            replicas
        )]));
        assert!(!agent_owns_replicas(&[entry(
            FIELD_MANAGER,
            "Apply",
            json!({"f:spec": {"f:template": {}}})
        )]));
    }

    #[test]
    fn hash_annotation_tracks_content() {
        let a = with_hash(&json!({"metadata": {"name": "x"}, "data": {"k": "v"}})).expect("hash");
        let b = with_hash(&json!({"metadata": {"name": "x"}, "data": {"k": "w"}})).expect("hash");
        let ha = &a["metadata"]["annotations"][APPLIED_HASH_ANNOTATION];
        let hb = &b["metadata"]["annotations"][APPLIED_HASH_ANNOTATION];
        assert!(ha.is_string());
        assert_ne!(ha, hb);
        // The same content hashes the same.
        let a2 = with_hash(&json!({"metadata": {"name": "x"}, "data": {"k": "v"}})).expect("hash");
        assert_eq!(a, a2);
    }
}
