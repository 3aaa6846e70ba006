//! A one-time Job's identity is its definition (issue 27, point 8).

use super::examples::{Example, examples};
use super::*;
use crate::decide::Decision;

fn everything() -> Example {
    examples()
        .into_iter()
        .find(|e| e.name == "everything")
        .expect("example")
}

fn migrate(e: &Example, decision: &Decision) -> Job {
    render(&e.runtime, &e.identity, decision)
        .expect("render")
        .jobs
        .into_iter()
        .next()
        .expect("the migrate Job")
}

fn hash(e: &Example, decision: &Decision) -> String {
    job_definition_hash(&migrate(e, decision)).expect("hash")
}

#[test]
fn the_class_and_pod_metadata_are_not_the_definition() {
    let e = everything();
    let granted = hash(&e, &e.decision);
    assert_eq!(granted.len(), DEFINITION_HASH_LEN);
    // Retired to the default runtime: no class, no profile annotation.
    assert_eq!(hash(&e, &Decision::NotRequested), granted);
    // Another class (a plan-grants ROLL).
    let rolled = Decision::Granted {
        alias: "bounded-worker".into(),
        runtime_class: "other-class".into(),
        handler: "other".into(),
    };
    assert_eq!(hash(&e, &rolled), granted);
    // Pod metadata, resources, placement, backoff and deadline.
    let mut other = e.clone();
    other.runtime.spec.pod_metadata = None;
    other.runtime.spec.resources = None;
    other.runtime.spec.scheduling = None;
    other.runtime.spec.jobs[0].backoff_limit = Some(5);
    other.runtime.spec.jobs[0].active_deadline_seconds = Some(60);
    assert_eq!(hash(&other, &e.decision), granted);
}

#[test]
fn image_command_and_args_are_the_definition() {
    let e = everything();
    let base = hash(&e, &e.decision);
    let mut cmd = e.clone();
    cmd.runtime.spec.jobs[0].command = vec!["/app/other".into()];
    let mut args = e.clone();
    args.runtime.spec.jobs[0].args.push("--dry-run".into());
    let mut image = e.clone();
    image.runtime.spec.image.digest = Some(format!("sha256:{}", "cd".repeat(32)));
    let hashes = [
        hash(&cmd, &e.decision),
        hash(&args, &e.decision),
        hash(&image, &e.decision),
    ];
    for h in &hashes {
        assert_ne!(h, &base);
    }
    assert_ne!(hashes[0], hashes[1]);
    // Moving an argument into the command is another definition.
    let mut moved = e.clone();
    let job = &mut moved.runtime.spec.jobs[0];
    job.command.push(job.args.remove(0));
    assert_ne!(hash(&moved, &e.decision), base);
}

#[test]
fn a_job_without_the_app_container_has_no_definition() {
    let e = everything();
    let mut job = migrate(&e, &e.decision);
    if let Some(pod) = job.spec.as_mut().and_then(|s| s.template.spec.as_mut()) {
        pod.containers[0].name = "other".into();
    }
    assert_eq!(job_definition_hash(&job), None);
    assert_eq!(job_definition_hash(&Job::default()), None);
}
