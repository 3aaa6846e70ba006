//! The pure half of a retirement: from what was read (the Runtime, its
//! Deployment, ReplicaSets, CronJobs and pods — all already sanitized) to
//! the exact change, its spec diff and its effect on the pod templates as
//! berth-shared's `render` computes them. No I/O.

use berth_shared::api::meta;
use berth_shared::api::{API_VERSION, ProfileState, Runtime};
use berth_shared::decide::{Decision, Identity};
use berth_shared::render::{self, RUNTIME_PROFILE_ANNOTATION};
use berth_shared::sanitize;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use serde_json::json;

/// Annotation naming who retired a Runtime.
pub const RETIRED_BY_ANNOTATION: &str = "berth.dev/retired-by";
/// Annotation with the time (RFC 3339) a Runtime was retired.
pub const RETIRED_AT_ANNOTATION: &str = "berth.dev/retired-at";
/// Shown for "no runtimeClassName": the cluster's default runtime.
pub const DEFAULT_RUNTIME: &str = "(default)";

/// One retirement action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Clear `spec.runtimeProfile`: pods roll onto the default runtime.
    ToDefault,
    /// `spec.suspend: true`: Deployment to 0, CronJobs suspended.
    Suspend,
    /// Delete the Runtime (garbage collection removes its objects).
    Delete,
    /// Delete a Deployment's old, scaled-to-zero ReplicaSets that
    /// reference `class`.
    Prune {
        /// The RuntimeClass.
        class: String,
    },
}

impl Action {
    /// Short verb for messages and the review title.
    pub fn title(&self) -> String {
        match self {
            Action::ToDefault => "retire to the default runtime".into(),
            Action::Suspend => "suspend".into(),
            Action::Delete => "delete the Runtime".into(),
            Action::Prune { class } => format!("prune rollback revisions using {}", clean(class)),
        }
    }

    /// Whether it removes objects (the name must be typed to confirm).
    pub fn destructive(&self) -> bool {
        matches!(self, Action::Delete | Action::Prune { .. })
    }

    /// The Event reason recorded for it.
    pub fn reason(&self) -> &'static str {
        match self {
            Action::ToDefault => "RetiredToDefault",
            Action::Suspend => "RetiredBySuspend",
            Action::Delete => "RetiredByDelete",
            Action::Prune { .. } => "RevisionsPruned",
        }
    }

    /// What the permission check asks for: `(group, resource, verb)`.
    pub fn access(&self) -> (&'static str, &'static str, &'static str) {
        match self {
            Action::ToDefault | Action::Suspend => ("berth.dev", "runtimes", "patch"),
            Action::Delete => ("berth.dev", "runtimes", "delete"),
            Action::Prune { .. } => ("apps", "replicasets", "delete"),
        }
    }

    /// The kind of the object named on the command line.
    pub fn target_kind(&self) -> &'static str {
        match self {
            Action::Prune { .. } => "Deployment",
            _ => "Runtime",
        }
    }
}

/// One line of a diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiffLine {
    /// Unchanged (context).
    Same(String),
    /// Removed.
    Removed(String),
    /// Added.
    Added(String),
    /// Unchanged lines left out.
    Skipped(usize),
}

impl DiffLine {
    /// The line as text with its `' '`, `-`, `+` marker.
    pub fn text(&self) -> String {
        match self {
            DiffLine::Same(s) => format!("  {s}"),
            DiffLine::Removed(s) => format!("- {s}"),
            DiffLine::Added(s) => format!("+ {s}"),
            DiffLine::Skipped(n) => format!("  … {n} unchanged line(s)"),
        }
    }
}

/// A reference to the object an Event is recorded on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventTarget {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// What is sent to the API server (dry-run first, then for real).
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A JSON merge patch of the Runtime, conditional on its
    /// resourceVersion (a concurrent change is a conflict, not a surprise).
    PatchRuntime {
        namespace: String,
        name: String,
        patch: serde_json::Value,
    },
    /// Delete the Runtime, preconditioned on uid and resourceVersion.
    DeleteRuntime {
        namespace: String,
        name: String,
        uid: String,
        resource_version: String,
    },
    /// Delete these ReplicaSets (name, uid, resourceVersion).
    DeleteReplicaSets {
        namespace: String,
        sets: Vec<(String, String, String)>,
    },
    /// Nothing to send (already done).
    Nothing,
}

/// A planned retirement: everything the review shows, and the change.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub action: Action,
    /// Kind of the target (`Runtime` or `Deployment`).
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    /// The spec change.
    pub diff: Vec<DiffLine>,
    /// The effect on the rendered pod templates and running pods.
    pub effects: Vec<String>,
    /// Pods that roll or stop (names).
    pub pods: Vec<String>,
    /// Why nothing needs doing, if so.
    pub nothing: Option<String>,
    pub change: Change,
    /// Where the Event goes.
    pub event_on: EventTarget,
    /// What must be typed to confirm.
    pub confirm_word: String,
}

impl Plan {
    /// The object as `NAMESPACE/NAME`.
    pub fn target(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The Event's object as `NAMESPACE/NAME` (sanitized).
    pub fn target_of_event(&self) -> String {
        format!(
            "{}/{}",
            clean(&self.event_on.namespace),
            clean(&self.event_on.name)
        )
    }

    /// Whether there is anything to send.
    pub fn has_change(&self) -> bool {
        self.change != Change::Nothing
    }

    /// The Event note: the action, the object and the user.
    pub fn event_note(&self, user: &str) -> String {
        let mut note = format!(
            "{} {} by {} (berth console)",
            self.action.title(),
            self.target(),
            clean(user)
        );
        if let Change::DeleteReplicaSets { sets, .. } = &self.change {
            let names: Vec<&str> = sets.iter().map(|s| s.0.as_str()).collect();
            note.push_str(&format!(": deleted ReplicaSet(s) {}", names.join(", ")));
        }
        note.truncate(1000);
        note
    }
}

/// Why a plan could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Invalid(String),
}

/// What was read about a Runtime besides the Runtime itself.
#[derive(Clone, Debug, Default)]
pub struct RuntimeContext {
    /// The identity (status or Namespace labels); `None` if unknown.
    pub identity: Option<Identity>,
    /// The live Deployment of the Runtime, if readable.
    pub deployment: Option<Deployment>,
    /// The Runtime's running pods (server and jobs), if readable.
    pub pods: Vec<Pod>,
    /// The Runtime's one-time Jobs, if readable.
    pub jobs: Vec<Job>,
}

use berth_shared::sanitize::short as clean;

fn or_default(class: Option<&str>) -> String {
    class
        .filter(|c| !c.is_empty())
        .map(clean)
        .unwrap_or_else(|| DEFAULT_RUNTIME.to_string())
}

/// The decision the Runtime's pods were last rendered with (from status).
fn decision_before(rt: &Runtime) -> Decision {
    let profile = rt.status.as_ref().and_then(|s| s.profile.as_ref());
    match profile {
        Some(p) if p.state == ProfileState::Granted => Decision::Granted {
            alias: p.alias.clone().unwrap_or_default(),
            runtime_class: p.class.clone().unwrap_or_default(),
            handler: p.handler.clone().unwrap_or_default(),
        },
        Some(p) => Decision::Revoked {
            alias: p.alias.clone().unwrap_or_default(),
            runtime_class: p.class.clone(),
            detail: String::new(),
        },
        None => Decision::NotRequested,
    }
}

/// The identity from status, else a partial one from the spec (labels in
/// the rendered templates are then not exact; the runtime class is).
pub fn identity_of(rt: &Runtime) -> Identity {
    let st = rt.status.as_ref().and_then(|s| s.identity.clone());
    let st = st.unwrap_or_default();
    Identity {
        project: st.project.unwrap_or_default(),
        environment: st.environment.unwrap_or_default(),
        application: st
            .application
            .unwrap_or_else(|| rt.spec.application.clone()),
        service: st.service.unwrap_or_else(|| rt.spec.service.clone()),
    }
}

fn template_class(t: Option<&PodTemplateSpec>) -> Option<String> {
    t.and_then(|t| t.spec.as_ref())
        .and_then(|s| s.runtime_class_name.clone())
        .filter(|c| !c.is_empty())
}

fn template_profile(t: Option<&PodTemplateSpec>) -> Option<String> {
    t.and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.annotations.as_ref())
        .and_then(|a| a.get(RUNTIME_PROFILE_ANNOTATION).cloned())
}

fn pod_is_live(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_none()
        && !matches!(
            p.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded" | "Failed")
        )
}

fn pod_names(pods: &[Pod], pred: impl Fn(&Pod) -> bool) -> Vec<String> {
    let mut v: Vec<String> = pods
        .iter()
        .filter(|p| pod_is_live(p) && pred(p))
        .filter_map(|p| p.metadata.name.as_deref().map(clean))
        .collect();
    v.sort();
    v
}

fn is_server_pod(p: &Pod) -> bool {
    p.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("app.kubernetes.io/component"))
        .is_none_or(|c| c == "server")
}

fn spec_yaml(rt: &Runtime) -> Vec<String> {
    yaml_serde::to_string(&rt.spec)
        .unwrap_or_default()
        .lines()
        .map(|l| sanitize::line(l, 512))
        .collect()
}

/// The retirement annotations and a merge patch of `spec`.
fn runtime_patch(rt: &Runtime, spec: serde_json::Value, user: &str, now: &str) -> Change {
    Change::PatchRuntime {
        namespace: rt.metadata.namespace.clone().unwrap_or_default(),
        name: rt.metadata.name.clone().unwrap_or_default(),
        patch: json!({
            "metadata": {
                "resourceVersion": rt.metadata.resource_version.clone().unwrap_or_default(),
                "annotations": {
                    RETIRED_BY_ANNOTATION: user,
                    RETIRED_AT_ANNOTATION: now,
                },
            },
            "spec": spec,
        }),
    }
}

fn runtime_event_target(rt: &Runtime) -> EventTarget {
    EventTarget {
        api_version: API_VERSION.to_string(),
        kind: "Runtime".to_string(),
        namespace: rt.metadata.namespace.clone().unwrap_or_default(),
        name: rt.metadata.name.clone().unwrap_or_default(),
        uid: rt.metadata.uid.clone().unwrap_or_default(),
    }
}

/// Plans retiring, suspending or deleting a Runtime. `user` and `now` go
/// into the `berth.dev/retired-by`/`-at` annotations.
pub fn plan_runtime(
    action: &Action,
    rt: &Runtime,
    ctx: &RuntimeContext,
    user: &str,
    now: &str,
) -> Result<Plan, PlanError> {
    let namespace = clean(rt.metadata.namespace.as_deref().unwrap_or_default());
    let name = clean(rt.metadata.name.as_deref().unwrap_or_default());
    let identity = ctx.identity.clone().unwrap_or_else(|| identity_of(rt));
    let before_decision = decision_before(rt);
    let before = render::render(rt, &identity, &before_decision)
        .map_err(|e| PlanError::Invalid(e.to_string()))?;
    // The live template is what runs; the rendered one is the fallback.
    let live_template = ctx
        .deployment
        .as_ref()
        .and_then(|d| d.spec.as_ref())
        .map(|s| &s.template);
    let rendered_template = before.deployment.spec.as_ref().map(|s| &s.template);
    let template_before = live_template.or(rendered_template);
    let class_before = template_class(template_before);
    let profile_before = template_profile(template_before);
    let replicas_now = ctx
        .deployment
        .as_ref()
        .and_then(|d| d.status.as_ref())
        .and_then(|s| s.replicas)
        .or_else(|| before.deployment.spec.as_ref().and_then(|s| s.replicas))
        .unwrap_or(0);
    let dep_name = clean(
        before
            .deployment
            .metadata
            .name
            .as_deref()
            .unwrap_or_default(),
    );
    let mut effects = Vec::new();
    let mut pods = Vec::new();
    let mut nothing = None;
    let mut after_rt = rt.clone();
    let change = match action {
        Action::ToDefault => {
            after_rt.spec.runtime_profile = None;
            let after = render::render(&after_rt, &identity, &Decision::NotRequested)
                .map_err(|e| PlanError::Invalid(e.to_string()))?;
            let t_after = after.deployment.spec.as_ref().map(|s| &s.template);
            let class_after = template_class(t_after);
            let profile_after = template_profile(t_after);
            let rolls = class_before != class_after || profile_before != profile_after;
            if rt.spec.runtime_profile.is_none() {
                nothing = Some(if rolls {
                    "spec.runtimeProfile is already unset (the agent rolls the pods on its own)"
                        .to_string()
                } else {
                    "spec.runtimeProfile is already unset".to_string()
                });
            }
            if class_before != class_after {
                let server = pod_names(&ctx.pods, is_server_pod);
                let n = if server.is_empty() {
                    replicas_now as usize
                } else {
                    server.len()
                };
                effects.push(format!(
                    "Deployment {dep_name}: runtimeClassName {} → {}, {n} pod(s) will roll",
                    or_default(class_before.as_deref()),
                    or_default(class_after.as_deref()),
                ));
                pods = server;
            } else {
                effects.push(format!(
                    "Deployment {dep_name}: runtimeClassName stays {}",
                    or_default(class_before.as_deref())
                ));
            }
            if profile_before != profile_after {
                effects.push(format!(
                    "pod annotation {RUNTIME_PROFILE_ANNOTATION}: {} → (removed)",
                    profile_before.as_deref().map(clean).unwrap_or_default()
                ));
            }
            for cj in &after.cron_jobs {
                effects.push(format!(
                    "CronJob {}: next runs use {}",
                    clean(cj.metadata.name.as_deref().unwrap_or_default()),
                    or_default(
                        template_class(
                            cj.spec
                                .as_ref()
                                .and_then(|s| s.job_template.spec.as_ref())
                                .map(|s| &s.template)
                        )
                        .as_deref()
                    )
                ));
            }
            // One-time Jobs run once per definition: the class is not part
            // of it (super::jobs).
            effects.extend(super::jobs::one_time_job_effects(
                rt,
                &after,
                &ctx.jobs,
                &or_default(class_after.as_deref()),
                or_default,
            ));
            if nothing.is_some() {
                Change::Nothing
            } else {
                runtime_patch(rt, json!({"runtimeProfile": null}), user, now)
            }
        }
        Action::Suspend => {
            after_rt.spec.suspend = true;
            if rt.spec.suspend {
                nothing = Some("spec.suspend is already true".to_string());
            }
            let after_decision = before_decision.clone();
            let after = render::render(&after_rt, &identity, &after_decision)
                .map_err(|e| PlanError::Invalid(e.to_string()))?;
            let replicas_after = after
                .deployment
                .spec
                .as_ref()
                .and_then(|s| s.replicas)
                .unwrap_or(0);
            pods = pod_names(&ctx.pods, |_| true);
            let n = if pods.is_empty() {
                replicas_now as usize
            } else {
                pods.len()
            };
            effects.push(format!(
                "Deployment {dep_name}: replicas {replicas_now} → {replicas_after}, {n} pod(s) will stop"
            ));
            effects.push(format!(
                "runtimeClassName stays {} in the template; no pod runs with it",
                or_default(class_before.as_deref())
            ));
            for cj in &after.cron_jobs {
                effects.push(format!(
                    "CronJob {}: suspend → true",
                    clean(cj.metadata.name.as_deref().unwrap_or_default())
                ));
            }
            if before.horizontal_pod_autoscaler.is_some() {
                effects.push("HorizontalPodAutoscaler: removed while suspended".into());
            }
            if !rt.spec.jobs.is_empty() {
                effects.push("no new one-time Jobs are started".into());
            }
            if nothing.is_some() {
                Change::Nothing
            } else {
                runtime_patch(rt, json!({"suspend": true}), user, now)
            }
        }
        Action::Delete => {
            pods = pod_names(&ctx.pods, |_| true);
            let n = if pods.is_empty() {
                replicas_now as usize
            } else {
                pods.len()
            };
            effects.push(format!(
                "Runtime {namespace}/{name} is deleted; garbage collection removes what it owns:"
            ));
            if let Ok(manifests) = before.manifests() {
                for m in manifests {
                    let kind = clean(m["kind"].as_str().unwrap_or("object"));
                    effects.push(format!(
                        "  {kind} {}",
                        clean(m["metadata"]["name"].as_str().unwrap_or_default())
                    ));
                }
            }
            effects.push(format!(
                "{n} pod(s) will stop; nothing runs with {} any more",
                or_default(class_before.as_deref())
            ));
            Change::DeleteRuntime {
                namespace: rt.metadata.namespace.clone().unwrap_or_default(),
                name: rt.metadata.name.clone().unwrap_or_default(),
                uid: rt.metadata.uid.clone().unwrap_or_default(),
                resource_version: rt.metadata.resource_version.clone().unwrap_or_default(),
            }
        }
        Action::Prune { .. } => {
            return Err(PlanError::Invalid(
                "prune plans a Deployment, not a Runtime".into(),
            ));
        }
    };
    let before_lines = spec_yaml(rt);
    let diff = match action {
        Action::Delete => before_lines.into_iter().map(DiffLine::Removed).collect(),
        _ if nothing.is_some() => Vec::new(),
        _ => {
            let mut d = context_diff(&diff_lines(&before_lines, &spec_yaml(&after_rt)), 2);
            d.push(DiffLine::Added(format!(
                "metadata.annotations.{RETIRED_BY_ANNOTATION}: {}",
                clean(user)
            )));
            d.push(DiffLine::Added(format!(
                "metadata.annotations.{RETIRED_AT_ANNOTATION}: {}",
                clean(now)
            )));
            d
        }
    };
    let destructive = action.destructive();
    Ok(Plan {
        action: action.clone(),
        kind: "Runtime",
        confirm_word: if destructive {
            name.clone()
        } else {
            "yes".into()
        },
        namespace,
        name,
        diff,
        effects,
        pods,
        nothing,
        change,
        event_on: runtime_event_target(rt),
    })
}

fn revision(m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta::revision(m).map_or_else(|| "-".into(), clean)
}

/// Plans pruning the rollback ReplicaSets of `deployment` that reference
/// `class`: owned by it, not its current revision, scaled to zero. The
/// Event goes to the owning Runtime when there is one.
pub fn plan_prune(
    class: &str,
    deployment: &Deployment,
    replica_sets: &[ReplicaSet],
    owner_runtime: Option<&Runtime>,
) -> Plan {
    let namespace = clean(deployment.metadata.namespace.as_deref().unwrap_or_default());
    let name = clean(deployment.metadata.name.as_deref().unwrap_or_default());
    let raw_name = deployment.metadata.name.clone().unwrap_or_default();
    let current = meta::revision(&deployment.metadata).map(String::from);
    let mut owned: Vec<&ReplicaSet> = replica_sets
        .iter()
        .filter(|rs| meta::controlled_by(&rs.metadata, "Deployment", &raw_name))
        .collect();
    owned.sort_by_key(|rs| std::cmp::Reverse(revision(&rs.metadata).parse::<i64>().unwrap_or(0)));
    let mut diff = Vec::new();
    let mut effects = Vec::new();
    let mut sets = Vec::new();
    let mut kept_using = Vec::new();
    for rs in owned {
        let rs_name = rs.metadata.name.clone().unwrap_or_default();
        let rev = revision(&rs.metadata);
        let rs_class = template_class(rs.spec.as_ref().and_then(|s| s.template.as_ref()));
        let replicas = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let is_current = current.as_deref().map(clean) == Some(rev.clone());
        let uses = rs_class.as_deref() == Some(class);
        if uses && !is_current && replicas == 0 {
            diff.push(DiffLine::Removed(format!(
                "ReplicaSet {} (revision {rev}): template.spec.runtimeClassName: {}",
                clean(&rs_name),
                clean(class)
            )));
            sets.push((
                rs_name,
                rs.metadata.uid.clone().unwrap_or_default(),
                rs.metadata.resource_version.clone().unwrap_or_default(),
            ));
        } else {
            let why = if is_current {
                "current revision, never pruned"
            } else if replicas > 0 {
                "still scaled up"
            } else {
                "other class"
            };
            if uses {
                kept_using.push(format!("{} ({why})", clean(&rs_name)));
            }
            diff.push(DiffLine::Same(format!(
                "ReplicaSet {} (revision {rev}, {}, {replicas} replica(s)): kept, {why}",
                clean(&rs_name),
                or_default(rs_class.as_deref()),
            )));
        }
    }
    let nothing = sets.is_empty().then(|| {
        format!(
            "no rollback ReplicaSet of Deployment {namespace}/{name} references {}",
            clean(class)
        )
    });
    if !sets.is_empty() {
        effects.push(format!(
            "{} rollback ReplicaSet(s) deleted; they run no pods (scaled to zero), so no pod stops",
            sets.len()
        ));
        effects.push(format!(
            "`kubectl rollout undo` can no longer return Deployment {name} to {}",
            clean(class)
        ));
    }
    if !kept_using.is_empty() {
        effects.push(format!(
            "still using {}: {}",
            clean(class),
            kept_using.join(", ")
        ));
    }
    let event_on = match owner_runtime {
        Some(rt) => runtime_event_target(rt),
        None => EventTarget {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: deployment.metadata.namespace.clone().unwrap_or_default(),
            name: raw_name,
            uid: deployment.metadata.uid.clone().unwrap_or_default(),
        },
    };
    Plan {
        action: Action::Prune {
            class: class.to_string(),
        },
        kind: "Deployment",
        confirm_word: name.clone(),
        change: if sets.is_empty() {
            Change::Nothing
        } else {
            Change::DeleteReplicaSets {
                namespace: deployment.metadata.namespace.clone().unwrap_or_default(),
                sets,
            }
        },
        namespace,
        name,
        diff,
        effects,
        pods: Vec::new(),
        nothing,
        event_on,
    }
}

/// The Runtime owning a Deployment (controller reference), by name.
pub fn runtime_owner(deployment: &Deployment) -> Option<String> {
    meta::controller_of(&deployment.metadata)
        .filter(|r| r.kind == "Runtime")
        .map(|r| r.name.clone())
}

/// A line diff, by `similar`'s Myers: linear memory, and its heuristics
/// bound the work on large, very different inputs (the hand-written LCS
/// table it replaces reached 64 MB at its 4000-line cap).
pub fn diff_lines(a: &[String], b: &[String]) -> Vec<DiffLine> {
    use similar::{Algorithm, ChangeTag, capture_diff_slices};
    capture_diff_slices(Algorithm::Myers, a, b)
        .iter()
        .flat_map(|op| op.iter_changes(a, b))
        .map(|c| match c.tag() {
            ChangeTag::Equal => DiffLine::Same(c.value()),
            ChangeTag::Delete => DiffLine::Removed(c.value()),
            ChangeTag::Insert => DiffLine::Added(c.value()),
        })
        .collect()
}

/// Keeps `context` unchanged lines around each change; longer unchanged
/// runs become [`DiffLine::Skipped`].
pub fn context_diff(lines: &[DiffLine], context: usize) -> Vec<DiffLine> {
    let changed: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !matches!(l, DiffLine::Same(_)))
        .map(|(i, _)| i)
        .collect();
    let near = |i: usize| {
        changed
            .iter()
            .any(|&c| i + context >= c && i <= c + context)
    };
    let mut out = Vec::new();
    let mut skipped = 0;
    for (i, l) in lines.iter().enumerate() {
        if matches!(l, DiffLine::Same(_)) && !near(i) {
            skipped += 1;
            continue;
        }
        if skipped > 0 {
            out.push(DiffLine::Skipped(skipped));
            skipped = 0;
        }
        out.push(l.clone());
    }
    if skipped > 0 {
        out.push(DiffLine::Skipped(skipped));
    }
    out
}

/// Whether `typed` confirms `plan` (the name for destructive actions,
/// `yes`/`y` otherwise).
pub fn confirms(plan: &Plan, typed: &str) -> bool {
    let typed = typed.trim();
    if plan.action.destructive() {
        !typed.is_empty() && typed == plan.confirm_word
    } else {
        matches!(typed, "y" | "yes" | "Y" | "YES" | "Yes")
    }
}

#[cfg(test)]
mod diff_tests {
    use super::{DiffLine, diff_lines};

    /// Past the old 4000-line cap the diff is still minimal (the LCS
    /// table's fallback listed every line as removed and added).
    #[test]
    fn a_long_spec_diffs_minimally() {
        let a: Vec<String> = (0..5000).map(|i| format!("line {i}")).collect();
        let mut b = a.clone();
        b[2500] = "changed".into();
        let diff = diff_lines(&a, &b);
        let changed: Vec<&DiffLine> = diff
            .iter()
            .filter(|l| !matches!(l, DiffLine::Same(_)))
            .collect();
        assert_eq!(
            changed,
            [
                &DiffLine::Removed("line 2500".into()),
                &DiffLine::Added("changed".into())
            ]
        );
    }
}
