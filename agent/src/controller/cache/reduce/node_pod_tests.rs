//! What the Node and Pod caches keep ([`node`], [`bare_pods_only`],
//! [`unwatched_store`]).

use super::tests::{busy_meta, controller, map};
use super::*;
use berth_shared::analysis::NodeInfo;
use k8s_openapi::api::core::v1::{ContainerImage, NodeRuntimeHandler, Taint};

#[test]
fn nodes_keep_what_placement_and_coverage_read() {
    let n = Node {
        metadata: ObjectMeta {
            name: Some("n1".into()),
            labels: map(&[("zone", "a")]),
            annotations: map(&[("node.alpha.kubernetes.io/ttl", "0")]),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            unschedulable: Some(true),
            taints: Some(vec![Taint {
                key: "gpu".into(),
                effect: "NoSchedule".into(),
                ..Default::default()
            }]),
            pod_cidr: Some("10.0.0.0/24".into()),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            conditions: Some(vec![
                NodeCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    message: Some("kubelet is posting ready status".into()),
                    ..Default::default()
                },
                NodeCondition {
                    type_: "MemoryPressure".into(),
                    status: "False".into(),
                    ..Default::default()
                },
            ]),
            runtime_handlers: Some(vec![NodeRuntimeHandler {
                name: Some("runsc".into()),
                ..Default::default()
            }]),
            images: Some(vec![ContainerImage {
                names: Some(vec!["registry/big:1".into()]),
                size_bytes: Some(1 << 30),
            }]),
            ..Default::default()
        }),
    };
    let mut reduced = n.clone();
    node(&mut reduced);
    assert_eq!(NodeInfo::from_node(&reduced), NodeInfo::from_node(&n));
    let status = reduced.status.expect("status");
    assert!(status.images.is_none());
    // Ready, and the pressure conditions a canary is skipped for (type and
    // status only: no heartbeat).
    let conditions = status.conditions.expect("conditions");
    assert_eq!(conditions.len(), 2);
    assert!(conditions.iter().all(|c| c.message.is_none()));
    assert!(reduced.metadata.annotations.is_none());
    // What the canaries read survives: the kernel, kwok's annotation.
    let mut kwok = n.clone();
    kwok.metadata.annotations = map(&[("kwok.x-k8s.io/node", "fake"), ("other", "x")]);
    kwok.status.as_mut().expect("status").node_info =
        Some(k8s_openapi::api::core::v1::NodeSystemInfo {
            kernel_version: "6.1.0".into(),
            os_image: "Debian".into(),
            ..Default::default()
        });
    let before = berth_shared::attest::CanaryNode::from_node(&kwok);
    node(&mut kwok);
    assert_eq!(berth_shared::attest::CanaryNode::from_node(&kwok), before);
    assert!(before.simulated && before.kernel.as_deref() == Some("6.1.0"));
    assert_eq!(kwok.metadata.annotations.map(|a| a.len()), Some(1));
}

#[test]
fn only_bare_pods_enter_the_pod_cache() {
    let bare = Pod {
        metadata: busy_meta(None),
        ..Default::default()
    };
    let owned = Pod {
        metadata: busy_meta(controller("apps/v1", "ReplicaSet", "rs")),
        ..Default::default()
    };
    let kind = |e: Option<watcher::Event<Pod>>| match e {
        None => "dropped",
        Some(watcher::Event::Apply(_)) => "apply",
        Some(watcher::Event::Delete(_)) => "delete",
        Some(watcher::Event::InitApply(_)) => "init-apply",
        Some(watcher::Event::Init) => "init",
        Some(watcher::Event::InitDone) => "init-done",
    };
    // (event, what the store gets)
    let cases = [
        (watcher::Event::InitApply(bare.clone()), "init-apply"),
        (watcher::Event::InitApply(owned.clone()), "dropped"),
        (watcher::Event::Apply(bare.clone()), "apply"),
        // Adopted: leaves the cache.
        (watcher::Event::Apply(owned.clone()), "delete"),
        (watcher::Event::Delete(owned), "delete"),
        (watcher::Event::Delete(bare), "delete"),
        (watcher::Event::Init, "init"),
        (watcher::Event::InitDone, "init-done"),
    ];
    for (event, want) in cases {
        assert_eq!(kind(bare_pods_only(event)), want);
    }
}

#[tokio::test]
async fn an_unwatched_store_is_ready_and_empty() {
    let store = unwatched_store::<Pod>();
    // Ready at once: the agent never waits for a Pod list it does not make.
    tokio::time::timeout(std::time::Duration::from_secs(1), store.wait_until_ready())
        .await
        .expect("ready at once")
        .expect("writer not dropped before ready");
    assert!(store.state().is_empty());
}
