use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::NetworkPolicySpec;
use serde_json::{Value, json};

use super::*;
use crate::exposure::PodLabels;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn spec(v: Value) -> NetworkPolicySpec {
    serde_json::from_value(v).expect("spec")
}

/// The Runtime `web` in namespace `team` (labelled `env=prod`), its own
/// policy admitting `role=frontend` pods of its namespace and every pod
/// of namespaces labelled `tier=ingress`, on http port 9090.
struct World {
    h: LabelHashes,
    own: OwnPolicy,
    pods: PodLabels,
}

fn world() -> World {
    let h = LabelHashes::default();
    let own = OwnPolicy::new(
        &[
            IngressPeer {
                namespace_labels: None,
                pod_labels: Some(map(&[("role", "frontend")])),
            },
            IngressPeer {
                namespace_labels: Some(map(&[("tier", "ingress")])),
                pod_labels: None,
            },
        ],
        9090,
        "team",
        &map(&[("kubernetes.io/metadata.name", "team"), ("env", "prod")]),
        &h,
    );
    let pods = PodLabels::new(
        &h,
        [
            &map(&[
                ("berth.dev/runtime", "web"),
                ("app.kubernetes.io/component", "server"),
                ("app", "web"),
            ]),
            &map(&[
                ("berth.dev/runtime", "web"),
                ("app.kubernetes.io/component", "job"),
            ]),
        ],
    );
    World { h, own, pods }
}

fn judge(w: &World, v: Value) -> Option<Beyond> {
    beyond(&w.own, &ForeignPolicy::of(Some(&spec(v)), &w.h), &w.pods)
}

fn http_from(peers: Value) -> Value {
    json!({"podSelector": {}, "ingress": [{"from": peers, "ports": [{"port": "http"}]}]})
}

#[test]
fn an_allow_all_policy_admits_every_source() {
    let w = world();
    assert_eq!(
        judge(&w, json!({"podSelector": {}, "ingress": [{}]})),
        Some(Beyond::EverySource(1))
    );
    assert_eq!(
        judge(
            &w,
            json!({"podSelector": {"matchLabels": {"app": "web"}}, "ingress": [{"from": []}]})
        ),
        Some(Beyond::EverySource(1)),
        "an empty from is every source"
    );
    assert_eq!(
        judge(
            &w,
            json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "frontend"}}}]}]})
        ),
        Some(Beyond::EveryPort(1)),
        "no ports is every port"
    );
}

#[test]
fn a_policy_that_selects_none_of_the_pods_or_admits_nothing_is_not_judged() {
    let w = world();
    for v in [
        // Another Runtime's pods, or another component only.
        json!({"podSelector": {"matchLabels": {"berth.dev/runtime": "api"}}, "ingress": [{}]}),
        json!({"podSelector": {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}, {"key": "app.kubernetes.io/component", "operator": "In", "values": ["schedule"]}]}, "ingress": [{}]}),
        // Egress only: it changes no ingress.
        json!({"podSelector": {}, "policyTypes": ["Egress"], "ingress": [{}]}),
        // No rule: it isolates, it admits nothing.
        json!({"podSelector": {}}),
        json!({"podSelector": {}, "ingress": []}),
    ] {
        assert_eq!(judge(&w, v.clone()), None, "{v}");
    }
    // The Job pods alone are enough to count.
    assert_eq!(
        judge(
            &w,
            json!({"podSelector": {"matchLabels": {"app.kubernetes.io/component": "job"}}, "ingress": [{}]})
        ),
        Some(Beyond::EverySource(1))
    );
}

#[test]
fn rules_within_the_runtime_s_own_peers_and_port_are_proven_subsets() {
    let w = world();
    let within = [
        // The same peers.
        json!([{"podSelector": {"matchLabels": {"role": "frontend"}}}]),
        json!([{"namespaceSelector": {"matchLabels": {"tier": "ingress"}}}]),
        // Narrower: more labels, expressions, or both selectors.
        json!([{"podSelector": {"matchLabels": {"role": "frontend", "v": "2"}}}]),
        json!([{"podSelector": {"matchExpressions": [{"key": "role", "operator": "In", "values": ["frontend"]}]}}]),
        json!([{"namespaceSelector": {"matchLabels": {"tier": "ingress", "zone": "a"}}, "podSelector": {"matchLabels": {"app": "nginx"}}}]),
        // This namespace by its name label, under the own-namespace peer.
        json!([{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team"}}, "podSelector": {"matchLabels": {"role": "frontend"}}}]),
    ];
    for peers in within {
        assert_eq!(judge(&w, http_from(peers.clone())), None, "{peers}");
    }
    // The port by number is the same port; TCP spelled out is the same.
    assert_eq!(
        judge(
            &w,
            json!({"podSelector": {}, "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "frontend"}}}], "ports": [{"port": 9090, "protocol": "TCP"}]}]})
        ),
        None
    );
}

#[test]
fn anything_not_proven_within_counts_as_admitting_more() {
    let w = world();
    let beyond_peers = [
        json!([{"ipBlock": {"cidr": "10.0.0.0/8"}}]),
        json!([{"podSelector": {}}]),
        json!([{"podSelector": {"matchLabels": {"role": "backend"}}}]),
        json!([{"podSelector": {"matchExpressions": [{"key": "role", "operator": "In", "values": ["frontend", "admin"]}]}}]),
        // Every namespace, or namespaces the own peer does not name.
        json!([{"namespaceSelector": {}, "podSelector": {"matchLabels": {"role": "frontend"}}}]),
        json!([{"namespaceSelector": {"matchLabels": {"tier": "batch"}}}]),
        json!([{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "other"}}, "podSelector": {"matchLabels": {"role": "frontend"}}}]),
    ];
    for peers in beyond_peers {
        assert_eq!(
            judge(&w, http_from(peers.clone())),
            Some(Beyond::Peer(1, 1)),
            "{peers}"
        );
    }
    for ports in [
        json!([{"port": 9091}]),
        json!([{"port": "metrics"}]),
        json!([{"port": "http", "protocol": "UDP"}]),
        json!([{"port": 9000, "endPort": 9100}]),
        json!([{"protocol": "TCP"}]),
    ] {
        assert_eq!(
            judge(
                &w,
                json!({"podSelector": {}, "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "frontend"}}}], "ports": ports}]})
            ),
            Some(Beyond::OtherPort(1)),
            "{ports}"
        );
    }
    // The second rule, second peer.
    assert_eq!(
        judge(
            &w,
            json!({"podSelector": {}, "ingress": [
                {"from": [{"podSelector": {"matchLabels": {"role": "frontend"}}}], "ports": [{"port": "http"}]},
                {"from": [{"podSelector": {"matchLabels": {"role": "frontend"}}}, {"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": "http"}]},
            ]})
        ),
        Some(Beyond::Peer(2, 2))
    );
}

#[test]
fn the_own_namespace_is_within_a_namespace_peer_only_while_it_carries_its_labels() {
    let h = LabelHashes::default();
    let peers = [IngressPeer {
        namespace_labels: Some(map(&[("env", "prod")])),
        pod_labels: None,
    }];
    let pods = PodLabels::new(&h, [&map(&[("berth.dev/runtime", "web")])]);
    let same_ns = ForeignPolicy::of(
        Some(&spec(http_from(
            json!([{"podSelector": {"matchLabels": {"x": "y"}}}]),
        ))),
        &h,
    );
    let labelled = OwnPolicy::new(&peers, 9000, "team", &map(&[("env", "prod")]), &h);
    assert_eq!(beyond(&labelled, &same_ns, &pods), None);
    let unlabelled = OwnPolicy::new(&peers, 9000, "team", &map(&[("env", "dev")]), &h);
    assert_eq!(
        beyond(&unlabelled, &same_ns, &pods),
        Some(Beyond::Peer(1, 1))
    );
}

#[test]
fn a_runtime_policy_without_peers_admits_nothing_so_every_rule_is_more() {
    let h = LabelHashes::default();
    let own = OwnPolicy::new(&[], 9000, "team", &BTreeMap::new(), &h);
    let pods = PodLabels::new(&h, [&map(&[("berth.dev/runtime", "web")])]);
    let f = ForeignPolicy::of(
        Some(&spec(http_from(
            json!([{"podSelector": {"matchLabels": {"role": "frontend"}}}]),
        ))),
        &h,
    );
    assert_eq!(beyond(&own, &f, &pods), Some(Beyond::Peer(1, 1)));
}

#[test]
fn a_policy_too_large_to_keep_is_taken_to_select_and_admit_more() {
    let w = world();
    let many: serde_json::Map<String, Value> = (0..POLICY_BUDGET + 1)
        .map(|i| (format!("k{i}"), json!("v")))
        .collect();
    // Its podSelector alone is over the budget: it may select the pods.
    assert_eq!(
        judge(
            &w,
            json!({"podSelector": {"matchLabels": many}, "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "frontend"}}}], "ports": [{"port": "http"}]}]})
        ),
        Some(Beyond::TooLarge)
    );
    // Its peers are: each becomes unprovable, or the rules too large.
    let peers: Vec<Value> = (0..POLICY_BUDGET)
        .map(|i| json!({"podSelector": {"matchLabels": {"role": "frontend", "n": i.to_string()}}}))
        .collect();
    assert!(judge(&w, http_from(Value::Array(peers))).is_some());
    // What is kept is bounded whatever the policy holds.
    let f = ForeignPolicy::of(
        Some(&spec(
            json!({"podSelector": {"matchLabels": many}, "ingress": [{}]}),
        )),
        &w.h,
    );
    assert_eq!(f.pod_selector, None);
}

#[test]
fn without_a_spec_nothing_is_admitted() {
    let w = world();
    assert_eq!(
        beyond(&w.own, &ForeignPolicy::of(None, &w.h), &w.pods),
        None
    );
}
