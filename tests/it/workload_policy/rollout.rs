//! A granted Runtime rolls out with the agent under the policy, and the
//! policy holds with the agent down.

use berth_tests::harness::{self};
use k8s_openapi::api::batch::v1::CronJob;
use kube::Api;
use serde_json::json;

use super::setup::*;

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
