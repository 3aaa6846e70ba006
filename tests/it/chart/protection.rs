//! The agent protects itself (issue 30, point 4), in the chart and the
//! kustomize base: a PodDisruptionBudget, a NetworkPolicy, an optional
//! PriorityClass, a ServiceMonitor when its CRD exists, and the
//! leader-election timing. Each value is checked in the rendered objects
//! and against the kustomize component that ships the same thing; the
//! install with every part on is in `chart::helm_install_…`.
//!
//! What a NetworkPolicy admits cannot be tested by traffic here: the local
//! cluster's nodes are kwok's, with no dataplane (no pod network, no
//! policy enforcement). The policy's shape is tested instead: which pods
//! it selects, which ports it opens, to whom, and that nothing else is
//! open.

use std::collections::BTreeSet;
use std::path::Path;

use kube::Client;
use serde::Deserialize;
use yaml_serde::Value;

use super::{
    ObjectKey, agent_container, args_of, assert_agent_accepts, find, kinds, objects, same_objects,
    template, template_ok,
};

const SERVICE_MONITOR_API: &str = "monitoring.coreos.com/v1/ServiceMonitor";

fn count(objs: &std::collections::BTreeMap<ObjectKey, Value>, kind: &str) -> usize {
    kinds(objs).iter().filter(|k| **k == kind).count()
}

/// The Deployment's pod selector (what every protection must select).
fn pod_selector(objs: &std::collections::BTreeMap<ObjectKey, Value>) -> Value {
    find(objs, "Deployment")["spec"]["selector"]["matchLabels"].clone()
}

/// The agent container's named ports: name → containerPort.
fn container_ports(
    objs: &std::collections::BTreeMap<ObjectKey, Value>,
) -> std::collections::BTreeMap<String, i64> {
    agent_container(objs)["ports"]
        .as_sequence()
        .expect("ports")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().expect("port name").to_string(),
                p["containerPort"].as_i64().expect("containerPort"),
            )
        })
        .collect()
}

#[test]
fn the_pod_disruption_budget_keeps_one_replica_and_can_be_switched_off() {
    let objs = objects(&template_ok(&[]));
    let pdb = find(&objs, "PodDisruptionBudget");
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    assert!(pdb["spec"]["maxUnavailable"].is_null(), "{pdb:?}");
    assert_eq!(pdb["spec"]["selector"]["matchLabels"], pod_selector(&objs));

    let off = objects(&template_ok(&[
        "--set",
        "podDisruptionBudget.enabled=false",
    ]));
    assert_eq!(count(&off, "PodDisruptionBudget"), 0);
    // One replica with minAvailable 1 would block every drain.
    let single = objects(&template_ok(&["--set", "replicas=1"]));
    assert_eq!(count(&single, "PodDisruptionBudget"), 0);
    // The kustomize component removes the base's, as the value does.
    same_objects(
        &["--set", "podDisruptionBudget.enabled=false"],
        &crate::assets::kustomize_with_components("without-pdb", &["components/without-pdb"]),
    );
}

/// The NetworkPolicy selects exactly the agent's pods and opens exactly two
/// ports: the webhook's to any source (or `webhookFrom`), the metrics port
/// to the selected namespaces only. Its shape stands in for a traffic test
/// (no dataplane on kwok nodes).
#[test]
fn the_network_policy_admits_only_the_webhook_and_the_metrics_port() {
    // The agent's own; the canaries' deny-all policy is `chart::canaries`'.
    let agent_policy = |objs: &std::collections::BTreeMap<ObjectKey, Value>| {
        objs.get(&(
            "NetworkPolicy".to_string(),
            "berth-system".to_string(),
            "berth-agent".to_string(),
        ))
        .cloned()
    };
    let objs = objects(&template_ok(&[]));
    assert!(agent_policy(&objs).is_none(), "off by default");

    let (objs, _) = same_objects(
        &["--set", "networkPolicy.enabled=true"],
        &crate::assets::kustomize_with_components("netpol", &["components/network-policy"]),
    );
    let ports = container_ports(&objs);
    let policy = &agent_policy(&objs).expect("the agent's NetworkPolicy");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"],
        pod_selector(&objs)
    );
    assert_eq!(
        policy["spec"]["policyTypes"],
        yaml_serde::to_value(["Ingress"]).expect("yaml")
    );
    let rules = policy["spec"]["ingress"].as_sequence().expect("ingress");
    assert_eq!(rules.len(), 2, "{rules:?}");
    let rule_ports = |rule: &Value| -> Vec<String> {
        rule["ports"]
            .as_sequence()
            .expect("every rule names its ports (none would open all)")
            .iter()
            .map(|p| {
                assert_eq!(p["protocol"], "TCP");
                p["port"].as_str().expect("a named port").to_string()
            })
            .collect()
    };
    // The webhook: from anywhere (the API server is not a pod).
    assert_eq!(rule_ports(&rules[0]), ["webhook"]);
    assert!(rules[0]["from"].is_null(), "{:?}", rules[0]);
    // The metrics port: only from the namespace selector, and no pod or
    // ipBlock peer beside it.
    assert_eq!(rule_ports(&rules[1]), ["http"]);
    let from = rules[1]["from"].as_sequence().expect("from");
    assert_eq!(from.len(), 1);
    let peer = from[0].as_mapping().expect("peer");
    assert_eq!(peer.len(), 1, "{peer:?}");
    assert_eq!(
        from[0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
        "monitoring"
    );
    // The named ports are the container's webhook and metrics ports, and
    // nothing else the container listens on is admitted.
    let opened: BTreeSet<&str> = ["webhook", "http"].into();
    assert_eq!(
        ports.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        opened
    );
    let args = args_of(agent_container(&objs));
    let port_of = |flag: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(flag))
            .and_then(|addr| addr.rsplit(':').next())
            .and_then(|p| p.parse::<i64>().ok())
            .unwrap_or_else(|| panic!("{flag} in {args:?}"))
    };
    assert_eq!(ports["webhook"], port_of("--webhook-listen="));
    assert_eq!(ports["http"], port_of("--http-addr="));

    // Both selectors are the operator's.
    let objs = objects(&template_ok(&[
        "--set",
        "networkPolicy.enabled=true",
        "--set-json",
        r#"networkPolicy.metricsNamespaceSelector={"matchLabels":{"team":"observability"}}"#,
        "--set-json",
        r#"networkPolicy.webhookFrom=[{"ipBlock":{"cidr":"10.0.0.0/8"}}]"#,
    ]));
    let policy = agent_policy(&objs).expect("the agent's NetworkPolicy");
    let rules = &policy["spec"]["ingress"];
    assert_eq!(rules[0]["from"][0]["ipBlock"]["cidr"], "10.0.0.0/8");
    assert_eq!(rule_ports(&rules[0]), ["webhook"]);
    let selector = &rules[1]["from"][0]["namespaceSelector"];
    assert_eq!(selector["matchLabels"]["team"], "observability");
    assert!(
        selector["matchLabels"]["kubernetes.io/metadata.name"].is_null(),
        "the default selector is replaced, not merged: {selector:?}"
    );
    // An empty selector would admit every namespace: it means the default.
    let objs = objects(&template_ok(&[
        "--set",
        "networkPolicy.enabled=true",
        "--set-json",
        "networkPolicy.metricsNamespaceSelector={}",
    ]));
    assert_eq!(
        agent_policy(&objs).expect("the agent's NetworkPolicy")["spec"]["ingress"][1]["from"][0]["namespaceSelector"]
            ["matchLabels"]["kubernetes.io/metadata.name"],
        "monitoring"
    );
    // A selector of another shape is refused by the schema.
    assert!(
        template(&[
            "--set",
            "networkPolicy.metricsNamespaceSelector.namespaces=monitoring"
        ])
        .is_err()
    );
}

/// Rendered only when the cluster serves the ServiceMonitor API; it
/// selects the agent's Service and scrapes a port that Service has.
#[test]
fn the_service_monitor_needs_its_crd_and_scrapes_the_agents_service() {
    let without = objects(&template_ok(&["--set", "serviceMonitor.enabled=true"]));
    assert_eq!(count(&without, "ServiceMonitor"), 0, "no CRD, no object");
    let with_crd = ["--api-versions", SERVICE_MONITOR_API];
    assert_eq!(
        count(&objects(&template_ok(&with_crd)), "ServiceMonitor"),
        0,
        "off by default"
    );

    let mut extra = vec!["--set", "serviceMonitor.enabled=true"];
    extra.extend(with_crd);
    let (objs, _) = same_objects(
        &extra,
        &crate::assets::kustomize_with_components("smon", &["components/service-monitor"]),
    );
    let monitor = find(&objs, "ServiceMonitor");
    let service = find(&objs, "Service");
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_mapping()
        .expect("selector");
    for (k, v) in selector {
        assert_eq!(&service["metadata"]["labels"][k], v, "selects the Service");
    }
    assert_eq!(
        monitor["spec"]["namespaceSelector"]["matchNames"][0],
        service["metadata"]["namespace"]
    );
    let endpoint = &monitor["spec"]["endpoints"][0];
    assert_eq!(endpoint["path"], "/metrics");
    let service_ports: Vec<&Value> = service["spec"]["ports"]
        .as_sequence()
        .expect("ports")
        .iter()
        .map(|p| &p["name"])
        .collect();
    assert!(
        service_ports.contains(&&endpoint["port"]),
        "{service_ports:?}"
    );

    // Prometheus's selector label, and the interval.
    let mut extra = vec![
        "--set",
        "serviceMonitor.enabled=true",
        "--set",
        "serviceMonitor.labels.release=kube-prometheus-stack",
        "--set",
        "serviceMonitor.interval=15s",
    ];
    extra.extend(with_crd);
    let objs = objects(&template_ok(&extra));
    let monitor = find(&objs, "ServiceMonitor");
    assert_eq!(
        monitor["metadata"]["labels"]["release"],
        "kube-prometheus-stack"
    );
    assert_eq!(
        monitor["metadata"]["labels"]["app.kubernetes.io/name"],
        "berth-agent"
    );
    assert_eq!(monitor["spec"]["endpoints"][0]["interval"], "15s");
}

#[test]
fn the_priority_class_reaches_the_pods() {
    let objs = objects(&template_ok(&[]));
    assert!(
        find(&objs, "Deployment")["spec"]["template"]["spec"]["priorityClassName"].is_null(),
        "none by default"
    );
    let (objs, _) = same_objects(
        &["--set", "priorityClassName=system-cluster-critical"],
        &crate::assets::kustomize_with_components("prio", &["components/priority-class"]),
    );
    assert_eq!(
        find(&objs, "Deployment")["spec"]["template"]["spec"]["priorityClassName"],
        "system-cluster-critical"
    );
    assert!(template(&["--set", "priorityClassName=Not_A_Name"]).is_err());
}

/// The three leader-election durations reach the agent's flags (which
/// exist), and timings that cannot work are refused before anything is
/// installed.
#[test]
fn leader_election_values_reach_the_agent_and_bad_timing_is_refused() {
    let flags = |extra: &[&str]| -> Vec<String> {
        args_of(agent_container(&objects(&template_ok(extra))))
            .into_iter()
            .filter(|a| a.starts_with("--lease-") && a.contains("-seconds="))
            .collect()
    };
    assert_eq!(
        flags(&[]),
        [
            "--lease-duration-seconds=60",
            "--lease-renew-deadline-seconds=40",
            "--lease-retry-period-seconds=5"
        ]
    );
    let client_go = [
        "--set",
        "leaderElection.leaseDuration=15s",
        "--set",
        "leaderElection.renewDeadline=10s",
        "--set",
        "leaderElection.retryPeriod=2s",
    ];
    assert_eq!(
        flags(&client_go),
        [
            "--lease-duration-seconds=15",
            "--lease-renew-deadline-seconds=10",
            "--lease-retry-period-seconds=2"
        ]
    );
    assert_agent_accepts(&args_of(agent_container(&objects(&template_ok(
        &client_go,
    )))));
    for (set, why) in [
        (
            "leaderElection.renewDeadline=60s",
            "shorter than leaderElection.leaseDuration",
        ),
        (
            "leaderElection.retryPeriod=40s",
            "shorter than leaderElection.renewDeadline",
        ),
        ("leaderElection.leaseDuration=1m", "schema"),
        ("leaderElection.retryPeriod=0s", "schema"),
    ] {
        let err = template(&["--set", set])
            .err()
            .unwrap_or_else(|| panic!("--set {set} was accepted"));
        assert!(err.contains(why), "--set {set}: {why}:\n{err}");
    }
}

/// Applies the test's minimal ServiceMonitor and PrometheusRule CRDs
/// (`tests/fixtures/monitoring-crds.yaml`; server-side apply, idempotent
/// across tests) and waits until both are Established. They stay: other
/// tests may use them, and removing a CRD removes every object of it.
pub(super) async fn install_monitoring_crds(client: &Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/monitoring-crds.yaml");
    let text = std::fs::read_to_string(&path).expect("monitoring CRDs");
    let crds: Vec<CustomResourceDefinition> = yaml_serde::Deserializer::from_str(&text)
        .map(|doc| yaml_serde::from_value(Value::deserialize(doc).expect("yaml")).expect("a CRD"))
        .collect();
    berth_tests::harness::apply_crds(client, crds, "berth-tests-monitoring").await;
}
