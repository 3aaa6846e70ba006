//! What a retirement does to a Runtime's one-time Jobs, told truthfully
//! (issue 27, point 8): a one-time Job runs once per definition (image,
//! command, args — `berth_shared::render::job_definition_hash`), so a change
//! of runtime class never re-runs a completed Job and never kills a running
//! one. Pure: from the Runtime, the render after the change and the live
//! Jobs (already sanitized).

use berth_shared::api::Runtime;
use berth_shared::render::{Rendered, job_definition_hash, names};
use berth_shared::sanitize::short as clean;
use k8s_openapi::api::batch::v1::Job;

fn condition(job: &Job, type_: &str) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

fn template_class(job: &Job) -> Option<String> {
    job.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.runtime_class_name.clone())
        .filter(|c| !c.is_empty())
}

/// One line per `jobs[]` entry of `rt`, after a change whose render is
/// `after` (the agent's next render); `runtime_after` names where new
/// pods run, e.g. `(default)`.
pub fn one_time_job_effects(
    rt: &Runtime,
    after: &Rendered,
    live: &[Job],
    runtime_after: &str,
    or_default: impl Fn(Option<&str>) -> String,
) -> Vec<String> {
    let name = rt.metadata.name.as_deref().unwrap_or_default();
    let recorded = rt.status.as_ref().map(|s| s.jobs.as_slice()).unwrap_or(&[]);
    let mut out = Vec::new();
    for entry in &rt.spec.jobs {
        let job_name = names::job_name(name, &entry.name);
        let shown = clean(&job_name);
        let desired = after
            .jobs
            .iter()
            .find(|j| j.metadata.name.as_deref() == Some(job_name.as_str()));
        let definition = desired.and_then(job_definition_hash);
        let live_job = live
            .iter()
            .find(|j| j.metadata.name.as_deref() == Some(job_name.as_str()));
        let line = match (live_job, desired) {
            (Some(job), Some(_)) if job_definition_hash(job) != definition => format!(
                "Job {shown}: its definition (image, command or args) changed since it ran: the agent replaces it and runs the new definition once on {runtime_after}"
            ),
            (Some(job), _) if condition(job, "Complete") => {
                format!("Job {shown}: kept as it ran (already completed); not run again")
            }
            (Some(job), _) if condition(job, "Failed") => {
                format!("Job {shown}: kept as it ran (failed); not run again")
            }
            (Some(job), _) => format!(
                "Job {shown}: keeps running on {} until it finishes; not restarted",
                or_default(template_class(job).as_deref())
            ),
            (None, None) => format!("Job {shown}: not started while the Runtime is suspended"),
            (None, Some(_))
                if recorded.iter().any(|r| {
                    r.name == entry.name && Some(r.template_hash.as_str()) == definition.as_deref()
                }) =>
            {
                format!("Job {shown}: ran already (the Job is gone); not run again")
            }
            (None, Some(_)) => format!("Job {shown}: not run yet; runs once on {runtime_after}"),
        };
        out.push(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use berth_shared::api::JobRunStatus;
    use berth_shared::decide::{Decision, Identity};
    use berth_shared::render::render;
    use serde_json::json;

    use super::*;
    use crate::retire::plan::{Action, RuntimeContext, plan_runtime};

    const CLASS: &str = "bounded-worker";

    fn runtime() -> Runtime {
        serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
            "metadata": {"name": "worker", "namespace": "demo-production", "uid": "uid-worker",
                         "resourceVersion": "42"},
            "spec": {
                "application": "analytics", "service": "worker",
                "image": {"repository": "registry.example/analytics/worker", "tag": "1.4.2"},
                "runtimeProfile": "bw",
                "jobs": [
                    {"name": "migrate", "args": ["up"]},
                    {"name": "backfill", "args": ["backfill"]},
                    {"name": "seed", "args": ["seed"]},
                    {"name": "fresh", "args": ["fresh"]},
                    {"name": "changed", "args": ["v2"]},
                ],
            },
            "status": {
                "identity": {"project": "demo", "environment": "production",
                             "application": "analytics", "service": "worker"},
                "profile": {"alias": "bw", "class": CLASS, "handler": "bounded-runc", "state": "Granted"},
            },
        }))
        .expect("runtime")
    }

    fn identity() -> Identity {
        Identity {
            project: "demo".into(),
            environment: "production".into(),
            application: "analytics".into(),
            service: "worker".into(),
        }
    }

    fn granted() -> Decision {
        Decision::Granted {
            alias: "bw".into(),
            runtime_class: CLASS.into(),
            handler: "bounded-runc".into(),
        }
    }

    /// The live Jobs as the agent created them under the grant: migrate
    /// completed, backfill running, changed from an older definition.
    fn live(rt: &Runtime) -> Vec<Job> {
        // Created before any suspend.
        let mut rt = rt.clone();
        rt.spec.suspend = false;
        let rt = &rt;
        let mut older = rt.clone();
        older.spec.jobs[4].args = vec!["v1".into()];
        let before = render(rt, &identity(), &granted()).expect("render");
        let old = render(&older, &identity(), &granted()).expect("render");
        let status = |v: serde_json::Value| serde_json::from_value(v).expect("status");
        let mut migrate = before.jobs[0].clone();
        migrate.status = Some(status(json!({"succeeded": 1,
            "conditions": [{"type": "Complete", "status": "True"}]})));
        let mut backfill = before.jobs[1].clone();
        backfill.status = Some(status(json!({"active": 1})));
        vec![migrate, backfill, old.jobs[4].clone()]
    }

    fn effects(rt: &Runtime) -> Vec<String> {
        let mut after_rt = rt.clone();
        after_rt.spec.runtime_profile = None;
        let after = render(&after_rt, &identity(), &Decision::NotRequested).expect("render");
        let or_default = |c: Option<&str>| c.map_or("(default)".to_string(), str::to_string);
        one_time_job_effects(rt, &after, &live(rt), "(default)", or_default)
    }

    #[test]
    fn each_job_is_told_what_happens_to_it() {
        let mut rt = runtime();
        // seed ran and its Job is gone (TTL): its definition is recorded.
        let seed = render(&rt, &identity(), &granted()).expect("render").jobs[2].clone();
        rt.status.as_mut().expect("status").jobs = vec![JobRunStatus {
            name: "seed".into(),
            job: "worker-job-seed".into(),
            template_hash: job_definition_hash(&seed).expect("hash"),
            uid: None,
        }];
        assert_eq!(
            effects(&rt),
            [
                "Job worker-job-migrate: kept as it ran (already completed); not run again",
                "Job worker-job-backfill: keeps running on bounded-worker until it finishes; not restarted",
                "Job worker-job-seed: ran already (the Job is gone); not run again",
                "Job worker-job-fresh: not run yet; runs once on (default)",
                "Job worker-job-changed: its definition (image, command or args) changed since it ran: the agent replaces it and runs the new definition once on (default)",
            ]
        );
    }

    #[test]
    fn the_retirement_review_says_it() {
        let rt = runtime();
        let ctx = RuntimeContext {
            jobs: live(&rt),
            ..Default::default()
        };
        let plan = plan_runtime(&Action::ToDefault, &rt, &ctx, "alice", "now").expect("plan");
        assert!(
            plan.effects.iter().any(|e| e
                == "Job worker-job-migrate: kept as it ran (already completed); not run again"),
            "{:?}",
            plan.effects
        );
        assert!(
            !plan
                .effects
                .iter()
                .any(|e| e.contains("existing Jobs keep")),
            "{:?}",
            plan.effects
        );
    }

    #[test]
    fn a_suspended_runtime_starts_no_job() {
        let mut rt = runtime();
        rt.spec.suspend = true;
        let out = effects(&rt);
        assert!(
            out[3] == "Job worker-job-fresh: not started while the Runtime is suspended",
            "{out:?}"
        );
        // What exists is still told as it is.
        assert!(
            out[0].contains("kept as it ran (already completed)"),
            "{out:?}"
        );
    }
}
