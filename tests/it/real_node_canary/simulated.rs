//! A kwok node reporting the handler: simulated, it runs nothing, and it is
//! never verified, even with a canary Job for it that kwok "completes".

use std::time::Duration;

use berth_shared::api::AttestationState;
use berth_tests::harness::wait_for;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

use super::{PERIOD, attestation, canary_agent, class, grants, handler_nodes, node_state, within};
use crate::real_node::{NODE, WAIT, agent_opts, namespace, real};

#[tokio::test]
async fn real_node_canary_never_verifies_a_simulated_node() {
    let Some((cluster, info)) = real().await else {
        return;
    };
    let _shared = NODE.read().await;
    let ns = namespace(cluster, "canary-kwok").await;
    let runc = class(&ns, "runc", "runc", json!({})).await;
    let file = grants(&ns, &[("plain", runc.as_str(), "runc")]);
    let alias = format!("{}-plain", ns.name);
    // A kwok node beside the real one, reporting runc.
    let kwok = format!("{}-kwok", ns.name);
    berth_tests::localcluster::nodes::create(
        &ns.client,
        &[berth_tests::localcluster::nodes::NodeSpec {
            name: kwok.clone(),
            handlers: vec!["runc".into()],
        }],
    )
    .await
    .expect("kwok node");
    let canaried = canary_agent(cluster, &ns, &file, PERIOD).await;
    node_state(
        &ns,
        &alias,
        &info.nodes[0].name,
        AttestationState::Verified,
        None,
        within(PERIOD),
    )
    .await;
    let sim = node_state(
        &ns,
        &alias,
        &kwok,
        AttestationState::Unverified,
        Some("Skipped"),
        within(PERIOD),
    )
    .await;
    assert!(sim.message.contains("simulated node (kwok)"), "{sim:?}");

    // An adversary plants a canary Job for the kwok node, with the agent's
    // own labels and the current subject; kwok's pod-complete stage
    // "completes" it. The node is still unverified.
    let a = attestation(&ns, &alias).await.expect("attestation");
    let classes: Vec<RuntimeClass> = vec![
        Api::<RuntimeClass>::all(ns.client.clone())
            .get(&runc)
            .await
            .expect("class"),
    ];
    let c = berth_shared::attest::CanaryClass::from_runtime_class(&classes[0]);
    let node = berth_shared::attest::CanaryNode::from_node(
        &Api::<Node>::all(ns.client.clone())
            .get(&kwok)
            .await
            .expect("node"),
    );
    let image = agent_opts(cluster, &ns, &file).canary_image.expect("image");
    let subject = berth_shared::attest::job::subject(&c, &node, &image);
    let name = berth_shared::attest::job::job_name(&c.name, &kwok, 1);
    let planted = berth_shared::attest::render(&berth_shared::attest::CanaryJob {
        name: &name,
        namespace: &ns.name,
        class: &c,
        node: &node,
        image: &image,
        subject: &subject,
        ttl_seconds: 3600,
        deadline_seconds: 30,
    });
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(ns.client.clone(), &ns.name);
    jobs.create(&PostParams::default(), &planted)
        .await
        .expect("planted job");
    wait_for("kwok completes the planted canary", WAIT, || {
        let (jobs, name) = (jobs.clone(), name.clone());
        async move {
            jobs.get(&name).await.ok().is_some_and(|j| {
                berth_shared::attest::CanaryRecord::from_job(&j).is_some_and(|r| {
                    matches!(r.outcome, berth_shared::attest::Outcome::Passed { .. })
                })
            })
        }
    })
    .await;
    // Two looks of the agent later, still unverified.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let after = attestation(&ns, &alias).await.expect("attestation");
    let n = after.node(&kwok).expect("kwok listed");
    assert_eq!(
        (n.state, n.reason.as_str()),
        (AttestationState::Unverified, "Skipped"),
        "{after:?}"
    );
    assert_eq!(
        (after.verified, after.unverified),
        (1, 1),
        "{after:?} (before: {a:?})"
    );
    let metrics = canaried.agent.metrics().await;
    assert_eq!(handler_nodes(&metrics, &runc, "unverified"), 1.0);
    assert_eq!(handler_nodes(&metrics, &runc, "verified"), 1.0);
    canaried.stop(&ns).await;
    let _ = Api::<Node>::all(ns.client.clone())
        .delete(&kwok, &Default::default())
        .await;
}
