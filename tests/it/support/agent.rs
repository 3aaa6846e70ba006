//! Runs `berth-agent run` as a child process against the shared local
//! cluster, scoped to one test namespace (`--namespace`), with its own
//! Lease and grants file, and reads its `/metrics`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use berth_shared::api::Runtime;
use berth_tests::bench::process::{free_port, http_get};
use berth_tests::grants_file::{self, TestBinding};
use berth_tests::harness::{self, TestNamespace, wait_for_ok, wait_for_value};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Api;
use kube::api::PostParams;

/// Identity labels every agent test namespace carries.
pub const PROJECT: &str = "demo";
pub const ENVIRONMENT: &str = "production";
pub const APPLICATION: &str = "analytics";
pub const SERVICE: &str = "worker";

static N: AtomicU32 = AtomicU32::new(0);

/// The agent binary: `BERTH_AGENT_BIN`, or built once with cargo.
fn agent_binary() -> PathBuf {
    harness::workspace_binary("berth-agent", "berth-agent", "BERTH_AGENT_BIN")
}

fn private_dir(name: &str) -> PathBuf {
    let dir = berth_tests::harness::profile_dir()
        .parent()
        .expect("target")
        .join("berth-it")
        .join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    dir
}

/// One binding line set for the grants file.
pub fn binding(name: &str, class: &str, handler: &str) -> String {
    binding_for_service(name, class, handler, SERVICE)
}

/// [`binding`] for another service of the application: a second granted
/// Runtime in one namespace needs its own identity (one Runtime per
/// identity).
pub fn binding_for_service(name: &str, class: &str, handler: &str, service: &str) -> String {
    TestBinding {
        name,
        project: PROJECT,
        environment: ENVIRONMENT,
        application: APPLICATION,
        service,
        runtime_class: class,
        handler,
    }
    .toml()
}

/// Writes a grants file (0600 in a 0700 directory) with these bindings.
pub fn write_grants(bindings: &[String]) -> PathBuf {
    let dir = private_dir("grants");
    let n = N.fetch_add(1, Ordering::SeqCst);
    grants_file::write_private(
        &dir,
        &format!("grants-{n}.toml"),
        &grants_file::text(bindings),
    )
    .expect("write grants")
}

/// A running agent child process.
pub struct Agent {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
}

/// Options of one agent.
#[derive(Clone)]
pub struct AgentOpts<'a> {
    pub namespace: &'a str,
    pub grants: Option<&'a Path>,
    pub lease_name: String,
    pub identity: String,
    pub kubeconfig: Option<PathBuf>,
    /// `--resync-seconds` (2 unless a test needs another).
    pub resync_seconds: u64,
    /// `--cache-sync-timeout-seconds` (40 unless a test needs another).
    pub cache_sync_timeout_seconds: u64,
    /// `--grants-interval-seconds` (1 unless a test needs another).
    pub grants_interval_seconds: u64,
    /// `--canary-image`: the image canary Jobs run (issue 53). By default
    /// one no node has: canaries are on, as in production, and on the
    /// kwok cluster every node is skipped as simulated; the real-node tests
    /// give the agent's own image (`RealNodesInfo::agent_image`). `None`:
    /// `--canaries=off`.
    pub canary_image: Option<String>,
    /// More arguments of `berth-agent run` (e.g. `--watch-bare-pods`).
    pub extra_args: Vec<String>,
    /// More environment (set last: `RUST_LOG` here replaces the default).
    pub env: Vec<(String, String)>,
    /// `--http-addr`'s port (a free one unless a test needs the same port
    /// across a restart, as a scrape target does).
    pub http_port: Option<u16>,
    /// `--lease-duration-seconds`, `--lease-renew-seconds` (the retry
    /// period: a standby's looks at the Lease) and
    /// `--lease-renew-deadline-seconds`: (4, 1, 3) unless a test needs a
    /// standby that seldom looks.
    pub lease_seconds: (u64, u64, u64),
}

impl<'a> AgentOpts<'a> {
    pub fn new(namespace: &'a str, grants: Option<&'a Path>) -> Self {
        Self {
            namespace,
            grants,
            lease_name: format!("agent-{namespace}"),
            identity: format!("{namespace}-a"),
            kubeconfig: None,
            resync_seconds: 2,
            cache_sync_timeout_seconds: 40,
            grants_interval_seconds: 1,
            canary_image: Some("localhost/berth-agent:never-pulled".to_string()),
            extra_args: Vec::new(),
            env: Vec::new(),
            http_port: None,
            lease_seconds: (4, 1, 3),
        }
    }
}

impl Agent {
    /// Starts an agent and waits until it is ready (leader with synced caches).
    ///
    /// An agent whose caches do not sync gives up (non-zero exit, see
    /// `--cache-sync-timeout-seconds`); a real Deployment restarts it, and so
    /// does this helper, once.
    pub async fn start(opts: AgentOpts<'_>) -> Agent {
        let mut agent = Self::spawn(opts.clone()).await;
        if agent.wait_ready_or_exit().await {
            return agent;
        }
        eprintln!(
            "agent {} exited before it was ready; restarting it once. Its log:\n{}",
            opts.identity,
            agent.log_text()
        );
        let agent = Self::spawn(opts).await;
        agent.wait_ready().await;
        agent
    }

    /// Waits until the agent leads with synced caches (true) or has exited
    /// (false); panics after 90 s.
    async fn wait_ready_or_exit(&mut self) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        loop {
            if self.is_ready().await {
                return true;
            }
            if self.exit_code().is_some() {
                return false;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "agent not ready (leading with synced caches) within 90s; log:\n{}",
                self.log_text()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Starts an agent without waiting.
    pub async fn spawn(opts: AgentOpts<'_>) -> Agent {
        let bin = tokio::task::spawn_blocking(agent_binary)
            .await
            .expect("build");
        let kubeconfig = match opts.kubeconfig.clone() {
            Some(k) => k,
            None => tokio::task::spawn_blocking(|| harness::cluster().kubeconfig.clone())
                .await
                .expect("cluster"),
        };
        let port = opts.http_port.unwrap_or_else(free_port);
        let logs = private_dir("agent-logs");
        let log = logs.join(format!("{}.log", opts.identity));
        let file = std::fs::File::create(&log).expect("log");
        let mut cmd = Command::new(bin);
        cmd.arg("run")
            .args(["--http-addr", &format!("127.0.0.1:{port}")])
            .args(["--namespace", opts.namespace])
            .args(["--lease-namespace", opts.namespace])
            .args(["--lease-name", &opts.lease_name])
            .args(["--identity", &opts.identity])
            .args([
                "--lease-duration-seconds",
                &opts.lease_seconds.0.to_string(),
            ])
            .args(["--lease-renew-seconds", &opts.lease_seconds.1.to_string()])
            // The holder's gate closes 3 s after a renewal was sent, as it
            // did before the renew deadline was a flag (its default, two
            // thirds of the duration, would be 2.7 s).
            .args([
                "--lease-renew-deadline-seconds",
                &opts.lease_seconds.2.to_string(),
            ])
            .args(["--resync-seconds", &opts.resync_seconds.to_string()])
            .args([
                "--grants-interval-seconds",
                &opts.grants_interval_seconds.to_string(),
            ])
            .args([
                "--cache-sync-timeout-seconds",
                &opts.cache_sync_timeout_seconds.to_string(),
            ])
            .env("KUBECONFIG", &kubeconfig)
            .env_remove("BERTH_GRANTS_FILE")
            .env("RUST_LOG", "info,kube_runtime=debug")
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("log"))
            .stderr(file);
        if let Some(g) = opts.grants {
            cmd.arg("--grants-file").arg(g);
        }
        // Canary Jobs go to the test's namespace, as to the agent's own.
        cmd.args(["--canary-namespace", opts.namespace]);
        match &opts.canary_image {
            Some(image) => cmd.args(["--canary-image", image]),
            None => cmd.arg("--canaries=off"),
        };
        cmd.args(&opts.extra_args);
        cmd.envs(opts.env.iter().map(|(k, v)| (k, v)));
        let child = cmd.spawn().expect("spawn berth-agent");
        Agent { child, port, log }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// GET a path on the agent's HTTP port: (status code, body).
    pub async fn get(&self, path: &str) -> Option<(u16, String)> {
        http_get(self.port, path, Duration::from_secs(5)).await
    }

    /// Leads, with synced caches (`/health/leader`).
    pub async fn is_ready(&self) -> bool {
        matches!(self.get("/health/leader").await, Some((200, _)))
    }

    pub async fn wait_ready(&self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        while !self.is_ready().await {
            if std::time::Instant::now() > deadline {
                let requests: Vec<String> = self
                    .metrics()
                    .await
                    .lines()
                    .filter(|l| l.starts_with("berth_agent_api_requests_total"))
                    .map(str::to_string)
                    .collect();
                panic!(
                    "agent not ready (leading with synced caches) within 90s;\nrequests: {requests:#?}\nlog:\n{}",
                    self.log_text()
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The `/metrics` text.
    pub async fn metrics(&self) -> String {
        self.get("/metrics")
            .await
            .map(|(_, b)| b)
            .unwrap_or_default()
    }

    /// Whether the process has exited, and its code.
    pub fn exit_code(&mut self) -> Option<Option<i32>> {
        self.child.try_wait().ok().flatten().map(|s| s.code())
    }

    /// The process id (to signal it: SIGSTOP/SIGCONT in the fault suite).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill();
    }
}

pub use berth_tests::bench::process::{grant_status_writes, metric_sum, reconciles, writes};

/// A namespace with berth identity labels, CRDs installed, and a
/// RuntimeClass `<ns>-bounded` (handler `bounded-runc`).
pub async fn setup(prefix: &str) -> (TestNamespace, String) {
    let ns = TestNamespace::with_labels(
        prefix,
        &[
            ("berth.dev/project", PROJECT),
            ("berth.dev/environment", ENVIRONMENT),
        ],
    )
    .await;
    harness::install_crds(&ns.client).await;
    let class = format!("{}-bounded", ns.name);
    create_class(&ns.client, &class, "bounded-runc").await;
    (ns, class)
}

/// What most agent tests start from: [`setup`]'s namespace and class,
/// and a grants file granting the profile `<ns>-bw` that class.
pub struct Granted {
    pub ns: TestNamespace,
    pub class: String,
    /// The granted profile.
    pub bw: String,
    pub grants: PathBuf,
}

/// [`setup`] plus a grants file granting `<ns>-bw` the class.
pub async fn setup_granted(prefix: &str) -> Granted {
    let (ns, class) = setup(prefix).await;
    let bw = format!("{}-bw", ns.name);
    let grants = write_grants(&[binding(&bw, &class, "bounded-runc")]);
    Granted {
        ns,
        class,
        bw,
        grants,
    }
}

pub use berth_tests::harness::create_runtime_class as create_class;

/// The object `name` of kind `K` in the test's namespace, if it exists.
pub async fn get<K>(ns: &TestNamespace, name: &str) -> Option<K>
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    Api::<K>::namespaced(ns.client.clone(), &ns.name)
        .get_opt(name)
        .await
        .expect("get")
}

/// Creates a Runtime from a JSON spec (application/service/image defaulted).
pub async fn create_runtime(ns: &TestNamespace, name: &str, extra: serde_json::Value) -> Runtime {
    Api::<Runtime>::namespaced(ns.client.clone(), &ns.name)
        .create(&PostParams::default(), &runtime_of(ns, name, extra))
        .await
        .expect("create Runtime")
}

/// The Runtime [`create_runtime`] creates: the test service's, with the
/// spec fields of `extra` on top.
pub fn runtime_of(ns: &TestNamespace, name: &str, extra: serde_json::Value) -> Runtime {
    let mut spec = serde_json::json!({
        "application": APPLICATION,
        "service": SERVICE,
        "image": {"repository": "registry.invalid/berth/app", "tag": "1"},
        "replicas": 2,
    });
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            s.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(serde_json::json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Runtime",
        "metadata": {"name": name, "namespace": ns.name},
        "spec": spec,
    }))
    .expect("runtime")
}

pub fn condition<'a>(rt: &'a Runtime, type_: &str) -> Option<&'a Condition> {
    rt.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
}

/// Waits until the Runtime's condition `type_` has `status` (and `reason`
/// when given); returns the Runtime.
pub async fn wait_condition(
    ns: &TestNamespace,
    name: &str,
    type_: &str,
    status: &str,
    reason: Option<&str>,
) -> Runtime {
    wait_condition_within(ns, name, type_, status, reason, Duration::from_secs(120)).await
}

/// [`wait_condition`] within `timeout`: for a test whose point is that the
/// agent was woken, well before its resync would have come.
pub async fn wait_condition_within(
    ns: &TestNamespace,
    name: &str,
    type_: &str,
    status: &str,
    reason: Option<&str>,
    timeout: Duration,
) -> Runtime {
    let api: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    wait_for_ok(
        &format!("Runtime {name} {type_}={status} {reason:?}"),
        timeout,
        || {
            let api = api.clone();
            async move {
                let rt = api.get(name).await.map_err(|e| format!("GET: {e}"))?;
                match condition(&rt, type_) {
                    Some(c) if c.status == status && reason.is_none_or(|r| c.reason == r) => Ok(rt),
                    // A timeout says where the Runtime was stuck: every
                    // condition as last seen.
                    _ => Err(conditions_seen(&rt)),
                }
            }
        },
    )
    .await
}

/// The Runtime's conditions, one line each (`type=status reason: message`),
/// for a wait's timeout message.
fn conditions_seen(rt: &Runtime) -> String {
    let conditions = rt
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    if conditions.is_empty() {
        return "no status".to_string();
    }
    conditions
        .iter()
        .map(|c| format!("\n  {}={} {}: {}", c.type_, c.status, c.reason, c.message))
        .collect()
}

/// Waits until the agent has finished at least `more` reconciles beyond
/// what it had done when called (the agent resyncs every 2 s): a bounded
/// "the agent has looked again" instead of a sleep.
pub async fn wait_reconciles(agent: &Agent, more: f64) {
    let start = reconciles(&agent.metrics().await);
    wait_for_value(
        &format!("{more} more reconciles (from {start})"),
        Duration::from_secs(60),
        || async { (reconciles(&agent.metrics().await) >= start + more).then_some(()) },
    )
    .await;
}

/// The server pods of Runtime `name` (kwok removes deleted ones).
pub async fn server_pods(ns: &TestNamespace, name: &str) -> Vec<k8s_openapi::api::core::v1::Pod> {
    let selector = berth_shared::render::labels::selector(name)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    Api::<k8s_openapi::api::core::v1::Pod>::namespaced(ns.client.clone(), &ns.name)
        .list(&kube::api::ListParams::default().labels(&selector))
        .await
        .expect("list pods")
        .items
}

/// The Events (events.k8s.io) the agent raised on Runtime `name` with
/// `reason`.
pub async fn runtime_events(
    ns: &TestNamespace,
    name: &str,
    reason: &str,
) -> Vec<k8s_openapi::api::events::v1::Event> {
    Api::<k8s_openapi::api::events::v1::Event>::namespaced(ns.client.clone(), &ns.name)
        .list(&kube::api::ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().is_some_and(|r| {
                    r.kind.as_deref() == Some("Runtime") && r.name.as_deref() == Some(name)
                })
        })
        .collect()
}
