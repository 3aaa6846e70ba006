use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Node, NodeCondition, NodeRuntimeHandler, NodeRuntimeHandlerFeatures, NodeSpec, NodeStatus,
    Taint, Toleration,
};
use k8s_openapi::api::node::v1::{RuntimeClass, Scheduling as ClassScheduling};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;

fn node(name: &str, handlers: Option<&[(&str, bool, bool)]>, labels: &[(&str, &str)]) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            runtime_handlers: handlers.map(|hs| {
                hs.iter()
                    .map(|(n, rro, userns)| NodeRuntimeHandler {
                        name: Some((*n).into()),
                        features: Some(NodeRuntimeHandlerFeatures {
                            recursive_read_only_mounts: Some(*rro),
                            user_namespaces: Some(*userns),
                        }),
                    })
                    .collect()
            }),
            ..Default::default()
        }),
    }
}

fn class(name: &str, handler: &str, selector: &[(&str, &str)]) -> MatrixClass {
    MatrixClass {
        name: name.into(),
        handler: handler.into(),
        node_selector: selector
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect(),
        tolerations: Vec::new(),
        attestation: None,
    }
}

fn group_of<'a>(m: &'a Matrix, node: &str) -> &'a NodeGroup {
    m.groups
        .iter()
        .find(|g| g.nodes.iter().any(|n| n == node))
        .expect("node in a group")
}

/// The same handlers listed in another order (some runtimes reorder them
/// on every status update) give one group, and the same matrix.
#[test]
fn handler_order_does_not_split_groups() {
    let hs: [(&str, bool, bool); 4] = [
        ("runc", true, false),
        ("runsc", false, false),
        ("kata", true, true),
        ("bounded-runc", true, false),
    ];
    let mut nodes = Vec::new();
    // A fixed pseudo-random permutation per node (no RNG dependency).
    for i in 0..12usize {
        let mut order: Vec<_> = hs.to_vec();
        order.rotate_left(i % 4);
        if i % 3 == 0 {
            order.reverse();
        }
        if i % 5 == 0 {
            order.swap(0, 2);
        }
        nodes.push(MatrixNode::from_node(&node(
            &format!("n{i:02}"),
            Some(&order),
            &[],
        )));
    }
    let classes = [class("gvisor", "runsc", &[]), class("kata", "kata", &[])];
    let m = handler_matrix(&classes, &nodes, &[]);
    assert_eq!(m.groups.len(), 1, "{m:#?}");
    assert_eq!(m.groups[0].nodes.len(), 12);
    assert_eq!(m.groups[0].label, "n00 +11");
    let kata = &m.groups[0].cells[1];
    assert_eq!(
        kata.handler,
        HandlerState::Present {
            features: HandlerFeatures {
                recursive_read_only_mounts: Some(true),
                user_namespaces: Some(true),
            }
        }
    );
    assert_eq!(kata.short(), "✓Hru");

    // The same input in reverse node order gives the same matrix.
    nodes.reverse();
    assert_eq!(handler_matrix(&classes, &nodes, &[]), m);
}

/// 200 nodes of four kinds are four columns, each naming its nodes.
#[test]
fn two_hundred_nodes_group_by_answer() {
    let mut nodes = Vec::new();
    for i in 0..200usize {
        let name = format!("node-{i:03}");
        let n = match i % 4 {
            0 => node(
                &name,
                Some(&[("runc", true, false), ("runsc", false, false)]),
                &[],
            ),
            1 => node(
                &name,
                Some(&[("runsc", false, false), ("runc", true, false)]),
                &[],
            ),
            2 => node(&name, Some(&[("runc", true, false)]), &[("pool", "gpu")]),
            _ => node(&name, None, &[]),
        };
        nodes.push(MatrixNode::from_node(&n));
    }
    // One cordoned node of the first kind is a column of its own.
    nodes[4].info.unschedulable = true;
    let classes = [
        class("gvisor", "runsc", &[]),
        class("gpu", "runc", &[("pool", "gpu")]),
    ];
    let pods: Vec<PodPlace<'_>> = (0..7)
        .map(|_| PodPlace {
            class: "gvisor",
            node: "node-000",
        })
        .chain(std::iter::once(PodPlace {
            class: "gvisor",
            node: "node-002",
        }))
        .collect();
    let m = handler_matrix(&classes, &nodes, &pods);
    // Kinds 0 and 1 are the same set; node-000 runs pods (its own answer);
    // kind 2 lacks runsc and is the only one the gpu class selects; kind 3
    // reports nothing; node-004 is cordoned.
    let sizes: Vec<(usize, NodeState)> =
        m.groups.iter().map(|g| (g.nodes.len(), g.state)).collect();
    assert_eq!(
        sizes,
        [
            (98, NodeState::Ready),
            (50, NodeState::Ready),
            (49, NodeState::Ready),
            (1, NodeState::Ready),
            (1, NodeState::Ready),
            (1, NodeState::Cordoned),
        ],
        "{:?}",
        m.groups.iter().map(|g| &g.label).collect::<Vec<_>>()
    );
    let running = group_of(&m, "node-000");
    assert_eq!(running.nodes, ["node-000"]);
    assert_eq!(running.cells[1].pods, 7);
    let broken = group_of(&m, "node-002");
    // gvisor on the gpu pool: allowed, handler missing, one pod there.
    assert_eq!(broken.cells[1].class, "gvisor");
    assert_eq!(broken.cells[1].handler, HandlerState::Absent);
    assert_eq!(broken.cells[1].pods, 1);
    assert!(broken.cells[1].broken());
    assert_eq!(broken.cells[0].scheduling, Scheduling::Allowed);
    let silent = group_of(&m, "node-003");
    assert_eq!(silent.cells[1].handler, HandlerState::Unknown);
    assert!(silent.cells[1].unknown());
    assert_eq!(silent.cells[0].scheduling, Scheduling::NotSelected);
    assert!(!silent.cells[0].unknown(), "not selected: not a concern");
    assert_eq!(group_of(&m, "node-004").state, NodeState::Cordoned);
}

#[test]
fn taints_not_tolerated_by_the_class_are_their_own_answer() {
    let mut tainted = node("tainted", Some(&[("runsc", false, false)]), &[]);
    tainted.spec = Some(NodeSpec {
        taints: Some(vec![Taint {
            key: "sandbox".into(),
            value: Some("yes".into()),
            effect: "NoSchedule".into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
    let nodes = [MatrixNode::from_node(&tainted)];
    let plain = class("plain", "runsc", &[]);
    let mut tolerant = class("tolerant", "runsc", &[]);
    tolerant.tolerations = vec![Toleration {
        key: Some("sandbox".into()),
        operator: Some("Exists".into()),
        ..Default::default()
    }];
    let m = handler_matrix(&[tolerant, plain], &nodes, &[]);
    assert_eq!(m.classes[0].class, "plain", "sorted by name");
    assert_eq!(m.groups[0].cells[0].scheduling, Scheduling::Tainted);
    assert_eq!(m.groups[0].cells[1].scheduling, Scheduling::Allowed);
    assert!(m.classes[1].scheduling && !m.classes[0].scheduling);
}

#[test]
fn classes_come_from_runtime_class_scheduling() {
    let rc = RuntimeClass {
        metadata: ObjectMeta {
            name: Some("gvisor".into()),
            ..Default::default()
        },
        handler: "runsc".into(),
        scheduling: Some(ClassScheduling {
            node_selector: Some(BTreeMap::from([("sandbox".into(), "gvisor".into())])),
            tolerations: None,
        }),
        overhead: None,
    };
    let c = MatrixClass::from_runtime_class(&rc);
    assert_eq!(c, class("gvisor", "runsc", &[("sandbox", "gvisor")]));
    let json = serde_json::to_value(handler_matrix(&[c], &[], &[])).expect("json");
    assert_eq!(json["classes"][0]["class"], "gvisor");
    assert_eq!(json["groups"], serde_json::json!([]));
}

#[test]
fn cell_json_names_the_features() {
    let n = MatrixNode::from_node(&node("a", Some(&[("runc", true, false)]), &[]));
    let m = handler_matrix(&[class("c", "runc", &[])], &[n], &[]);
    let v = serde_json::to_value(&m.groups[0]).expect("json");
    assert_eq!(
        v["cells"][0],
        serde_json::json!({
            "class": "c",
            "scheduling": "allowed",
            "handler": {"state": "present", "features": {"recursiveReadOnlyMounts": true, "userNamespaces": false}},
            "pods": 0
        })
    );
    assert_eq!(v["state"], "ready");
}

/// What the canaries saw splits a group: a node whose canary fails is not
/// lumped with verified ones, its cell is broken, and the cell carries the
/// oldest evidence of its nodes for the age shown.
#[test]
fn attestation_is_part_of_the_answer() {
    use crate::api::{AttestationState, HandlerAttestation, NodeAttestation};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    let at = |s: i64| Some(Time(Timestamp::from_second(s).expect("ts")));
    let evidence = |node: &str, state, second| NodeAttestation {
        node: node.into(),
        state,
        reason: String::new(),
        message: String::new(),
        at: at(second),
        job: None,
    };
    let mut g = class("gvisor", "runsc", &[]);
    g.attestation = Some(HandlerAttestation {
        canaries: true,
        nodes: vec![
            evidence("a", AttestationState::Verified, 1000),
            evidence("b", AttestationState::Verified, 900),
            evidence("c", AttestationState::Failing, 950),
        ],
        ..Default::default()
    });
    let runsc: &[(&str, bool, bool)] = &[("runsc", false, false)];
    let nodes: Vec<MatrixNode> = ["a", "b", "c"]
        .iter()
        .map(|n| MatrixNode::from_node(&node(n, Some(runsc), &[])))
        .collect();
    let m = handler_matrix(&[g], &nodes, &[]);
    let ab = group_of(&m, "a");
    assert_eq!(ab.nodes, ["a", "b"]);
    let cell = &ab.cells[0];
    assert_eq!(
        (cell.attested, cell.evidence_at),
        (Some(AttestationState::Verified), Some(900))
    );
    assert!(!cell.broken());
    assert_eq!(cell.short_at(Some(1020)), "✓H ✔2m");
    let c = &group_of(&m, "c").cells[0];
    assert!(c.failing() && c.broken());
    assert_eq!(c.short(), "✓H ✘");
}
