//! Issue 52, item 6 ("Jobs"), on the real control plane: a one-time
//! Job's mutable fields are governed like every other managed object's
//! (a foreign `suspend`, `parallelism`, deadline, backoff, TTL or
//! reserved label is undone in one write, as the apiserver stores it),
//! what the apiserver refuses to change on a Job stays refused, and a
//! Job planted at berth's name is not taken as run: it is deleted, and
//! berth's own runs once — or, when berth's already ran, never again.
//!
//! A held Runtime (Blocked, or held in deletion by a foreign finalizer)
//! runs nothing, and its running Job stays governed all the same.
//!
//! kwok completes a Job's pod about a second after it is Ready, unless
//! the pod's `pod-complete.stage.kwok.x-k8s.io/delay` annotation says
//! later: podMetadata sets it to keep a Job running while it is attacked.

use std::time::Duration;

use berth_shared::api::Runtime;
use berth_tests::harness::{TestNamespace, wait_for, wait_for_value};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};

use crate::agent_support::{
    Agent, AgentOpts, Granted, create_runtime, runtime_events, setup_granted, wait_condition,
    wait_reconciles, writes,
};
use crate::contract_adversary::{agent_writes_to, tenant_client};

const WAIT: Duration = Duration::from_secs(180);

/// The reason of the Warning Event a planted Job raises.
const PLANTED: &str = "PlantedJob";

/// Keeps kwok from completing the pods (see the module's comment).
fn running_pods() -> Value {
    json!({"annotations": {
        "pod-complete.stage.kwok.x-k8s.io/delay": "2h",
        "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "2h"}})
}

/// Jobs as the apiserver stores them (no compiled type drops a field).
fn stored_jobs(client: &Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("batch", "v1", "Job");
    Api::namespaced_with(client.clone(), ns, &ApiResource::from_gvk(&gvk))
}

async fn stored(ns: &TestNamespace, name: &str) -> Option<Value> {
    stored_jobs(&ns.client, &ns.name)
        .get_opt(name)
        .await
        .expect("get job")
        .map(|j| serde_json::to_value(j).expect("json"))
}

fn uid(v: &Value) -> String {
    v["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn condition(v: &Value, type_: &str) -> bool {
    v["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == type_ && c["status"] == "True")
    })
}

fn is_running(v: &Value) -> bool {
    v["metadata"]["deletionTimestamp"].is_null()
        && !condition(v, "Complete")
        && !condition(v, "Failed")
        && v["status"]["active"].as_i64().unwrap_or(0) > 0
}

fn definition(v: &Value) -> Option<String> {
    let job: Job = serde_json::from_value(v.clone()).ok()?;
    berth_shared::render::job_definition_hash(&job)
}

async fn runtime(ns: &TestNamespace, name: &str) -> Runtime {
    Api::<Runtime>::namespaced(ns.client.clone(), &ns.name)
        .get(name)
        .await
        .expect("runtime")
}

/// A foreign change to a Job: the merge patch, whether the apiserver lets
/// it change a Job at all, and how to see it is still there.
struct Change {
    what: &'static str,
    patch: Value,
    mutable: bool,
    still: fn(&Value) -> bool,
}

fn change(what: &'static str, patch: Value, mutable: bool, still: fn(&Value) -> bool) -> Change {
    Change {
        what,
        patch,
        mutable,
        still,
    }
}

/// Plays each change on Job `name` as another field manager: a mutable
/// field's change lands and is undone by exactly one write of the agent
/// (as the apiserver stores the Job); an immutable one is refused.
async fn play(agent: &Agent, ns: &TestNamespace, name: &str, changes: Vec<Change>) {
    let api = stored_jobs(&ns.client, &ns.name);
    let intruder = PatchParams {
        field_manager: Some("intruder".to_string()),
        ..Default::default()
    };
    for c in changes {
        let before = agent.metrics().await;
        let landed = api.patch(name, &intruder, &Patch::Merge(&c.patch)).await;
        if !c.mutable {
            let e = landed.expect_err(&format!(
                "{}: the apiserver changed a Job's {}",
                name, c.what
            ));
            eprintln!("refused by the apiserver: Job {name}: {}: {e}", c.what);
            continue;
        }
        let landed = landed.unwrap_or_else(|e| panic!("Job {name}: {} refused: {e}", c.what));
        let landed = serde_json::to_value(landed).expect("json");
        assert!((c.still)(&landed), "{}: did not land: {landed:#}", c.what);
        wait_for(
            &format!("{} undone on Job {name}", c.what),
            Duration::from_secs(60),
            || async {
                let v = stored(ns, name).await.expect("the Job is kept");
                !(c.still)(&v)
            },
        )
        .await;
        wait_reconciles(agent, 3.0).await;
        let after = agent.metrics().await;
        let sent = agent_writes_to(&after, "jobs") - agent_writes_to(&before, "jobs");
        assert_eq!(
            sent,
            1.0,
            "{}: one correcting write to Job {name}, then quiet; log:\n{}",
            c.what,
            agent.log_text()
        );
        eprintln!("undone in one write: Job {name}: {}", c.what);
    }
}

#[tokio::test]
async fn job_contract_foreign_changes_to_a_jobs_mutable_fields_are_undone() {
    let Granted { ns, bw, grants, .. } = setup_granted("job-contract").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": bw, "replicas": 1, "podMetadata": running_pods(),
               "jobs": [{"name": "hold", "args": ["hold"], "backoffLimit": 2,
                         "activeDeadlineSeconds": 3600}]}),
    )
    .await;
    let name = "web-job-hold";
    let running = wait_for_value("berth's Job running", WAIT, || async {
        stored(&ns, name).await.filter(is_running)
    })
    .await;
    eprintln!("stored spec: {:#}", running["spec"]);
    wait_reconciles(&agent, 3.0).await;

    play(
        &agent,
        &ns,
        name,
        vec![
            change(
                "activeDeadlineSeconds",
                json!({"spec": {"activeDeadlineSeconds": 7200}}),
                true,
                |v| v["spec"]["activeDeadlineSeconds"] == 7200,
            ),
            change(
                "backoffLimit",
                json!({"spec": {"backoffLimit": 50}}),
                true,
                |v| v["spec"]["backoffLimit"] == 50,
            ),
            change(
                "parallelism",
                json!({"spec": {"parallelism": 3}}),
                true,
                |v| v["spec"]["parallelism"] == 3,
            ),
            change(
                "ttlSecondsAfterFinished",
                json!({"spec": {"ttlSecondsAfterFinished": 5}}),
                true,
                |v| !v["spec"]["ttlSecondsAfterFinished"].is_null(),
            ),
            change(
                "a reserved label",
                json!({"metadata": {"labels": {"service.kubernetes.io/service-proxy-name": "nowhere"}}}),
                true,
                |v| !v["metadata"]["labels"]["service.kubernetes.io/service-proxy-name"].is_null(),
            ),
            change(
                "suspend",
                json!({"spec": {"suspend": true}}),
                true,
                |v| v["spec"]["suspend"] == true,
            ),
            change(
                "completions (NonIndexed)",
                json!({"spec": {"completions": 4}}),
                false,
                |v| v["spec"]["completions"] == 4,
            ),
            change(
                "backoffLimitPerIndex (NonIndexed)",
                json!({"spec": {"backoffLimitPerIndex": 1}}),
                false,
                |v| !v["spec"]["backoffLimitPerIndex"].is_null(),
            ),
            change(
                "podFailurePolicy",
                json!({"spec": {"podFailurePolicy": {"rules": [{"action": "Ignore",
                    "onExitCodes": {"operator": "In", "values": [1]}}]}}}),
                false,
                |v| !v["spec"]["podFailurePolicy"].is_null(),
            ),
            change(
                "successPolicy",
                json!({"spec": {"successPolicy": {"rules": [{"succeededCount": 1}]}}}),
                false,
                |v| !v["spec"]["successPolicy"].is_null(),
            ),
            change(
                "the pod template",
                json!({"spec": {"template": {"spec": {"hostNetwork": true}}}}),
                false,
                |v| v["spec"]["template"]["spec"]["hostNetwork"] == true,
            ),
        ],
    )
    .await;

    // The same Job all along: governed, not re-run.
    let kept = stored(&ns, name).await.expect("the Job is kept");
    assert_eq!(uid(&kept), uid(&running), "a correction re-ran the Job");
    // At rest: nothing more is written.
    let before = writes(&agent.metrics().await);
    wait_reconciles(&agent, 4.0).await;
    assert_eq!(
        writes(&agent.metrics().await),
        before,
        "the agent writes at rest after correcting the Job"
    );

    // Held (Blocked: a profile nobody granted): nothing runs, and what
    // runs stays governed.
    let runtimes: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    runtimes
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"runtimeProfile": format!("{}-nope", ns.name)}})),
        )
        .await
        .expect("profile");
    wait_condition(&ns, "web", "Blocked", "True", Some("NotGranted")).await;
    wait_reconciles(&agent, 3.0).await;
    play(&agent, &ns, name, held_changes()).await;

    // Held in deletion (a foreign finalizer keeps the Runtime, and so its
    // Job, from going): the same.
    runtimes
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": [HOLD_FINALIZER]}})),
        )
        .await
        .expect("finalizer");
    runtimes
        .delete("web", &DeleteParams::default())
        .await
        .expect("delete the Runtime");
    wait_reconciles(&agent, 3.0).await;
    play(&agent, &ns, name, held_changes()).await;
    let kept = stored(&ns, name).await.expect("the Job is kept");
    assert_eq!(uid(&kept), uid(&running), "a held Runtime's Job was re-run");
    runtimes
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("drop finalizer");
}

/// A foreign finalizer that holds a Runtime in deletion.
const HOLD_FINALIZER: &str = "example.com/hold";

/// What a held Runtime's Job must still have undone.
fn held_changes() -> Vec<Change> {
    vec![
        change(
            "parallelism",
            json!({"spec": {"parallelism": 3}}),
            true,
            |v| v["spec"]["parallelism"] == 3,
        ),
        change(
            "backoffLimit",
            json!({"spec": {"backoffLimit": 50}}),
            true,
            |v| v["spec"]["backoffLimit"] == 50,
        ),
        change("suspend", json!({"spec": {"suspend": true}}), true, |v| {
            v["spec"]["suspend"] == true
        }),
    ]
}

/// A copy of berth's Job as another party would create it at the same
/// name: the Runtime as its controller (so it looks owned), the same
/// image, command and args, and content berth did not render.
fn planted(runtime: &Runtime, name: &str) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "berth"},
            "ownerReferences": [{"apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
                "name": runtime.name_any(), "uid": runtime.uid(), "controller": true}]},
        "spec": {"backoffLimit": 0, "template": {
            "metadata": {"annotations": running_pods()["annotations"].clone()},
            "spec": {"restartPolicy": "Never", "containers": [{
                "name": "app", "image": "registry.invalid/berth/app:1",
                "command": ["/app/migrate"], "args": ["up"],
                "env": [{"name": "LD_PRELOAD", "value": "/tmp/evil.so"}]}]}}},
    })
}

fn env_names(v: &Value) -> Vec<String> {
    v["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["name"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn job_contract_a_job_planted_before_the_agent_renders_is_replaced_by_berths() {
    let Granted { ns, bw, grants, .. } = setup_granted("job-planted").await;
    // The Runtime first, no agent yet: the Job is planted before berth
    // renders anything.
    let rt = create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": bw, "replicas": 1,
               "jobs": [{"name": "migrate", "command": ["/app/migrate"], "args": ["up"]}]}),
    )
    .await;
    let name = "web-job-migrate";
    let params = PostParams {
        field_manager: Some("intruder".into()),
        ..Default::default()
    };
    let plant: DynamicObject = serde_json::from_value(planted(&rt, name)).expect("job");
    let plant = stored_jobs(&ns.client, &ns.name)
        .create(&params, &plant)
        .await
        .expect("plant the Job");
    let plant = serde_json::to_value(plant).expect("json");
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;

    let berths = wait_for_value(
        "berth's own Job in place of the planted one",
        WAIT,
        || async {
            stored(&ns, name)
                .await
                .filter(|j| uid(j) != uid(&plant) && j["metadata"]["deletionTimestamp"].is_null())
        },
    )
    .await;
    assert!(env_names(&berths).is_empty(), "{:#}", berths["spec"]);
    assert_eq!(
        definition(&berths),
        definition(&plant),
        "the planted Job ran berth's image, command and args"
    );
    let warned = runtime_events(&ns, "web", PLANTED).await;
    assert!(
        warned.iter().any(|e| e.type_.as_deref() == Some("Warning")
            && e.note
                .as_deref()
                .is_some_and(|n| n.contains(name) && n.contains("env"))),
        "a Warning naming the Job and what differs: {warned:?}"
    );
    // Recorded as berth's run, by its uid.
    let record = wait_for_value("the run recorded", WAIT, || async {
        let rt = runtime(&ns, "web").await;
        rt.status?.jobs.into_iter().find(|r| r.name == "migrate")
    })
    .await;
    let record = serde_json::to_value(&record).expect("json");
    assert_eq!(record["uid"], json!(uid(&berths)), "{record}");
    // berth's own Job runs once: not replaced again.
    wait_reconciles(&agent, 4.0).await;
    let once = stored(&ns, name).await.expect("berth's Job is kept");
    assert_eq!(uid(&once), uid(&berths), "berth's own Job was run again");
}

#[tokio::test]
async fn job_contract_a_job_swapped_in_after_berths_ran_is_deleted_and_nothing_reruns() {
    let Granted { ns, bw, grants, .. } = setup_granted("job-swapped").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    let rt = create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": bw, "replicas": 1,
               "jobs": [{"name": "migrate", "command": ["/app/migrate"], "args": ["up"]}]}),
    )
    .await;
    let name = "web-job-migrate";
    let done = wait_for_value("berth's Job completed", WAIT, || async {
        stored(&ns, name).await.filter(|j| condition(j, "Complete"))
    })
    .await;
    wait_reconciles(&agent, 3.0).await;
    let recorded = runtime(&ns, "web").await.status.expect("status").jobs;

    // A completed Job's mutable fields are governed too.
    play(
        &agent,
        &ns,
        name,
        vec![change(
            "backoffLimit (completed)",
            json!({"spec": {"backoffLimit": 50}}),
            true,
            |v| v["spec"]["backoffLimit"] == 50,
        )],
    )
    .await;

    // The tenant deletes berth's Job and swaps in its own at the name,
    // controlled by the Runtime, same definition, other content (another
    // RuntimeClass: none; an extra env entry).
    let tenant = tenant_client(&ns.client, &ns.name).await;
    let as_tenant = stored_jobs(&tenant, &ns.name);
    as_tenant
        .delete(name, &DeleteParams::background())
        .await
        .expect("the tenant deletes berth's Job");
    wait_for("berth's Job gone", WAIT, || async {
        stored(&ns, name).await.is_none()
    })
    .await;
    let plant: DynamicObject = serde_json::from_value(planted(&rt, name)).expect("job");
    let plant = as_tenant
        .create(&PostParams::default(), &plant)
        .await
        .expect("the tenant plants its Job");
    let plant = serde_json::to_value(plant).expect("json");
    assert_eq!(definition(&plant), definition(&done));

    // Deleted; berth's ran already, so nothing runs in its place.
    wait_for("the planted Job deleted", WAIT, || async {
        stored(&ns, name)
            .await
            .is_none_or(|j| uid(&j) != uid(&plant))
    })
    .await;
    wait_reconciles(&agent, 4.0).await;
    assert!(
        stored(&ns, name).await.is_none(),
        "berth's Job, which ran already, was run again"
    );
    let after = runtime(&ns, "web").await.status.expect("status").jobs;
    assert_eq!(
        after, recorded,
        "the record of berth's run is kept as it was"
    );
    let warned = runtime_events(&ns, "web", PLANTED).await;
    assert!(
        warned.iter().any(|e| e.type_.as_deref() == Some("Warning")
            && e.note.as_deref().is_some_and(|n| n.contains(name))),
        "a Warning naming the Job: {warned:?}"
    );
}
