//! Issue 52 on the real control plane: the contract by construction. Each
//! attack here got through on the main of 2026-12-05 (one step beyond the
//! cases `contract_adversary.rs` names) and is undone now:
//!
//! - a field newer than the compiled API types (berth compiled against
//!   1.33 then, the cluster ran 1.37: `hostnameOverride`): compared as the
//!   apiserver stores it, it is a difference and is removed. Since the
//!   types are 1.34's (the oldest supported minor, README "Supported
//!   Kubernetes") they know `hostnameOverride`, and no pod field that 1.37
//!   turns on by default is missing from them; the attack stays (a field
//!   berth never renders), and on 1.34 itself, where `hostnameOverride` is
//!   alpha and off, the apiserver drops it, so the test says so and passes;
//! - an explicit empty selector added where berth renders none
//!   (`namespaceSelector: {}` on a peer that names only pod labels: every
//!   namespace): a value, not an absence.
//!
//! Objects are read here as the apiserver stores them (`DynamicObject`),
//! never through the typed structs that would hide the very field.

use std::time::Duration;

use berth_tests::harness::wait_for;
use berth_tests::localcluster::binaries::kubernetes_version;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::{Api, Client, Resource};
use serde_json::{Value, json};

use crate::agent_support::{
    Agent, AgentOpts, Granted, create_runtime, metric_sum, setup_granted, wait_condition,
    wait_reconciles,
};
use crate::contract_adversary::{agent_writes_to, rolled_out};

/// `K`'s objects in `ns` as the apiserver stores them: every field, known
/// to the compiled types or not.
fn stored<K: Resource<DynamicType = ()>>(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &ApiResource::erase::<K>(&()))
}

/// The object as JSON, as stored.
async fn json_of(api: &Api<DynamicObject>, name: &str) -> Value {
    serde_json::to_value(api.get(name).await.expect("get")).expect("json")
}

/// One foreign change, played as another field manager with a merge patch
/// on the stored object: it must land (else the attack proves nothing),
/// then be gone within a minute after exactly one write of the agent to
/// `resource`.
async fn undone(
    agent: &Agent,
    api: &Api<DynamicObject>,
    name: &str,
    resource: &str,
    what: &str,
    patch: Value,
    still: impl Fn(&Value) -> bool,
) {
    let before = agent.metrics().await;
    let intruder = PatchParams {
        field_manager: Some("intruder".to_string()),
        ..Default::default()
    };
    let landed = api
        .patch(name, &intruder, &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("{resource}/{name}: foreign patch ({what}) refused: {e}"));
    let landed = serde_json::to_value(&landed).expect("json");
    assert!(
        still(&landed),
        "{what}: the foreign change did not land (the apiserver dropped it): {landed:#}"
    );
    wait_for(
        &format!("{what} removed from {resource}/{name}"),
        Duration::from_secs(60),
        || async { !still(&json_of(api, name).await) },
    )
    .await;
    wait_reconciles(agent, 3.0).await;
    let after = agent.metrics().await;
    let sent = agent_writes_to(&after, resource) - agent_writes_to(&before, resource);
    assert_eq!(
        sent,
        1.0,
        "{what}: one correcting write to {resource}/{name}, then quiet; log:\n{}",
        agent.log_text()
    );
    eprintln!("undone in one write: {resource}/{name}: {what}");
}

/// A spec with a NetworkPolicy whose one peer names only pod labels, and
/// a schedule (a second pod template).
fn spec(profile: &str) -> Value {
    json!({
        "runtimeProfile": profile,
        "replicas": 1,
        "expose": {"port": 9090},
        "networkPolicy": {"enabled": true, "ingress": [{"podLabels": {"role": "frontend"}}]},
        "schedules": [{"name": "nightly", "schedule": "0 3 * * *", "args": ["report"]}],
    })
}

/// A granted Runtime of [`spec`], rolled out, with its agent.
async fn granted_web(prefix: &str) -> (crate::agent_support::Granted, Agent) {
    let granted = setup_granted(prefix).await;
    let agent = Agent::start(AgentOpts::new(&granted.ns.name, Some(&granted.grants))).await;
    create_runtime(&granted.ns, "web", spec(&granted.bw)).await;
    wait_condition(&granted.ns, "web", "Ready", "True", None).await;
    rolled_out(&granted.ns.client, &granted.ns.name, "web", 1).await;
    (granted, agent)
}

#[tokio::test]
async fn construction_a_field_newer_than_the_compiled_types_is_removed() {
    if kubernetes_version().starts_with("v1.34.") {
        eprintln!(
            "SKIPPED: hostnameOverride is alpha and off on {} (the apiserver drops it)",
            kubernetes_version()
        );
        return;
    }
    let (Granted { ns, .. }, agent) = granted_web("construct-new").await;
    let c = &ns.client;
    let n = ns.name.as_str();

    // A field of 1.37's PodSpec that k8s-openapi's v1_33 types did not know
    // (the v1_34 types berth compiles against now do).
    let deployments = stored::<Deployment>(c, n);
    undone(
        &agent,
        &deployments,
        "web",
        "deployments",
        "hostnameOverride on the pod template (newer than the compiled types)",
        json!({"spec": {"template": {"spec": {"hostnameOverride": "payments-db"}}}}),
        |v| {
            !v.pointer("/spec/template/spec/hostnameOverride")
                .is_none_or(Value::is_null)
        },
    )
    .await;
    let cron_jobs = stored::<CronJob>(c, n);
    undone(
        &agent,
        &cron_jobs,
        "web-cron-nightly",
        "cronjobs",
        "hostnameOverride on the job pods",
        json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"hostnameOverride": "x"}}}}}}),
        |v| {
            !v.pointer("/spec/jobTemplate/spec/template/spec/hostnameOverride")
                .is_none_or(Value::is_null)
        },
    )
    .await;
}

#[tokio::test]
async fn construction_an_explicit_empty_selector_is_a_value() {
    let (Granted { ns, .. }, agent) = granted_web("construct-empty").await;
    let c = &ns.client;
    let n = ns.name.as_str();
    // `namespaceSelector: {}` beside the peer's pod labels: every namespace.
    let policies = stored::<NetworkPolicy>(c, n);
    let mut peers = json_of(&policies, "web")
        .await
        .pointer("/spec/ingress/0/from")
        .cloned()
        .expect("the rendered peers");
    peers[0]["namespaceSelector"] = json!({});
    let mut ingress = json_of(&policies, "web")
        .await
        .pointer("/spec/ingress")
        .cloned()
        .expect("ingress");
    ingress[0]["from"] = peers;
    undone(
        &agent,
        &policies,
        "web",
        "networkpolicies",
        "an empty namespaceSelector on a pod-label peer (every namespace)",
        json!({"spec": {"ingress": ingress}}),
        |v| {
            v.pointer("/spec/ingress/0/from/0/namespaceSelector")
                .is_some_and(|s| !s.is_null())
        },
    )
    .await;
}

/// Two the schema-driven adversary found (issue 52, point 7), which no
/// merge patch can undo: a Service's `ipFamilyPolicy` (an update that
/// leaves it out keeps the stored one, so berth renders it) and a
/// ConfigMap made `immutable` (the apiserver refuses every change to it,
/// so the agent recreates it). Both stayed on the main of 2026-12-06.
#[tokio::test]
async fn construction_what_no_patch_can_undo_is_undone_all_the_same() {
    let (Granted { ns, .. }, agent) = granted_web("construct-frozen").await;
    let c = &ns.client;
    let n = ns.name.as_str();
    let services = stored::<k8s_openapi::api::core::v1::Service>(c, n);
    undone(
        &agent,
        &services,
        "web",
        "services",
        "ipFamilyPolicy PreferDualStack",
        json!({"spec": {"ipFamilyPolicy": "PreferDualStack"}}),
        |v| v.pointer("/spec/ipFamilyPolicy") == Some(&json!("PreferDualStack")),
    )
    .await;

    let maps = config_maps(c, n);
    let before = json_of(&maps, "web-config").await;
    let frozen = |v: &Value| v["immutable"] == json!(true);
    let landed = maps
        .patch(
            "web-config",
            &PatchParams {
                field_manager: Some("intruder".to_string()),
                ..Default::default()
            },
            &Patch::Merge(&json!({"immutable": true})),
        )
        .await
        .expect("the foreign `immutable: true` lands");
    assert!(frozen(&serde_json::to_value(&landed).expect("json")));
    let old_uid = before["metadata"]["uid"].clone();
    wait_for(
        "web-config recreated without `immutable`",
        Duration::from_secs(60),
        || async {
            match maps.get_opt("web-config").await {
                Ok(Some(o)) => {
                    let v = serde_json::to_value(o).expect("json");
                    !frozen(&v) && v["metadata"]["uid"] != old_uid
                }
                _ => false,
            }
        },
    )
    .await;
    let after = json_of(&maps, "web-config").await;
    assert_eq!(after["data"], before["data"], "the same data, as rendered");
    assert_eq!(
        after["metadata"]["ownerReferences"], before["metadata"]["ownerReferences"],
        "the Runtime's own again"
    );
    // Settled: Ready, and no further write to ConfigMaps (no loop).
    wait_condition(&ns, "web", "Ready", "True", None).await;
    wait_reconciles(&agent, 3.0).await;
    let settled = agent.metrics().await;
    wait_reconciles(&agent, 4.0).await;
    let later = agent.metrics().await;
    assert_eq!(
        agent_writes_to(&later, "configmaps") - agent_writes_to(&settled, "configmaps"),
        0.0,
        "no write loop on the recreated ConfigMap; log:\n{}",
        agent.log_text()
    );
    assert!(
        !agent.log_text().contains("reconcile failed"),
        "no reconcile failed; log:\n{}",
        agent.log_text()
    );
}

/// The agent's live heap, by its allocator's own account
/// (`berth_agent_allocator_bytes{state="allocated"}`), once it has stopped
/// moving: two reads 2 s apart within 64 kB of each other.
async fn settled_heap(agent: &Agent) -> f64 {
    let read = || async {
        metric_sum(&agent.metrics().await, "berth_agent_allocator_bytes", |l| {
            l.contains("state=\"allocated\"")
        })
    };
    let mut last = read().await;
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = read().await;
        if (now - last).abs() < 64.0 * 1024.0 {
            return now;
        }
        last = now;
    }
    last
}

/// Issue 52, point 4: objects that merely wear berth's label pass the
/// watch's filter and nothing more. Forty foreign ConfigMaps of 800 kB
/// each, labelled `app.kubernetes.io/managed-by=berth`, grew the agent's
/// heap by 31 MB on the main of 2026-12-05 (kept whole in the store); now
/// each is a names-only stub, and the heap grows by under 2 MB.
#[tokio::test]
async fn construction_foreign_objects_wearing_berths_label_cost_a_stub() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let Granted { ns, bw, grants, .. } = setup_granted("construct-mem").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    agent.wait_ready().await;
    create_runtime(&ns, "web", json!({"runtimeProfile": bw, "replicas": 1})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    let before = settled_heap(&agent).await;
    let api = Api::<ConfigMap>::namespaced(ns.client.clone(), &ns.name);
    // 800 kB of data that does not compress (so no store could shrink it).
    let blob = |i: usize| -> String {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ (i as u64);
        (0..800_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(b'a' + (state % 26) as u8)
            })
            .collect()
    };
    for i in 0..40 {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": format!("planted-{i}"),
                "labels": {"app.kubernetes.io/managed-by": "berth"}},
            "data": {"blob": blob(i)},
        }))
        .expect("configmap");
        api.create(&Default::default(), &cm).await.expect("create");
    }
    // Each was delivered by the label-filtered watch; give it time to be.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let after = settled_heap(&agent).await;
    let grown = (after - before) / 1e6;
    eprintln!(
        "agent heap {:.1} MB -> {:.1} MB with 40 foreign 800 kB ConfigMaps wearing berth's label: {grown:+.2} MB",
        before / 1e6,
        after / 1e6
    );
    assert!(
        grown < 2.0,
        "the agent's heap grew by {grown:.1} MB for 40 foreign ConfigMaps (32 MB of data)"
    );
    // And they are nobody's business but a finding's: the Runtime is as it was.
    wait_condition(&ns, "web", "Ready", "True", None).await;
}

/// The Runtime's ConfigMap, as stored.
fn config_maps(c: &Client, ns: &str) -> Api<DynamicObject> {
    stored::<k8s_openapi::api::core::v1::ConfigMap>(c, ns)
}

/// Whether `v` (an object as JSON) is controlled by the object with `uid`.
fn controlled_by(v: &Value, uid: &str) -> bool {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter()
                .any(|r| r["uid"] == json!(uid) && r["controller"] == json!(true))
        })
}

fn host_network(v: &Value) -> bool {
    v.pointer("/spec/template/spec/hostNetwork") == Some(&json!(true))
}

/// Issue 52, point 3: a dependency that is no longer the Runtime's own
/// never switches the contract off. Its owner reference removed, it is
/// taken back: berth's by name, labels and content (on the main of
/// 2026-12-05 it stayed someone else's).
#[tokio::test]
async fn construction_a_dependency_that_lost_its_owner_is_taken_back() {
    let Granted { ns, bw, grants, .. } = setup_granted("construct-dep").await;
    let _agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    let runtime = create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": bw, "replicas": 1, "config": {"env": {"MODE": "prod"}}}),
    )
    .await;
    let uid = runtime.metadata.uid.clone().expect("uid");
    wait_condition(&ns, "web", "Ready", "True", None).await;
    rolled_out(&ns.client, &ns.name, "web", 1).await;
    let c = &ns.client;
    let n = ns.name.as_str();
    let cms = config_maps(c, n);
    let intruder = PatchParams {
        field_manager: Some("intruder".to_string()),
        ..Default::default()
    };

    // Its owner reference removed: berth's by name, labels and content.
    cms.patch(
        "web-config",
        &intruder,
        &Patch::Merge(&json!({"metadata": {"ownerReferences": null}})),
    )
    .await
    .expect("owner reference removed");
    wait_for(
        "the ConfigMap taken back",
        Duration::from_secs(60),
        || async { controlled_by(&json_of(&cms, "web-config").await, &uid) },
    )
    .await;
    eprintln!("a ConfigMap whose owner reference was removed was taken back");
}

/// Issue 52, point 3, continued: replaced by other content, the
/// dependency is reported with the fix, and meanwhile the contract is still
/// enforced on the Deployment (on the main of 2026-12-05 the workloads
/// were then "left unchanged": a foreign `hostNetwork` stayed).
#[tokio::test]
async fn construction_a_replaced_dependency_is_reported_and_the_contract_holds() {
    let Granted { ns, bw, grants, .. } = setup_granted("construct-repl").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    let runtime = create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": bw, "replicas": 1, "config": {"env": {"MODE": "prod"}}}),
    )
    .await;
    let uid = runtime.metadata.uid.clone().expect("uid");
    wait_condition(&ns, "web", "Ready", "True", None).await;
    rolled_out(&ns.client, &ns.name, "web", 1).await;
    let c = &ns.client;
    let n = ns.name.as_str();
    let cms = config_maps(c, n);
    let intruder = PatchParams {
        field_manager: Some("intruder".to_string()),
        ..Default::default()
    };
    // Its owner reference removed and a key added: someone else's now.
    cms.patch(
        "web-config",
        &intruder,
        &Patch::Merge(&json!({"metadata": {"ownerReferences": null},
            "data": {"LD_PRELOAD": "/tmp/evil.so"}})),
    )
    .await
    .expect("replaced");
    let degraded = wait_condition(&ns, "web", "Degraded", "True", Some("DependencyNotOwned")).await;
    let message = crate::agent_support::condition(&degraded, "Degraded")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(
        message.contains("ConfigMap/web-config") && message.contains("delete it"),
        "the Runtime names the object and the fix: {message}"
    );
    assert!(
        !controlled_by(&json_of(&cms, "web-config").await, &uid),
        "other content is never taken back"
    );
    // Meanwhile the contract still holds on the Deployment.
    let deployments = stored::<Deployment>(c, n);
    undone(
        &agent,
        &deployments,
        "web",
        "deployments",
        "hostNetwork while the ConfigMap is someone else's",
        json!({"spec": {"template": {"spec": {"hostNetwork": true}}}}),
        host_network,
    )
    .await;

    // The fix the Runtime names: delete it, and berth recreates its own.
    cms.delete("web-config", &Default::default())
        .await
        .expect("delete");
    wait_condition(&ns, "web", "Degraded", "False", None).await;
    let back = json_of(&cms, "web-config").await;
    assert!(controlled_by(&back, &uid), "{back:#}");
    assert!(back.pointer("/data/LD_PRELOAD").is_none(), "{back:#}");
}

/// Issue 52, point 2: a Runtime held in deletion (a foreign finalizer)
/// keeps its protection and its identity until it is gone. On the main of
/// 2026-12-05 it was no longer reconciled: its NetworkPolicy, deleted by
/// someone else, was not recreated, and a second Runtime with the same
/// identity took the grant.
#[tokio::test]
async fn construction_a_runtime_held_in_deletion_keeps_protection_and_identity() {
    use berth_shared::api::Runtime;
    let Granted { ns, bw, grants, .. } = setup_granted("construct-del").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": bw, "replicas": 1,
            "networkPolicy": {"enabled": true, "ingress": [{"podLabels": {"role": "frontend"}}]}}),
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    rolled_out(&ns.client, &ns.name, "web", 1).await;
    let c = &ns.client;
    let n = ns.name.as_str();
    let runtimes: Api<Runtime> = Api::namespaced(c.clone(), n);
    runtimes
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"finalizers": ["example.com/hold"]}})),
        )
        .await
        .expect("finalizer");
    runtimes
        .delete("web", &Default::default())
        .await
        .expect("delete");
    wait_for(
        "the Runtime held in deletion",
        Duration::from_secs(30),
        || async {
            runtimes
                .get("web")
                .await
                .is_ok_and(|r| r.metadata.deletion_timestamp.is_some())
        },
    )
    .await;

    // Its protection: a deleted NetworkPolicy comes back, a foreign
    // hostNetwork goes.
    let policies = stored::<NetworkPolicy>(c, n);
    policies
        .delete("web", &Default::default())
        .await
        .expect("delete the NetworkPolicy");
    wait_for(
        "the NetworkPolicy recreated",
        Duration::from_secs(60),
        || async { policies.get_opt("web").await.ok().flatten().is_some() },
    )
    .await;
    let deployments = stored::<Deployment>(c, n);
    undone(
        &agent,
        &deployments,
        "web",
        "deployments",
        "hostNetwork while the Runtime is held in deletion",
        json!({"spec": {"template": {"spec": {"hostNetwork": true}}}}),
        host_network,
    )
    .await;

    // What holds it is named.
    let held = wait_condition(&ns, "web", "Blocked", "True", Some("Deleting")).await;
    let message = crate::agent_support::condition(&held, "Blocked")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(
        message.contains("`example.com/hold`"),
        "the foreign finalizer is named: {message}"
    );

    // Its identity: a copy is Blocked, naming it.
    create_runtime(&ns, "copy", json!({"runtimeProfile": bw, "replicas": 1})).await;
    let copy = wait_condition(&ns, "copy", "Blocked", "True", Some("IdentityTaken")).await;
    let message = crate::agent_support::condition(&copy, "Blocked")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(message.contains("/web"), "names the holder: {message}");

    // The finalizer removed: it goes, and the copy takes over.
    runtimes
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("finalizer removed");
    wait_condition(&ns, "copy", "Blocked", "False", None).await;
}
