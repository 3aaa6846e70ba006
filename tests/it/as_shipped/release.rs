//! The chart's release on the real-node cluster: installed as an operator
//! does (docs/install.md), and removed again whatever the test's outcome,
//! so that the real-node tests after it find the cluster as before (no
//! cluster-wide agent, webhook or admission policy of this release).

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};

use crate::chart::{chart_arg, helm, stdout_of};

/// The release's name and namespace, as in docs/install.md: every object
/// then has the kustomize base's name (`berth-agent`, …).
pub(crate) const RELEASE: &str = "berth";
pub(crate) const NAMESPACE: &str = "berth-system";
pub(crate) const AGENT: &str = "berth-agent";

/// The installed release; dropping it uninstalls it, deletes what the
/// agent made outside the chart (its ValidatingWebhookConfiguration, in
/// the self-signed mode) and the namespace, and uncordons the node.
pub(crate) struct Release {
    pub(crate) kubeconfig: PathBuf,
    pub(crate) node: String,
}

/// `helm ARGS --kubeconfig KUBECONFIG`, off the async runtime; its output.
pub(crate) async fn helm_in_cluster(kubeconfig: &std::path::Path, args: Vec<String>) -> String {
    let kubeconfig = kubeconfig.display().to_string();
    tokio::task::spawn_blocking(move || {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend(["--kubeconfig", &kubeconfig]);
        stdout_of(&format!("helm {args:?}"), &helm(&all))
    })
    .await
    .expect("helm")
}

/// `helm install berth CHART -n berth-system` with the image by digest and
/// `extra` values (the node's taint and label), every other value its
/// default: replicas 2, the PDB, self-signed webhook, canaries, both
/// admission policies, the CRDs. `--take-ownership`: the CRDs may already
/// be there, applied by the real-node tests (`harness::install_crds`), as
/// on a cluster where berth was installed by other means before.
pub(crate) async fn install(
    kubeconfig: &std::path::Path,
    image: &super::Image,
    extra: &[String],
) -> String {
    install_chart(kubeconfig, Path::new(&chart_arg()), image, extra).await
}

/// [`install`] of the chart at `chart` (the previous release's, for the
/// upgrade test).
pub(crate) async fn install_chart(
    kubeconfig: &std::path::Path,
    chart: &Path,
    image: &super::Image,
    extra: &[String],
) -> String {
    let mut args = vec!["install".to_string(), RELEASE.to_string()];
    args.push(chart.display().to_string());
    args.extend(["--namespace", NAMESPACE, "--take-ownership"].map(String::from));
    args.extend(image_values(image));
    args.extend(extra.iter().cloned());
    helm_in_cluster(kubeconfig, args).await
}

/// `helm upgrade berth CHART -n berth-system` with the image by digest and
/// `extra`, as an operator upgrades: the same values given again (not
/// `--reuse-values`, which would keep an older chart's defaults).
pub(crate) async fn upgrade(
    kubeconfig: &std::path::Path,
    chart: &Path,
    image: &super::Image,
    extra: &[String],
) -> String {
    let mut args = vec!["upgrade".to_string(), RELEASE.to_string()];
    args.push(chart.display().to_string());
    args.extend(["--namespace", NAMESPACE].map(String::from));
    args.extend(image_values(image));
    args.extend(extra.iter().cloned());
    helm_in_cluster(kubeconfig, args).await
}

/// `helm rollback berth REVISION -n berth-system`.
pub(crate) async fn rollback(kubeconfig: &std::path::Path, revision: u32) -> String {
    let args = [
        "rollback",
        RELEASE,
        &revision.to_string(),
        "--namespace",
        NAMESPACE,
    ]
    .map(String::from)
    .to_vec();
    helm_in_cluster(kubeconfig, args).await
}

/// The chart's image values: repository, tag and digest.
fn image_values(image: &super::Image) -> Vec<String> {
    vec![
        "--set".to_string(),
        format!("image.repository={}", image.repository),
        "--set".to_string(),
        format!("image.tag={}", image.tag),
        "--set".to_string(),
        format!("image.digest={}", image.digest),
    ]
}

impl Release {
    async fn remove(&self) {
        let client = berth_tests::localcluster::health::client_from_kubeconfig(&self.kubeconfig)
            .await
            .expect("client");
        let uncordon = serde_json::json!({"spec": {"unschedulable": false}});
        let _ = Api::<Node>::all(client.clone())
            .patch(
                &self.node,
                &PatchParams::default(),
                &Patch::Merge(&uncordon),
            )
            .await;
        let kubeconfig = self.kubeconfig.display().to_string();
        let out = tokio::task::spawn_blocking(move || {
            helm(&[
                "uninstall",
                RELEASE,
                "--namespace",
                NAMESPACE,
                "--wait",
                "--timeout",
                "120s",
                "--kubeconfig",
                &kubeconfig,
            ])
        })
        .await
        .expect("helm uninstall");
        if !out.status.success() {
            eprintln!(
                "as_shipped: helm uninstall: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // The agent manages its webhook configuration itself in the
        // self-signed mode: the chart does not own it (docs/admission.md).
        let _ = Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .delete(AGENT, &DeleteParams::default())
            .await;
        let namespaces: Api<Namespace> = Api::all(client);
        let _ = namespaces.delete(NAMESPACE, &DeleteParams::default()).await;
        let deadline = std::time::Instant::now() + Duration::from_secs(180);
        while std::time::Instant::now() < deadline {
            if matches!(namespaces.get_opt(NAMESPACE).await, Ok(None)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        eprintln!("as_shipped: namespace {NAMESPACE} still there after 180 s");
    }
}

impl Drop for Release {
    fn drop(&mut self) {
        block_on_aside(self.remove());
    }
}

/// Runs `work` to its end from a `Drop`, which cannot await and runs on
/// the test's runtime: on a thread of its own with a runtime of its own.
pub(crate) fn block_on_aside<F>(work: F) -> F::Output
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    std::thread::scope(|s| {
        s.spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(work)
        })
        .join()
        .expect("the work aside")
    })
}
