//! One admission review: `AdmissionReview` in, verdict out (docs/architecture.md §5
//! "Acceptance").
//!
//! The verdict reuses the controller's pure [`decide`] function, so
//! acceptance and reconciliation can never disagree about a grant, and the
//! pure [`claims::taken_by`] for one Runtime per identity. At most four
//! reads happen per review — the Runtime's Namespace (for the identity
//! labels), the RuntimeClass of the matching binding, and the two lists of
//! claimants — all through the [`Lookup`] trait so the whole path is
//! unit-tested without a cluster.
//!
//! Rules, in order:
//! 1. anything but CREATE/UPDATE is allowed (deletes are never even sent);
//! 2. an UPDATE of a Runtime that is being deleted is allowed (finalizers
//!    must always be removable);
//! 3. a granted profile, or no profile, is allowed — so clearing
//!    `runtimeProfile` always is — unless another Runtime holds the
//!    identity (one Runtime per identity, older wins): then a CREATE is
//!    denied naming the holder, and so is an UPDATE unless it sets
//!    `suspend: true` or leaves `spec` unchanged. The grant decision comes
//!    first (as at reconcile), so a copy with an ungranted profile hears
//!    about the grant. The claimants are listed with two requests
//!    (Namespaces by their identity labels, Runtimes by the
//!    `spec.application`/`spec.service` field selectors), only among the
//!    namespaces this webhook reviews;
//! 4. `suspend: true` is allowed (it retires the dependency), with a warning
//!    when the profile is not granted;
//! 5. an UPDATE that leaves `spec` unchanged (labels, annotations,
//!    finalizers) requests nothing new and is allowed, with a warning;
//! 6. anything else is denied, naming the reason and the exact scope a
//!    binding would need.

use std::collections::BTreeMap;

use berth_shared::api::{ProfileStatus, reasons};
use berth_shared::claims::{self, Claim};
use berth_shared::decide::{
    self, DecideInput, Decision, GrantBinding, Identity, IdentityError, ObservedClass,
};
use berth_shared::grants::LoadedGrants;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};

use super::grant_set::{self, Agreement};
use super::lookup::LookupError;
pub use super::lookup::{KubeLookup, Lookup};
pub use super::runtime_view::{RuntimeView, spec_of};
pub use super::verdict::Verdict;

/// The bindings of a loaded grants file in the form [`decide`] takes (empty
/// when no file is configured: nothing is granted).
pub fn grant_bindings(loaded: Option<&LoadedGrants>) -> Vec<GrantBinding> {
    loaded.map(|l| l.bindings.clone()).unwrap_or_default()
}

/// The operation under review.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// CREATE.
    Create,
    /// UPDATE.
    Update,
    /// DELETE or CONNECT: never refused.
    Other,
}

/// Everything the verdict needs, already read.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    /// The operation.
    pub op: Op,
    /// The Runtime's namespace.
    pub namespace: &'a str,
    /// The Runtime's name.
    pub name: &'a str,
    /// The new object's spec.
    pub new: &'a RuntimeView,
    /// UPDATE only: the spec did not change at all.
    pub spec_unchanged: bool,
    /// UPDATE only: the object already has a deletionTimestamp.
    pub deleting: bool,
    /// The Namespace's labels (empty when it has none or does not exist).
    pub namespace_labels: &'a BTreeMap<String, String>,
    /// The loaded grants.
    pub bindings: &'a [GrantBinding],
    /// The RuntimeClass of the matching binding, as observed.
    pub class: Option<&'a ObservedClass>,
    /// UPDATE only: `status.profile` of the stored object (tells "revoked"
    /// from "never granted").
    pub previous: Option<&'a ProfileStatus>,
    /// Another Runtime that holds this one's identity (see
    /// [`claims::taken_by`]).
    pub taken_by: Option<&'a Claim>,
}

/// The identity of a Runtime in a namespace with these labels.
pub fn identity_of(
    namespace: &str,
    labels: &BTreeMap<String, String>,
    view: &RuntimeView,
) -> Result<Identity, IdentityError> {
    let (project, environment) = decide::namespace_scope(namespace, labels)?;
    Ok(Identity {
        project,
        environment,
        application: view.application.clone(),
        service: view.service.clone(),
    })
}

/// The RuntimeClass that has to be read before [`review`]: the class of the
/// binding the Runtime selects, if one exists for its identity.
pub fn class_to_look_up(
    namespace: &str,
    labels: &BTreeMap<String, String>,
    view: &RuntimeView,
    bindings: &[GrantBinding],
) -> Option<String> {
    let alias = view.requested()?;
    let identity = identity_of(namespace, labels, view).ok()?;
    decide::binding_for(bindings, &identity, alias).map(|b| b.runtime_class.clone())
}

/// The verdict (pure).
pub fn review(f: &Facts<'_>) -> Verdict {
    if f.op == Op::Other {
        return Verdict::Allowed {
            reason: "NotReviewed",
            warning: None,
        };
    }
    if f.op == Op::Update && f.deleting {
        return Verdict::Allowed {
            reason: "Deleting",
            warning: None,
        };
    }
    let identity = identity_of(f.namespace, f.namespace_labels, f.new);
    let decision = decide::decide(DecideInput {
        bindings: f.bindings,
        identity: identity.as_ref(),
        requested: f.new.requested(),
        class: f.class,
        previous: if f.op == Op::Update { f.previous } else { None },
    });
    if decision.allows_changes() {
        if let (Some(holder), Ok(id)) = (f.taken_by, &identity) {
            return identity_taken(f, id, holder);
        }
        return Verdict::Allowed {
            reason: decision.reason(),
            warning: None,
        };
    }
    let message = denial_message(f.namespace, f.name, f.new, &identity, &decision);
    if f.new.suspend {
        return Verdict::Allowed {
            reason: decision.reason(),
            warning: Some(format!(
                "accepted because spec.suspend is true; nothing will run with this profile: {message}"
            )),
        };
    }
    if f.op == Op::Update && f.spec_unchanged {
        return Verdict::Allowed {
            reason: decision.reason(),
            warning: Some(format!(
                "accepted because spec is unchanged; the Runtime stays blocked: {message}"
            )),
        };
    }
    Verdict::Denied {
        reason: decision.reason(),
        message,
    }
}

/// The verdict on a Runtime whose identity another one holds.
fn identity_taken(f: &Facts<'_>, id: &Identity, holder: &Claim) -> Verdict {
    let me = Claim {
        namespace: f.namespace.to_string(),
        name: f.name.to_string(),
        created: None,
        deleting: false,
    };
    let message = format!(
        "{}: {}",
        reasons::IDENTITY_TAKEN,
        claims::taken_message(&me, id, holder)
    );
    // An existing copy may still retire (suspend) or have its metadata
    // changed; a new copy is never admitted.
    let exempt = match f.op {
        Op::Update if f.new.suspend => Some("spec.suspend is true"),
        Op::Update if f.spec_unchanged => Some("spec is unchanged"),
        _ => None,
    };
    match exempt {
        Some(why) => Verdict::Allowed {
            reason: reasons::IDENTITY_TAKEN,
            warning: Some(format!(
                "accepted because {why}; the Runtime stays blocked: {message}"
            )),
        },
        None => Verdict::Denied {
            reason: reasons::IDENTITY_TAKEN,
            message,
        },
    }
}

fn binding_toml(alias: &str, id: &Identity) -> String {
    format!(
        "name = \"{alias}\", project = \"{}\", environment = \"{}\", application = \"{}\", service = \"{}\"",
        id.project, id.environment, id.application, id.service
    )
}

/// The message of a refusal: the reason, the decision in words, and the
/// exact scope that would need a binding (or what else to fix).
pub fn denial_message(
    namespace: &str,
    name: &str,
    view: &RuntimeView,
    identity: &Result<Identity, IdentityError>,
    decision: &Decision,
) -> String {
    let alias = decision.alias().unwrap_or_default();
    let head = format!(
        "{}: Runtime {namespace}/{name}: {}",
        decision.reason(),
        decision.message()
    );
    let retire = "clearing spec.runtimeProfile or setting spec.suspend: true is always accepted";
    let hint = match (decision, identity) {
        (_, Err(IdentityError::MissingLabels { missing, .. })) => format!(
            "namespace {namespace} needs the label(s) {} (set by a cluster admin); a binding would then need name = \"{alias}\" with that project and environment, application = \"{}\", service = \"{}\"",
            missing.join(" and "),
            view.application,
            view.service,
        ),
        (_, Err(IdentityError::InvalidLabel { label, .. })) => format!(
            "fix the label {label} on namespace {namespace} (set by a cluster admin); a binding is matched against its exact value"
        ),
        (Decision::NotGranted { .. }, Ok(id)) => format!(
            "granting it needs a binding in the agent's grants file with {}",
            binding_toml(alias, id)
        ),
        (Decision::Revoked { .. }, Ok(id)) => format!(
            "restoring it needs a binding in the agent's grants file with {}; {retire}",
            binding_toml(alias, id)
        ),
        (
            Decision::ClassMissing {
                runtime_class,
                handler,
                ..
            },
            Ok(id),
        ) => format!(
            "the binding ({}) needs RuntimeClass {runtime_class} with handler {handler} to exist",
            binding_toml(alias, id)
        ),
        (
            Decision::HandlerMismatch {
                runtime_class,
                expected,
                ..
            },
            Ok(id),
        ) => format!(
            "the binding ({}) needs RuntimeClass {runtime_class} to name handler {expected}",
            binding_toml(alias, id)
        ),
        (Decision::ClassUnsupported { runtime_class, .. }, Ok(id)) => format!(
            "the binding ({}) needs RuntimeClass {runtime_class} without overhead and scheduling",
            binding_toml(alias, id)
        ),
        (Decision::ClassDeleting { runtime_class, .. }, Ok(id)) => format!(
            "the binding ({}) needs RuntimeClass {runtime_class}, which is going away",
            binding_toml(alias, id)
        ),
        (Decision::NotRequested | Decision::Granted { .. }, Ok(_)) => String::new(),
    };
    if hint.is_empty() {
        head
    } else {
        format!("{head}; {hint}")
    }
}

fn previous_profile(obj: &DynamicObject) -> Option<ProfileStatus> {
    let profile = obj.data.get("status")?.get("profile")?.clone();
    serde_json::from_value(profile).ok()
}

fn deny(req: &AdmissionRequest<DynamicObject>, reason: &str, message: String) -> AdmissionResponse {
    let mut resp = AdmissionResponse::from(req).deny(message);
    resp.result.code = 403;
    resp.result.reason = "Forbidden".into();
    resp.audit_annotations
        .insert("decision".into(), reason.to_string());
    resp
}

/// Reviews one request: reads what is needed, decides, answers. Any read
/// error refuses the change (fail closed), naming the error. `agreement`
/// says whether these bindings are the leader's (see [`grant_set::gate`]).
pub async fn review_request<L: Lookup>(
    req: &AdmissionRequest<DynamicObject>,
    bindings: &[GrantBinding],
    lookup: &L,
    agreement: &Agreement,
) -> AdmissionResponse {
    let op = match req.operation {
        Operation::Create => Op::Create,
        Operation::Update => Op::Update,
        _ => Op::Other,
    };
    if op == Op::Other {
        return AdmissionResponse::from(req);
    }
    let Some(new) = req.object.as_ref() else {
        return deny(
            req,
            "InvalidRequest",
            "the request carries no object".into(),
        );
    };
    let (namespace, name) = namespace_and_name(req, new);
    let view = match spec_of(new) {
        Ok(v) => v,
        Err(e) => {
            return deny(
                req,
                "InvalidRequest",
                format!("Runtime {namespace}/{name}: reading spec: {e}"),
            );
        }
    };
    let old = req.old_object.as_ref();
    let spec_unchanged = old.is_some_and(|o| o.data.get("spec") == new.data.get("spec"));
    let deleting = new.metadata.deletion_timestamp.is_some();
    let previous = old.and_then(previous_profile);

    let me = Claim {
        namespace: namespace.to_string(),
        name: name.to_string(),
        // A CREATE is younger than every stored Runtime.
        created: old.and_then(|o| o.metadata.creation_timestamp.clone()),
        deleting,
    };
    let read = ReadFor {
        namespace,
        view: &view,
        bindings,
        reads_labels: !(op == Op::Update && deleting),
        deleting,
    };
    let LookedUp {
        labels,
        claims,
        class,
    } = match look_up(lookup, &read).await {
        Ok(found) => found,
        Err((what, e)) => {
            return deny(
                req,
                "LookupFailed",
                format!("Runtime {namespace}/{name}: the {what} could not be checked: {e}"),
            );
        }
    };
    let taken_by = claims::taken_by(&me, &claims);
    let verdict = review(&Facts {
        op,
        namespace,
        name,
        new: &view,
        spec_unchanged,
        deleting,
        namespace_labels: &labels,
        bindings,
        class: class.as_ref(),
        previous: previous.as_ref(),
        taken_by,
    });
    // Retiring (suspend) and metadata-only updates are admitted whatever
    // the grants say, even when the profile is granted here.
    let admitted_anyway = view.suspend || (op == Op::Update && spec_unchanged);
    let verdict = grant_set::gate(verdict, agreement, admitted_anyway);
    tracing::info!(
        namespace,
        name,
        operation = ?req.operation,
        dry_run = req.dry_run,
        user = req.user_info.username.as_deref().unwrap_or_default(),
        allowed = verdict.is_allowed(),
        "admission review"
    );
    respond(req, verdict)
}

/// The Runtime's namespace (the request's, else the object's) and name
/// (the object's, else the request's).
fn namespace_and_name<'a>(
    req: &'a AdmissionRequest<DynamicObject>,
    new: &'a DynamicObject,
) -> (&'a str, &'a str) {
    let namespace = req
        .namespace
        .as_deref()
        .or(new.metadata.namespace.as_deref())
        .unwrap_or_default();
    let name = new
        .metadata
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or(req.name.as_str());
    (namespace, name)
}

/// What the review of one request reads: the namespace's labels (not for
/// an update of a Runtime being deleted: nothing could be refused), the
/// claims on its identity (every Runtime with an identity claims it, so
/// the labels are read even without a profile), and the class its
/// binding names.
struct ReadFor<'a> {
    namespace: &'a str,
    view: &'a RuntimeView,
    bindings: &'a [GrantBinding],
    reads_labels: bool,
    deleting: bool,
}

/// What [`look_up`] found.
struct LookedUp {
    labels: BTreeMap<String, String>,
    claims: Vec<Claim>,
    class: Option<ObservedClass>,
}

/// Reads what the review needs; a failed read names what could not be
/// checked (the grant, the identity) and why.
async fn look_up<L: Lookup>(
    lookup: &L,
    read: &ReadFor<'_>,
) -> Result<LookedUp, (&'static str, LookupError)> {
    let namespace = read.namespace;
    let labels = if read.reads_labels {
        lookup
            .namespace_labels(namespace)
            .await
            .map_err(|e| ("grant", e))?
            .unwrap_or_default()
    } else {
        BTreeMap::new()
    };
    let claims = match identity_of(namespace, &labels, read.view) {
        Ok(id) if !read.deleting => lookup.claims(&id).await.map_err(|e| ("identity", e))?,
        _ => Vec::new(),
    };
    let class = match class_to_look_up(namespace, &labels, read.view, read.bindings) {
        None => None,
        Some(class_name) => lookup
            .runtime_class(&class_name)
            .await
            .map_err(|e| ("grant", e))?,
    };
    Ok(LookedUp {
        labels,
        claims,
        class,
    })
}

/// The response for a verdict: an allowed one carries its reason as an
/// audit annotation, and its warning.
fn respond(req: &AdmissionRequest<DynamicObject>, verdict: Verdict) -> AdmissionResponse {
    match verdict {
        Verdict::Allowed { reason, warning } => {
            let mut resp = AdmissionResponse::from(req);
            resp.audit_annotations
                .insert("decision".into(), reason.to_string());
            resp.warnings = warning.map(|w| vec![w]);
            resp
        }
        Verdict::Denied { reason, message } => deny(req, reason, message),
    }
}

/// Turns a raw review into the review to send back; malformed input gets an
/// "invalid" answer (which the API server treats as a refusal).
pub async fn handle<L: Lookup>(
    review: AdmissionReview<DynamicObject>,
    bindings: &[GrantBinding],
    lookup: &L,
    agreement: &Agreement,
) -> AdmissionReview<DynamicObject> {
    let req: AdmissionRequest<DynamicObject> = match review.try_into() {
        Ok(req) => req,
        Err(e) => return AdmissionResponse::invalid(e).into_review(),
    };
    review_request(&req, bindings, lookup, agreement)
        .await
        .into_review()
}

#[cfg(test)]
mod tests;
