//! The plan from a store: the loaded bindings are the publisher's
//! RuntimeGrants only, and the text names every change (docs/plan-grants.md's
//! example is this test's output).

use berth_shared::plan::{Candidate, Outcome};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::node::v1::RuntimeClass;

use super::*;
use crate::store::Object;

fn obj<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).expect("fixture")
}

fn grant(name: &str, service: &str, class: &str, handler: &str, by: &str) -> Object {
    Object::from(obj::<berth_shared::api::RuntimeGrant>(serde_json::json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "RuntimeGrant",
        "metadata": {"name": name, "labels": {PUBLISHED_BY_LABEL: by}},
        "spec": {"project": "demo", "environment": "production", "application": "analytics",
                 "service": service, "runtimeClass": class, "handler": handler},
        "status": {"conditions": [{"type": "RestartRequired", "status": "True",
            "reason": "FileChanged", "message": "the grants file changed on disk",
            "lastTransitionTime": "2026-11-29T11:00:00Z"}]}
    })))
}

fn pending_binding(name: &str, service: &str, class: &str, handler: &str) -> serde_json::Value {
    serde_json::json!({"name": name, "project": "demo", "environment": "production",
        "application": "analytics", "service": service, "runtimeClass": class, "handler": handler})
}

fn runtime(name: &str, alias: &str, state: &str, class: Option<&str>, replicas: i32) -> Object {
    Object::from(obj::<berth_shared::api::Runtime>(serde_json::json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
        "metadata": {"name": name, "namespace": "analytics"},
        "spec": {"application": "analytics", "service": name, "runtimeProfile": alias,
                 "replicas": replicas, "image": {"repository": "r", "tag": "1"}},
        "status": {"profile": {"alias": alias, "state": state, "class": class},
                   "rollout": {"ready": replicas}}
    })))
}

/// The Runtime's Deployment, its pods on `class`.
fn deployment(name: &str, class: &str, replicas: i32) -> Object {
    Object::from(obj::<k8s_openapi::api::apps::v1::Deployment>(
        serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "analytics",
                         "labels": {"app.kubernetes.io/managed-by": "berth"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"runtimeClassName": class, "containers": [{"name": "app"}]}}},
            "status": {"replicas": replicas, "readyReplicas": replicas}
        }),
    ))
}

fn class(name: &str, handler: &str) -> Object {
    Object::from(obj::<RuntimeClass>(serde_json::json!({
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
        "metadata": {"name": name}, "handler": handler
    })))
}

fn node(name: &str, handlers: &[&str]) -> Object {
    let hs: Vec<serde_json::Value> = handlers
        .iter()
        .map(|h| serde_json::json!({"name": h}))
        .collect();
    Object::from(obj::<Node>(serde_json::json!({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "runtimeHandlers": hs}
    })))
}

fn binding(name: &str, service: &str, class: &str, handler: &str) -> GrantBinding {
    berth_shared::testkit::binding(
        name,
        berth_shared::testkit::identity("demo", "production", "analytics", service),
        class,
        handler,
    )
}

/// The agent's published pending file: `bounded-api` moves to kata,
/// `bounded-batch` is added, `legacy-worker` is dropped.
pub(crate) fn pending() -> Object {
    Object::from(obj::<berth_shared::api::PendingGrantsFile>(
        serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "PendingGrantsFile",
            "metadata": {"name": "berth-agent"},
            "spec": {"verdict": "Valid", "bindings": [
                pending_binding("bounded-api", "api", "kata", "kata-qemu"),
                pending_binding("bounded-batch", "batch", "bounded-worker", "bounded-runc"),
            ]}
        }),
    ))
}

fn store() -> Store {
    let mut s = Store::default();
    for o in objects() {
        s.apply(o);
    }
    s
}

/// A cluster with two granted Runtimes and one waiting, three classes and
/// three nodes (one lacking kata-qemu).
pub(crate) fn objects() -> Vec<Object> {
    vec![
        grant("legacy-worker", "worker", "gvisor", "runsc", "berth-agent"),
        grant("bounded-api", "api", "gvisor", "runsc", "berth-agent"),
        // Another agent's grant is not part of this agent's loaded file.
        grant("elsewhere", "other", "gvisor", "runsc", "other-agent"),
        runtime("worker", "legacy-worker", "Granted", Some("gvisor"), 3),
        runtime("api", "bounded-api", "Granted", Some("gvisor"), 2),
        runtime("batch", "bounded-batch", "NotGranted", None, 1),
        deployment("worker", "gvisor", 3),
        deployment("api", "gvisor", 2),
        class("gvisor", "runsc"),
        class("kata", "kata-qemu"),
        class("bounded-worker", "bounded-runc"),
        node("node-1", &["runc", "runsc", "kata-qemu", "bounded-runc"]),
        node("node-2", &["runc", "runsc", "kata-qemu", "bounded-runc"]),
        node("node-3", &["runc", "runsc", "bounded-runc"]),
        Object::from(obj::<k8s_openapi::api::core::v1::Namespace>(
            serde_json::json!({
                "metadata": {"name": "analytics", "labels": {
                    "berth.dev/project": "demo", "berth.dev/environment": "production"}}
            }),
        )),
    ]
}

#[test]
fn the_publishers_grants_are_the_loaded_bindings() {
    let names: Vec<String> = loaded_bindings(&store(), "berth-agent")
        .into_iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(names, ["bounded-api", "legacy-worker"]);
}

#[test]
fn the_plan_text_names_every_change() {
    let candidate = Candidate {
        source: "grants.toml".into(),
        sha256: None,
        bindings: Ok(vec![
            binding("bounded-api", "api", "kata", "kata-qemu"),
            binding("bounded-batch", "batch", "bounded-worker", "bounded-runc"),
        ]),
    };
    let plan = plan_from_store(&store(), "berth-agent", &candidate);
    assert_eq!(plan.outcome, Outcome::Disruptive);
    let text = plan_lines(&plan).join("\n");
    println!("{text}");
    for needle in [
        "Plan for grants.toml: Disruptive (exit 3)",
        "  + bounded-batch  demo/production/analytics/batch -> bounded-worker (handler bounded-runc)",
        "      runtime_class: gvisor -> kata",
        "  - legacy-worker",
        "analytics/worker [legacy-worker]: Granted gvisor -> Revoked gvisor; replicas 3 (3 ready): REVOKE",
        "analytics/api [bounded-api]: Granted gvisor -> Granted kata",
        "      stalls on 1 of 3 eligible node(s) lacking handler kata-qemu: node-3",
        "analytics/batch [bounded-batch]: NotGranted - -> Granted bounded-worker",
        "  gvisor STILL NEEDED",
        "  kata REQUIRED",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in:\n{text}");
    }
    // Revocations first.
    let revoke = text.find("REVOKE").expect("revoke");
    let roll = text.find("ROLL").expect("roll");
    assert!(revoke < roll);
    doc_example_is(&text);
}

/// docs/plan-grants.md shows this plan verbatim (`BERTH_UPDATE_GOLDEN=1`
/// rewrites it).
fn doc_example_is(text: &str) {
    const START: &str = "<!-- plan-example:start -->\n";
    const END: &str = "<!-- plan-example:end -->";
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/plan-grants.md");
    let doc = std::fs::read_to_string(&path).expect("docs/plan-grants.md");
    let (Some(a), Some(b)) = (doc.find(START), doc.find(END)) else {
        panic!("docs/plan-grants.md lacks the plan example markers");
    };
    let want = format!("```\n$ berth plan-grants grants.toml\n{text}\n```\n");
    if doc[a + START.len()..b] != want {
        if std::env::var_os("BERTH_UPDATE_GOLDEN").is_some() {
            let updated = format!("{}{START}{want}{}", &doc[..a], &doc[b..]);
            std::fs::write(&path, updated).expect("write docs/plan-grants.md");
        } else {
            panic!("docs/plan-grants.md's plan example differs; run with BERTH_UPDATE_GOLDEN=1");
        }
    }
}

#[test]
fn cluster_text_is_sanitized() {
    let candidate = Candidate {
        source: "evil\u{1b}[2J.toml".into(),
        sha256: None,
        bindings: Ok(vec![binding("x", "api", "gvisor", "runsc")]),
    };
    let plan = plan_from_store(&store(), "berth-agent", &candidate);
    let text = plan_lines(&plan).join("\n");
    assert!(!text.contains('\u{1b}'), "{text}");
}

#[test]
fn rollback_revisions_the_agent_lists_keep_a_class_needed() {
    let mut s = Store::default();
    for o in objects() {
        s.apply(o);
    }
    // kata is granted now; a StatefulSet's old revision still names it.
    s.apply(Object::from(obj::<berth_shared::api::RuntimeGrant>(serde_json::json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "RuntimeGrant",
        "metadata": {"name": "kata-db", "labels": {PUBLISHED_BY_LABEL: "berth-agent"}},
        "spec": {"project": "demo", "environment": "production", "application": "analytics",
                 "service": "db", "runtimeClass": "kata", "handler": "kata-qemu"},
        "status": {"retained": [{"kind": "ControllerRevision", "namespace": "analytics", "name": "db-7d9"}]}
    }))));
    let candidate = Candidate {
        source: "grants.toml".into(),
        sha256: None,
        bindings: Ok(vec![binding("bounded-api", "api", "gvisor", "runsc")]),
    };
    let plan = plan_from_store(&s, "berth-agent", &candidate);
    let kata = plan
        .classes
        .iter()
        .find(|c| c.name == "kata")
        .expect("kata no longer granted");
    assert_eq!(
        kata.effect,
        berth_shared::plan::ClassEffect::StillNeeded,
        "{kata:?}"
    );
    assert_eq!(kata.rollback_revisions, 1);
}
