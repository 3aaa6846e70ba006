//! What a grants change does to a Runtime's one-time Jobs and CronJobs,
//! told truthfully (issue 27, point 8). A one-time Job runs once per
//! definition (image, command, args — `crate::render::job_definition_hash`),
//! never per class: a grant that rolls the pods does not re-run a Job that
//! ran, nor kill one that runs. A CronJob's next runs use the class the
//! agent renders. While a Runtime is blocked (a revoked or refused grant)
//! the agent changes none of its workloads and starts no one-time Job.
//!
//! The plan sees the Runtime's status, not the live Jobs: "ran" here is the
//! agent's record (`status.jobs`).

use crate::api::Runtime;
use crate::render::names;

use super::types::{Effect, RuntimeChange};

fn class(c: Option<&str>) -> String {
    c.filter(|c| !c.is_empty())
        .map_or_else(|| "the default runtime".to_string(), str::to_string)
}

/// One sentence per `jobs[]` and `schedules[]` entry of `rt` for `change`;
/// none when nothing rolls and nothing is blocked.
pub fn effects(rt: &Runtime, change: &RuntimeChange) -> Vec<String> {
    let name = rt.metadata.name.as_deref().unwrap_or_default();
    let recorded = |entry: &str| {
        rt.status
            .as_ref()
            .is_some_and(|s| s.jobs.iter().any(|r| r.name == entry))
    };
    let mut out = Vec::new();
    match change.effect {
        Effect::Grant | Effect::Roll => {
            let to = class(change.after.runtime_class.as_deref());
            for job in &rt.spec.jobs {
                let n = names::job_name(name, &job.name);
                out.push(if recorded(&job.name) {
                    format!("Job {n}: kept as it ran or runs, on its current class; not run again (one-time Jobs run once per definition: image, command, args)")
                } else if rt.spec.suspend {
                    format!("Job {n}: not started while the Runtime is suspended")
                } else {
                    format!("Job {n}: not run yet; runs once on {to}")
                });
            }
            for s in &rt.spec.schedules {
                let n = names::cronjob_name(name, &s.name);
                out.push(format!("CronJob {n}: next runs use {to}; a run in progress finishes on its current class"));
            }
        }
        Effect::Revoke | Effect::Refuse => {
            for job in &rt.spec.jobs {
                let n = names::job_name(name, &job.name);
                out.push(if recorded(&job.name) {
                    format!("Job {n}: kept as it ran or runs; not run again")
                } else {
                    format!("Job {n}: not started while the Runtime is blocked")
                });
            }
            for s in &rt.spec.schedules {
                let n = names::cronjob_name(name, &s.name);
                out.push(format!(
                    "CronJob {n}: keeps its current template while the Runtime is blocked"
                ));
            }
        }
        Effect::Other => {}
    }
    out
}
