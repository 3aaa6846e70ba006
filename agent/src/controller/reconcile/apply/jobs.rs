//! One-time Jobs: run once per definition, governed while they exist, and
//! only berth's own counts as run (issue 52, item 6).
//!
//! A one-time Job runs once per definition (`render::job_definition_hash`:
//! image, command, args — not the class, pod metadata or anything else): a
//! Job recorded in status with the same definition is never created again
//! (TTL cleanup, a manual delete, a resume), and a live Job that runs the
//! same definition is kept as it is, finished or running, whatever else
//! changed (a retirement to the default runtime, a grant that rolls). An
//! entry whose definition changed replaces its old Job (deleted first,
//! uid-preconditioned) and runs once more.
//!
//! Only berth's own Job counts. A controller reference is no proof: anyone
//! who can create Jobs can name the Runtime as their controller. So the
//! status (which only the agent writes) records the uid of the Job berth
//! created, and a Job at the name with another uid is *planted*. One with
//! no uid recorded (the agent stopped between the create and its status
//! write) is berth's only if it is exactly what berth renders now, pod
//! template included. A planted Job is deleted (it carries the Runtime's
//! name and labels but runs what nobody reviewed, and a Job's template is
//! immutable, so it cannot be corrected), reported by a Warning Event
//! naming it and what differs, and berth's own then runs once — unless
//! berth's already ran (recorded): then nothing runs again. Refusing and
//! waiting for a person would leave the planted Job running under berth's
//! name and the Runtime's own job not run; deleting it costs nothing that
//! was berth's, since berth only ever deletes what names the Runtime as
//! its controller and what it never created.
//!
//! While a Job is berth's, its mutable fields (`suspend`, `parallelism`,
//! the deadline, the backoff, the TTL, reserved labels) are governed like
//! every other managed object's: a foreign change is undone in one write.
//! The template, which the apiserver refuses to change, is not compared.
//!
//! A held Runtime (Blocked, or being deleted) runs nothing: no Job is
//! created or replaced. Its Jobs stay governed all the same — a planted
//! Job is deleted and berth's own Job's mutable fields are corrected —
//! since a hold keeps the protection and changes nothing else.

use berth_shared::api::{JobRunStatus, Runtime};
use berth_shared::contract::{self, Kind};
use berth_shared::render::{self, Rendered};
use k8s_openapi::api::batch::v1::Job;
use kube::{Resource, ResourceExt};
use serde_json::Value;

use super::delete::delete_owned;
use super::diff::{applied_hash, with_hash};
use super::ensure::{correct, ensure, read_stored};
use super::outcome::{ApplyOutcome, Mode, Owner, Planted};
use crate::controller::cache::stored::Stored;
use crate::controller::context::Context;
use crate::controller::reconcile::apply_error::{ApplyError, Step};
use crate::controller::reconcile::cached_objects::Cached;
use berth_shared::api::meta::controlled_by_uid as owned_by;

/// Whose a Job at a one-time job's name is.
#[derive(Debug, PartialEq, Eq)]
enum Whose {
    /// The Job berth created (or, recorded before uids were, trusted).
    Berths,
    /// Not the Job berth created: what tells it apart.
    Planted(Vec<String>),
}

/// Whose `live` (controlled by the Runtime) is, given the entry's record
/// and berth's rendering of it (`desired`, as JSON).
fn whose(live: &Stored<Job>, recorded: Option<&JobRunStatus>, desired: &Value) -> Whose {
    let differences = || {
        contract::job_differences(&live.json, desired)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    match (recorded, recorded.and_then(|r| r.uid.as_deref())) {
        (_, Some(created)) if live.meta().uid.as_deref() == Some(created) => Whose::Berths,
        (_, Some(created)) => {
            let mut why = vec![format!("not the Job berth created (uid {created})")];
            why.extend(differences());
            Whose::Planted(why)
        }
        // Recorded by an agent that did not record uids yet: taken as it
        // was then (by its definition).
        (Some(_), None) => Whose::Berths,
        // Nothing recorded: berth's only if it is exactly berth's rendering.
        (None, None) => {
            let why = differences();
            if why.is_empty() {
                Whose::Berths
            } else {
                Whose::Planted(why)
            }
        }
    }
}

/// Whether the Jobs step may start a run (converging) or only protects
/// what runs (held: Blocked or being deleted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runs {
    /// Create what has not run, replace what changed definition.
    Start,
    /// Govern and delete planted Jobs only; nothing is created or replaced.
    Held,
}

/// See the module's comment.
pub(super) async fn run_jobs_once(
    ctx: &Context,
    runtime: &Runtime,
    rendered: &Rendered,
    cached: &Cached<Job>,
    runs: Runs,
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
        let desired_value = match with_hash(desired) {
            Ok(v) => v,
            Err(source) => {
                let label = format!("Job/{job_name}");
                out.errors.push(ApplyError::new(label, Step::Apply, source));
                records.extend(recorded.cloned());
                continue;
            }
        };
        // Records written before definitions were the identity hold the
        // hash of the whole rendered Job: still "it ran" when that matches.
        let legacy = applied_hash(&desired_value);
        let ran = |r: &JobRunStatus| {
            r.template_hash == definition || legacy.as_deref() == Some(r.template_hash.as_str())
        };
        let at = JobAt {
            ns: &ns,
            entry: &entry.name,
            job: &job_name,
            recorded,
            definition: &definition,
            desired: &desired_value,
        };
        match cached.any(&job_name) {
            Some(job) if owned_by(job.meta(), &uid) => {
                records.extend(owned_job(ctx, cached, &at, runs, out).await);
            }
            Some(_) if runs == Runs::Held => records.extend(recorded.cloned()),
            Some(_) => {
                // Not ours: ensure reports the conflict and touches nothing.
                ensure(ctx, cached, desired, owner, Mode::CreateOnly, out).await;
                records.extend(recorded.cloned());
            }
            None if recorded.is_some_and(ran) => {
                // It ran; it is gone (TTL, deleted). Never again.
                records.push(at.record(recorded.and_then(|r| r.uid.clone())));
            }
            None if runs == Runs::Held => records.extend(recorded.cloned()),
            None => {
                let before = out.created.len();
                ensure(ctx, cached, desired, owner, Mode::CreateOnly, out).await;
                match out.created.get(before..).and_then(|c| c.first()).cloned() {
                    Some(created) => records.push(at.record(Some(created))),
                    None => records.extend(recorded.cloned()),
                }
            }
        }
    }
    out.jobs = records;
}

/// One one-time job of the spec, rendered, as its record is made.
struct JobAt<'a> {
    ns: &'a str,
    /// The entry's name in `spec.jobs`.
    entry: &'a str,
    /// The Job's name.
    job: &'a str,
    /// What the status recorded for it.
    recorded: Option<&'a JobRunStatus>,
    /// The rendered Job's definition hash.
    definition: &'a str,
    /// The rendered Job with its applied hash.
    desired: &'a Value,
}

impl JobAt<'_> {
    /// The record of a run of this definition by the Job `uid`.
    fn record(&self, uid: Option<String>) -> JobRunStatus {
        JobRunStatus {
            name: self.entry.to_string(),
            job: self.job.to_string(),
            template_hash: self.definition.to_string(),
            uid,
        }
    }
}

/// The Job at a one-time job's name is the Runtime's: kept and governed
/// when it is berth's run of this definition, deleted when planted or (to
/// run once more) of an older definition. Returns the job's record.
async fn owned_job(
    ctx: &Context,
    cached: &Cached<Job>,
    at: &JobAt<'_>,
    runs: Runs,
    out: &mut ApplyOutcome,
) -> Option<JobRunStatus> {
    let (ns, job_name, recorded) = (at.ns, at.job, at.recorded);
    let live = match cached.stored(job_name) {
        Some(live) => live,
        None => match read_stored::<Job>(&ctx.access.client, ns, job_name).await {
            Ok(Some(live)) => live,
            Ok(None) => return recorded.cloned(),
            Err(source) => {
                let label = format!("Job/{job_name}");
                out.errors.push(ApplyError::new(label, Step::Read, source));
                return recorded.cloned();
            }
        },
    };
    let deleting = live.meta().deletion_timestamp.is_some();
    match whose(&live, recorded, at.desired) {
        Whose::Planted(why) => {
            // Not taken as run: deleted; berth's own runs (unless it ran
            // already, as recorded).
            if !deleting {
                tracing::warn!(job = %job_name, namespace = %ns, differences = ?why, "a planted Job at a one-time job's name; deleting it");
                out.planted.push(Planted {
                    job: job_name.to_string(),
                    differences: why,
                });
                delete_owned(ctx, &live.typed, out).await;
            }
            recorded.cloned()
        }
        Whose::Berths
            if render::job_definition_hash(&live.typed).as_deref() == Some(at.definition) =>
        {
            // Same definition: kept as it ran (or runs), its mutable
            // fields governed.
            if !deleting {
                govern(ctx, &live, at.desired, out).await;
            }
            Some(at.record(live.meta().uid.clone()))
        }
        Whose::Berths => {
            // Changed definition: the old Job goes first (a Job's template
            // is immutable), the new one is created by a later reconcile.
            // Held: kept, and its mutable fields governed, until the hold
            // ends.
            match (runs, deleting) {
                (_, true) => {}
                (Runs::Held, false) => govern(ctx, &live, at.desired, out).await,
                (Runs::Start, false) => {
                    tracing::info!(job = %job_name, namespace = %ns, "job definition changed; replacing the old Job to run it once more");
                    delete_owned(ctx, &live.typed, out).await;
                }
            }
            recorded.cloned()
        }
    }
}

/// Undoes a foreign change to berth's Job's mutable fields, in one write.
/// Its annotations are left as they are: they record the rendering it was
/// created from, not the current one.
async fn govern(ctx: &Context, live: &Stored<Job>, desired: &Value, out: &mut ApplyOutcome) {
    let mut desired = desired.clone();
    if let Some(meta) = desired.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("annotations");
    }
    let violations = contract::violations(Kind::Job, &live.json, &desired);
    if !violations.is_empty() {
        correct(ctx, live, &desired, &violations, false, out).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(uid: &str, env: Option<&str>) -> Value {
        let mut container = json!({"name": "app", "image": "registry.invalid/app:1",
            "command": ["/app/migrate"]});
        if let Some(e) = env {
            container["env"] = json!([{"name": e, "value": "x"}]);
        }
        json!({"metadata": {"name": "web-job-m", "uid": uid},
            "spec": {"backoffLimit": 1, "template": {"spec": {
                "restartPolicy": "Never", "containers": [container]}}}})
    }

    fn stored(v: Value) -> Stored<Job> {
        Stored::from_json(v).expect("a Job")
    }

    fn record(uid: Option<&str>) -> JobRunStatus {
        JobRunStatus {
            name: "m".into(),
            job: "web-job-m".into(),
            template_hash: "0123456789abcdef".into(),
            uid: uid.map(str::to_string),
        }
    }

    #[test]
    fn only_the_job_berth_created_is_berths() {
        let desired = job("", None);
        // The uid berth recorded: berth's, whatever its content.
        let ran = stored(job("u1", Some("X")));
        assert_eq!(
            whose(&ran, Some(&record(Some("u1"))), &desired),
            Whose::Berths
        );
        // Another uid at the name: planted, even as an exact copy.
        let copy = stored(job("u2", None));
        assert!(matches!(
            whose(&copy, Some(&record(Some("u1"))), &desired),
            Whose::Planted(why) if why[0].contains("u1")
        ));
        // Nothing recorded: berth's only when exactly the rendering.
        assert_eq!(whose(&copy, None, &desired), Whose::Berths);
        let planted = stored(job("u3", Some("LD_PRELOAD")));
        assert!(matches!(
            whose(&planted, None, &desired),
            Whose::Planted(why) if why.iter().any(|w| w.contains("LD_PRELOAD"))
        ));
        // A record from before uids: taken as it was then.
        assert_eq!(
            whose(&planted, Some(&record(None)), &desired),
            Whose::Berths
        );
    }
}
