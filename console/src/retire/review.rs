//! The I/O half of a review: who the user is (SelfSubjectReview), whether
//! RBAC allows the action (SelfSubjectAccessReview), the objects the plan
//! needs (read fresh, stripped and sanitized like the watchers' data), and
//! the verdict of a server-side dry-run of the exact change — admission
//! webhooks included.

use berth_shared::api::{Runtime, meta};
use berth_shared::decide;
use berth_shared::render::Names;
use berth_shared::render::labels::RUNTIME_LABEL;
use berth_shared::sanitize;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Api, Client};

use super::plan::{self, Action, Change, Plan, RuntimeContext};
use crate::store::ClusterId;
use crate::store::ingest::prepare;

/// What the server said about the dry-run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Admitted (admission included).
    Accepted,
    /// Refused, with the server's message (sanitized).
    Refused(String),
    /// Not run (nothing to change).
    NotRun(String),
}

impl Verdict {
    /// Whether the change may be confirmed.
    pub fn accepted(&self) -> bool {
        matches!(self, Verdict::Accepted)
    }

    /// One line for the review.
    pub fn text(&self) -> String {
        match self {
            Verdict::Accepted => "accepted by the API server (admission included)".into(),
            Verdict::Refused(m) => format!("REFUSED: {}", clean(m)),
            Verdict::NotRun(m) => format!("not run: {}", clean(m)),
        }
    }
}

/// A reviewed action: the cluster it was reviewed in, the plan, the user,
/// and the dry-run verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Review {
    /// The cluster whose connection made the reads and the dry-run: the
    /// only one the change may be sent to.
    pub cluster: ClusterId,
    pub plan: Plan,
    /// The user as the API server sees them (sanitized).
    pub user: String,
    pub verdict: Verdict,
}

impl Review {
    /// Whether it can be carried out after confirmation.
    pub fn can_execute(&self) -> bool {
        self.verdict.accepted() && self.plan.has_change()
    }
}

/// Why a review (or execution) could not be done.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RetireError {
    /// `--read-only`.
    #[error("read-only: retirement actions are disabled (--read-only)")]
    ReadOnly,
    /// RBAC does not allow the action.
    #[error(
        "not allowed: {user} cannot {verb} {resource} in namespace {namespace}{reason}; nothing was changed"
    )]
    Forbidden {
        user: String,
        verb: String,
        resource: String,
        namespace: String,
        reason: String,
    },
    /// The object does not exist.
    #[error("{kind} {target} not found")]
    NotFound { kind: String, target: String },
    /// The object changed since it was reviewed.
    #[error("conflict: {0}; review again (nothing was changed)")]
    Conflict(String),
    /// Anything else the API server said.
    #[error("{0}")]
    Api(String),
    /// The command line or the plan is wrong.
    #[error("{0}")]
    Invalid(String),
}

fn clean(s: &str) -> String {
    sanitize::line(s, 512)
}

/// Maps an API error to a clear message.
pub fn api_error(e: kube::Error, what: &str) -> RetireError {
    match e {
        kube::Error::Api(s) if s.code == 409 => {
            RetireError::Conflict(format!("{what}: {}", clean(&s.message)))
        }
        kube::Error::Api(s) if s.code == 403 => RetireError::Api(format!(
            "forbidden: {what}: {}; nothing was changed",
            clean(&s.message)
        )),
        kube::Error::Api(s) => RetireError::Api(format!("{what}: {}", clean(&s.message))),
        other => RetireError::Api(format!("{what}: {}", clean(&other.to_string()))),
    }
}

/// The user as the API server sees them (`SelfSubjectReview`).
pub async fn whoami(client: &Client) -> String {
    let api: Api<SelfSubjectReview> = Api::all(client.clone());
    match api
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
    {
        Ok(r) => r
            .status
            .and_then(|s| s.user_info)
            .and_then(|u| u.username)
            .map(|u| sanitize::name(&u))
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "(unknown user)".into()),
        Err(_) => "(unknown user)".into(),
    }
}

/// Asks a SelfSubjectAccessReview whether `action` is allowed in
/// `namespace`: `Ok(())` or the refusal.
pub async fn check_access(
    client: &Client,
    action: &Action,
    namespace: &str,
    user: &str,
) -> Result<(), RetireError> {
    let (group, resource, verb) = action.access();
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(group.into()),
                resource: Some(resource.into()),
                verb: Some(verb.into()),
                namespace: Some(namespace.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let res = api
        .create(&PostParams::default(), &review)
        .await
        .map_err(|e| api_error(e, "SelfSubjectAccessReview"))?;
    let status = res.status.unwrap_or_default();
    if status.allowed && !status.denied.unwrap_or(false) {
        return Ok(());
    }
    let reason = status
        .reason
        .filter(|r| !r.is_empty())
        .map(|r| format!(" ({})", clean(&r)))
        .unwrap_or_default();
    Err(RetireError::Forbidden {
        user: user.to_string(),
        verb: verb.into(),
        resource: format!("{resource}.{group}"),
        namespace: clean(namespace),
        reason,
    })
}

/// `NAMESPACE/NAME`, split.
pub fn parse_target(s: &str) -> Result<(String, String), RetireError> {
    match s.split_once('/') {
        Some((ns, n)) if !ns.is_empty() && !n.is_empty() && !n.contains('/') => {
            Ok((ns.to_string(), n.to_string()))
        }
        _ => Err(RetireError::Invalid(format!(
            "expected NAMESPACE/NAME, got {:?}",
            clean(s)
        ))),
    }
}

/// Reviews `action` on `namespace/name` (a Runtime, or a Deployment for
/// prune) in `cluster`, whose connection `client` is: user, permission,
/// plan, dry-run. Nothing is changed.
pub async fn review(
    client: &Client,
    cluster: &ClusterId,
    action: &Action,
    namespace: &str,
    name: &str,
) -> Result<Review, RetireError> {
    let user = whoami(client).await;
    check_access(client, action, namespace, &user).await?;
    let now = Timestamp::from_second(Timestamp::now().as_second())
        .unwrap_or_else(|_| Timestamp::now())
        .to_string();
    let target = format!("{}/{}", clean(namespace), clean(name));
    let plan = match action {
        Action::Prune { class } => {
            let deps: Api<Deployment> = Api::namespaced(client.clone(), namespace);
            let dep = deps
                .get_opt(name)
                .await
                .map_err(|e| api_error(e, "reading the Deployment"))?
                .and_then(prepare)
                .ok_or_else(|| RetireError::NotFound {
                    kind: "Deployment".into(),
                    target: target.clone(),
                })?;
            let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), namespace);
            let sets: Vec<ReplicaSet> = rss
                .list(&ListParams::default())
                .await
                .map_err(|e| api_error(e, "listing ReplicaSets"))?
                .items
                .into_iter()
                .filter_map(prepare)
                .collect();
            let owner = match plan::runtime_owner(&dep) {
                Some(rt_name) => Api::<Runtime>::namespaced(client.clone(), namespace)
                    .get_opt(&rt_name)
                    .await
                    .ok()
                    .flatten()
                    .and_then(prepare),
                None => None,
            };
            plan::plan_prune(class, &dep, &sets, owner.as_ref())
        }
        _ => {
            let api: Api<Runtime> = Api::namespaced(client.clone(), namespace);
            let rt = api
                .get_opt(name)
                .await
                .map_err(|e| api_error(e, "reading the Runtime"))?
                .and_then(prepare)
                .ok_or_else(|| RetireError::NotFound {
                    kind: "Runtime".into(),
                    target: target.clone(),
                })?;
            let ctx = runtime_context(client, &rt, namespace, name).await;
            plan::plan_runtime(action, &rt, &ctx, &user, &now)
                .map_err(|e| RetireError::Invalid(e.to_string()))?
        }
    };
    let verdict = match &plan.nothing {
        Some(why) => Verdict::NotRun(why.clone()),
        None => dry_run(client, &plan.change).await,
    };
    Ok(Review {
        cluster: cluster.clone(),
        plan,
        user,
        verdict,
    })
}

/// The identity, Deployment and pods of a Runtime; each read is optional
/// (a user may read Runtimes but not Pods).
async fn runtime_context(
    client: &Client,
    rt: &Runtime,
    namespace: &str,
    name: &str,
) -> RuntimeContext {
    let mut identity = rt
        .status
        .as_ref()
        .and_then(|s| s.identity.as_ref())
        .filter(|i| i.project.is_some() && i.environment.is_some())
        .map(|_| plan::identity_of(rt));
    if identity.is_none()
        && let Ok(ns) = Api::<Namespace>::all(client.clone()).get(namespace).await
    {
        identity = decide::identity(&ns, rt).ok();
    }
    let dep_name = Names::for_runtime(name).workload;
    let deployment = Api::<Deployment>::namespaced(client.clone(), namespace)
        .get_opt(&dep_name)
        .await
        .ok()
        .flatten()
        .filter(|d| plan::runtime_owner(d).as_deref() == Some(name))
        .and_then(prepare);
    let pods = Api::<Pod>::namespaced(client.clone(), namespace)
        .list(&ListParams::default().labels(&format!("{RUNTIME_LABEL}={name}")))
        .await
        .map(|l| l.items.into_iter().filter_map(prepare).collect())
        .unwrap_or_default();
    // The one-time Jobs, for what the change does to them (owned ones only).
    let jobs = Api::<Job>::namespaced(client.clone(), namespace)
        .list(&ListParams::default().labels(&format!(
            "{RUNTIME_LABEL}={},app.kubernetes.io/component=job",
            berth_shared::render::names::label_value(name)
        )))
        .await
        .map(|l| {
            l.items
                .into_iter()
                .filter(|j| {
                    meta::controller_of(&j.metadata)
                        .is_some_and(|r| r.kind == "Runtime" && r.name == name)
                })
                .filter_map(prepare)
                .collect()
        })
        .unwrap_or_default();
    RuntimeContext {
        identity,
        deployment,
        pods,
        jobs,
    }
}

/// Sends `change` (dry-run or for real).
pub async fn send(client: &Client, change: &Change, dry_run: bool) -> Result<(), RetireError> {
    match change {
        Change::Nothing => Ok(()),
        Change::PatchRuntime {
            namespace,
            name,
            patch,
        } => {
            let api: Api<Runtime> = Api::namespaced(client.clone(), namespace);
            let pp = PatchParams {
                dry_run,
                ..Default::default()
            };
            api.patch(name, &pp, &Patch::Merge(patch))
                .await
                .map(|_| ())
                .map_err(|e| api_error(e, "patching the Runtime"))
        }
        Change::DeleteRuntime {
            namespace,
            name,
            uid,
            resource_version,
        } => {
            let api: Api<Runtime> = Api::namespaced(client.clone(), namespace);
            api.delete(name, &delete_params(dry_run, uid, resource_version))
                .await
                .map(|_| ())
                .map_err(|e| api_error(e, "deleting the Runtime"))
        }
        Change::DeleteReplicaSets { namespace, sets } => {
            let api: Api<ReplicaSet> = Api::namespaced(client.clone(), namespace);
            for (name, uid, rv) in sets {
                api.delete(name, &delete_params(dry_run, uid, rv))
                    .await
                    .map_err(|e| api_error(e, &format!("deleting ReplicaSet {}", clean(name))))?;
            }
            Ok(())
        }
    }
}

fn delete_params(dry_run: bool, uid: &str, rv: &str) -> DeleteParams {
    DeleteParams {
        dry_run,
        preconditions: Some(Preconditions {
            uid: (!uid.is_empty()).then(|| uid.to_string()),
            resource_version: (!rv.is_empty()).then(|| rv.to_string()),
        }),
        ..Default::default()
    }
}

/// The server-side dry-run of `change`.
pub async fn dry_run(client: &Client, change: &Change) -> Verdict {
    match send(client, change, true).await {
        Ok(()) => Verdict::Accepted,
        Err(e) => Verdict::Refused(e.to_string()),
    }
}
