//! Unit tests of the pure plan and the review screen (TestBackend
//! snapshots, `BERTH_UPDATE_GOLDEN=1` rewrites them).

use berth_shared::api::Runtime;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use super::plan::{
    Action, Change, DiffLine, RuntimeContext, confirms, context_diff, diff_lines, plan_prune,
    plan_runtime,
};
use super::{Review, Verdict, lines};
use crate::fixtures;
use crate::model::{App, Effect, Msg, ReviewState, update};
use crate::retire::review::RetireError;
use crate::views::tests::{check_snapshot, render, snapshot};

const USER: &str = "alice@example.com";
const NOW: &str = "2026-11-29T12:00:00Z";
const CLASS: &str = "bounded-worker";

fn parse<K: serde::de::DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).unwrap_or_else(|e| panic!("fixture: {e}"))
}

fn runtime(profile: Option<&str>, state: &str, extra: Value) -> Runtime {
    let mut spec = json!({
        "application": "analytics", "service": "worker",
        "image": {"repository": "registry.example/analytics/worker", "tag": "1.4.2"},
        "replicas": 3,
    });
    if let Some(p) = profile {
        spec["runtimeProfile"] = json!(p);
    }
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            s.insert(k.clone(), v.clone());
        }
    }
    parse(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
        "metadata": {"name": "worker", "namespace": "demo-production", "uid": "uid-worker",
                     "resourceVersion": "42"},
        "spec": spec,
        "status": {
            "identity": {"project": "demo", "environment": "production",
                         "application": "analytics", "service": "worker"},
            "profile": {"alias": "bounded-worker", "class": CLASS, "handler": "bounded-runc", "state": state},
        },
    }))
}

fn template(class: Option<&str>) -> Value {
    let mut spec = json!({"containers": [{"name": "app", "image": "registry.example/analytics/worker:1.4.2"}]});
    if let Some(c) = class {
        spec["runtimeClassName"] = json!(c);
    }
    json!({"metadata": {"labels": {"berth.dev/runtime": "worker"},
                        "annotations": {"berth.dev/runtime-profile": "bounded-worker"}},
           "spec": spec})
}

fn deployment(revision: &str, class: Option<&str>) -> Deployment {
    parse(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "worker", "namespace": "demo-production", "uid": "uid-dep",
                     "annotations": {"deployment.kubernetes.io/revision": revision},
                     "ownerReferences": [{"apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
                        "name": "worker", "uid": "uid-worker", "controller": true}]},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"berth.dev/runtime": "worker"}},
                 "template": template(class)},
        "status": {"replicas": 3, "readyReplicas": 3},
    }))
}

fn replica_set(name: &str, revision: &str, replicas: i32, class: Option<&str>) -> ReplicaSet {
    parse(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "demo-production", "uid": format!("uid-{name}"),
                     "resourceVersion": "7",
                     "annotations": {"deployment.kubernetes.io/revision": revision},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                        "name": "worker", "uid": "uid-dep", "controller": true}]},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"berth.dev/runtime": "worker"}},
                 "template": template(class)},
    }))
}

fn pods(n: usize) -> Vec<Pod> {
    (0..n)
        .map(|i| {
            parse(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("worker-7d9f-{i}"), "namespace": "demo-production",
                             "labels": {"berth.dev/runtime": "worker", "app.kubernetes.io/component": "server"}},
                "spec": {"containers": [{"name": "app"}], "runtimeClassName": CLASS},
                "status": {"phase": "Running"},
            }))
        })
        .collect()
}

fn ctx() -> RuntimeContext {
    RuntimeContext {
        identity: None,
        deployment: Some(deployment("2", Some(CLASS))),
        pods: pods(3),
        jobs: Vec::new(),
    }
}

fn review(plan: super::Plan, verdict: Verdict) -> Review {
    Review {
        cluster: fixtures::cluster(),
        plan,
        user: USER.into(),
        verdict,
    }
}

fn text(r: &Review) -> String {
    lines(r)
        .into_iter()
        .map(|(_, l)| l)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn to_default_on_a_revoked_runtime_rolls_the_pods_off_the_class() {
    let rt = runtime(Some("bounded-worker"), "Revoked", json!({}));
    let plan = plan_runtime(&Action::ToDefault, &rt, &ctx(), USER, NOW).expect("plan");
    assert!(plan.nothing.is_none());
    assert!(
        plan.effects
            .iter()
            .any(|e| e == "Deployment worker: runtimeClassName bounded-worker → (default), 3 pod(s) will roll"),
        "{:?}",
        plan.effects
    );
    assert_eq!(plan.pods.len(), 3);
    assert!(
        plan.diff
            .contains(&DiffLine::Removed("runtimeProfile: bounded-worker".into()))
    );
    assert!(
        plan.diff.iter().any(
            |d| matches!(d, DiffLine::Added(s) if s.contains("retired-by: alice@example.com"))
        )
    );
    match &plan.change {
        Change::PatchRuntime { patch, name, .. } => {
            assert_eq!(name, "worker");
            assert_eq!(patch["spec"], json!({"runtimeProfile": null}));
            assert_eq!(patch["metadata"]["resourceVersion"], json!("42"));
            assert_eq!(
                patch["metadata"]["annotations"]["berth.dev/retired-by"],
                json!(USER)
            );
            assert_eq!(
                patch["metadata"]["annotations"]["berth.dev/retired-at"],
                json!(NOW)
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(!plan.action.destructive());
    assert!(confirms(&plan, "yes\n") && !confirms(&plan, "worker"));
    assert_eq!(plan.event_on.kind, "Runtime");
    assert!(plan.event_note(USER).contains("by alice@example.com"));
}

#[test]
fn to_default_without_a_profile_is_nothing_to_do() {
    let rt = runtime(None, "NotRequested", json!({}));
    let mut c = ctx();
    c.deployment = Some(deployment("2", None));
    let plan = plan_runtime(&Action::ToDefault, &rt, &c, USER, NOW).expect("plan");
    assert_eq!(plan.change, Change::Nothing);
    assert!(plan.nothing.is_some());
}

#[test]
fn suspend_stops_every_pod_and_suspends_schedules() {
    let rt = runtime(
        Some("bounded-worker"),
        "Revoked",
        json!({"schedules": [{"name": "nightly", "schedule": "0 3 * * *", "command": ["/bin/report"]}]}),
    );
    let plan = plan_runtime(&Action::Suspend, &rt, &ctx(), USER, NOW).expect("plan");
    assert!(
        plan.effects
            .iter()
            .any(|e| e.contains("replicas 3 → 0, 3 pod(s) will stop")),
        "{:?}",
        plan.effects
    );
    assert!(
        plan.effects
            .iter()
            .any(|e| e.contains("CronJob worker-cron-nightly: suspend → true")),
        "{:?}",
        plan.effects
    );
    assert!(
        plan.diff.contains(&DiffLine::Added("suspend: true".into())),
        "{:?}",
        plan.diff
    );
    match &plan.change {
        Change::PatchRuntime { patch, .. } => assert_eq!(patch["spec"], json!({"suspend": true})),
        other => panic!("{other:?}"),
    }
}

#[test]
fn delete_lists_what_garbage_collection_removes_and_needs_the_name() {
    let rt = runtime(Some("bounded-worker"), "Revoked", json!({}));
    let plan = plan_runtime(&Action::Delete, &rt, &ctx(), USER, NOW).expect("plan");
    assert!(plan.effects.iter().any(|e| e.trim() == "Deployment worker"));
    assert!(
        plan.effects
            .iter()
            .any(|e| e.trim() == "ConfigMap worker-config")
    );
    assert!(plan.diff.iter().all(|d| matches!(d, DiffLine::Removed(_))));
    assert!(
        matches!(&plan.change, Change::DeleteRuntime { uid, resource_version, .. } if uid == "uid-worker" && resource_version == "42")
    );
    assert!(!confirms(&plan, "yes") && !confirms(&plan, "") && confirms(&plan, "worker\n"));
}

#[test]
fn prune_deletes_only_old_scaled_down_revisions_with_the_class() {
    let dep = deployment("4", None);
    let sets = vec![
        replica_set("worker-aaa", "1", 0, Some(CLASS)),
        replica_set("worker-bbb", "2", 0, Some("other")),
        replica_set("worker-ccc", "3", 1, Some(CLASS)),
        replica_set("worker-ddd", "4", 3, None),
        replica_set("worker-eee", "5", 0, Some(CLASS)).clone(),
    ];
    // worker-eee claims another owner: never touched.
    let mut sets = sets;
    if let Some(refs) = sets[4].metadata.owner_references.as_mut() {
        refs[0].name = "someone-else".into();
    }
    let rt = runtime(None, "NotRequested", json!({}));
    let plan = plan_prune(CLASS, &dep, &sets, Some(&rt));
    match &plan.change {
        Change::DeleteReplicaSets { sets, .. } => {
            let names: Vec<&str> = sets.iter().map(|s| s.0.as_str()).collect();
            assert_eq!(names, ["worker-aaa"]);
            assert_eq!(sets[0].1, "uid-worker-aaa");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(plan.event_on.kind, "Runtime");
    assert!(
        plan.effects
            .iter()
            .any(|e| e.contains("still using bounded-worker: worker-ccc (still scaled up)")),
        "{:?}",
        plan.effects
    );
    assert!(confirms(&plan, "worker") && !confirms(&plan, "yes"));
    assert!(
        plan.event_note(USER)
            .contains("deleted ReplicaSet(s) worker-aaa")
    );

    // The current revision is never pruned, even at zero replicas.
    let dep = deployment("1", Some(CLASS));
    let plan = plan_prune(
        CLASS,
        &dep,
        &[replica_set("worker-aaa", "1", 0, Some(CLASS))],
        None,
    );
    assert_eq!(plan.change, Change::Nothing);
    assert!(plan.nothing.is_some());
    assert_eq!(plan.event_on.kind, "Deployment");
}

#[test]
fn diff_is_minimal_with_context() {
    let a: Vec<String> = ["a", "b", "c", "d", "e", "f", "g"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut b = a.clone();
    b[3] = "D".into();
    let d = context_diff(&diff_lines(&a, &b), 1);
    let t: Vec<String> = d.iter().map(|l| l.text()).collect();
    assert_eq!(
        t,
        [
            "  … 2 unchanged line(s)",
            "  c",
            "- d",
            "+ D",
            "  e",
            "  … 2 unchanged line(s)"
        ]
    );
}

#[test]
fn cluster_strings_are_sanitized_in_the_review() {
    let rt = runtime(
        Some("bounded-worker"),
        "Revoked",
        json!({"config": {"env": {"EVIL": "\u{1b}]52;c;aGk=\u{7}x\u{202e}y"}}}),
    );
    let plan = plan_runtime(&Action::Delete, &rt, &ctx(), "bob\u{1b}[2J", NOW).expect("plan");
    let r = review(plan, Verdict::Refused("denied \u{1b}[31mred\u{9b}".into()));
    let all = text(&r) + &r.plan.event_note("bob\u{1b}[2J");
    assert!(berth_shared::sanitize::is_clean_text(&all), "{all:?}");
}

// ------------------------------------------------------------ the TUI ---

fn app_with(state: ReviewState) -> App {
    let mut app = fixtures::app();
    app.ui.review = Some(state);
    app
}

fn ready(plan: super::Plan, verdict: Verdict, typed: &str) -> ReviewState {
    ReviewState::Ready {
        review: Box::new(review(plan, verdict)),
        typed: typed.into(),
    }
}

fn snap(name: &str, app: &mut App) {
    let buf = render(app, 120, 34);
    check_snapshot(name, &snapshot(&buf));
}

fn failed_webhook() -> Verdict {
    Verdict::Refused(
        "patching the Runtime: Internal error occurred: failed calling webhook \"runtimes.berth.dev\": failed to call webhook: Post \"https://127.0.0.1:40123/?timeout=10s\": dial tcp 127.0.0.1:40123: connect: connection refused".into(),
    )
}

#[test]
fn review_screens() {
    let rt = runtime(Some("bounded-worker"), "Revoked", json!({}));
    let to_default = plan_runtime(&Action::ToDefault, &rt, &ctx(), USER, NOW).expect("plan");
    snap(
        "review-to-default",
        &mut app_with(ready(to_default.clone(), Verdict::Accepted, "ye")),
    );
    let suspend = plan_runtime(&Action::Suspend, &rt, &ctx(), USER, NOW).expect("plan");
    snap(
        "review-suspend",
        &mut app_with(ready(suspend.clone(), Verdict::Accepted, "")),
    );
    snap(
        "review-webhook-refused",
        &mut app_with(ready(suspend, failed_webhook(), "")),
    );
    let delete = plan_runtime(&Action::Delete, &rt, &ctx(), USER, NOW).expect("plan");
    snap(
        "review-delete",
        &mut app_with(ready(delete, Verdict::Accepted, "work")),
    );
    let sets = vec![
        replica_set("worker-6b7c9", "1", 0, Some(CLASS)),
        replica_set("worker-5f8d2", "2", 0, Some(CLASS)),
        replica_set("worker-9a1e4", "3", 3, None),
    ];
    let prune = plan_prune(CLASS, &deployment("3", None), &sets, Some(&rt));
    snap(
        "review-prune",
        &mut app_with(ready(prune, Verdict::Accepted, "")),
    );
    snap(
        "review-forbidden",
        &mut app_with(ReviewState::Failed {
            cluster: fixtures::cluster(),
            title: Action::Suspend.title(),
            target: "demo-production/worker".into(),
            error: RetireError::Forbidden {
                user: "berth-restricted".into(),
                verb: "patch".into(),
                resource: "runtimes.berth.dev".into(),
                namespace: "demo-production".into(),
                reason: String::new(),
            }
            .to_string(),
        }),
    );
}

fn press(app: &mut App, code: KeyCode) -> Vec<Effect> {
    update(app, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

#[test]
fn keys_open_a_review_and_confirm_only_with_the_typed_name() {
    let mut app = fixtures::app();
    app.refresh();
    // Select the blocked `worker` Runtime.
    let idx = app
        .table(crate::model::ListView::Runtimes)
        .visible
        .iter()
        .position(|at| app.clusters[0].rows.runtimes[at.row as usize].name == "worker")
        .expect("worker row");
    app.ui.lists[0].selected = idx;
    let eff = press(&mut app, KeyCode::Char('D'));
    assert!(
        matches!(eff.as_slice(), [Effect::Review { action: Action::Delete, namespace, name, cluster, .. }] if namespace == "demo" && name == "worker" && *cluster == fixtures::cluster()),
        "{eff:?}"
    );
    let Some(Effect::Review { id, .. }) = eff.first() else {
        unreachable!()
    };
    assert!(matches!(app.ui.review, Some(ReviewState::Loading { .. })));
    let rt = runtime(Some("bounded-worker"), "Revoked", json!({}));
    let plan = plan_runtime(&Action::Delete, &rt, &ctx(), USER, NOW).expect("plan");
    // An answer to another request is not this review's.
    update(
        &mut app,
        Msg::Reviewed {
            id: id + 1,
            result: Box::new(Ok(review(plan.clone(), Verdict::Accepted))),
        },
    );
    assert!(matches!(app.ui.review, Some(ReviewState::Loading { .. })));
    update(
        &mut app,
        Msg::Reviewed {
            id: *id,
            result: Box::new(Ok(review(plan, Verdict::Accepted))),
        },
    );
    assert!(matches!(app.ui.review, Some(ReviewState::Ready { .. })));
    // Wrong text: not confirmed, nothing sent.
    for c in "yes".chars() {
        press(&mut app, KeyCode::Char(c));
    }
    assert!(press(&mut app, KeyCode::Enter).is_empty());
    assert!(
        app.ui
            .flash
            .as_deref()
            .is_some_and(|f| f.contains("type worker"))
    );
    for _ in 0..3 {
        press(&mut app, KeyCode::Backspace);
    }
    for c in "worker".chars() {
        press(&mut app, KeyCode::Char(c));
    }
    let eff = press(&mut app, KeyCode::Enter);
    assert!(
        matches!(eff.as_slice(), [Effect::Execute { .. }]),
        "{eff:?}"
    );
    assert!(matches!(app.ui.review, Some(ReviewState::Running { .. })));
    update(
        &mut app,
        Msg::Executed(Box::new(Ok(super::execute::Outcome {
            message: "done: delete the Runtime demo/worker".into(),
            event_error: None,
        }))),
    );
    assert!(app.ui.review.is_none());
    assert_eq!(
        app.ui.flash.as_deref(),
        Some("done: delete the Runtime demo/worker")
    );
}

#[test]
fn a_pasted_name_confirms_a_review() {
    let rt = runtime(Some("bounded-worker"), "Revoked", json!({}));
    let plan = plan_runtime(&Action::Delete, &rt, &ctx(), USER, NOW).expect("plan");
    let mut app = app_with(ready(plan, Verdict::Accepted, ""));
    // A copied name often carries a newline: it must not confirm by itself.
    assert!(update(&mut app, Msg::Paste("worker\n".into())).is_empty());
    assert!(
        matches!(&app.ui.review, Some(ReviewState::Ready { typed, .. }) if typed == "worker"),
        "{:?}",
        app.ui.review
    );
    let eff = press(&mut app, KeyCode::Enter);
    assert!(
        matches!(eff.as_slice(), [Effect::Execute { .. }]),
        "{eff:?}"
    );
    // While it runs, a paste changes nothing.
    update(&mut app, Msg::Paste("x".into()));
    assert!(
        matches!(&app.ui.review, Some(ReviewState::Running { typed, .. }) if typed == "worker")
    );
}

#[test]
fn refused_dry_run_cannot_be_confirmed_and_esc_cancels() {
    let rt = runtime(Some("bounded-worker"), "Revoked", json!({}));
    let plan = plan_runtime(&Action::Suspend, &rt, &ctx(), USER, NOW).expect("plan");
    let mut app = app_with(ready(plan, failed_webhook(), ""));
    for c in "yes".chars() {
        press(&mut app, KeyCode::Char(c));
    }
    assert!(press(&mut app, KeyCode::Enter).is_empty());
    assert!(app.ui.review.is_none(), "Enter closes a refused review");
    let mut app = app_with(ReviewState::Loading {
        id: 1,
        cluster: fixtures::cluster(),
        title: "suspend".into(),
        target: "demo/worker".into(),
    });
    press(&mut app, KeyCode::Esc);
    assert!(app.ui.review.is_none());
    // A late answer for a cancelled review is dropped.
    update(
        &mut app,
        Msg::Reviewed {
            id: 1,
            result: Box::new(Err(RetireError::ReadOnly)),
        },
    );
    assert!(app.ui.review.is_none());
}

#[test]
fn read_only_disables_every_action() {
    let mut app = fixtures::app();
    app.session.read_only = true;
    app.refresh();
    for k in ['R', 'S', 'D', 'P'] {
        let eff = press(&mut app, KeyCode::Char(k));
        assert!(eff.is_empty());
        assert!(app.ui.review.is_none());
        assert_eq!(
            app.ui.flash.as_deref(),
            Some("read-only: retirement actions are disabled (--read-only)")
        );
    }
    snap("review-read-only", &mut app);
}

#[test]
fn prune_key_on_a_runtime_uses_its_class_and_deployment() {
    let mut app = fixtures::app();
    app.refresh();
    let idx = app
        .table(crate::model::ListView::Runtimes)
        .visible
        .iter()
        .position(|at| app.clusters[0].rows.runtimes[at.row as usize].name == "worker")
        .expect("worker row");
    app.ui.lists[0].selected = idx;
    let eff = press(&mut app, KeyCode::Char('P'));
    assert!(
        matches!(eff.as_slice(), [Effect::Review { action: Action::Prune { class }, name, .. }] if class == "bounded-runc" && name == "worker"),
        "{eff:?}"
    );
}
