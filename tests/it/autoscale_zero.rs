//! Issue 27, point 5, on the real control plane: a Deployment another field
//! manager scales to 0 under an enabled autoscaler (which does nothing at
//! 0) comes back to minReplicas in one write, while a count inside the
//! autoscaler's range is left alone (no write).

use std::time::Duration;

use berth_tests::harness::wait_for;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, Granted, create_runtime, setup_granted, wait_condition, wait_reconciles,
};
use crate::contract_adversary::{agent_writes_to, rolled_out};

#[tokio::test]
async fn autoscale_zero_deployment_scaled_to_zero_comes_back_to_min() {
    let Granted { ns, bw, grants, .. } = setup_granted("contract-zero").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": bw,
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            "autoscaling": {"enabled": true, "minReplicas": 2, "maxReplicas": 4}}),
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    rolled_out(&ns.client, &ns.name, "web", 2).await;
    let deployments: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    let intruder = PatchParams {
        field_manager: Some("intruder".to_string()),
        ..Default::default()
    };
    let replicas = |d: &Deployment| d.spec.as_ref().and_then(|s| s.replicas);

    // Scaled to 0 by someone else: the autoscaler does nothing at 0, the
    // agent raises it to minReplicas in one write.
    let before = agent.metrics().await;
    let scaled = deployments
        .patch(
            "web",
            &intruder,
            &Patch::Merge(&json!({"spec": {"replicas": 0}})),
        )
        .await
        .expect("scale to 0");
    assert_eq!(replicas(&scaled), Some(0));
    wait_for(
        "the Deployment back at minReplicas",
        Duration::from_secs(60),
        || {
            let deployments = deployments.clone();
            async move { replicas(&deployments.get("web").await.expect("get")) == Some(2) }
        },
    )
    .await;
    wait_reconciles(&agent, 3.0).await;
    let after = agent.metrics().await;
    assert_eq!(
        agent_writes_to(&after, "deployments") - agent_writes_to(&before, "deployments"),
        1.0,
        "raised in one write; log:\n{}",
        agent.log_text()
    );

    // A count inside the autoscaler's range is the autoscaler's: the agent
    // leaves it and writes nothing.
    deployments
        .patch(
            "web",
            &intruder,
            &Patch::Merge(&json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scale to 3");
    rolled_out(&ns.client, &ns.name, "web", 3).await;
    let before = agent.metrics().await;
    wait_reconciles(&agent, 5.0).await;
    let after = agent.metrics().await;
    assert_eq!(
        replicas(&deployments.get("web").await.expect("get")),
        Some(3)
    );
    assert_eq!(
        agent_writes_to(&after, "deployments") - agent_writes_to(&before, "deployments"),
        0.0,
        "no write against the autoscaler's count; log:\n{}",
        agent.log_text()
    );
}
