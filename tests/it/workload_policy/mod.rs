//! The shipped workload RuntimeClass policy
//! (`assets/admission/workload-runtimeclass-policy.yaml`): a class that a
//! RuntimeGrant names is set only by the agent, or by the built-in
//! controllers for an owner that was itself checked. The adversaries are a
//! restricted user and a ServiceAccount of their own, both with full RBAC
//! on every workload kind: only the policy stops them.
//!
//! No agent runs in this test: the policy is enforced by the API server, so
//! it holds while the agent is down. The policy and binding are the shipped
//! ones, renamed, with the binding narrowed to this test's namespaces and
//! RuntimeGrants (parallel tests never see it), and with the local
//! cluster's controller-manager identity added to the controllers (it runs
//! with one credential, the admin certificate: tests/localcluster).

mod jobs;
mod setup;

use berth_tests::harness::{self, cluster, restricted_client};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, Patch};
use serde_json::{Value, json};

use self::setup::*;
use crate::support::webhook::{AGENT_USER, refusal};

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

/// A Deployment the agent creates on the granted class really gets its
/// ReplicaSet and Pods from the controllers under the policy; nobody can
/// borrow that owner chain: a Pod naming the agent's ReplicaSet as its
/// owner, or a Job naming its CronJob, is refused for the restricted user,
/// and a Pod naming no owner even for the controller-manager's identity.
/// Its pods take no ephemeral container; the Deployment can be scaled
/// (more pods, from the controllers) but its pod spec is not changed.
#[tokio::test]
async fn controllers_create_the_pods_of_berth_workloads() {
    let s = setup().await;
    let (ns, granted, grant) = (&s.ns.name, s.granted.as_str(), s.grant.as_str());
    let agent = impersonating(
        AGENT_USER,
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:berth-system",
            "system:authenticated",
        ],
    )
    .await;
    let mut web = workload("Deployment", "web", Some(granted));
    web.data["spec"]["replicas"] = json!(2);
    web.metadata.labels = Some(
        [
            ("app".to_string(), "web".to_string()),
            (
                "app.kubernetes.io/managed-by".to_string(),
                "berth".to_string(),
            ),
        ]
        .into(),
    );
    admitted(
        create(&agent, ns, &web, false).await,
        "the agent creates web",
    );
    let pods = wait_pods(&s.ns, "web", granted, 2).await;
    let rs_name = pods[0]
        .metadata
        .owner_references
        .as_ref()
        .and_then(|o| o.first())
        .map(|o| o.name.clone())
        .expect("the pod's ReplicaSet");
    let rs = Api::<ReplicaSet>::namespaced(s.ns.client.clone(), ns)
        .get(&rs_name)
        .await
        .expect("ReplicaSet");
    let rs_uid = rs.metadata.uid.clone().expect("uid");

    // A forged owner chain: the restricted user's Pod claims the agent's
    // ReplicaSet as controller.
    let mut forged = workload("Pod", "forged", Some(granted));
    forged.metadata.owner_references = Some(vec![
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name, "uid": rs_uid,
            "controller": true
        }))
        .expect("ownerReference"),
    ]);
    let restricted = restricted_client().await;
    assert_refused(
        create(&restricted, ns, &forged, false).await,
        "restricted creates a Pod owned by the agent's ReplicaSet",
        granted,
        grant,
    );
    // `kubectl debug` on one of berth's pods: an ephemeral container with
    // any image would run in the granted sandbox.
    let pod_name = pods[0].metadata.name.clone().expect("pod name");
    let (code, msg) = refusal(
        Api::<Pod>::namespaced(restricted.clone(), ns)
            .patch_subresource(
                "ephemeralcontainers",
                &pod_name,
                &patch_params(false),
                &Patch::Strategic(json!({"spec": {"ephemeralContainers": [
                    {"name": "debugger", "image": "registry.invalid/it/evil:1"}]}})),
            )
            .await,
        "restricted adds an ephemeral container to a pod of web",
    );
    assert_eq!(code, 403, "{msg}");
    assert!(
        msg.contains("may not change the pod spec of a Pod"),
        "{msg}"
    );
    // The same for a Job claiming a CronJob of the agent's (what `kubectl
    // create job --from=cronjob/…` sends).
    let mut cron = workload("CronJob", "nightly", Some(granted));
    cron.data["spec"]["suspend"] = json!(true);
    let cron = admitted(
        create(&agent, ns, &cron, false).await,
        "the agent creates a CronJob",
    );
    let mut job = workload("Job", "nightly-manual", Some(granted));
    job.metadata.owner_references = Some(vec![
        serde_json::from_value(json!({
            "apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly",
            "uid": cron.metadata.uid.clone().expect("uid"), "controller": true
        }))
        .expect("ownerReference"),
    ]);
    assert_refused(
        create(&restricted, ns, &job, false).await,
        "restricted creates a Job from the agent's CronJob",
        granted,
        grant,
    );
    // The restricted user scales the berth Deployment: allowed (the class
    // is unchanged; the agent owns the replica count, not this policy),
    // and the controllers create the new pod.
    admitted(
        Api::<Deployment>::namespaced(restricted.clone(), ns)
            .patch(
                "web",
                &patch_params(false),
                &Patch::Merge(json!({"spec": {"replicas": 3}})),
            )
            .await,
        "restricted scales web",
    );
    wait_pods(&s.ns, "web", granted, 3).await;
    // ... but may not change the pod spec berth rendered (no drift window
    // on the class while the agent is down).
    let (code, msg) = refusal(
        Api::<Deployment>::namespaced(restricted.clone(), ns)
            .patch(
                "web",
                &patch_params(false),
                &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                    {"name": "c", "image": "registry.invalid/it/evil:1"}]}}}})),
            )
            .await,
        "restricted changes web's image",
    );
    assert_eq!(code, 403, "{msg}");
    assert!(
        msg.contains("may not change the pod spec of a Deployment"),
        "{msg}"
    );
    // The controller-manager's identity (here the admin's) without an
    // owner: not a controller acting for anything.
    assert_refused(
        create(
            &s.ns.client,
            ns,
            &workload("Pod", "bare", Some(granted)),
            true,
        )
        .await,
        "the controller identity creates a bare Pod on the granted class",
        granted,
        grant,
    );
    s.cleanup().await;
}

/// A workload that predates the policy keeps running: the restricted user
/// may scale it and change its metadata and its template's (the
/// controllers create its pods), but not its pod spec nor its pods'; may
/// move it off the class but not back, and may delete it; `berth get
/// retained` shows it as running outside berth.
#[tokio::test]
async fn a_workload_that_predates_the_policy_keeps_running_outside_berth() {
    let s = setup().await;
    let (ns, granted, grant) = (&s.ns.name, s.granted.as_str(), s.grant.as_str());
    let restricted = restricted_client().await;
    let deployments: Api<Deployment> = Api::namespaced(restricted.clone(), ns);

    admitted(
        deployments
            .patch_scale(
                "legacy",
                &patch_params(false),
                &Patch::Merge(json!({"spec": {"replicas": 2}})),
            )
            .await,
        "restricted scales the legacy Deployment",
    );
    let legacy_pods = wait_pods(&s.ns, "legacy", granted, 2).await;
    let pods = Api::<Pod>::namespaced(restricted.clone(), ns);
    let legacy_pod = legacy_pods[0].metadata.name.clone().expect("name");
    let (code, msg) = refusal(
        pods.patch(
            &legacy_pod,
            &patch_params(false),
            &Patch::Strategic(json!({"spec": {"containers": [
                {"name": "c", "image": "registry.invalid/it/evil:1"}]}})),
        )
        .await,
        "restricted changes the image of a legacy pod",
    );
    assert_eq!(code, 403, "{msg}");
    assert!(
        msg.contains("may not change the pod spec of a Pod"),
        "{msg}"
    );
    admitted(
        deployments
            .patch(
                "legacy",
                &patch_params(false),
                &Patch::Merge(json!({"metadata": {"labels": {"team": "old"}},
                    "spec": {"template": {"metadata": {"annotations": {"rev": "2"}}}}})),
            )
            .await,
        "restricted changes the legacy Deployment, keeping its class",
    );
    // Its pod spec is another matter: a new image on the granted class is
    // refused like a new workload, for its own pods too.
    let (code, msg) = refusal(
        deployments
            .patch(
                "legacy",
                &patch_params(false),
                &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                    {"name": "c", "image": "registry.invalid/it/evil:1"}]}}}})),
            )
            .await,
        "restricted changes the legacy Deployment's image",
    );
    assert_eq!(code, 403, "{msg}");
    assert!(
        msg.contains(&format!(
            "RuntimeClass {granted} is granted through berth (RuntimeGrant {grant}): berth-restricted may not change the pod spec of a Deployment"
        )),
        "{msg}"
    );

    // The console's Retained view marks it.
    let bin = tokio::task::spawn_blocking(|| {
        harness::workspace_binary("berth-console", "berth", "BERTH_BIN")
    })
    .await
    .expect("build");
    let kubeconfig = tokio::task::spawn_blocking(|| cluster().kubeconfig.clone())
        .await
        .expect("cluster");
    let out = tokio::process::Command::new(bin)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["-n", ns, "get", "retained", "-o", "json"])
        .output()
        .await
        .expect("run berth");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&stdout).expect("JSON");
    let row = doc["items"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .find(|r| r["kind"] == "Deployment" && r["name"] == "legacy")
        })
        .unwrap_or_else(|| panic!("legacy in {stdout}"));
    assert_eq!(
        row["reason"],
        json!(format!("outside berth, bypasses grant {grant}")),
        "{row}"
    );
    assert_eq!(row["managedByBerth"], json!(false), "{row}");

    // Off the class, and not back.
    let set_class = |class: &str| {
        Patch::Merge(json!({"spec": {"template": {"spec": {"runtimeClassName": class}}}}))
    };
    admitted(
        deployments
            .patch("legacy", &patch_params(true), &set_class(&s.ungranted))
            .await,
        "restricted moves legacy to an ungranted class",
    );
    admitted(
        deployments
            .patch("legacy", &patch_params(false), &set_class(&s.ungranted))
            .await,
        "restricted moves legacy to an ungranted class",
    );
    let back = deployments
        .patch("legacy", &patch_params(false), &set_class(granted))
        .await;
    assert_refused(
        back,
        "restricted moves legacy back to the granted class",
        granted,
        grant,
    );
    admitted(
        deployments.delete("legacy", &DeleteParams::default()).await,
        "restricted deletes legacy",
    );
    s.cleanup().await;
}

/// The real agent reconciling a granted Runtime under the shipped policy:
/// its Deployment and CronJob are admitted, the controllers create the
/// ReplicaSet and pods on the granted class, and the Runtime is Ready;
/// meanwhile the restricted user is refused the class in that namespace.
/// Then the agent stops, and the policy still refuses. (The test agent
/// runs with the admin certificate, so the policy's agent user is set to
/// that user here; the other tests use the shipped agent user.)
#[tokio::test]
async fn a_granted_runtime_rolls_out_under_the_policy_and_it_holds_with_the_agent_down() {
    use crate::agent_support::{create_runtime, server_pods, wait_condition};

    let s = UnderPolicy::start("wlp-agent").await;
    let (ns, class, bw, restricted) = (&s.ns, &s.class, &s.grant, &s.restricted);
    let admin = ns.client.clone();

    create_runtime(
        ns,
        "web",
        json!({"runtimeProfile": bw,
               "schedules": [{"name": "nightly", "schedule": "0 3 * * *"}]}),
    )
    .await;
    wait_condition(ns, "web", "Ready", "True", None).await;
    let pods = harness::wait_for_value("web's pods on the granted class", WAIT, || {
        let ns = ns.clone();
        let class = class.clone();
        async move {
            let pods = server_pods(&ns, "web").await;
            (pods.len() == 2
                && pods.iter().all(|p| {
                    p.spec
                        .as_ref()
                        .and_then(|s| s.runtime_class_name.as_deref())
                        == Some(class.as_str())
                }))
            .then_some(pods)
        }
    })
    .await;
    assert!(pods.iter().all(|p| p.metadata.owner_references.is_some()));
    let cron = Api::<CronJob>::namespaced(admin.clone(), &ns.name)
        .get("web-cron-nightly")
        .await
        .expect("the agent's CronJob");
    assert_eq!(
        cron.spec
            .and_then(|s| s.job_template.spec)
            .and_then(|s| s.template.spec)
            .and_then(|s| s.runtime_class_name),
        Some(class.clone())
    );
    assert_refused(
        create(
            restricted,
            &ns.name,
            &workload("Pod", "copy", Some(class)),
            false,
        )
        .await,
        "restricted creates a Pod on the class with the agent running",
        class,
        bw,
    );

    drop(s.agent);
    assert!(
        policy_refuses(restricted, &ns.name, class).await,
        "the policy still refuses with the agent down"
    );
    assert_refused(
        create(
            restricted,
            &ns.name,
            &workload("Job", "copy", Some(class)),
            false,
        )
        .await,
        "restricted creates a Job on the class with the agent down",
        class,
        bw,
    );
    remove_policy(&admin, &s.id).await;
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
        match result {
            Ok(()) => through.push(what),
            Err(kube::Error::Api(e)) => {
                assert_eq!(e.code, 403, "{what}: {e:?}");
                assert!(e.message.contains(&says), "{what}: {}", e.message);
            }
            Err(e) => panic!("{what}: {e}"),
        }
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
