//! One-time Jobs run once per definition (issue 27, point 8), on the real
//! control plane: a completed Job and a running Job survive a pod-metadata
//! change and a retirement to the default runtime through `berth retire`
//! (the same objects, same uids, the running one not killed; the review
//! says so beforehand), the agent writes nothing at rest afterwards, and a
//! changed command does run the new definition once.
//!
//! kwok completes a Job's pod about a second after it is Ready, unless the
//! pod's `pod-complete.stage.kwok.x-k8s.io/delay` annotation says later:
//! podMetadata sets that to keep the second Job running.

use std::time::Duration;

use berth_shared::api::Runtime;
use berth_tests::harness::{TestNamespace, wait_for, wait_for_value};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, Granted, create_runtime, setup_granted, wait_condition, wait_reconciles,
};
use crate::support::at_rest::silent_at_rest;

const WAIT: Duration = Duration::from_secs(180);

/// `berth ARGS` with the admin kubeconfig: (exit code, stdout, stderr).
async fn berth(args: &[&str]) -> (i32, String, String) {
    crate::support::berth::run(None, args).await
}

/// Another field manager than the agent: the team (or `kubectl edit`).
async fn team_patch(ns: &TestNamespace, name: &str, patch: serde_json::Value) {
    let params = PatchParams {
        field_manager: Some("team".into()),
        ..Default::default()
    };
    Api::<Runtime>::namespaced(ns.client.clone(), &ns.name)
        .patch(name, &params, &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("patch {name} with {patch}: {e}"));
}

async fn job(ns: &TestNamespace, name: &str) -> Option<Job> {
    Api::<Job>::namespaced(ns.client.clone(), &ns.name)
        .get_opt(name)
        .await
        .expect("get job")
}

fn uid(j: &Job) -> String {
    j.metadata.uid.clone().unwrap_or_default()
}

fn condition(j: &Job, type_: &str) -> bool {
    j.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

fn is_complete(j: &Job) -> bool {
    condition(j, "Complete")
}

fn is_running(j: &Job) -> bool {
    j.metadata.deletion_timestamp.is_none()
        && !condition(j, "Complete")
        && !condition(j, "Failed")
        && j.status.as_ref().and_then(|s| s.active).unwrap_or(0) > 0
}

fn class_of_template(j: &Job) -> Option<String> {
    j.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.runtime_class_name.clone())
}

async fn deployment_class(ns: &TestNamespace, name: &str) -> Option<String> {
    Api::<Deployment>::namespaced(ns.client.clone(), &ns.name)
        .get(name)
        .await
        .ok()
        .and_then(|d| d.spec)
        .and_then(|s| s.template.spec)
        .and_then(|p| p.runtime_class_name)
}

#[tokio::test]
async fn job_identity_retirement_keeps_completed_and_running_jobs() {
    let Granted {
        ns,
        class,
        bw,
        grants,
    } = setup_granted("job-identity").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": bw, "replicas": 1,
               "jobs": [{"name": "migrate", "command": ["/app/migrate"], "args": ["up"]}]}),
    )
    .await;
    let migrate = "web-job-migrate";
    let done = wait_for_value("the migration Job completed", WAIT, || async {
        job(&ns, migrate).await.filter(is_complete)
    })
    .await;
    assert_eq!(class_of_template(&done).as_deref(), Some(class.as_str()));

    // The team adds a long-running job, and pod annotations that keep kwok
    // from completing its pods: pod metadata is not the migration's
    // definition, so the completed Job is not run again for it.
    team_patch(
        &ns,
        "web",
        json!({"spec": {
            "podMetadata": {"annotations": {
                "pod-complete.stage.kwok.x-k8s.io/delay": "2h",
                "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "2h"}},
            "jobs": [
                {"name": "migrate", "command": ["/app/migrate"], "args": ["up"]},
                {"name": "backfill", "args": ["backfill"]}]}}),
    )
    .await;
    let backfill = "web-job-backfill";
    let running = wait_for_value("the backfill Job running", WAIT, || async {
        job(&ns, backfill).await.filter(is_running)
    })
    .await;
    wait_reconciles(&agent, 4.0).await;
    let after_metadata = job(&ns, migrate).await.expect("the migration Job is kept");
    assert_eq!(
        uid(&after_metadata),
        uid(&done),
        "a pod-metadata change re-ran the completed migration Job"
    );

    // The retirement review says what happens to each Job, truthfully.
    let target = format!("{}/web", ns.name);
    let (code, out, err) = berth(&["retire", &target, "--to-default", "--dry-run"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    for line in [
        "Job web-job-migrate: kept as it ran (already completed); not run again".to_string(),
        format!("Job web-job-backfill: keeps running on {class} until it finishes; not restarted"),
    ] {
        assert!(out.contains(&line), "review lacks {line:?}:\n{out}");
    }
    // Retire to the default runtime, through the console as a person would.
    let (code, out, err) = berth(&["retire", &target, "--to-default", "--yes"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    wait_for("the Deployment on the default runtime", WAIT, || async {
        deployment_class(&ns, "web").await.is_none()
    })
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    wait_reconciles(&agent, 4.0).await;
    let kept = job(&ns, migrate).await.expect("the completed Job is kept");
    assert_eq!(
        uid(&kept),
        uid(&done),
        "retirement re-ran the completed Job"
    );
    assert!(is_complete(&kept));
    let still = job(&ns, backfill).await.expect("the running Job is kept");
    assert_eq!(
        uid(&still),
        uid(&running),
        "retirement replaced the running Job"
    );
    assert!(
        is_running(&still),
        "retirement killed the running Job: {:?}",
        still.status
    );
    // It keeps the class it started with: its template is immutable.
    assert_eq!(class_of_template(&still).as_deref(), Some(class.as_str()));

    // At rest: nothing more is written for them. The retirement's rollout
    // ends in a paced progress write a progress interval after it settles;
    // since deletions wake the Runtime (the old pods' and ReplicaSet's),
    // four reconciles can pass before it (CI of 2a5dda8: one Runtime
    // status PATCH in the window). So windows until one is quiet, then one
    // more that must be.
    silent_at_rest(&agent, &ns.client, "after a retirement with kept Jobs").await;

    // The status records the definitions the Jobs ran.
    let rt = Api::<Runtime>::namespaced(ns.client.clone(), &ns.name)
        .get("web")
        .await
        .expect("runtime");
    let records = rt.status.expect("status").jobs;
    assert_eq!(records.len(), 2, "{records:?}");
    assert!(
        records
            .iter()
            .all(|r| r.template_hash.len() == berth_shared::render::DEFINITION_HASH_LEN),
        "{records:?}"
    );

    // A changed command is another definition: it runs once, on the
    // default runtime now.
    team_patch(
        &ns,
        "web",
        json!({"spec": {"jobs": [
            {"name": "migrate", "command": ["/app/migrate", "--v2"], "args": ["up"]},
            {"name": "backfill", "args": ["backfill"]}]}}),
    )
    .await;
    let rerun = wait_for_value("the changed migration Job created", WAIT, || async {
        job(&ns, migrate)
            .await
            .filter(|j| uid(j) != uid(&done) && j.metadata.deletion_timestamp.is_none())
    })
    .await;
    assert_eq!(class_of_template(&rerun), None);
    wait_reconciles(&agent, 4.0).await;
    let once = job(&ns, migrate).await.expect("the new run");
    assert_eq!(
        uid(&once),
        uid(&rerun),
        "the new definition ran more than once"
    );
    let still = job(&ns, backfill).await.expect("backfill kept");
    assert_eq!(uid(&still), uid(&running), "an unrelated job was replaced");
}
