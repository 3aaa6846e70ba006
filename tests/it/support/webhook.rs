//! A second process harness next to `support::agent`: `berth-agent
//! webhook` started on its own (self-signed, on loopback) and registered
//! with the API server, plus grants files and Runtime builders for the
//! admission tests.
//!
//! Every webhook started here only reviews namespaces carrying its own
//! `berth.dev/it-webhook` label, so tests running in parallel on the shared
//! cluster never see each other's admission.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use berth_shared::api::Runtime;
use berth_tests::bench::process::free_port;
use berth_tests::grants_file::{self, TestBinding};
use berth_tests::harness::{TestNamespace, cluster, install_crds};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::api::{ApiResource, DeleteParams, DynamicObject, PostParams};
use kube::{Api, Client};
use serde_json::json;

pub(crate) const AGENT_USER: &str = "system:serviceaccount:berth-system:berth-agent";
pub(crate) const WEBHOOK_LABEL: &str = "berth.dev/it-webhook";

static COUNTER: AtomicU32 = AtomicU32::new(0);

pub(crate) fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    )
}

// ---------------------------------------------------------------- agent ---

async fn agent_binary() -> PathBuf {
    tokio::task::spawn_blocking(|| {
        berth_tests::harness::workspace_binary("berth-agent", "berth-agent", "BERTH_AGENT_BIN")
    })
    .await
    .expect("build thread")
}

/// A grants file under a 0700 directory in the target dir (the loader
/// refuses /tmp and anything group/other-writable).
pub(crate) fn grants_file(id: &str, bindings: &[(&str, &str, &str)]) -> PathBuf {
    let with_service: Vec<_> = bindings
        .iter()
        .map(|&(name, class, handler)| (name, class, handler, "worker"))
        .collect();
    grants_file_with(id, &with_service)
}

/// [`grants_file`] with a service per binding (`name, class, handler, service`).
pub(crate) fn grants_file_with(id: &str, bindings: &[(&str, &str, &str, &str)]) -> PathBuf {
    let base = berth_tests::harness::profile_dir()
        .parent()
        .expect("target")
        .join("berth-it");
    // Directories of earlier test processes that are gone.
    if let Ok(entries) = std::fs::read_dir(&base) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("admission-")
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let dir = base.join(format!("admission-{}", std::process::id()));
    let tables: Vec<String> = bindings
        .iter()
        .map(|&(name, runtime_class, handler, service)| {
            TestBinding {
                name,
                project: "demo",
                environment: "production",
                application: "analytics",
                service,
                runtime_class,
                handler,
            }
            .toml()
        })
        .collect();
    grants_file::write_private(&dir, &format!("{id}.toml"), &grants_file::text(&tables))
        .expect("write grants")
}

/// What one `berth-agent webhook` process is started with.
pub(crate) struct WebhookProcess<'a> {
    pub grants: &'a Path,
    /// Where it listens, on loopback.
    pub port: u16,
    /// What it publishes in its configuration (its own address, or a
    /// shared one as a Service is).
    pub url: &'a str,
    pub config_name: &'a str,
    /// The value of the namespace label it reviews.
    pub selector: &'a str,
    pub extra: &'a [&'a str],
}

/// Starts `berth-agent webhook` (self-signed), its stderr to `log`.
pub(crate) fn spawn_webhook(
    bin: &Path,
    p: &WebhookProcess<'_>,
    log: std::fs::File,
) -> tokio::process::Child {
    tokio::process::Command::new(bin)
        .arg("webhook")
        .arg("--grants-file")
        .arg(p.grants)
        .args(["--listen", &format!("127.0.0.1:{}", p.port)])
        .args(["--self-signed", "--webhook-url", p.url])
        .args(["--webhook-config-name", p.config_name])
        .args([
            "--webhook-namespace-label",
            &format!("{WEBHOOK_LABEL}={}", p.selector),
        ])
        .args(p.extra)
        .env("KUBECONFIG", &cluster().kubeconfig)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .expect("spawn berth-agent webhook")
}

/// One running `berth-agent webhook` process.
pub(crate) struct Webhook {
    child: tokio::process::Child,
    pub(crate) config_name: String,
    log: PathBuf,
}

pub(crate) struct WebhookOptions<'a> {
    /// The value of the namespace label it reviews.
    pub selector: &'a str,
    pub grants: &'a Path,
    pub cert_validity: &'a str,
}

impl<'a> WebhookOptions<'a> {
    /// Reviewing namespaces labelled `selector` with `grants`, its
    /// certificate valid for the whole run (30 days).
    pub fn new(selector: &'a str, grants: &'a Path) -> Self {
        WebhookOptions {
            selector,
            grants,
            cert_validity: "30d",
        }
    }
}

impl Webhook {
    /// Starts the webhook, waits until the API server really calls it (an
    /// ungranted dry-run create in `probe_ns` is refused).
    pub(crate) async fn start(client: &Client, probe_ns: &str, opts: &WebhookOptions<'_>) -> Self {
        Self::start_with(client, probe_ns, opts, &[]).await
    }

    /// [`Webhook::start`] with more arguments (e.g. `--follow-lease`).
    pub(crate) async fn start_with(
        client: &Client,
        probe_ns: &str,
        opts: &WebhookOptions<'_>,
        extra: &[&str],
    ) -> Self {
        let bin = agent_binary().await;
        let port = free_port();
        let config_name = format!("berth-it-{}", opts.selector);
        let log = cluster()
            .dir
            .join(format!("webhook-{}-{port}.log", opts.selector));
        let log_file = std::fs::File::create(&log).expect("log file");
        let url = format!("https://127.0.0.1:{port}");
        let child = spawn_webhook(
            &bin,
            &WebhookProcess {
                grants: opts.grants,
                port,
                url: &url,
                config_name: &config_name,
                selector: opts.selector,
                extra: &[&["--cert-validity", opts.cert_validity], extra].concat(),
            },
            log_file,
        );
        let mut hook = Webhook {
            child,
            config_name,
            log,
        };
        let api = runtimes(client, probe_ns);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = hook.child.try_wait() {
                panic!(
                    "berth-agent webhook exited ({status}):\n{}",
                    hook.log_text()
                );
            }
            match api
                .create(
                    &dry_run(),
                    &runtime("probe", Some("probe-not-granted"), false),
                )
                .await
            {
                Err(kube::Error::Api(s)) if s.message.contains("NotGranted") => break,
                _ if Instant::now() > deadline => {
                    panic!("webhook never became reachable:\n{}", hook.log_text())
                }
                _ => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
        hook
    }

    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops the process (the configuration stays: fail closed).
    pub(crate) async fn stop(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }

    /// Stops it and removes its configuration.
    pub(crate) async fn remove(mut self, client: &Client) {
        self.stop().await;
        let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        let _ = api
            .delete(&self.config_name, &DeleteParams::default())
            .await;
    }
}

// ------------------------------------------------------------- fixtures ---

pub(crate) fn dry_run() -> PostParams {
    PostParams {
        dry_run: true,
        ..Default::default()
    }
}

pub(crate) fn runtimes(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &ApiResource::erase::<Runtime>(&()))
}

pub(crate) fn runtime(name: &str, profile: Option<&str>, suspend: bool) -> DynamicObject {
    runtime_for(name, "worker", profile, suspend)
}

pub(crate) fn runtime_for(
    name: &str,
    service: &str,
    profile: Option<&str>,
    suspend: bool,
) -> DynamicObject {
    let mut v = json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Runtime",
        "metadata": {"name": name},
        "spec": {
            "application": "analytics",
            "service": service,
            "image": {"repository": "registry.example/analytics/worker", "tag": "1.2.3"},
            "replicas": 1,
            "suspend": suspend,
        }
    });
    if let Some(p) = profile {
        v["spec"]["runtimeProfile"] = json!(p);
    }
    serde_json::from_value(v).expect("runtime")
}

pub(crate) async fn delete_classes(client: &Client, names: &[&str]) {
    let api: Api<RuntimeClass> = Api::all(client.clone());
    for n in names {
        let _ = api.delete(n, &DeleteParams::default()).await;
    }
}

/// A namespace with identity labels, reviewed by the webhook `selector`.
pub(crate) async fn namespace(prefix: &str, selector: &str, identity: bool) -> TestNamespace {
    let mut labels = vec![(WEBHOOK_LABEL, selector)];
    if identity {
        labels.push(("berth.dev/project", "demo"));
        labels.push(("berth.dev/environment", "production"));
    }
    let ns = TestNamespace::with_labels(prefix, &labels).await;
    install_crds(&ns.client).await;
    ns
}

/// The refusal's message; panics when the request was admitted.
pub(crate) fn refusal<T: std::fmt::Debug>(
    result: Result<T, kube::Error>,
    what: &str,
) -> (u16, String) {
    match result {
        Err(kube::Error::Api(s)) => (s.code, s.message.clone()),
        Err(e) => panic!("{what}: unexpected error {e}"),
        Ok(v) => panic!("{what}: admitted, expected a refusal: {v:?}"),
    }
}

// ---------------------------------------------------------------- tests ---
