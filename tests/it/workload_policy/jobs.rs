//! Issue 52: the Jobs and CronJobs a berth Runtime controls are changed by
//! the agent only. The agent undoes a foreign change to either kind's spec
//! (`job_contract::`, `contract_schema::`), but for these two the change
//! can act first and for good: the full sweep of 2026-12-06 set a short
//! `ttlSecondsAfterFinished` on berth's finished Job and the TTL controller
//! deleted it before the agent's correction landed. So the shipped policy
//! refuses, at admission, a change of their spec or owner references by
//! anyone but the agent (owner references: and the controllers), a
//! cluster-admin included; their metadata otherwise stays open, and a
//! tenant's own Job is not berth's business.

use berth_tests::harness;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use super::setup::*;
use crate::agent_support::create_runtime;

const JOB: &str = "web-job-migrate";
const CRON: &str = "web-cron-nightly";
const SAYS: &str = "belongs to a berth Runtime";

/// Whether the Job has finished (its Complete condition is True).
fn complete(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
        })
}

#[tokio::test]
async fn a_runtimes_jobs_and_cronjobs_are_changed_by_the_agent_only() {
    let s = UnderPolicy::start("wlp-jobs").await;
    let (ns, bw, restricted) = (&s.ns, &s.grant, s.restricted.clone());
    let admin = ns.client.clone();

    create_runtime(
        ns,
        "web",
        json!({"runtimeProfile": bw, "replicas": 1,
               "schedules": [{"name": "nightly", "schedule": "0 3 * * *"}],
               "jobs": [{"name": "migrate", "command": ["/app/migrate"], "args": ["up"]}]}),
    )
    .await;
    let admin_jobs = Api::<Job>::namespaced(admin.clone(), &ns.name);
    let finished = harness::wait_for_value("berth's Job finished", WAIT, || {
        let jobs = admin_jobs.clone();
        async move { jobs.get_opt(JOB).await.ok().flatten().filter(complete) }
    })
    .await;
    let uid = finished.metadata.uid.clone().expect("uid");
    harness::wait_for("berth's CronJob", WAIT, || {
        let api = Api::<CronJob>::namespaced(admin.clone(), &ns.name);
        async move { api.get_opt(CRON).await.ok().flatten().is_some() }
    })
    .await;

    // Another cluster-admin than the one the agent runs as.
    let other_admin =
        impersonating("another-admin", &["system:masters", "system:authenticated"]).await;
    let jobs = |c: &kube::Client| Api::<Job>::namespaced(c.clone(), &ns.name);
    let crons = |c: &kube::Client| Api::<CronJob>::namespaced(c.clone(), &ns.name);
    let real = PatchParams::default();
    let merge = |v: Value| Patch::Merge(v);
    let unowned = json!({"metadata": {"ownerReferences": null}});

    // (what, result): each must be refused, for real (not a dry run).
    let mut played: Vec<(&str, Result<(), kube::Error>)> = Vec::new();
    for (what, client, patch) in [
        (
            "restricted sets a TTL on the finished Job",
            &restricted,
            json!({"spec": {"ttlSecondsAfterFinished": 0}}),
        ),
        (
            "another cluster-admin sets a TTL on the finished Job",
            &other_admin,
            json!({"spec": {"ttlSecondsAfterFinished": 0}}),
        ),
        (
            "restricted sets a deadline on the Job",
            &restricted,
            json!({"spec": {"activeDeadlineSeconds": 1}}),
        ),
        (
            "restricted lowers the Job's backoff limit",
            &restricted,
            json!({"spec": {"backoffLimit": 0}}),
        ),
        (
            "restricted removes the Job's owner reference",
            &restricted,
            unowned.clone(),
        ),
    ] {
        played.push((
            what,
            jobs(client)
                .patch(JOB, &real, &merge(patch))
                .await
                .map(|_| ()),
        ));
    }
    for (what, client, patch) in [
        (
            "restricted sets the CronJob's history limit to 0",
            &restricted,
            json!({"spec": {"successfulJobsHistoryLimit": 0}}),
        ),
        (
            "another cluster-admin suspends the CronJob",
            &other_admin,
            json!({"spec": {"suspend": true}}),
        ),
        (
            "restricted removes the CronJob's owner reference",
            &restricted,
            unowned.clone(),
        ),
    ] {
        played.push((
            what,
            crons(client)
                .patch(CRON, &real, &merge(patch))
                .await
                .map(|_| ()),
        ));
    }
    let mut through = Vec::new();
    for (what, result) in played {
        if result.is_ok() {
            through.push(what);
            continue;
        }
        let msg = assert_refused_saying(result, what, SAYS);
        assert!(
            msg.contains("may not change its spec or its owner references"),
            "{what}: {msg}"
        );
    }
    assert!(through.is_empty(), "admitted: {through:#?}");

    // What stays open: the Job's other metadata, the agent's own change,
    // and a tenant's own Job.
    jobs(&restricted)
        .patch(
            JOB,
            &real,
            &merge(json!({"metadata": {"annotations": {"team": "notes"}}})),
        )
        .await
        .expect("restricted annotates berth's Job");
    jobs(&admin)
        .patch(
            JOB,
            &patch_params(true),
            &merge(json!({"spec": {"backoffLimit": 1}})),
        )
        .await
        .expect("the agent's user changes the Job's spec (dry run)");
    create(&restricted, &ns.name, &workload("Job", "mine", None), false)
        .await
        .expect("restricted creates a Job of its own");
    jobs(&restricted)
        .patch(
            "mine",
            &real,
            &merge(json!({"spec": {"ttlSecondsAfterFinished": 0}})),
        )
        .await
        .expect("restricted sets a TTL on its own Job");

    // berth's finished Job is still there, the same one, with no TTL.
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let still = admin_jobs
        .get(JOB)
        .await
        .expect("berth's Job is still there");
    assert_eq!(still.metadata.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(still.spec.and_then(|s| s.ttl_seconds_after_finished), None);

    drop(s.agent);
    remove_policy(&admin, &s.id).await;
}
