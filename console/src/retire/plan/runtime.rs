//! Planning a retirement, suspension or deletion of a Runtime: the spec
//! change, and its effect on the pod templates as berth-shared's `render`
//! computes them.

use berth_shared::api::{ProfileState, Runtime};
use berth_shared::decide::{Decision, Identity};
use berth_shared::render::{self, RUNTIME_PROFILE_ANNOTATION};
use berth_shared::sanitize;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use serde_json::json;

use super::diff::{DiffLine, context_diff, diff_lines};
use super::{
    Action, Change, Plan, PlanError, RETIRED_AT_ANNOTATION, RETIRED_BY_ANNOTATION, RuntimeContext,
    clean, or_default, runtime_event_target, template_class,
};

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

/// How many pods stop: those seen running, else (none readable) the
/// replicas the Deployment asks for.
fn stopping(pods: &[String], replicas_now: i32) -> usize {
    if pods.is_empty() {
        usize::try_from(replicas_now).unwrap_or(0)
    } else {
        pods.len()
    }
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

/// Plans retiring, suspending or deleting a Runtime. `user` and `now` go
/// into the `berth.dev/retired-by`/`-at` annotations. In steps: what runs
/// now ([`Before`]), what the action changes and does (one function per
/// action), then the spec's diff.
pub fn plan_runtime(
    action: &Action,
    rt: &Runtime,
    ctx: &RuntimeContext,
    user: &str,
    now: &str,
) -> Result<Plan, PlanError> {
    let namespace = clean(rt.metadata.namespace.as_deref().unwrap_or_default());
    let name = clean(rt.metadata.name.as_deref().unwrap_or_default());
    let before = Before::read(rt, ctx)?;
    let mut after_rt = rt.clone();
    let outcome = match action {
        Action::ToDefault => to_default(&before, rt, &mut after_rt, ctx, user, now)?,
        Action::Suspend => suspend(&before, rt, &mut after_rt, ctx, user, now)?,
        Action::Delete => delete(&before, rt, ctx, &namespace, &name),
        Action::Prune { .. } => {
            return Err(PlanError::Invalid(
                "prune plans a Deployment, not a Runtime".into(),
            ));
        }
    };
    let diff = spec_diff(action, rt, &after_rt, outcome.nothing.is_some(), user, now);
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
        effects: outcome.effects,
        pods: outcome.pods,
        nothing: outcome.nothing,
        change: outcome.change,
        event_on: runtime_event_target(rt),
    })
}

/// What runs now, which every action's effects are measured against.
struct Before {
    identity: Identity,
    decision: Decision,
    rendered: render::Rendered,
    class: Option<String>,
    profile: Option<String>,
    replicas: i32,
    /// The Deployment's name, cleaned for the terminal.
    deployment: String,
}

impl Before {
    fn read(rt: &Runtime, ctx: &RuntimeContext) -> Result<Self, PlanError> {
        let identity = ctx.identity.clone().unwrap_or_else(|| identity_of(rt));
        let decision = decision_before(rt);
        let rendered = render::render(rt, &identity, &decision)
            .map_err(|e| PlanError::Invalid(e.to_string()))?;
        // The live template is what runs; the rendered one is the fallback.
        let live_template = ctx
            .deployment
            .as_ref()
            .and_then(|d| d.spec.as_ref())
            .map(|s| &s.template);
        let rendered_template = rendered.deployment.spec.as_ref().map(|s| &s.template);
        let template = live_template.or(rendered_template);
        let replicas = ctx
            .deployment
            .as_ref()
            .and_then(|d| d.status.as_ref())
            .and_then(|s| s.replicas)
            .or_else(|| rendered.deployment.spec.as_ref().and_then(|s| s.replicas))
            .unwrap_or(0);
        let deployment = clean(
            rendered
                .deployment
                .metadata
                .name
                .as_deref()
                .unwrap_or_default(),
        );
        Ok(Self {
            class: template_class(template),
            profile: template_profile(template),
            identity,
            decision,
            rendered,
            replicas,
            deployment,
        })
    }
}

/// What an action changes and does, and why it may do nothing.
struct Outcome {
    effects: Vec<String>,
    pods: Vec<String>,
    nothing: Option<String>,
    change: Change,
}

/// Back to the default class: `spec.runtimeProfile` unset.
fn to_default(
    before: &Before,
    rt: &Runtime,
    after_rt: &mut Runtime,
    ctx: &RuntimeContext,
    user: &str,
    now: &str,
) -> Result<Outcome, PlanError> {
    let dep_name = &before.deployment;
    let (class_before, profile_before) = (&before.class, &before.profile);
    let mut effects = Vec::new();
    let mut pods = Vec::new();
    let mut nothing = None;
    after_rt.spec.runtime_profile = None;
    let after = render::render(after_rt, &before.identity, &Decision::NotRequested)
        .map_err(|e| PlanError::Invalid(e.to_string()))?;
    let t_after = after.deployment.spec.as_ref().map(|s| &s.template);
    let class_after = template_class(t_after);
    let profile_after = template_profile(t_after);
    let rolls = *class_before != class_after || *profile_before != profile_after;
    if rt.spec.runtime_profile.is_none() {
        nothing = Some(if rolls {
            "spec.runtimeProfile is already unset (the agent rolls the pods on its own)".to_string()
        } else {
            "spec.runtimeProfile is already unset".to_string()
        });
    }
    if *class_before != class_after {
        let server = pod_names(&ctx.pods, is_server_pod);
        let n = if server.is_empty() {
            before.replicas as usize
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
    if *profile_before != profile_after {
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
    effects.extend(crate::retire::jobs::one_time_job_effects(
        rt,
        &after,
        &ctx.jobs,
        &or_default(class_after.as_deref()),
        or_default,
    ));
    let change = if nothing.is_some() {
        Change::Nothing
    } else {
        runtime_patch(rt, json!({"runtimeProfile": null}), user, now)
    };
    Ok(Outcome {
        effects,
        pods,
        nothing,
        change,
    })
}

/// Suspended: `spec.suspend` set, every pod stops.
fn suspend(
    before: &Before,
    rt: &Runtime,
    after_rt: &mut Runtime,
    ctx: &RuntimeContext,
    user: &str,
    now: &str,
) -> Result<Outcome, PlanError> {
    let (dep_name, replicas_now) = (&before.deployment, before.replicas);
    let mut effects = Vec::new();
    let mut nothing = None;
    after_rt.spec.suspend = true;
    if rt.spec.suspend {
        nothing = Some("spec.suspend is already true".to_string());
    }
    let after_decision = before.decision.clone();
    let after = render::render(after_rt, &before.identity, &after_decision)
        .map_err(|e| PlanError::Invalid(e.to_string()))?;
    let replicas_after = after
        .deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(0);
    let pods = pod_names(&ctx.pods, |_| true);
    let n = stopping(&pods, replicas_now);
    effects.push(format!(
        "Deployment {dep_name}: replicas {replicas_now} → {replicas_after}, {n} pod(s) will stop"
    ));
    effects.push(format!(
        "runtimeClassName stays {} in the template; no pod runs with it",
        or_default(before.class.as_deref())
    ));
    for cj in &after.cron_jobs {
        effects.push(format!(
            "CronJob {}: suspend → true",
            clean(cj.metadata.name.as_deref().unwrap_or_default())
        ));
    }
    if before.rendered.horizontal_pod_autoscaler.is_some() {
        effects.push("HorizontalPodAutoscaler: removed while suspended".into());
    }
    if !rt.spec.jobs.is_empty() {
        effects.push("no new one-time Jobs are started".into());
    }
    let change = if nothing.is_some() {
        Change::Nothing
    } else {
        runtime_patch(rt, json!({"suspend": true}), user, now)
    };
    Ok(Outcome {
        effects,
        pods,
        nothing,
        change,
    })
}

/// Deleted: garbage collection removes what the Runtime owns.
fn delete(
    before: &Before,
    rt: &Runtime,
    ctx: &RuntimeContext,
    namespace: &str,
    name: &str,
) -> Outcome {
    let mut effects = Vec::new();
    let pods = pod_names(&ctx.pods, |_| true);
    let n = stopping(&pods, before.replicas);
    effects.push(format!(
        "Runtime {namespace}/{name} is deleted; garbage collection removes what it owns:"
    ));
    if let Ok(manifests) = before.rendered.manifests() {
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
        or_default(before.class.as_deref())
    ));
    Outcome {
        effects,
        pods,
        nothing: None,
        change: Change::DeleteRuntime {
            namespace: rt.metadata.namespace.clone().unwrap_or_default(),
            name: rt.metadata.name.clone().unwrap_or_default(),
            uid: rt.metadata.uid.clone().unwrap_or_default(),
            resource_version: rt.metadata.resource_version.clone().unwrap_or_default(),
        },
    }
}

/// The spec's diff: all of it removed for a delete, none when nothing
/// changes, else the changed lines with the retirement annotations.
fn spec_diff(
    action: &Action,
    rt: &Runtime,
    after_rt: &Runtime,
    nothing: bool,
    user: &str,
    now: &str,
) -> Vec<DiffLine> {
    let before_lines = spec_yaml(rt);
    match action {
        Action::Delete => before_lines.into_iter().map(DiffLine::Removed).collect(),
        _ if nothing => Vec::new(),
        _ => {
            let mut d = context_diff(&diff_lines(&before_lines, &spec_yaml(after_rt)), 2);
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
    }
}
