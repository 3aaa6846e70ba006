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

/// `kubectl kustomize assets/` with the kubectl built for the local cluster.
pub fn kustomize_assets() -> String {
    kustomize(&assets())
}

/// `kubectl kustomize` of an overlay made here, outside `assets/` (kustomize
/// refuses an overlay inside its base): the base plus the components
/// `assets/<component>`, as docs/install.md tells operators to write it.
pub fn kustomize_with_components(name: &str, components: &[&str]) -> String {
    let base = assets().canonicalize().expect("assets");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("overlay-{name}"));
    std::fs::create_dir_all(&dir).expect("overlay dir");
    // kustomize takes relative paths only: up to / from the overlay, then
    // down to the base.
    let dir = dir.canonicalize().expect("overlay dir");
    let up = "../".repeat(dir.components().count().saturating_sub(1));
    let rel = |p: &Path| format!("{up}{}", p.display().to_string().trim_start_matches('/'));
    let components: String = components
        .iter()
        .map(|c| format!("  - {}\n", rel(&base.join(c))))
        .collect();
    std::fs::write(
        dir.join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - {}\ncomponents:\n{components}",
            rel(&base)
        ),
    )
    .expect("write kustomization");
    kustomize(&dir)
}

fn kustomize(dir: &Path) -> String {
    let log_dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let bins = berth_tests::localcluster::binaries::Binaries::resolve(log_dir)
        .expect("control plane binaries (kubectl)");
    let out = std::process::Command::new(bins.path("kubectl").expect("kubectl"))
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("run kubectl kustomize");
    assert!(
        out.status.success(),
        "kubectl kustomize failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every YAML document of a file (multi-document aware), skipping empty ones.
pub fn yaml_documents(path: &Path) -> Vec<DynamicObject> {
    let text = std::fs::read_to_string(path).expect("read YAML");
    yaml_serde::Deserializer::from_str(&text)
        .filter_map(|doc| {
            let v = yaml_serde::Value::deserialize(doc).expect("valid YAML");
            (!v.is_null()).then(|| yaml_serde::from_value(v).expect("a Kubernetes object"))
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
        (
            "demo/grants-second-cluster.toml",
            "demo/10-runtimeclasses.yaml",
        ),
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

/// The kustomize base installs cleanly: its namespaced objects are applied
/// for real in a namespace that enforces the `restricted` Pod Security
/// Standard (so the agent's pods must meet it), its cluster-scoped objects
/// are applied as a server-side dry run (installing the RuntimeGrant policy
/// for real would refuse the other tests' writes), and the agent Deployment
/// rolls out on the kwok nodes.
#[tokio::test]
async fn kustomize_base_installs_under_restricted_pod_security() {
    use k8s_openapi::api::apps::v1::Deployment;

    let ns = TestNamespace::with_labels(
        "assets-kz",
        &[
            ("pod-security.kubernetes.io/enforce", "restricted"),
            ("pod-security.kubernetes.io/enforce-version", "latest"),
        ],
    )
    .await;
    let text = kustomize_assets();
    let objs: Vec<DynamicObject> = yaml_serde::Deserializer::from_str(&text)
        .map(|d| {
            yaml_serde::from_value(yaml_serde::Value::deserialize(d).expect("yaml"))
                .expect("object")
        })
        .collect();
    assert!(
        objs.len() >= 15,
        "kustomize output has {} objects",
        objs.len()
    );

    let mut failures = Vec::new();
    for obj in &objs {
        let types = obj.types.as_ref().expect("types");
        if types.kind == "Namespace" {
            continue; // the test namespace stands in for berth-system
        }
        let gvk = GroupVersionKind::try_from(types).expect("gvk");
        let (ar, caps) = pinned_kind(&ns.client, &gvk).await.expect("discovery");
        let mut obj = obj.clone();
        let (api, dry_run): (Api<DynamicObject>, bool) = match caps.scope {
            Scope::Namespaced => {
                obj.metadata.namespace = Some(ns.name.clone());
                (
                    Api::namespaced_with(ns.client.clone(), &ns.name, &ar),
                    false,
                )
            }
            Scope::Cluster => (Api::all_with(ns.client.clone(), &ar), true),
        };
        let pp = PatchParams {
            dry_run,
            field_validation: Some(ValidationDirective::Strict),
            ..PatchParams::apply("berth-tests").force()
        };
        if let Err(e) = api.patch(&obj.name_any(), &pp, &Patch::Apply(&obj)).await {
            failures.push(format!("{} {}: {e}", types.kind, obj.name_any()));
        }
    }
    assert!(failures.is_empty(), "refused:\n{}", failures.join("\n"));

    // Control: the namespace really enforces `restricted` — a pod without
    // the hardening is refused.
    let bare: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "unhardened"},
        "spec": {"containers": [{"name": "c", "image": "registry.invalid/x:1"}]}
    }))
    .expect("pod");
    let refused = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(ns.client.clone(), &ns.name)
        .create(&Default::default(), &bare)
        .await
        .expect_err("restricted Pod Security refuses an unhardened pod");
    assert!(refused.to_string().contains("restricted"), "{refused}");

    let deployments: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    berth_tests::harness::wait_for(
        "the agent Deployment to roll out under restricted Pod Security",
        std::time::Duration::from_secs(90),
        || {
            let deployments = deployments.clone();
            async move {
                deployments
                    .get_opt("berth-agent")
                    .await
                    .ok()
                    .flatten()
                    .and_then(|d| d.status)
                    .is_some_and(|s| s.ready_replicas == Some(2) && s.updated_replicas == Some(2))
            }
        },
    )
    .await;
}
