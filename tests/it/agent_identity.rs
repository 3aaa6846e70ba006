//! One Runtime per identity (issue 13 point 4): a copy of a Runtime — the
//! same application and service in the same namespace, or in another
//! namespace with the same project/environment labels — must not inherit
//! its grant. With the webhook on, the copy is refused naming the holder;
//! without it, the agent Blocks the younger one and unblocks it when the
//! holder is deleted.

use berth_shared::api::Runtime;
use berth_tests::harness::create_runtime_class;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, Granted, condition, create_runtime, setup_granted, wait_condition,
};
use crate::support::webhook::{
    Webhook, WebhookOptions, delete_classes, dry_run, grants_file, namespace, refusal, runtime,
    runtime_for, runtimes, unique,
};

#[tokio::test]
async fn agent_identity_webhook_refuses_copies_naming_the_holder() {
    let id = unique("ident");
    // Two namespaces with the same project/environment labels, both
    // reviewed by this test's webhook.
    let first = namespace("id-first", &id, true).await;
    let second = namespace("id-second", &id, true).await;
    let client = first.client.clone();
    let class = format!("{id}-bounded");
    create_runtime_class(&client, &class, "bounded-runc").await;
    let grants = grants_file(&id, &[("bounded-worker", &class, "bounded-runc")]);
    let hook = Webhook::start(&client, &first.name, &WebhookOptions::new(&id, &grants)).await;
    let here = runtimes(&client, &first.name);
    let there = runtimes(&client, &second.name);
    let holder = format!("{}/web", first.name);

    here.create(
        &PostParams::default(),
        &runtime("web", Some("bounded-worker"), false),
    )
    .await
    .expect("the first Runtime of the identity is admitted");

    // A copy in the same namespace, in the other namespace, with or
    // without the profile, and as a dry-run: all refused, naming the holder.
    let attempts = [
        (
            "same namespace",
            &here,
            runtime("copy", Some("bounded-worker"), false),
            PostParams::default(),
        ),
        (
            "other namespace",
            &there,
            runtime("copy", Some("bounded-worker"), false),
            PostParams::default(),
        ),
        (
            "without a profile",
            &there,
            runtime("plain", None, false),
            PostParams::default(),
        ),
        (
            "dry-run",
            &there,
            runtime("dry", Some("bounded-worker"), false),
            dry_run(),
        ),
    ];
    for (what, api, rt, pp) in attempts {
        let (code, msg) = refusal(api.create(&pp, &rt).await, what);
        assert_eq!(code, 403, "{what}: {msg}");
        assert!(msg.contains("IdentityTaken"), "{what}: {msg}");
        assert!(
            msg.contains(&format!("Runtime {holder} already holds")),
            "{what}: {msg}"
        );
        assert!(
            msg.contains(
                "project=demo environment=production application=analytics service=worker"
            ),
            "{what}: {msg}"
        );
    }
    assert!(there.get_opt("copy").await.expect("get").is_none());
    assert!(here.get_opt("copy").await.expect("get").is_none());

    // Another service of the application is another identity.
    there
        .create(
            &PostParams::default(),
            &runtime_for("api", "api", None, false),
        )
        .await
        .expect("another service is admitted");
    // The holder itself may still change.
    here.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await
    .expect("the holder's own update is admitted");

    // Once the holder is gone, the identity is free again.
    here.delete("web", &DeleteParams::default())
        .await
        .expect("delete the holder");
    there
        .create(
            &PostParams::default(),
            &runtime("copy", Some("bounded-worker"), false),
        )
        .await
        .unwrap_or_else(|e| panic!("the freed identity is admitted: {e}\n{}", hook.log_text()));

    hook.remove(&client).await;
    delete_classes(&client, &[&class]).await;
}

#[tokio::test]
async fn agent_identity_blocks_the_younger_copy_until_the_holder_goes() {
    let Granted { ns, bw, grants, .. } = setup_granted("agent-ident").await;
    // A resync far beyond every wait below: the younger copy must be woken
    // by the holder's deletion itself, not by the periodic resync.
    let mut opts = AgentOpts::new(&ns.name, Some(&grants));
    opts.resync_seconds = 3600;
    let _agent = Agent::start(opts).await;

    create_runtime(&ns, "older", json!({"runtimeProfile": bw, "replicas": 1})).await;
    wait_condition(&ns, "older", "Ready", "True", None).await;
    create_runtime(&ns, "younger", json!({"runtimeProfile": bw, "replicas": 1})).await;

    let younger = wait_condition(&ns, "younger", "Blocked", "True", Some("IdentityTaken")).await;
    let blocked = condition(&younger, "Blocked").expect("Blocked");
    assert!(
        blocked
            .message
            .contains(&format!("Runtime {}/older already holds", ns.name)),
        "{}",
        blocked.message
    );
    // Not Ready, and not granted either: the copy does not inherit the
    // holder's grant.
    for type_ in ["Ready", "ProfileGranted"] {
        let c = condition(&younger, type_).expect("condition");
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "IdentityTaken"),
            "younger {type_}"
        );
    }
    // Blocked: nothing was created for the copy, so it runs nothing with
    // the grant.
    let deployments: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    assert!(
        deployments
            .get_opt(&berth_shared::render::Names::for_runtime("younger").workload)
            .await
            .expect("get")
            .is_none(),
        "a Deployment was created for the blocked copy"
    );
    // The holder keeps its grant.
    let runtimes: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    let older = runtimes.get("older").await.expect("older");
    for (type_, status) in [
        ("Ready", "True"),
        ("Blocked", "False"),
        ("ProfileGranted", "True"),
    ] {
        let c = condition(&older, type_).expect("condition");
        assert_eq!(c.status, status, "older {type_}: {c:?}");
    }

    // Deleting the holder hands the identity to the younger one.
    runtimes
        .delete("older", &DeleteParams::default())
        .await
        .expect("delete older");
    wait_condition(&ns, "younger", "Blocked", "False", None).await;
    wait_condition(&ns, "younger", "Ready", "True", None).await;
}
