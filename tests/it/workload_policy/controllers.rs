//! The built-in controllers under the policy: they create the Pods of
//! berth's workloads, and a workload that predates the policy keeps
//! running outside berth.

use berth_tests::harness::{self, cluster, restricted_client};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, Patch};
use serde_json::{Value, json};

use super::setup::*;
use crate::support::webhook::AGENT_USER;

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
    assert_refused_saying(
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
        "may not change the pod spec of a Pod",
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
    assert_refused_saying(
        Api::<Deployment>::namespaced(restricted.clone(), ns)
            .patch(
                "web",
                &patch_params(false),
                &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                    {"name": "c", "image": "registry.invalid/it/evil:1"}]}}}})),
            )
            .await,
        "restricted changes web's image",
        "may not change the pod spec of a Deployment",
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
    assert_refused_saying(
        pods.patch(
            &legacy_pod,
            &patch_params(false),
            &Patch::Strategic(json!({"spec": {"containers": [
                {"name": "c", "image": "registry.invalid/it/evil:1"}]}})),
        )
        .await,
        "restricted changes the image of a legacy pod",
        "may not change the pod spec of a Pod",
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
    assert_refused_saying(
        deployments
            .patch(
                "legacy",
                &patch_params(false),
                &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                    {"name": "c", "image": "registry.invalid/it/evil:1"}]}}}})),
            )
            .await,
        "restricted changes the legacy Deployment's image",
        &format!(
            "RuntimeClass {granted} is granted through berth (RuntimeGrant {grant}): berth-restricted may not change the pod spec of a Deployment"
        ),
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
