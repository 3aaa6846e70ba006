//! One Job per `jobs[]` entry. A Job's pod template is immutable, so the
//! agent creates these once and does not update them.
//!
//! A one-time Job runs once per *definition* ([`definition_hash`]): what
//! its container runs — the image reference, the command and the args.
//! Nothing else makes it run again: not the RuntimeClass (a retirement to
//! the default runtime, a grant that rolls), not pod labels or annotations,
//! resources, placement, backoff or deadline. A completed Job stays as it
//! ran, a running one is never killed for those; only a changed image,
//! command or args replaces the Job and runs the new definition once.

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use sha2::{Digest, Sha256};

use crate::api::{DEFAULT_ACTIVE_DEADLINE_SECONDS, DEFAULT_BACKOFF_LIMIT, JobSpec as RuntimeJob};

use super::ctx::Ctx;
use super::labels::Component;
use super::names;
use super::pod_template::{CONTAINER_NAME, PodKind, pod_template};

/// Hex characters of a definition hash (distinct from the 20 of the
/// whole-object hash that status recorded before, see the agent's
/// `run_jobs_once`).
pub const DEFINITION_HASH_LEN: usize = 16;

/// The identity of a one-time Job: sha256 over its `app` container's image
/// reference, command and args, as [`DEFINITION_HASH_LEN`] hex characters.
/// Computed the same way from a rendered Job and from a live one (so a Job
/// created by an older agent is recognised by what it runs). `None` when
/// the Job has no `app` container.
pub fn definition_hash(job: &Job) -> Option<String> {
    let container = job
        .spec
        .as_ref()?
        .template
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == CONTAINER_NAME)?;
    // An unset list and an empty one run the same thing.
    let definition = serde_json::json!({
        "image": container.image.as_deref().unwrap_or_default(),
        "command": container.command.clone().unwrap_or_default(),
        "args": container.args.clone().unwrap_or_default(),
    });
    let digest = Sha256::digest(definition.to_string().as_bytes());
    Some(
        digest
            .iter()
            .take(DEFINITION_HASH_LEN / 2)
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

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
