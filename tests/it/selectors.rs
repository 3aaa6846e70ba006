//! Selectors that would match everything are refused (issue 27, point 3):
//! by the CRD itself, so with no agent running at all (none runs in these
//! tests), for a create and for an update, through the API as another
//! field manager and through `kubectl apply`; each refusal names the field.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use berth_shared::api::Runtime;
use berth_tests::harness::{TestNamespace, cluster, install_crds};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn runtime(name: &str, peers: Value) -> Value {
    json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Runtime",
        "metadata": {"name": name},
        "spec": {
            "application": "analytics",
            "service": name,
            "image": {"repository": "registry.example/analytics/worker", "tag": "1.2.3"},
            "networkPolicy": {"enabled": true, "ingress": peers},
        }
    })
}

fn intruder() -> PostParams {
    PostParams {
        field_manager: Some("intruder".into()),
        ..Default::default()
    }
}

fn api(ns: &TestNamespace) -> Api<DynamicObject> {
    Api::namespaced_with(
        ns.client.clone(),
        &ns.name,
        &ApiResource::erase::<Runtime>(&()),
    )
}

/// Asserts a 422 whose message names `field` and says `why`.
fn assert_refused(case: &str, result: Result<DynamicObject, kube::Error>, field: &str, why: &str) {
    match result {
        Ok(_) => panic!("{case}: accepted; expected a refusal naming {field}"),
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{case}: {status:?}");
            assert!(
                status.message.contains(field) && status.message.contains(why),
                "{case}: expected {field:?} and {why:?} in {:?}",
                status.message
            );
        }
        Err(e) => panic!("{case}: unexpected error {e}"),
    }
}

const EVERY_NAMESPACE: &str = "an empty selector matches every namespace; name at least one label";
const EVERY_POD: &str = "an empty selector matches every pod; name at least one label";
const EVERY_TAINT: &str = "a toleration without a key tolerates every taint";

#[tokio::test]
async fn match_everything_selectors_are_refused_naming_the_field() {
    let ns = TestNamespace::new("sel-refuse").await;
    install_crds(&ns.client).await;
    let api = api(&ns);
    let named_ns = json!({"kubernetes.io/metadata.name": "gateway"});
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "namespaceLabels: {}",
            json!([{"namespaceLabels": {}}]),
            "spec.networkPolicy.ingress[0].namespaceLabels",
            EVERY_NAMESPACE,
        ),
        (
            "namespaceLabels: {} with named pods (any namespace may label a pod)",
            json!([{"podLabels": {"app": "gateway"}}, {"namespaceLabels": {}, "podLabels": {"app": "x"}}]),
            "spec.networkPolicy.ingress[1].namespaceLabels",
            EVERY_NAMESPACE,
        ),
        (
            "podLabels: {} alone",
            json!([{"podLabels": {}}]),
            "spec.networkPolicy.ingress[0].podLabels",
            EVERY_POD,
        ),
        (
            "podLabels: {} with a named namespace",
            json!([{"namespaceLabels": named_ns, "podLabels": {}}]),
            "spec.networkPolicy.ingress[0].podLabels",
            EVERY_POD,
        ),
    ];
    for (case, peers, field, why) in cases {
        let obj: DynamicObject = serde_json::from_value(runtime("open", peers)).expect("object");
        assert_refused(case, api.create(&intruder(), &obj).await, field, why);
    }
    // A disabled policy is checked too: enabling it later must not be what
    // opens it.
    let mut disabled = runtime("off", json!([{"namespaceLabels": {}}]));
    disabled["spec"]["networkPolicy"]["enabled"] = json!(false);
    let obj: DynamicObject = serde_json::from_value(disabled).expect("object");
    assert_refused(
        "disabled policy",
        api.create(&intruder(), &obj).await,
        "spec.networkPolicy.ingress[0].namespaceLabels",
        EVERY_NAMESPACE,
    );
    // A toleration without a key tolerates every taint: nodes set apart
    // for others (a dedicated sandbox pool) would take the pods.
    let mut tolerant = runtime("tolerant", json!([{"podLabels": {"app": "gateway"}}]));
    tolerant["spec"]["scheduling"] = json!({"tolerations": [{"operator": "Exists"}]});
    let obj: DynamicObject = serde_json::from_value(tolerant).expect("object");
    assert_refused(
        "keyless toleration",
        api.create(&intruder(), &obj).await,
        "spec.scheduling.tolerations",
        EVERY_TAINT,
    );

    // Named selectors pass.
    let ok: DynamicObject = serde_json::from_value(runtime(
        "named",
        json!([{"namespaceLabels": named_ns, "podLabels": {"app": "gateway"}}, {"podLabels": {"app": "x"}}]),
    ))
    .expect("object");
    api.create(&PostParams::default(), &ok)
        .await
        .expect("named selectors are accepted");

    // An update by another field manager that empties a selector is
    // refused too (server-side apply and a merge patch).
    let apply = Patch::Apply(json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Runtime",
        "spec": {"networkPolicy": {"enabled": true, "ingress": [{"namespaceLabels": {}}]}},
    }));
    assert_refused(
        "server-side apply by intruder",
        api.patch("named", &PatchParams::apply("intruder").force(), &apply)
            .await,
        "spec.networkPolicy.ingress[0].namespaceLabels",
        EVERY_NAMESPACE,
    );
    let merge = Patch::Merge(json!({"spec": {"networkPolicy": {"ingress": [{"podLabels": {}}]}}}));
    let params = PatchParams {
        field_manager: Some("intruder".into()),
        ..Default::default()
    };
    assert_refused(
        "merge patch by intruder",
        api.patch("named", &params, &merge).await,
        "spec.networkPolicy.ingress[0].podLabels",
        EVERY_POD,
    );
}

/// What a person types: `kubectl apply` of a Runtime with
/// `namespaceLabels: {}` is refused, the message naming the field.
#[tokio::test]
async fn kubectl_apply_of_an_open_peer_is_refused() {
    let ns = TestNamespace::new("sel-kubectl").await;
    install_crds(&ns.client).await;
    let log_dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let kubectl = berth_tests::localcluster::binaries::Binaries::resolve(log_dir)
        .expect("control plane binaries")
        .path("kubectl")
        .expect("kubectl")
        .to_path_buf();
    let kubeconfig = tokio::task::spawn_blocking(|| cluster().kubeconfig.clone())
        .await
        .expect("cluster");
    let yaml =
        yaml_serde::to_string(&runtime("open", json!([{"namespaceLabels": {}}]))).expect("yaml");
    let mut child = Command::new(&kubectl)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "apply",
            "--field-manager=intruder",
            "-n",
            &ns.name,
            "-f",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl apply");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(yaml.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("kubectl");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "kubectl apply succeeded: {stderr}");
    assert!(
        stderr.contains("spec.networkPolicy.ingress[0].namespaceLabels")
            && stderr.contains(EVERY_NAMESPACE),
        "{stderr}"
    );
    // Nothing was stored.
    assert!(
        api(&ns).get_opt("open").await.expect("get").is_none(),
        "the refused Runtime exists"
    );
}
