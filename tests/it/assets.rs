//! The shipped examples are real: every object in `assets/examples/` passes a
//! server-side dry-run create (schema, CEL rules and admission included), and
//! the example grants file passes the loader's content rules.

use std::path::{Path, PathBuf};

use berth_tests::harness::{TestNamespace, install_crds};
use kube::api::{DynamicObject, Patch, PatchParams, ValidationDirective};
use kube::core::GroupVersionKind;
use kube::discovery::{Scope, pinned_kind};
use kube::{Api, ResourceExt};
use serde::Deserialize;

fn assets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets")
}

/// Every YAML document of a file (multi-document aware), skipping empty ones.
pub fn yaml_documents(path: &Path) -> Vec<DynamicObject> {
    let text = std::fs::read_to_string(path).expect("read YAML");
    serde_yaml::Deserializer::from_str(&text)
        .filter_map(|doc| {
            let v = serde_yaml::Value::deserialize(doc).expect("valid YAML");
            (!v.is_null()).then(|| serde_yaml::from_value(v).expect("a Kubernetes object"))
        })
        .collect()
}

/// Server-side dry-run apply of `obj` (namespaced objects go to `ns`).
pub async fn dry_run_create(ns: &TestNamespace, obj: &DynamicObject) -> Result<(), String> {
    let types = obj.types.as_ref().ok_or("object without apiVersion/kind")?;
    let gvk = GroupVersionKind::try_from(types).map_err(|e| e.to_string())?;
    let (ar, caps) = pinned_kind(&ns.client, &gvk)
        .await
        .map_err(|e| format!("discovery of {gvk:?}: {e}"))?;
    let mut obj = obj.clone();
    let api: Api<DynamicObject> = match caps.scope {
        Scope::Namespaced => {
            obj.metadata.namespace = Some(ns.name.clone());
            Api::namespaced_with(ns.client.clone(), &ns.name, &ar)
        }
        Scope::Cluster => Api::all_with(ns.client.clone(), &ar),
    };
    // Server-side apply as a dry run with strict field validation: an
    // unknown or misspelt field is an error here, not silently pruned.
    let pp = PatchParams {
        dry_run: true,
        field_validation: Some(ValidationDirective::Strict),
        ..PatchParams::apply("berth-tests").force()
    };
    api.patch(&obj.name_any(), &pp, &Patch::Apply(&obj))
        .await
        .map(|_| ())
        .map_err(|e| format!("{} {}: {e}", gvk.kind, obj.name_any()))
}

#[tokio::test]
async fn every_example_object_passes_strict_server_side_dry_run() {
    let ns = TestNamespace::with_labels(
        "assets-ex",
        &[
            ("berth.dev/project", "demo"),
            ("berth.dev/environment", "production"),
        ],
    )
    .await;
    install_crds(&ns.client).await;
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut files: Vec<PathBuf> = ["examples", "demo"]
        .iter()
        .flat_map(|d| std::fs::read_dir(assets().join(d)).expect("assets dir"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for file in &files {
        for obj in yaml_documents(file) {
            checked += 1;
            if let Err(e) = dry_run_create(&ns, &obj).await {
                failures.push(format!("{}: {e}", file.display()));
            }
        }
    }
    assert!(checked >= 5, "examples found: {checked}");
    assert!(
        failures.is_empty(),
        "refused examples:\n{}",
        failures.join("\n")
    );
}

#[test]
fn example_grants_files_are_valid_and_name_the_example_classes() {
    for (grants, classes) in [
        ("examples/grants.toml", "examples/runtimeclasses.yaml"),
        ("demo/grants-initial.toml", "demo/10-runtimeclasses.yaml"),
        ("demo/grants.toml", "demo/10-runtimeclasses.yaml"),
    ] {
        check_grants_names_classes(grants, classes);
    }
}

fn check_grants_names_classes(grants: &str, classes: &str) {
    let bytes = std::fs::read(assets().join(grants)).expect("read");
    let bindings = berth_shared::grants::parse_bytes(&bytes)
        .unwrap_or_else(|problems| panic!("{grants} refused: {problems:?}"));
    let classes: Vec<String> = yaml_documents(&assets().join(classes))
        .into_iter()
        .map(|o| o.name_any())
        .collect();
    for b in &bindings {
        assert!(
            classes.contains(&b.runtime_class),
            "binding {} names class {} which runtimeclasses.yaml lacks",
            b.name,
            b.runtime_class
        );
    }
}
