//! One table row per change kind: the bindings loaded, the candidate, the
//! cluster, and the expected transitions, class effects and outcome.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Namespace;

use super::*;
use crate::analysis::NodeInfo;
use crate::api::ProfileState;
use crate::api::Runtime;
use crate::testkit::{class, node};

fn b(name: &str, class: &str, handler: &str) -> GrantBinding {
    crate::testkit::binding(
        name,
        crate::testkit::identity("demo", "prod", "app", "svc"),
        class,
        handler,
    )
}

fn ns() -> Namespace {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "team", "labels": {
            "berth.dev/project": "demo", "berth.dev/environment": "prod"}}
    }))
    .expect("namespace")
}

/// A Runtime selecting `alias`, last decided `state` (with its class).
fn runtime(alias: &str, state: &str, class: Option<&str>, replicas: i32) -> Runtime {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
        "metadata": {"name": "web", "namespace": "team"},
        "spec": {"application": "app", "service": "svc", "runtimeProfile": alias,
                 "replicas": replicas, "image": {"repository": "r", "tag": "1"}},
        "status": {"profile": {"alias": alias, "state": state, "class": class},
                   "rollout": {"ready": replicas}}
    }))
    .expect("runtime")
}

fn candidate(bindings: Vec<GrantBinding>) -> Candidate {
    Candidate {
        source: "grants.toml".into(),
        sha256: None,
        bindings: Ok(bindings),
    }
}

struct Case {
    name: &'static str,
    current: Vec<GrantBinding>,
    next: Vec<GrantBinding>,
    runtime: Runtime,
    nodes: Vec<NodeInfo>,
    effect: Option<Effect>,
    after: Option<ProfileState>,
    class_effects: Vec<(&'static str, ClassEffect)>,
    outcome: Outcome,
}

#[test]
fn every_change_kind() {
    let both = vec![class("gvisor", "runsc"), class("kata", "kata")];
    let all_nodes = vec![
        node("n1", &["runsc", "kata"]),
        node("n2", &["runsc", "kata"]),
    ];
    let cases = vec![
        Case {
            name: "no change",
            current: vec![b("bw", "gvisor", "runsc")],
            next: vec![b("bw", "gvisor", "runsc")],
            runtime: runtime("bw", "Granted", Some("gvisor"), 2),
            nodes: all_nodes.clone(),
            effect: None,
            after: None,
            class_effects: vec![],
            outcome: Outcome::NoChange,
        },
        Case {
            name: "add grants a waiting Runtime",
            current: vec![],
            next: vec![b("bw", "gvisor", "runsc")],
            runtime: runtime("bw", "NotGranted", None, 2),
            nodes: all_nodes.clone(),
            effect: Some(Effect::Grant),
            after: Some(ProfileState::Granted),
            class_effects: vec![("gvisor", ClassEffect::HandlerRequired)],
            outcome: Outcome::Safe,
        },
        Case {
            name: "remove revokes a running Runtime",
            current: vec![b("bw", "gvisor", "runsc")],
            next: vec![],
            runtime: runtime("bw", "Granted", Some("gvisor"), 2),
            nodes: all_nodes.clone(),
            effect: Some(Effect::Revoke),
            after: Some(ProfileState::Revoked),
            // The revoked Runtime's workloads are not in this snapshot.
            class_effects: vec![("gvisor", ClassEffect::SafeToRemove)],
            outcome: Outcome::Disruptive,
        },
        Case {
            name: "remove from a suspended Runtime is safe",
            current: vec![b("bw", "gvisor", "runsc")],
            next: vec![],
            runtime: runtime("bw", "Granted", Some("gvisor"), 0),
            nodes: all_nodes.clone(),
            effect: Some(Effect::Revoke),
            after: Some(ProfileState::Revoked),
            class_effects: vec![("gvisor", ClassEffect::SafeToRemove)],
            outcome: Outcome::Safe,
        },
        Case {
            name: "change class rolls",
            current: vec![b("bw", "gvisor", "runsc")],
            next: vec![b("bw", "kata", "kata")],
            runtime: runtime("bw", "Granted", Some("gvisor"), 2),
            nodes: all_nodes.clone(),
            effect: Some(Effect::Roll),
            after: Some(ProfileState::Granted),
            class_effects: vec![
                ("gvisor", ClassEffect::SafeToRemove),
                ("kata", ClassEffect::HandlerRequired),
            ],
            outcome: Outcome::Safe,
        },
        Case {
            name: "change handler to one the class does not name is refused",
            current: vec![b("bw", "gvisor", "runsc")],
            next: vec![b("bw", "gvisor", "runsc-v2")],
            runtime: runtime("bw", "Granted", Some("gvisor"), 2),
            nodes: all_nodes.clone(),
            effect: Some(Effect::Refuse),
            after: Some(ProfileState::HandlerMismatch),
            class_effects: vec![("gvisor", ClassEffect::HandlerRequired)],
            outcome: Outcome::Disruptive,
        },
        Case {
            name: "class missing refuses",
            current: vec![b("bw", "gvisor", "runsc")],
            next: vec![b("bw", "nope", "runsc")],
            runtime: runtime("bw", "Granted", Some("gvisor"), 2),
            nodes: all_nodes.clone(),
            effect: Some(Effect::Refuse),
            after: Some(ProfileState::ClassMissing),
            class_effects: vec![
                ("gvisor", ClassEffect::SafeToRemove),
                ("nope", ClassEffect::HandlerRequired),
            ],
            outcome: Outcome::Disruptive,
        },
        Case {
            name: "handler absent on some nodes stalls the rollout",
            current: vec![],
            next: vec![b("bw", "kata", "kata")],
            runtime: runtime("bw", "NotGranted", None, 2),
            nodes: vec![node("n1", &["kata"]), node("n2", &["runsc"])],
            effect: Some(Effect::Grant),
            after: Some(ProfileState::Granted),
            class_effects: vec![("kata", ClassEffect::HandlerRequired)],
            outcome: Outcome::Disruptive,
        },
        Case {
            name: "handler unknown (no list) does not stall",
            current: vec![],
            next: vec![b("bw", "kata", "kata")],
            runtime: runtime("bw", "NotGranted", None, 2),
            nodes: vec![
                node("n1", &["kata"]),
                NodeInfo {
                    reports_handlers: false,
                    ..node("n2", &[])
                },
            ],
            effect: Some(Effect::Grant),
            after: Some(ProfileState::Granted),
            class_effects: vec![("kata", ClassEffect::HandlerRequired)],
            outcome: Outcome::Safe,
        },
    ];
    let namespaces = vec![ns()];
    for c in cases {
        let runtimes = vec![c.runtime.clone()];
        let cluster = Cluster {
            runtimes: &runtimes,
            namespaces: &namespaces,
            classes: &both,
            nodes: &c.nodes,
            workloads: &[],
        };
        let p = plan(&c.current, &candidate(c.next.clone()), &cluster);
        assert_eq!(p.outcome, c.outcome, "{}: {p:#?}", c.name);
        assert_eq!(p.exit_code, c.outcome.exit_code(), "{}", c.name);
        assert_eq!(
            p.runtimes.first().map(|r| r.effect),
            c.effect,
            "{}: {p:#?}",
            c.name
        );
        assert_eq!(
            p.runtimes.first().map(|r| r.after.state),
            c.after,
            "{}",
            c.name
        );
        let effects: Vec<(&str, ClassEffect)> = p
            .classes
            .iter()
            .map(|x| (x.name.as_str(), x.effect))
            .collect();
        assert_eq!(effects, c.class_effects, "{}", c.name);
    }
}

#[test]
fn stalled_nodes_are_named_on_the_runtime_and_the_class() {
    let runtimes = vec![runtime("bw", "NotGranted", None, 2)];
    let nodes = vec![node("n1", &["kata"]), node("n2", &["runsc"])];
    let classes = vec![class("kata", "kata")];
    let namespaces = vec![ns()];
    let cluster = Cluster {
        runtimes: &runtimes,
        namespaces: &namespaces,
        classes: &classes,
        nodes: &nodes,
        workloads: &[],
    };
    let p = plan(&[], &candidate(vec![b("bw", "kata", "kata")]), &cluster);
    assert_eq!(p.runtimes[0].stall_nodes, ["n2"]);
    assert_eq!(p.runtimes[0].eligible_nodes, 2);
    assert_eq!(p.classes[0].missing_nodes, ["n2"]);
    assert_eq!(p.summary.stalled, 1);
}

#[test]
fn binding_diff_is_field_by_field_and_sorted() {
    let mut moved = b("a", "kata", "kata");
    moved.identity.service = "other".into();
    let d = diff_bindings(
        &[b("a", "gvisor", "runsc"), b("gone", "gvisor", "runsc")],
        &[moved, b("new", "gvisor", "runsc")],
    );
    assert_eq!(
        d.added.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(),
        ["new"]
    );
    assert_eq!(
        d.removed
            .iter()
            .map(|x| x.name.as_str())
            .collect::<Vec<_>>(),
        ["gone"]
    );
    let fields: Vec<(&str, &str, &str)> = d.changed[0]
        .fields
        .iter()
        .map(|f| (f.field.as_str(), f.from.as_str(), f.to.as_str()))
        .collect();
    assert_eq!(
        fields,
        [
            ("service", "svc", "other"),
            ("runtime_class", "gvisor", "kata"),
            ("handler", "runsc", "kata"),
        ]
    );
}

#[test]
fn an_invalid_file_lists_the_loaders_problems_and_exits_1() {
    let err = crate::grants::LoadedGrants::from_unchecked_bytes(
        "g.toml",
        b"schema_version = 1\n[[bindings]]\nname = \"Bad\"\n",
    )
    .expect_err("invalid");
    let c = Candidate {
        source: "g.toml".into(),
        sha256: None,
        bindings: Err(loader_problems(&err)),
    };
    let p = plan(&[b("bw", "gvisor", "runsc")], &c, &Cluster::default());
    assert_eq!((p.outcome, p.exit_code), (Outcome::Invalid, 1));
    assert!(p.problems.iter().all(|x| x.stage == Stage::Load));
    let rules: Vec<&str> = p.problems.iter().map(|x| x.rule.as_str()).collect();
    assert!(rules.contains(&"name-format"), "{rules:?}");
    assert!(rules.contains(&"key-missing"), "{rules:?}");
    assert!(p.problems.iter().any(|x| x.line == Some(3)), "{p:#?}");
    assert!(p.runtimes.is_empty() && p.bindings.is_empty());
}

#[test]
fn reconcile_problems_follow_the_agents_order() {
    let mut unsupported = class("odd", "runsc");
    unsupported.has_overhead = true;
    let mut deleting = class("going", "runsc");
    deleting.deleting = true;
    let classes = vec![class("gvisor", "runsc"), unsupported, deleting];
    let got: Vec<(String, String)> = classes::reconcile_problems(
        &[
            b("ok", "gvisor", "runsc"),
            b("missing", "nope", "runsc"),
            b("mismatch", "gvisor", "kata"),
            b("unsupported", "odd", "runsc"),
            b("deleting", "going", "other"),
        ],
        &classes,
    )
    .into_iter()
    .map(|p| (p.binding.unwrap_or_default(), p.rule))
    .collect();
    let want: Vec<(String, String)> = [
        ("missing", "ClassMissing"),
        ("mismatch", "HandlerMismatch"),
        ("unsupported", "ClassUnsupported"),
        ("deleting", "ClassDeleting"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn a_class_still_used_by_a_rollback_revision_stays_needed() {
    let rs = crate::analysis::Workload {
        kind: crate::analysis::WorkloadKind::ReplicaSet,
        namespace: "team".into(),
        name: "web-old".into(),
        runtime_class: Some("gvisor".into()),
        replicas: 0,
        ready: 0,
        managed_by_berth: true,
        owner: None,
        is_rollback_revision: true,
        suspended: false,
        runtime_profile: Some("bw".into()),
        labels: Default::default(),
    };
    let workloads = vec![rs];
    let cluster = Cluster {
        workloads: &workloads,
        ..Cluster::default()
    };
    let p = plan(&[b("bw", "gvisor", "runsc")], &candidate(vec![]), &cluster);
    assert_eq!(p.classes.len(), 1);
    assert_eq!(p.classes[0].effect, ClassEffect::StillNeeded);
    assert_eq!(p.classes[0].rollback_revisions, 1);
    // Removing a binding nobody runs on is a safe change.
    assert_eq!(p.outcome, Outcome::Safe);
}

#[test]
fn revocations_sort_first_and_the_json_field_names_are_stable() {
    let p = Plan {
        api_version: PLAN_API_VERSION.into(),
        kind: PLAN_KIND.into(),
        source: "s".into(),
        sha256: None,
        outcome: Outcome::Safe,
        exit_code: 2,
        summary: Summary::default(),
        bindings: BindingChanges::default(),
        runtimes: vec![],
        classes: vec![],
        problems: vec![],
        warnings: vec![],
    };
    let v = serde_json::to_value(&p).expect("json");
    let keys: Vec<&String> = v.as_object().expect("object").keys().collect();
    assert_eq!(
        keys,
        [
            "apiVersion",
            "bindings",
            "classes",
            "exitCode",
            "kind",
            "outcome",
            "problems",
            "runtimes",
            "source",
            "summary",
            "warnings"
        ]
    );
    assert!(Effect::Revoke.rank() < Effect::Refuse.rank());
    assert!(Effect::Refuse.rank() < Effect::Grant.rank());
}

/// Every key of the JSON document, recursively.
fn keys(v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                out.insert(k.clone());
                keys(v, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

#[test]
fn every_json_field_is_documented() {
    // A plan using every part: a rolled Runtime that stalls, a revoked one,
    // added/removed/changed bindings, required and removable classes, a
    // reconcile problem, and a loader problem with a position.
    let namespaces = vec![ns()];
    let mut api = runtime("bw", "Granted", Some("gvisor"), 2);
    api.metadata.name = Some("api".into());
    api.spec.jobs = vec![crate::api::JobSpec {
        name: "migrate".into(),
        ..Default::default()
    }];
    let mut gone = runtime("old", "Granted", Some("gvisor"), 2);
    gone.spec.service = "other".into();
    let runtimes = vec![api, gone];
    let nodes = vec![node("n1", &["kata"]), node("n2", &["runsc"])];
    let classes = vec![class("gvisor", "runsc"), class("kata", "kata")];
    let mut old = b("old", "gvisor", "runsc");
    old.identity.service = "other".into();
    let cluster = Cluster {
        runtimes: &runtimes,
        namespaces: &namespaces,
        classes: &classes,
        nodes: &nodes,
        workloads: &[],
    };
    let mut p = plan(
        &[b("bw", "gvisor", "runsc"), old],
        &Candidate {
            source: "g.toml".into(),
            sha256: Some("ab".repeat(32)),
            bindings: Ok(vec![b("bw", "kata", "kata"), b("new", "nope", "x")]),
        },
        &cluster,
    );
    p.warnings.push("w".into());
    let err =
        crate::grants::LoadedGrants::from_unchecked_bytes("g.toml", b"schema_version = 1\nx = 1\n")
            .expect_err("invalid");
    p.problems.extend(loader_problems(&err));
    let mut found = BTreeSet::new();
    keys(&serde_json::to_value(&p).expect("json"), &mut found);
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/plan-grants.md"),
    )
    .expect("docs/plan-grants.md");
    let missing: Vec<&String> = found
        .iter()
        .filter(|k| !doc.contains(&format!("`{k}")) && !doc.contains(&format!(" {k}`")))
        .collect();
    assert!(missing.is_empty(), "undocumented plan fields: {missing:?}");
    // The document used every part.
    for k in [
        "stallNodes",
        "missingNodes",
        "fields",
        "line",
        "runtimeClass",
        "sha256",
        "batch",
    ] {
        assert!(found.contains(k), "{k} not exercised: {found:?}");
    }
}

/// What a grants change does to one-time Jobs and CronJobs (issue 27,
/// point 8): a roll keeps the Jobs that ran and moves the CronJobs' next
/// runs; a revocation keeps both as they are.
#[test]
fn jobs_and_cronjobs_are_told_what_happens() {
    let namespaces = vec![ns()];
    let mut rt = runtime("bw", "Granted", Some("gvisor"), 2);
    rt.spec.jobs = vec![
        crate::api::JobSpec {
            name: "migrate".into(),
            ..Default::default()
        },
        crate::api::JobSpec {
            name: "seed".into(),
            ..Default::default()
        },
    ];
    rt.spec.schedules = vec![crate::api::ScheduleSpec {
        name: "nightly".into(),
        schedule: "@daily".into(),
        ..Default::default()
    }];
    if let Some(st) = rt.status.as_mut() {
        st.jobs = vec![crate::api::JobRunStatus {
            name: "migrate".into(),
            job: "web-job-migrate".into(),
            template_hash: "0123456789abcdef".into(),
            uid: None,
        }];
    }
    let runtimes = vec![rt];
    let classes = vec![class("gvisor", "runsc"), class("kata", "kata")];
    let nodes = vec![node("n1", &["runsc", "kata"])];
    let cluster = Cluster {
        runtimes: &runtimes,
        namespaces: &namespaces,
        classes: &classes,
        nodes: &nodes,
        workloads: &[],
    };
    let rolled = plan(
        &[b("bw", "gvisor", "runsc")],
        &candidate(vec![b("bw", "kata", "kata")]),
        &cluster,
    );
    assert_eq!(rolled.runtimes[0].effect, Effect::Roll);
    assert_eq!(
        rolled.runtimes[0].batch,
        [
            "Job web-job-migrate: kept as it ran or runs, on its current class; not run again (one-time Jobs run once per definition: image, command, args)",
            "Job web-job-seed: not run yet; runs once on kata",
            "CronJob web-cron-nightly: next runs use kata; a run in progress finishes on its current class",
        ]
    );
    let revoked = plan(&[b("bw", "gvisor", "runsc")], &candidate(vec![]), &cluster);
    assert_eq!(revoked.runtimes[0].effect, Effect::Revoke);
    assert_eq!(
        revoked.runtimes[0].batch,
        [
            "Job web-job-migrate: kept as it ran or runs; not run again",
            "Job web-job-seed: not started while the Runtime is blocked",
            "CronJob web-cron-nightly: keeps its current template while the Runtime is blocked",
        ]
    );
}
