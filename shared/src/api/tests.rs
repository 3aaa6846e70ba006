//! CRD drift check and client-side evaluation of every CEL rule.

use std::path::PathBuf;

use kube::core::cel::{Validator, compile_schema};
use serde_json::{Value, json};

use super::*;

/// Compares `content` with the committed file at `rel` (relative to the
/// workspace root). With `BERTH_UPDATE_GOLDEN=1` it rewrites the file instead,
/// so regenerating every golden file is one test run.
pub(crate) fn check_golden(rel: &str, content: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(rel);
    if std::env::var("BERTH_UPDATE_GOLDEN").as_deref() == Ok("1") {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("create golden dir");
        }
        std::fs::write(&path, content).expect("write golden file");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{rel}: {e}; run `BERTH_UPDATE_GOLDEN=1 cargo test -p berth-shared` to create it")
    });
    assert!(
        committed == content,
        "{rel} differs from the generated output; review and run `BERTH_UPDATE_GOLDEN=1 cargo test -p berth-shared`"
    );
}

#[test]
fn committed_crds_match_generated() {
    for (name, yaml) in crd_files().expect("crds serialize") {
        check_golden(&format!("assets/crds/{name}"), &yaml);
    }
}

#[test]
fn crd_names_and_scopes() {
    let crds = crds();
    let names: Vec<_> = crds
        .iter()
        .map(|c| c.metadata.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        names,
        [
            "runtimes.berth.dev",
            "runtimegrants.berth.dev",
            "pendinggrantsfiles.berth.dev"
        ]
    );
    assert_eq!(crds[0].spec.scope, "Namespaced");
    assert_eq!(crds[1].spec.scope, "Cluster");
    assert_eq!(crds[2].spec.scope, "Cluster");
    for crd in &crds {
        assert_eq!(
            crd.spec.names.categories.as_deref(),
            Some(&["berth".to_string()][..])
        );
    }
    // PendingGrantsFile has no status (its one writer sets the spec).
    for crd in &crds[..2] {
        let version = &crd.spec.versions[0];
        assert!(
            version
                .subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some()
        );
        assert!(
            version
                .additional_printer_columns
                .as_ref()
                .is_some_and(|c| c.len() >= 6)
        );
    }
    assert_eq!(
        crds[0].spec.names.short_names.as_deref(),
        Some(&["rt".to_string()][..])
    );
    assert_eq!(
        crds[1].spec.names.short_names.as_deref(),
        Some(&["rtg".to_string()][..])
    );
    assert_eq!(
        crds[2].spec.names.short_names.as_deref(),
        Some(&["pgf".to_string()][..])
    );
    let yaml = crds_yaml().expect("yaml");
    assert_eq!(yaml.matches("---\n").count(), 3);
}

#[test]
fn schemas_are_structural_without_unknown_fields() {
    for crd in crds() {
        let mut value = serde_json::to_value(&crd).expect("json");
        // The one exception: `status.lastApplied` holds parts of
        // Kubernetes objects as the agent applied them, written only by
        // the agent through the status subresource (nothing a user sends
        // is kept there).
        if let Some(status) = value
            .pointer_mut("/spec/versions/0/schema/openAPIV3Schema/properties/status/properties")
            .and_then(Value::as_object_mut)
        {
            status.remove("lastApplied");
        }
        let json = value.to_string();
        assert!(
            !json.contains("x-kubernetes-preserve-unknown-fields"),
            "{json}"
        );
        // Structural schemas forbid these composition keywords at the top of
        // a property (kube's rewriter must have hoisted them).
        for keyword in [
            "\"anyOf\"",
            "\"oneOf\"",
            "\"allOf\"",
            "\"$ref\"",
            "\"additionalProperties\":true",
        ] {
            assert!(
                !json.contains(keyword),
                "{} contains {keyword}",
                crd.metadata.name.unwrap_or_default()
            );
        }
    }
}

fn runtime_schema() -> Value {
    let crd = Runtime::crd();
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .expect("schema");
    serde_json::to_value(schema).expect("schema json")
}

#[test]
fn every_cel_rule_compiles() {
    for crd in crds() {
        let schema = serde_json::to_value(
            crd.spec.versions[0]
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .expect("schema"),
        )
        .expect("json");
        let compiled = compile_schema(&schema);
        assert!(
            !compiled.has_errors(),
            "{:?}",
            compiled.compilation_errors()
        );
    }
}

/// A complete, valid Runtime as the apiserver would see it.
fn valid() -> Value {
    json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Runtime",
        "metadata": {"name": "worker", "namespace": "demo"},
        "spec": {
            "application": "analytics",
            "service": "worker",
            "image": {"repository": "registry.example/analytics/worker", "tag": "1.2.3"},
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": 1, "memory": "256Mi"}},
            "config": {"env": {"LOG_LEVEL": "info", "_X1": ""}},
            "jobs": [{"name": "migrate"}, {"name": "seed"}],
            "schedules": [{"name": "nightly", "schedule": "0 3 * * *"}, {"name": "hourly", "schedule": "@hourly"}],
            "podMetadata": {"labels": {"team": "data", "example.com/tier": "backend"}, "annotations": {"example.com/note": "x y"}},
            "scheduling": {"nodeSelector": {"kubernetes.io/os": "linux"}},
            "networkPolicy": {"enabled": true, "ingress": [{"podLabels": {"app": "gateway"}}, {"namespaceLabels": {"kubernetes.io/metadata.name": "edge"}}]},
            "autoscaling": {"enabled": true, "minReplicas": 2, "maxReplicas": 5}
        }
    })
}

/// Applies `change` to a copy of [`valid`] and returns the CEL messages.
fn errors_after(change: impl FnOnce(&mut Value), old: Option<&Value>) -> Vec<String> {
    let mut object = valid();
    change(&mut object);
    match Validator::new().validate(&runtime_schema(), &object, old) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.iter().map(|e| e.to_string()).collect(),
    }
}

fn assert_rejected(errors: &[String], needle: &str) {
    assert!(
        errors.iter().any(|e| e.contains(needle)),
        "expected {needle:?} in {errors:?}"
    );
}

#[test]
fn valid_runtime_passes() {
    assert_eq!(errors_after(|_| {}, None), Vec::<String>::new());
    let old = valid();
    assert_eq!(errors_after(|_| {}, Some(&old)), Vec::<String>::new());
    // The smallest accepted spec.
    let minimal = json!({"spec": {"application": "a", "service": "b", "image": {"repository": "r", "digest": format!("sha256:{}", "a".repeat(64))}}});
    assert!(
        Validator::new()
            .validate(&runtime_schema(), &minimal, None)
            .is_ok()
    );
}

#[test]
fn image_needs_exactly_one_of_tag_and_digest() {
    let both = errors_after(
        |o| o["spec"]["image"]["digest"] = json!(format!("sha256:{}", "0".repeat(64))),
        None,
    );
    assert_rejected(&both, "exactly one of image.tag or image.digest");
    let neither = errors_after(|o| o["spec"]["image"] = json!({"repository": "r"}), None);
    assert_rejected(&neither, "exactly one of image.tag or image.digest");
}

#[test]
fn application_and_service_are_immutable() {
    let old = valid();
    let changed = errors_after(|o| o["spec"]["application"] = json!("other"), Some(&old));
    assert_rejected(&changed, "application is immutable");
    let changed = errors_after(|o| o["spec"]["service"] = json!("other"), Some(&old));
    assert_rejected(&changed, "service is immutable");
    // On create there is no old object, so any value is fine.
    assert!(errors_after(|o| o["spec"]["application"] = json!("other"), None).is_empty());
}

#[test]
fn network_policy_enabled_without_peers_is_valid_and_means_deny_all() {
    // Enabled with no peers is a deliberate "admit nothing" (render makes
    // a policy with no ingress rule), not an error.
    for np in [
        json!({"enabled": true}),
        json!({"enabled": true, "ingress": []}),
    ] {
        assert!(errors_after(|o| o["spec"]["networkPolicy"] = np.clone(), None).is_empty());
    }
    assert!(
        errors_after(
            |o| o["spec"]["networkPolicy"] = json!({"enabled": false}),
            None
        )
        .is_empty()
    );
    let empty_peer = errors_after(
        |o| o["spec"]["networkPolicy"]["ingress"] = json!([{}]),
        None,
    );
    assert_rejected(&empty_peer, "needs namespaceLabels or podLabels");
}

#[test]
fn autoscaling_bounds_and_cpu_request() {
    let inverted = errors_after(
        |o| o["spec"]["autoscaling"] = json!({"enabled": true, "minReplicas": 5, "maxReplicas": 3}),
        None,
    );
    assert_rejected(&inverted, "maxReplicas must be at least minReplicas");
    // maxReplicas 1 is below the default minimum of 2.
    let below_default = errors_after(
        |o| o["spec"]["autoscaling"] = json!({"enabled": true, "maxReplicas": 1}),
        None,
    );
    assert_rejected(&below_default, "maxReplicas must be at least minReplicas");
    assert!(
        errors_after(
            |o| o["spec"]["autoscaling"] =
                json!({"enabled": true, "minReplicas": 3, "maxReplicas": 3}),
            None
        )
        .is_empty()
    );

    let no_cpu = errors_after(
        |o| o["spec"]["resources"]["requests"] = json!({"memory": "1Gi"}),
        None,
    );
    assert_rejected(&no_cpu, "requires resources.requests.cpu");
    let no_resources = errors_after(
        |o| {
            o["spec"]
                .as_object_mut()
                .map(|s| s.remove("resources"))
                .map(drop)
                .unwrap_or(())
        },
        None,
    );
    assert_rejected(&no_resources, "requires resources.requests.cpu");
    // Off, no CPU request is needed.
    assert!(
        errors_after(
            |o| {
                o["spec"]["autoscaling"]["enabled"] = json!(false);
                o["spec"]["resources"] = json!({});
            },
            None
        )
        .is_empty()
    );
}

#[test]
fn job_and_schedule_names_are_unique() {
    let jobs = errors_after(
        |o| o["spec"]["jobs"] = json!([{"name": "a"}, {"name": "a"}]),
        None,
    );
    assert_rejected(&jobs, "job names must be unique");
    let schedules = errors_after(
        |o| {
            o["spec"]["schedules"] =
                json!([{"name": "n", "schedule": "@daily"}, {"name": "n", "schedule": "@hourly"}])
        },
        None,
    );
    assert_rejected(&schedules, "schedule names must be unique");
}

#[test]
fn map_keys_are_checked() {
    let env = errors_after(|o| o["spec"]["config"]["env"] = json!({"1BAD": "x"}), None);
    assert_rejected(&env, "environment variable names");
    let env = errors_after(
        |o| o["spec"]["config"]["env"] = json!({"BAD-NAME": "x"}),
        None,
    );
    assert_rejected(&env, "environment variable names");
    let label_key = errors_after(
        |o| o["spec"]["podMetadata"]["labels"] = json!({"-bad": "x"}),
        None,
    );
    assert_rejected(&label_key, "valid label keys");
    let label_value = errors_after(
        |o| o["spec"]["podMetadata"]["labels"] = json!({"good": "not ok"}),
        None,
    );
    assert_rejected(&label_value, "valid label values");
    let node_selector = errors_after(
        |o| o["spec"]["scheduling"]["nodeSelector"] = json!({"a/b/c": "x"}),
        None,
    );
    assert_rejected(&node_selector, "valid label keys");
    let annotation = errors_after(
        |o| o["spec"]["podMetadata"]["annotations"] = json!({"bad key": "x"}),
        None,
    );
    assert_rejected(&annotation, "valid annotation keys");
    let peer = errors_after(
        |o| o["spec"]["networkPolicy"]["ingress"][0]["podLabels"] = json!({"app": "bad value!"}),
        None,
    );
    assert_rejected(&peer, "valid label values");
}

#[test]
fn quantities_are_checked() {
    let bad = errors_after(
        |o| o["spec"]["resources"]["requests"]["cpu"] = json!("lots"),
        None,
    );
    assert_rejected(&bad, "resource quantity");
    let negative = errors_after(
        |o| o["spec"]["resources"]["limits"]["memory"] = json!("-1Gi"),
        None,
    );
    assert_rejected(&negative, "resource quantity");
    assert!(
        errors_after(
            |o| o["spec"]["resources"]["requests"]["cpu"] = json!(2),
            None
        )
        .is_empty()
    );
    assert!(
        errors_after(
            |o| o["spec"]["resources"]["requests"]["cpu"] = json!("1.5"),
            None
        )
        .is_empty()
    );
}

#[test]
fn runtime_round_trips_through_serde() {
    let runtime: Runtime = serde_json::from_value(valid()).expect("deserialize");
    assert_eq!(
        runtime.spec.image.reference(),
        "registry.example/analytics/worker:1.2.3"
    );
    assert_eq!(
        runtime
            .spec
            .resources
            .as_ref()
            .and_then(|r| r.limits.as_ref())
            .and_then(|l| l.cpu.as_ref())
            .map(|q| q.0.as_str()),
        Some("1")
    );
    let back = serde_json::to_value(&runtime).expect("serialize");
    let again: Runtime = serde_json::from_value(back).expect("deserialize again");
    assert_eq!(runtime, again);
}

#[test]
fn pod_metadata_cannot_weaken_the_contract_or_break_controllers() {
    for (key, field) in [
        (
            "container.apparmor.security.beta.kubernetes.io/app",
            "annotations",
        ),
        ("seccomp.security.alpha.kubernetes.io/pod", "annotations"),
        ("controller-uid", "labels"),
        ("job-name", "labels"),
        ("batch.kubernetes.io/job-name", "labels"),
        ("pod-template-hash", "labels"),
        ("app.kubernetes.io/managed-by", "labels"),
    ] {
        let errors = errors_after(
            |o| o["spec"]["podMetadata"] = json!({field: {key: "x"}}),
            None,
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains(&format!("podMetadata.{field}"))),
            "{key}: {errors:?}"
        );
    }
    let fine = errors_after(
        |o| {
            o["spec"]["podMetadata"] = json!({
                "labels": {"team": "a", "app.kubernetes.io/version": "1"},
                "annotations": {"prometheus.io/scrape": "true"}})
        },
        None,
    );
    assert!(fine.is_empty(), "{fine:?}");
}

/// The CRD's CEL rule and `pod_annotations::allowed` are the same rule:
/// every key the unit list refuses is refused by the CEL rule with a
/// message naming it, every key it allows is accepted.
#[test]
fn the_pod_annotation_allowlist_is_one_rule_in_cel_and_rust() {
    use super::pod_annotations::{allowed, tests_keys};
    for key in tests_keys::REFUSED
        .iter()
        .chain(tests_keys::ALLOWED)
        .copied()
    {
        let errors = errors_after(
            |o| o["spec"]["podMetadata"] = json!({"annotations": {key: "x"}}),
            None,
        );
        if allowed(key) {
            assert!(errors.is_empty(), "{key}: {errors:?}");
        } else {
            assert_rejected(&errors, &format!("podMetadata.annotations: key {key} "));
        }
    }
}
