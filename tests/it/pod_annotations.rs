//! Issue 52, item 6: `podMetadata.annotations` by allowlist
//! (`berth_shared::api::pod_annotations`). The annotations the node's
//! runtime and Kubernetes components read are refused by the CRD itself,
//! each with a message naming the key; tools' annotations pass. The CRD
//! of 2026-12-05 (`02e59ca`) accepted every key below but the AppArmor
//! one (observed with `kubectl create --dry-run=server` against that CRD
//! on 2026-12-06), and the agent rendered them onto the pods (the kata
//! kernel parameters among them).

use berth_shared::api::Runtime;
use berth_tests::harness::{TestNamespace, install_crds};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, PostParams};
use serde_json::json;

/// Keys that configure the node: the runtimes' own (no slash) and the
/// Kubernetes domains'.
const REFUSED: &[&str] = &[
    "io.katacontainers.config.hypervisor.kernel_params",
    "io.katacontainers.config.runtime.disable_guest_seccomp",
    "dev.gvisor.internal.nvproxy",
    "io.kubernetes.cri-o.userns-mode",
    "run.oci.keep_original_groups",
    "container.seccomp.security.alpha.kubernetes.io/app",
    "container.apparmor.security.beta.kubernetes.io/app",
    "cdi.k8s.io/gpu",
    "kubernetes.io/egress-bandwidth",
];

/// Tools' keys, and plain names.
const ALLOWED: &[&str] = &[
    "note",
    "prometheus.io/scrape",
    "sidecar.istio.io/inject",
    "karpenter.sh/do-not-disrupt",
    "example.com/owner",
];

fn runtime(key: &str) -> DynamicObject {
    serde_json::from_value::<DynamicObject>(json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Runtime",
        "metadata": {"name": "web"},
        "spec": {
            "application": "analytics",
            "service": "worker",
            "image": {"repository": "registry.example/analytics/worker", "tag": "1"},
            "podMetadata": {"annotations": {key: "x"}},
        },
    }))
    .expect("runtime")
}

#[tokio::test]
async fn runtime_and_kubernetes_annotations_are_refused_by_the_crd() {
    let ns = TestNamespace::new("pod-annot").await;
    install_crds(&ns.client).await;
    let api: Api<DynamicObject> = Api::namespaced_with(
        ns.client.clone(),
        &ns.name,
        &ApiResource::erase::<Runtime>(&()),
    );
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let mut passed = Vec::new();
    for key in REFUSED {
        match api.create(&dry, &runtime(key)).await {
            Ok(_) => passed.push(*key),
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 422, "{key}: {status:?}");
                assert!(
                    status
                        .message
                        .contains(&format!("podMetadata.annotations: key {key} ")),
                    "{key}: the refusal names the key: {}",
                    status.message
                );
            }
            Err(e) => panic!("{key}: {e}"),
        }
    }
    assert!(passed.is_empty(), "accepted by the CRD: {passed:#?}");
    for key in ALLOWED {
        let r: Result<_, _> = api.create(&dry, &runtime(key)).await;
        r.unwrap_or_else(|e| panic!("{key} refused: {e}"));
    }
}
