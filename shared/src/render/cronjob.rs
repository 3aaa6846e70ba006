//! One CronJob per `schedules[]` entry.

use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, JobSpec, JobTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::api::{DEFAULT_ACTIVE_DEADLINE_SECONDS, DEFAULT_BACKOFF_LIMIT, ScheduleSpec};

use super::ctx::Ctx;
use super::labels::Component;
use super::names;
use super::pod_template::{PodKind, pod_template};

/// Finished Jobs kept per CronJob (successful and failed each).
pub const JOBS_HISTORY_LIMIT: i32 = 3;
/// How late a missed run may still start. Without a deadline the CronJob
/// controller counts every missed tick since the last run and refuses to
/// start at all after 100 of them (e.g. after a long suspend).
pub const STARTING_DEADLINE_SECONDS: i64 = 300;

pub(crate) fn render(ctx: &Ctx<'_>, schedule: &ScheduleSpec) -> CronJob {
    let kind = PodKind {
        component: Component::Schedule,
        job: Some(&schedule.name),
        command: &schedule.command,
        args: &schedule.args,
        checksum: true,
    };
    let mut metadata = ctx.meta(
        &names::cronjob_name(ctx.name, &schedule.name),
        Component::Schedule,
    );
    if let Some(labels) = metadata.labels.as_mut() {
        labels.insert(
            super::labels::JOB_LABEL.to_string(),
            names::label_value(&schedule.name),
        );
    }
    let template = pod_template(ctx, &kind);
    CronJob {
        metadata: metadata.clone(),
        spec: Some(CronJobSpec {
            schedule: schedule.schedule.clone(),
            time_zone: schedule.time_zone.clone(),
            concurrency_policy: Some(
                schedule
                    .concurrency_policy
                    .unwrap_or_default()
                    .as_str()
                    .to_string(),
            ),
            suspend: Some(ctx.spec.suspend),
            starting_deadline_seconds: Some(STARTING_DEADLINE_SECONDS),
            successful_jobs_history_limit: Some(JOBS_HISTORY_LIMIT),
            failed_jobs_history_limit: Some(JOBS_HISTORY_LIMIT),
            job_template: JobTemplateSpec {
                // Labels only: the CronJob controller sets the Jobs' owner.
                metadata: Some(ObjectMeta {
                    labels: metadata.labels.clone(),
                    ..Default::default()
                }),
                spec: Some(JobSpec {
                    backoff_limit: Some(schedule.backoff_limit.unwrap_or(DEFAULT_BACKOFF_LIMIT)),
                    active_deadline_seconds: Some(
                        schedule
                            .active_deadline_seconds
                            .unwrap_or(DEFAULT_ACTIVE_DEADLINE_SECONDS),
                    ),
                    template,
                    ..Default::default()
                }),
            },
        }),
        ..Default::default()
    }
}
