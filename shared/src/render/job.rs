//! One Job per `jobs[]` entry. A Job's pod template is immutable, so the
//! agent creates these once and does not update them.

use k8s_openapi::api::batch::v1::{Job, JobSpec};

use crate::api::{DEFAULT_ACTIVE_DEADLINE_SECONDS, DEFAULT_BACKOFF_LIMIT, JobSpec as RuntimeJob};

use super::Ctx;
use super::labels::Component;
use super::names;
use super::pod_template::{PodKind, pod_template};

pub(crate) fn render(ctx: &Ctx<'_>, job: &RuntimeJob) -> Job {
    let kind = PodKind {
        component: Component::Job,
        job: Some(&job.name),
        command: &job.command,
        args: &job.args,
        checksum: false,
    };
    let mut metadata = ctx.meta(&names::job_name(ctx.name, &job.name), Component::Job);
    if let Some(labels) = metadata.labels.as_mut() {
        labels.insert(
            super::labels::JOB_LABEL.to_string(),
            names::label_value(&job.name),
        );
    }
    Job {
        metadata,
        spec: Some(JobSpec {
            backoff_limit: Some(job.backoff_limit.unwrap_or(DEFAULT_BACKOFF_LIMIT)),
            active_deadline_seconds: Some(
                job.active_deadline_seconds
                    .unwrap_or(DEFAULT_ACTIVE_DEADLINE_SECONDS),
            ),
            template: pod_template(ctx, &kind),
            ..Default::default()
        }),
        ..Default::default()
    }
}
