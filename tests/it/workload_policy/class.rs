//! Who may set a granted RuntimeClass on a workload: only the agent; the
//! restricted user and an intruder ServiceAccount are refused it on every
//! kind, as are a resize, a change of ownership and a second class on the
//! granted handler.

use berth_tests::harness::restricted_client;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::Patch;
use serde_json::{Value, json};

use super::setup::*;
use crate::support::webhook::AGENT_USER;

/// The restricted user and an intruder ServiceAccount are refused the
/// granted class on every kind (create, and update that adds it); allowed
/// an ungranted class and no class; allowed everything in an exempt
/// namespace. The agent is allowed everywhere.
#[tokio::test]
async fn only_berth_sets_a_granted_runtime_class() {
    let s = setup().await;
    let (ns, granted, grant) = (&s.ns.name, s.granted.as_str(), s.grant.as_str());
    let restricted = restricted_client().await;
    let intruder = impersonating(
        &format!("system:serviceaccount:{ns}:intruder"),
        &[
            "system:serviceaccounts",
            &format!("system:serviceaccounts:{ns}"),
            "system:authenticated",
        ],
    )
    .await;
    let agent = impersonating(
        AGENT_USER,
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:berth-system",
            "system:authenticated",
        ],
    )
    .await;

    for kind in KINDS {
        let name = kind.to_lowercase();
        for (who, client) in [("restricted", &restricted), ("intruder", &intruder)] {
            // Refused for real (not a dry run): nothing is created.
            assert_refused(
                create(client, ns, &workload(kind, &name, Some(granted)), false).await,
                &format!("{who} creates a {kind} on the granted class"),
                granted,
                grant,
            );
            admitted(
                create(client, ns, &workload(kind, &name, Some(&s.ungranted)), true).await,
                &format!("{who} creates a {kind} on an ungranted class"),
            );
            admitted(
                create(client, ns, &workload(kind, &name, None), true).await,
                &format!("{who} creates a {kind} without a class"),
            );
            admitted(
                create(
                    client,
                    &s.exempt.name,
                    &workload(kind, &name, Some(granted)),
                    true,
                )
                .await,
                &format!("{who} creates a {kind} on the granted class in an exempt namespace"),
            );
        }
        admitted(
            create(&agent, ns, &workload(kind, &name, Some(granted)), true).await,
            &format!("the agent creates a {kind} on the granted class"),
        );
    }

    // UPDATE that adds the class: the restricted user's own Deployment,
    // created without a class, then with an ungranted one.
    admitted(
        create(&restricted, ns, &workload("Deployment", "own", None), false).await,
        "own Deployment",
    );
    let deployments: Api<Deployment> = Api::namespaced(restricted.clone(), ns);
    let set_class = |class: &str| {
        Patch::Merge(json!({"spec": {"template": {"spec": {"runtimeClassName": class}}}}))
    };
    let to_granted = deployments
        .patch("own", &patch_params(false), &set_class(granted))
        .await;
    assert_refused(
        to_granted,
        "restricted patches its Deployment to the granted class",
        granted,
        grant,
    );
    admitted(
        deployments
            .patch("own", &patch_params(false), &set_class(&s.ungranted))
            .await,
        "restricted patches its Deployment to an ungranted class",
    );
    let to_granted = deployments
        .patch("own", &patch_params(false), &set_class(granted))
        .await;
    assert_refused(
        to_granted,
        "restricted moves its Deployment to the granted class",
        granted,
        grant,
    );
    // CronJob: the class is two templates down.
    admitted(
        create(
            &restricted,
            ns,
            &workload("CronJob", "own-cron", None),
            false,
        )
        .await,
        "own CronJob",
    );
    let crons: Api<CronJob> = Api::namespaced(restricted.clone(), ns);
    let r = crons
        .patch(
            "own-cron",
            &patch_params(false),
            &Patch::Merge(json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"runtimeClassName": granted}}}}}})),
        )
        .await;
    assert_refused(
        r,
        "restricted patches its CronJob to the granted class",
        granted,
        grant,
    );
    s.cleanup().await;
}

/// Issue 52, item 6: the paths around the class the policy left open,
/// each played by the restricted user (and, for a RuntimeClass, by a
/// cluster-admin) on the legacy workload's pod and ReplicaSet, which run on
/// the granted class: an in-place resize (`pods/resize`), removing the
/// owner references (the pod or ReplicaSet leaves its owner and keeps
/// running on the class, unseen by it), changing their labels (leaving
/// the selector, joining another), and a second RuntimeClass on the
/// granted class's handler under another name (its pods would run in the
/// granted sandbox without naming the granted class). On the main of
/// 2026-12-05 every one of them was admitted. Metadata other than labels
/// and owners (an annotation) still is.
#[tokio::test]
async fn resize_ownership_and_a_second_class_on_the_handler_are_refused() {
    use k8s_openapi::api::node::v1::RuntimeClass;
    use kube::api::PostParams;

    let s = setup().await;
    let (ns, granted) = (&s.ns.name, s.granted.as_str());
    let restricted = restricted_client().await;
    let pods = wait_pods(&s.ns, "legacy", granted, 1).await;
    let pod = pods[0].metadata.name.clone().expect("pod name");
    let rs = pods[0]
        .metadata
        .owner_references
        .as_ref()
        .and_then(|o| o.first())
        .map(|o| o.name.clone())
        .expect("the pod's ReplicaSet");
    let pod_api = Api::<Pod>::namespaced(restricted.clone(), ns);
    let rs_api = Api::<ReplicaSet>::namespaced(restricted.clone(), ns);
    let merge = |v: Value| Patch::Merge(v);

    // (what, result, what the refusal says)
    let mut played: Vec<(&str, Result<(), kube::Error>, String)> = Vec::new();
    played.push((
        "restricted resizes a pod on the class (pods/resize)",
        pod_api
            .patch_subresource(
                "resize",
                &pod,
                &patch_params(true),
                &Patch::Strategic(json!({"spec": {"containers": [
                    {"name": "c", "resources": {"limits": {"cpu": "300m"}}}]}})),
            )
            .await
            .map(|_| ()),
        "may not change the pod spec of a Pod".into(),
    ));
    let ownership = "may not change the owner references or labels of a";
    played.push((
        "restricted removes the pod's owner reference",
        pod_api
            .patch(
                &pod,
                &patch_params(true),
                &merge(json!({"metadata": {"ownerReferences": null}})),
            )
            .await
            .map(|_| ()),
        format!("{ownership} Pod"),
    ));
    played.push((
        "restricted relabels the pod (leaves its ReplicaSet's selector)",
        pod_api
            .patch(
                &pod,
                &patch_params(true),
                &merge(json!({"metadata": {"labels": {"app": "elsewhere"}}})),
            )
            .await
            .map(|_| ()),
        format!("{ownership} Pod"),
    ));
    played.push((
        "restricted removes the ReplicaSet's owner reference",
        rs_api
            .patch(
                &rs,
                &patch_params(true),
                &merge(json!({"metadata": {"ownerReferences": null}})),
            )
            .await
            .map(|_| ()),
        format!("{ownership} ReplicaSet"),
    ));
    played.push((
        "restricted adds a label to the ReplicaSet",
        rs_api
            .patch(
                &rs,
                &patch_params(true),
                &merge(json!({"metadata": {"labels": {"pod-template-hash": "forged"}}})),
            )
            .await
            .map(|_| ()),
        format!("{ownership} ReplicaSet"),
    ));
    let twin = format!("{}-twin", s.id);
    let class: RuntimeClass =
        serde_json::from_value(json!({"metadata": {"name": twin}, "handler": s.handler}))
            .expect("class");
    played.push((
        "a cluster-admin creates a second RuntimeClass on the granted handler",
        Api::<RuntimeClass>::all(s.ns.client.clone())
            .create(
                &PostParams {
                    dry_run: true,
                    ..Default::default()
                },
                &class,
            )
            .await
            .map(|_| ()),
        format!(
            "RuntimeClass {twin} names handler {}, which RuntimeClass {granted} is granted through berth for (RuntimeGrant {})",
            s.handler, s.grant
        ),
    ));

    let mut through = Vec::new();
    for (what, result, says) in played {
        if result.is_ok() {
            through.push(what);
            continue;
        }
        assert_refused_saying(result, what, &says);
    }
    eprintln!("admitted: {through:#?}");
    assert!(through.is_empty(), "admitted: {through:#?}");

    // Still admitted: an annotation on the pod and the ReplicaSet; a
    // RuntimeClass on another handler.
    admitted(
        pod_api
            .patch(
                &pod,
                &patch_params(true),
                &merge(json!({"metadata": {"annotations": {"note": "x"}}})),
            )
            .await,
        "restricted annotates the pod",
    );
    admitted(
        rs_api
            .patch(
                &rs,
                &patch_params(true),
                &merge(json!({"metadata": {"annotations": {"note": "x"}}})),
            )
            .await,
        "restricted annotates the ReplicaSet",
    );
    let other: RuntimeClass = serde_json::from_value(
        json!({"metadata": {"name": twin}, "handler": format!("{}-other", s.handler)}),
    )
    .expect("class");
    admitted(
        Api::<RuntimeClass>::all(s.ns.client.clone())
            .create(
                &PostParams {
                    dry_run: true,
                    ..Default::default()
                },
                &other,
            )
            .await,
        "a RuntimeClass on another handler",
    );
    s.cleanup().await;
}
