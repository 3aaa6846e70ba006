use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Affinity, Node, Pod, Taint, Toleration};
use serde_json::json;

use super::*;
use crate::decide::GrantBinding;
use crate::testkit::{self, class};

fn from<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).expect("valid object")
}

fn template(
    class: Option<&str>,
    labels: serde_json::Value,
    profile: Option<&str>,
) -> serde_json::Value {
    let mut annotations = serde_json::Map::new();
    if let Some(p) = profile {
        annotations.insert("berth.dev/runtime-profile".into(), json!(p));
    }
    let mut spec = json!({"containers": [{"name": "app", "image": "x"}]});
    if let Some(c) = class {
        spec["runtimeClassName"] = json!(c);
    }
    json!({"metadata": {"labels": labels, "annotations": annotations}, "spec": spec})
}

fn berth_labels() -> serde_json::Value {
    json!({
        "app.kubernetes.io/managed-by": "berth",
        "berth.dev/project": "demo",
        "berth.dev/environment": "production",
        "berth.dev/application": "analytics",
        "berth.dev/service": "worker",
    })
}

fn deployment(
    name: &str,
    class: Option<&str>,
    replicas: i32,
    ready: i32,
    revision: &str,
) -> Deployment {
    from(json!({
        "metadata": {"name": name, "namespace": "ns",
            "annotations": {"deployment.kubernetes.io/revision": revision}},
        "spec": {"replicas": replicas, "selector": {}, "template": template(class, json!({"app": name}), None)},
        "status": {"readyReplicas": ready}
    }))
}

fn replica_set(
    name: &str,
    owner: &str,
    class: Option<&str>,
    replicas: i32,
    revision: &str,
) -> ReplicaSet {
    from(json!({
        "metadata": {"name": name, "namespace": "ns",
            "annotations": {"deployment.kubernetes.io/revision": revision},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": owner,
                "uid": "u", "controller": true}]},
        "spec": {"replicas": replicas, "selector": {}, "template": template(class, json!({"app": owner}), None)},
        "status": {"replicas": replicas, "readyReplicas": replicas}
    }))
}

fn berth_deployment(name: &str, class: &str, profile: &str) -> Deployment {
    from(json!({
        "metadata": {"name": name, "namespace": "ns", "labels": berth_labels(),
            "ownerReferences": [{"apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
                "name": name, "uid": "u", "controller": true}]},
        "spec": {"replicas": 2, "selector": {}, "template": template(Some(class), berth_labels(), Some(profile))},
        "status": {"readyReplicas": 2}
    }))
}

fn binding(name: &str, class: &str, handler: &str) -> GrantBinding {
    testkit::binding(name, testkit::worker::identity(), class, handler)
}

fn node(name: &str, ready: bool, handlers: &[&str]) -> NodeInfo {
    NodeInfo {
        ready,
        labels: BTreeMap::from([("kubernetes.io/hostname".to_string(), name.to_string())]),
        ..testkit::node(name, handlers)
    }
}

/// A node whose kubelet reports no handler list at all.
fn silent_node(name: &str) -> NodeInfo {
    NodeInfo {
        reports_handlers: false,
        ..node(name, true, &[])
    }
}

#[test]
fn nodes_without_a_handler_list_are_unknown_not_absent() {
    use crate::analysis::{Placement, Presence, placement_coverage};
    let silent: Node = from(json!({"metadata": {"name": "old"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}));
    let info = NodeInfo::from_node(&silent);
    assert!(!info.reports_handlers);
    assert_eq!(info.presence("runsc"), Presence::Unknown);
    let empty: Node = from(json!({"metadata": {"name": "new"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "runtimeHandlers": []}}));
    assert_eq!(
        NodeInfo::from_node(&empty).presence("runsc"),
        Presence::Absent
    );

    // Every node silent: nothing is missing, everything unknown.
    let nodes = vec![silent_node("a"), silent_node("b")];
    let c = coverage(&nodes, "runsc");
    assert_eq!((c.with_handler, c.total, c.unknown), (0, 2, 2));
    assert!(c.missing.is_empty());
    assert_eq!(c.summary(), "0/2 (2 unknown)");
    let p = placement_coverage(&nodes, &Placement::default(), "runsc");
    assert_eq!((p.eligible, p.with_handler, p.unknown), (2, 0, 2));
    assert!(p.missing.is_empty());

    // Mixed: the silent one is unknown, the one that lists others missing.
    let nodes = vec![
        node("a", true, &["runsc"]),
        node("b", true, &["runc"]),
        silent_node("c"),
    ];
    let p = placement_coverage(&nodes, &Placement::default(), "runsc");
    assert_eq!((p.eligible, p.with_handler, p.unknown), (3, 1, 1));
    assert_eq!(p.missing, ["b"]);
}

#[test]
fn deployment_adapter() {
    let w = Workload::from_deployment(&deployment("web", Some("gvisor"), 3, 2, "4"));
    assert_eq!(w.kind, WorkloadKind::Deployment);
    assert_eq!((w.namespace.as_str(), w.name.as_str()), ("ns", "web"));
    assert_eq!(w.runtime_class.as_deref(), Some("gvisor"));
    assert_eq!((w.replicas, w.ready), (3, 2));
    assert!(!w.managed_by_berth && !w.is_rollback_revision && !w.suspended);
    assert!(w.owner.is_none());
    assert_eq!(w.key(), "Deployment/ns/web");

    // Unset replicas default to 1; an empty class is no class.
    let d: Deployment = from(json!({"metadata": {"name": "d", "namespace": "ns"},
        "spec": {"selector": {}, "template": template(Some(""), json!({}), None)}}));
    let w = Workload::from_deployment(&d);
    assert_eq!((w.replicas, w.ready, w.runtime_class), (1, 0, None));
}

#[test]
fn replica_set_rollback_revisions() {
    let current = replica_set("web-a", "web", Some("gvisor"), 3, "4");
    let old = replica_set("web-b", "web", Some("gvisor"), 0, "3");
    let w = Workload::from_replica_set(&current, Some("4"));
    assert!(!w.is_rollback_revision);
    assert_eq!(
        w.owner,
        Some(Owner {
            kind: "Deployment".into(),
            name: "web".into()
        })
    );
    assert!(Workload::from_replica_set(&old, Some("4")).is_rollback_revision);
    // Without the Deployment's revision: scaled to zero means rollback.
    assert!(Workload::from_replica_set(&old, None).is_rollback_revision);
    assert!(!Workload::from_replica_set(&current, None).is_rollback_revision);
    // A bare ReplicaSet is never a rollback revision.
    let bare: ReplicaSet = from(json!({"metadata": {"name": "b", "namespace": "ns"},
        "spec": {"replicas": 0, "selector": {}}}));
    let w = Workload::from_replica_set(&bare, None);
    assert!(!w.is_rollback_revision && w.runtime_class.is_none());
}

#[test]
fn sources_judge_replica_sets_against_their_deployment() {
    let deployments = [deployment("web", Some("gvisor"), 3, 3, "4")];
    // Not scaled to zero yet, but an older revision (mid-rollout).
    let rs = [
        replica_set("web-a", "web", Some("gvisor"), 3, "4"),
        replica_set("web-b", "web", Some("runc-old"), 1, "3"),
    ];
    let deployments: Vec<&Deployment> = deployments.iter().collect();
    let rs: Vec<&ReplicaSet> = rs.iter().collect();
    let all = WorkloadSources {
        deployments: &deployments,
        replica_sets: &rs,
        ..Default::default()
    }
    .collect();
    assert_eq!(all.len(), 3);
    assert!(!all[1].is_rollback_revision);
    assert!(all[2].is_rollback_revision, "older revision");
}

#[test]
fn other_kinds() {
    let sts: StatefulSet = from(json!({"metadata": {"name": "db", "namespace": "ns"},
        "spec": {"replicas": 2, "selector": {}, "serviceName": "db",
            "template": template(Some("kata"), json!({}), None)},
        "status": {"replicas": 2, "readyReplicas": 1}}));
    let w = Workload::from_stateful_set(&sts);
    assert_eq!(
        (w.kind, w.replicas, w.ready),
        (WorkloadKind::StatefulSet, 2, 1)
    );
    assert_eq!(w.runtime_class.as_deref(), Some("kata"));

    let ds: DaemonSet = from(json!({"metadata": {"name": "agent", "namespace": "ns"},
        "spec": {"selector": {}, "template": template(Some("kata"), json!({}), None)},
        "status": {"desiredNumberScheduled": 3, "numberReady": 3, "currentNumberScheduled": 3,
            "numberMisscheduled": 0}}));
    let w = Workload::from_daemon_set(&ds);
    assert_eq!(
        (w.kind, w.replicas, w.ready),
        (WorkloadKind::DaemonSet, 3, 3)
    );

    let running: Job = from(json!({"metadata": {"name": "j", "namespace": "ns"},
        "spec": {"parallelism": 2, "template": template(Some("kata"), berth_labels(), None)},
        "status": {"ready": 1}}));
    let w = Workload::from_job(&running);
    assert_eq!((w.replicas, w.ready, w.suspended), (2, 1, false));
    assert!(w.managed_by_berth, "template labels count");

    let done: Job = from(json!({"metadata": {"name": "j", "namespace": "ns"},
        "spec": {"template": template(Some("kata"), json!({}), None)},
        "status": {"conditions": [{"type": "Complete", "status": "True"}]}}));
    assert_eq!(Workload::from_job(&done).replicas, 0);

    let suspended: Job = from(json!({"metadata": {"name": "j", "namespace": "ns"},
        "spec": {"suspend": true, "template": template(Some("kata"), json!({}), None)}}));
    let w = Workload::from_job(&suspended);
    assert_eq!((w.replicas, w.suspended), (0, true));

    let cron: CronJob = from(json!({"metadata": {"name": "c", "namespace": "ns",
            "labels": {"app.kubernetes.io/managed-by": "berth"}},
        "spec": {"schedule": "@daily", "suspend": true,
            "jobTemplate": {"spec": {"template": template(Some("kata"), json!({}), Some("p"))}}},
        "status": {"active": [{"name": "c-1"}]}}));
    let w = Workload::from_cron_job(&cron);
    assert_eq!(
        (w.kind, w.replicas, w.ready, w.suspended),
        (WorkloadKind::CronJob, 1, 1, true)
    );
    assert!(w.managed_by_berth);
    assert_eq!(w.runtime_profile.as_deref(), Some("p"));
    assert_eq!(w.runtime_class.as_deref(), Some("kata"));
}

#[test]
fn pods() {
    let bare: Pod = from(json!({"metadata": {"name": "p", "namespace": "ns"},
        "spec": {"runtimeClassName": "kata", "containers": [{"name": "a"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}));
    let w = Workload::from_pod(&bare);
    assert!(w.is_bare_pod());
    assert_eq!((w.replicas, w.ready), (1, 1));
    assert_eq!(w.runtime_class.as_deref(), Some("kata"));

    let owned: Pod = from(json!({"metadata": {"name": "p", "namespace": "ns",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                "uid": "u", "controller": true}]},
        "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Succeeded"}}));
    let w = Workload::from_pod(&owned);
    assert!(!w.is_bare_pod());
    assert_eq!((w.replicas, w.ready, w.runtime_class), (0, 0, None));
}

#[test]
fn pod_parts_read_like_the_pod() {
    let pod: Pod = from(json!({"metadata": {"name": "p", "namespace": "ns",
            "labels": {"app.kubernetes.io/managed-by": "berth"},
            "annotations": {"berth.dev/runtime-profile": "bounded"}},
        "spec": {"runtimeClassName": "kata", "containers": [{"name": "a"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}));
    let w = Workload::from_pod_parts(&pod.metadata, Some("kata"), Some("Running"), true);
    assert_eq!(w, Workload::from_pod(&pod));
    assert!(w.managed_by_berth);
    assert_eq!(w.runtime_profile.as_deref(), Some("bounded"));
    // An empty class is the default runtime; a failed pod wants nothing.
    let w = Workload::from_pod_parts(&pod.metadata, Some(""), Some("Failed"), false);
    assert_eq!((w.runtime_class, w.replicas, w.ready), (None, 0, 0));
}

#[test]
fn class_usage_groups_by_class() {
    let ws = vec![
        Workload::from_deployment(&deployment("a", Some("gvisor"), 1, 1, "1")),
        Workload::from_deployment(&deployment("b", None, 1, 1, "1")),
        Workload::from_deployment(&deployment("c", Some("gvisor"), 1, 1, "1")),
        Workload::from_deployment(&deployment("d", Some("kata"), 1, 1, "1")),
    ];
    let usage = class_usage(&ws);
    assert_eq!(usage.len(), 2);
    let names: Vec<&str> = usage["gvisor"].iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["a", "c"]);
    assert_eq!(usage["kata"].len(), 1);
}

#[test]
fn node_info_and_coverage() {
    let n: Node = from(json!({"metadata": {"name": "n1", "labels": {"zone": "a"}},
        "spec": {"unschedulable": true, "taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}],
            "runtimeHandlers": [{"name": ""}, {"name": "runc"}, {"name": "bounded-runc"}]}}));
    let info = NodeInfo::from_node(&n);
    assert!(info.ready && info.unschedulable);
    assert_eq!(
        info.handlers.len(),
        2,
        "the default (empty) handler is left out"
    );
    assert!(info.reports("bounded-runc") && !info.reports(""));
    assert_eq!(info.taints.len(), 1);

    let nodes = vec![
        node("a", true, &["runc", "bounded-runc"]),
        node("b", true, &["runc"]),
        node("c", false, &["bounded-runc"]),
    ];
    let c = coverage(&nodes, "bounded-runc");
    assert_eq!((c.with_handler, c.total), (1, 2));
    assert_eq!(c.missing, ["b"]);
    assert_eq!(c.not_ready_with_handler, 1);
    assert_eq!(c.summary(), "1/2");
    assert!(!c.complete());
    assert!(coverage(&nodes, "runc").complete());
    assert!(
        !coverage(&[], "runc").complete(),
        "no nodes is not complete"
    );
}

#[test]
fn placement_selector_affinity_and_taints() {
    let mut a = node("a", true, &["bounded-runc"]);
    a.labels.insert("pool".into(), "secure".into());
    let mut b = node("b", true, &[]);
    b.labels.insert("pool".into(), "general".into());
    let mut t = node("t", true, &[]);
    t.taints.push(Taint {
        key: "dedicated".into(),
        value: Some("x".into()),
        effect: "NoSchedule".into(),
        ..Default::default()
    });
    let mut soft = node("s", true, &["bounded-runc"]);
    soft.taints.push(Taint {
        key: "soft".into(),
        effect: "PreferNoSchedule".into(),
        ..Default::default()
    });
    let mut cordoned = node("c", true, &[]);
    cordoned.unschedulable = true;
    let nodes = vec![a, b, t, soft, cordoned, node("down", false, &[])];

    // No constraints: every Ready, schedulable, untainted node.
    let p = placement_coverage(&nodes, &Placement::default(), "bounded-runc");
    assert_eq!((p.eligible, p.with_handler), (3, 2));
    assert_eq!(p.missing, ["b"]);
    assert!(!p.complete());

    // nodeSelector narrows to the secure pool: complete.
    let sel = BTreeMap::from([("pool".to_string(), "secure".to_string())]);
    let p = placement_coverage(
        &nodes,
        &Placement {
            node_selector: Some(&sel),
            ..Default::default()
        },
        "bounded-runc",
    );
    assert_eq!((p.eligible, p.with_handler), (1, 1));
    assert!(p.complete());

    // Tolerating the taint adds node t.
    let tols = vec![Toleration {
        key: Some("dedicated".into()),
        operator: Some("Equal".into()),
        value: Some("x".into()),
        effect: Some("NoSchedule".into()),
        ..Default::default()
    }];
    let p = placement_coverage(
        &nodes,
        &Placement {
            tolerations: &tols,
            ..Default::default()
        },
        "bounded-runc",
    );
    assert_eq!(p.eligible, 4);
    let exists_all = vec![Toleration {
        operator: Some("Exists".into()),
        ..Default::default()
    }];
    assert_eq!(
        placement_coverage(
            &nodes,
            &Placement {
                tolerations: &exists_all,
                ..Default::default()
            },
            "x"
        )
        .eligible,
        4
    );
    let wrong_value = vec![Toleration {
        key: Some("dedicated".into()),
        value: Some("y".into()),
        ..Default::default()
    }];
    assert_eq!(
        placement_coverage(
            &nodes,
            &Placement {
                tolerations: &wrong_value,
                ..Default::default()
            },
            "x"
        )
        .eligible,
        3
    );

    // Required node affinity: pool NotIn [general] and hostname via matchFields.
    let aff: Affinity = from(
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["general"]}]}]}}}),
    );
    let p = placement_coverage(
        &nodes,
        &Placement {
            affinity: Some(&aff),
            ..Default::default()
        },
        "bounded-runc",
    );
    assert_eq!((p.eligible, p.with_handler), (2, 2), "a and s");
    let aff: Affinity = from(
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]},
            {"matchExpressions": [{"key": "pool", "operator": "Exists"}], "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]}
        ]}}}),
    );
    let p = placement_coverage(
        &nodes,
        &Placement {
            affinity: Some(&aff),
            ..Default::default()
        },
        "bounded-runc",
    );
    assert_eq!((p.eligible, p.with_handler), (2, 1));
    assert_eq!(p.missing, ["b"]);
}

#[test]
fn placement_numeric_operators() {
    let mut n = node("n", true, &[]);
    n.labels.insert("gen".into(), "5".into());
    let aff = |op: &str, v: &str| -> Affinity {
        from(
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gen", "operator": op, "values": [v]}]}]}}}),
        )
    };
    let allows = |a: &Affinity| {
        Placement {
            affinity: Some(a),
            ..Default::default()
        }
        .allows(&n)
    };
    assert!(allows(&aff("Gt", "4")));
    assert!(!allows(&aff("Gt", "5")));
    assert!(allows(&aff("Lt", "6")));
    assert!(!allows(&aff("Lt", "x")));
    assert!(!allows(&aff("DoesNotExist", "")));
    let empty_term: Affinity = from(
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{}]}}}),
    );
    assert!(!allows(&empty_term), "an empty term matches nothing");
}

#[test]
fn removal_verdicts() {
    assert_eq!(removal_verdict(&[], 0), RemovalVerdict::Safe);
    let RemovalVerdict::Unsafe { why, counts } = removal_verdict(&[], 2) else {
        panic!("grants make it unsafe");
    };
    assert_eq!(counts.grants, 2);
    assert!(why.contains("2 grant(s)"), "{why}");

    let running = Workload::from_deployment(&deployment("a", Some("k"), 3, 3, "1"));
    let rollback =
        Workload::from_replica_set(&replica_set("a-1", "a", Some("k"), 0, "1"), Some("2"));
    let idle = Workload::from_deployment(&deployment("z", Some("k"), 0, 0, "1"));
    let done: Job = from(json!({"metadata": {"name": "j", "namespace": "ns"},
        "spec": {"template": template(Some("k"), json!({}), None)},
        "status": {"conditions": [{"type": "Complete", "status": "True"}]}}));
    let done = Workload::from_job(&done);

    assert!(
        removal_verdict(&[&done], 0).is_safe(),
        "a finished Job holds nothing"
    );
    let RemovalVerdict::Unsafe { why, counts } =
        removal_verdict(&[&running, &rollback, &idle, &done], 1)
    else {
        panic!("unsafe");
    };
    assert_eq!(
        counts,
        UsageCounts {
            workloads: 3,
            active: 1,
            replicas: 3,
            rollback_revisions: 1,
            suspended: 0,
            idle: 1,
            grants: 1,
        }
    );
    assert!(
        why.contains("1 running workload(s) with 3 replica(s)"),
        "{why}"
    );
    assert!(why.contains("rollback"), "{why}");
    assert!(why.contains("scaled to zero"), "{why}");
}

#[test]
fn removal_verdict_counts_a_deployment_and_its_replicaset_once() {
    let deploy = Workload::from_deployment(&deployment("a", Some("k"), 3, 3, "2"));
    let current =
        Workload::from_replica_set(&replica_set("a-2", "a", Some("k"), 3, "2"), Some("2"));
    let rollback =
        Workload::from_replica_set(&replica_set("a-1", "a", Some("k"), 0, "1"), Some("2"));
    assert!(!current.is_rollback_revision && rollback.is_rollback_revision);
    let RemovalVerdict::Unsafe { counts, why } =
        removal_verdict(&[&deploy, &current, &rollback], 0)
    else {
        panic!("unsafe");
    };
    assert_eq!(
        (counts.workloads, counts.active, counts.replicas),
        (2, 1, 3),
        "{why}"
    );
    assert_eq!(counts.rollback_revisions, 1);
    // Without its Deployment in view, the ReplicaSet stands for itself.
    let RemovalVerdict::Unsafe { counts, .. } = removal_verdict(&[&current], 0) else {
        panic!("unsafe");
    };
    assert_eq!((counts.workloads, counts.replicas), (1, 3));
}

#[test]
fn handler_reports_per_class() {
    let classes = vec![
        class("kata", "kata-runtime"),
        class("bounded", "bounded-runc"),
    ];
    let grants = vec![
        binding("g1", "bounded", "bounded-runc"),
        binding("g2", "bounded", "other"),
    ];
    let nodes = vec![node("a", true, &["bounded-runc"]), node("b", true, &[])];
    let ws = vec![Workload::from_deployment(&deployment(
        "a",
        Some("bounded"),
        2,
        2,
        "1",
    ))];
    let reports = handler_reports(&classes, &grants, &nodes, &ws);
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[0].class.name, "bounded", "sorted");
    assert_eq!(reports[0].granted_by, ["g1", "g2"]);
    assert_eq!(reports[0].handler_mismatch, ["g2"]);
    assert_eq!(reports[0].nodes.summary(), "1/2");
    assert_eq!(reports[0].workloads.len(), 1);
    assert!(!reports[0].verdict.is_safe());
    assert_eq!(reports[1].class.name, "kata");
    assert!(reports[1].verdict.is_safe());
    assert_eq!(reports[1].nodes.summary(), "0/2");
}

#[test]
fn retained_workloads() {
    let grants = vec![binding("bw", "bounded", "bounded-runc")];
    let covered = Workload::from_deployment(&berth_deployment("worker", "bounded", "bw"));
    let revoked = Workload::from_deployment(&berth_deployment("old", "gone-class", "gone"));
    let wrong_class = Workload::from_deployment(&berth_deployment("moved", "kata", "bw"));
    let unmanaged = Workload::from_deployment(&deployment("x", Some("bounded"), 1, 1, "1"));
    let default_runtime = Workload::from_deployment(&deployment("y", None, 1, 1, "1"));
    let mut other_identity = covered.clone();
    other_identity.name = "imposter".into();
    // Labels are shared between clones: changing the copy's must leave
    // `covered`'s as they are (it stays covered below).
    std::sync::Arc::make_mut(&mut other_identity.labels)
        .insert("berth.dev/service".into(), "other".into());
    // Its controller reference removed: an orphan, which no grant covers.
    let mut orphan = covered.clone();
    orphan.name = "stray".into();
    orphan.owner = None;
    let ws = vec![
        covered.clone(),
        revoked,
        wrong_class,
        unmanaged,
        default_runtime,
        other_identity,
        orphan,
    ];
    assert!(covered_by_grant(&covered, &grants));
    let r = retained(&ws, &grants, None);
    let got: Vec<(&str, &str, &RetainReason)> = r
        .iter()
        .map(|r| (r.workload.name.as_str(), r.class.as_str(), &r.reason))
        .collect();
    assert_eq!(
        got,
        [
            (
                "old",
                "gone-class",
                &RetainReason::GrantGone {
                    alias: "gone".into()
                }
            ),
            (
                "moved",
                "kata",
                &RetainReason::GrantGone { alias: "bw".into() }
            ),
            (
                "x",
                "bounded",
                &RetainReason::OutsideBerth {
                    granted_as: vec!["bw".into()]
                }
            ),
            (
                "imposter",
                "bounded",
                &RetainReason::GrantGone { alias: "bw".into() }
            ),
            (
                "stray",
                "bounded",
                &RetainReason::Orphaned {
                    granted_as: vec!["bw".into()]
                }
            ),
        ]
    );
    // Restricted to one class.
    let r = retained(&ws, &grants, Some(&["bounded"]));
    assert_eq!(r.len(), 3);
    // With no grants at all, the covered one is retained too, and the
    // orphan is what it would be with a controller (its grant is gone).
    let r = retained(&ws, &[], None);
    assert_eq!(r.len(), 6);
    assert!(r.iter().any(|r| r.workload.name == "stray"
        && r.reason == RetainReason::GrantGone { alias: "bw".into() }));
}

/// A workload berth does not manage is marked as running outside berth,
/// with the bindings that name its class (the workload RuntimeClass policy
/// would refuse it today: it predates the policy or is exempt); a managed
/// one without a profile is "not granted".
#[test]
fn unmanaged_workloads_are_outside_berth() {
    let grants = vec![
        binding("bw", "bounded", "bounded-runc"),
        binding("also", "bounded", "bounded-runc"),
    ];
    let legacy = Workload::from_deployment(&deployment("legacy", Some("bounded"), 1, 1, "1"));
    let other = Workload::from_deployment(&deployment("other", Some("kata"), 1, 1, "1"));
    let mut no_profile = Workload::from_deployment(&berth_deployment("np", "kata", "x"));
    no_profile.runtime_profile = None;
    let r = retained(&[legacy, other, no_profile], &grants, None);
    let got: Vec<(&str, &RetainReason)> = r
        .iter()
        .map(|r| (r.workload.name.as_str(), &r.reason))
        .collect();
    assert_eq!(
        got,
        [
            (
                "legacy",
                &RetainReason::OutsideBerth {
                    granted_as: vec!["also".into(), "bw".into()]
                }
            ),
            ("other", &RetainReason::OutsideBerth { granted_as: vec![] }),
            ("np", &RetainReason::NotGranted),
        ]
    );
}

#[test]
fn binding_from_a_published_grant() {
    let g: crate::api::RuntimeGrant = from(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "RuntimeGrant",
        "metadata": {"name": "bw"},
        "spec": {"project": "demo", "environment": "production", "application": "analytics",
            "service": "worker", "runtimeClass": "bounded", "handler": "bounded-runc"}}));
    assert_eq!(
        binding_from_grant(&g),
        binding("bw", "bounded", "bounded-runc")
    );
}

#[test]
fn controller_revisions_are_rollback_revisions_of_their_class() {
    use k8s_openapi::api::apps::v1::ControllerRevision;
    let r: ControllerRevision = from(json!({
        "metadata": {"name": "db-7c9", "namespace": "ns",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db",
                "uid": "u", "controller": true}]},
        "revision": 1,
        "data": {"spec": {"template": {"$patch": "replace",
            "metadata": {"labels": {"app": "db"}},
            "spec": {"runtimeClassName": "gvisor", "containers": [{"name": "db", "image": "x"}]}}}}
    }));
    let w = Workload::from_controller_revision(&r);
    assert_eq!(w.kind, WorkloadKind::ControllerRevision);
    assert_eq!(w.runtime_class.as_deref(), Some("gvisor"));
    assert!(w.is_rollback_revision);
    assert_eq!(w.replicas, 0);
    let retained = crate::analysis::retained(&[w], &[], None);
    assert_eq!(
        retained.len(),
        1,
        "an ungranted class still needed for a rollback"
    );
    // A revision without a runtime class needs no handler.
    let plain: ControllerRevision = from(json!({"metadata": {"name": "p", "namespace": "ns"},
        "revision": 1, "data": {"spec": {"template": {"spec": {"containers": []}}}}}));
    assert_eq!(
        Workload::from_controller_revision(&plain).runtime_class,
        None
    );
}

/// The agent's canaries probe a class without needing it: not retained,
/// not usage. Only a Job (or a Job's pod) labelled by the agent counts as
/// one: the label on a Deployment hides nothing.
#[test]
fn canaries_are_neither_usage_nor_retained() {
    let labels = json!({"berth.dev/canary": "true", "app.kubernetes.io/managed-by": "berth-agent"});
    let job: Job = from(json!({
        "metadata": {"name": "berth-canary-x", "namespace": "berth-system", "labels": labels},
        "spec": {"template": template(Some("gvisor"), labels.clone(), None)},
    }));
    let pod: Pod = from(json!({
        "metadata": {"name": "berth-canary-x-abcde", "namespace": "berth-system", "labels": labels,
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "berth-canary-x", "uid": "u", "controller": true}]},
        "spec": {"runtimeClassName": "gvisor", "containers": []},
        "status": {"phase": "Running"},
    }));
    let disguised: Deployment = from(json!({
        "metadata": {"name": "hidden", "namespace": "team", "labels": labels},
        "spec": {"replicas": 1, "template": template(Some("gvisor"), labels.clone(), None)},
    }));
    let workloads = vec![
        Workload::from_job(&job),
        Workload::from_pod(&pod),
        Workload::from_deployment(&disguised),
    ];
    assert!(workloads[0].is_canary() && workloads[1].is_canary());
    assert!(!workloads[2].is_canary());
    let grants = [binding("sandboxed", "gvisor", "runsc")];
    let kept: Vec<String> = retained(&workloads, &grants, None)
        .into_iter()
        .map(|r| r.workload.key())
        .collect();
    assert_eq!(kept, ["Deployment/team/hidden"]);
    let usage = class_usage(&workloads);
    assert_eq!(usage["gvisor"].len(), 1);
}
