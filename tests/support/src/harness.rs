//! The integration-test harness: one local control plane per test binary,
//! started lazily by the first test that asks for it and stopped when the
//! test process exits (even after a panic or abort), and a fresh namespace
//! plus a `kube::Client` per test.
//!
//! The cluster runs in a child `berth-localcluster up --exit-on-stdin-eof`
//! process whose stdin is a pipe held here for the life of the process:
//! however the test binary ends, the kernel closes the pipe and the cluster
//! stops every component it started.

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};

use berth_localcluster::health::client_from_kubeconfig;

/// The shared cluster of this test process.
#[derive(Debug)]
pub struct SharedCluster {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub restricted_kubeconfig: PathBuf,
    // Held, never written: closing it (at process exit) stops the cluster.
    _stdin: Mutex<ChildStdin>,
    _child: Mutex<Child>,
}

static CLUSTER: OnceLock<Result<SharedCluster, String>> = OnceLock::new();

/// How long the first test waits for the cluster (binaries are normally
/// prebuilt by `.ci/run`; a cold build inside the test takes much longer).
const START_TIMEOUT: Duration = Duration::from_secs(1800);

/// The `berth-localcluster` binary these tests start clusters with: a
/// crate of its own (what the demo builds), built once per test process,
/// like the agent and the console (BERTH_LOCALCLUSTER_BIN to skip).
pub fn localcluster_binary() -> Result<PathBuf, String> {
    Ok(workspace_binary(
        "berth-localcluster",
        "berth-localcluster",
        "BERTH_LOCALCLUSTER_BIN",
    ))
}

fn start() -> Result<SharedCluster, String> {
    start_named(&format!("cluster-{}", std::process::id()), &[])
}

/// A control plane of its own for one test, stopped when the value is
/// dropped (its stdin pipe closes). For measurements that read the
/// apiserver's own counters (`apiserver_request_total` has no client
/// label): in the shared cluster, other tests' writes would count too.
pub fn private_cluster(name: &str) -> SharedCluster {
    private_cluster_with(name, &[])
}

/// [`private_cluster`] with extra `berth-localcluster up` arguments (for
/// example `--nodes 50`).
pub fn private_cluster_with(name: &str, args: &[&str]) -> SharedCluster {
    match start_named(&format!("cluster-{}-{name}", std::process::id()), args) {
        Ok(c) => c,
        Err(e) => panic!("private local cluster {name} unavailable: {e}"),
    }
}

fn start_named(dir_name: &str, extra_args: &[&str]) -> Result<SharedCluster, String> {
    let bin = localcluster_binary()?;
    let target = profile_dir()
        .parent()
        .ok_or("no target directory")?
        .join("berth-it");
    let dir = target.join(dir_name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    remove_stale_dirs(&target);
    let log_path = dir.join("localcluster.log");
    let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
    let log2 = log.try_clone().map_err(|e| e.to_string())?;
    let mut child = Command::new(&bin)
        .args(["up", "--exit-on-stdin-eof", "--dir"])
        .arg(&dir)
        .args(extra_args)
        .stdin(Stdio::piped())
        .stdout(log)
        .stderr(log2)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", bin.display()))?;
    let stdin = child.stdin.take().ok_or("no stdin pipe")?;
    let kubeconfig = dir.join("kubeconfig");
    let deadline = Instant::now() + START_TIMEOUT;
    while !kubeconfig.is_file() {
        if let Ok(Some(status)) = child.try_wait() {
            let out = std::fs::read_to_string(&log_path).unwrap_or_default();
            return Err(format!(
                "berth-localcluster exited ({status}) before the cluster was ready; {}:\n{out}",
                log_path.display()
            ));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(format!(
                "the local cluster was not ready within {}s; see {}",
                START_TIMEOUT.as_secs(),
                log_path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(SharedCluster {
        restricted_kubeconfig: dir.join("kubeconfig-restricted"),
        dir,
        kubeconfig,
        _stdin: Mutex::new(stdin),
        _child: Mutex::new(child),
    })
}

/// Removes cluster directories of test processes that no longer exist.
fn remove_stale_dirs(target: &Path) {
    let Ok(entries) = std::fs::read_dir(target) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(rest) = name.strip_prefix("cluster-")
            && let Some(pid) = rest.split('-').next()
            && !Path::new("/proc").join(pid).exists()
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The cluster of this test process, started on first use. Panics with the
/// start-up error (naming the component and its log) if it cannot start.
pub fn cluster() -> &'static SharedCluster {
    match CLUSTER.get_or_init(start) {
        Ok(c) => c,
        Err(e) => panic!("local cluster unavailable: {e}"),
    }
}

static REAL_NODE_CLUSTER: OnceLock<Result<SharedCluster, String>> = OnceLock::new();

/// The cluster with a real node (`--real-nodes 1`, no kwok node), shared by
/// the real-node tests and started on first use; a cluster of its own, so
/// that its taint, its restarts of containerd and its pods never meet the
/// other tests. `None`, after printing why, where this machine cannot run
/// a kubelet (not root, no cgroup filesystem, …); a failure to start for
/// any other reason panics.
pub fn real_node_cluster() -> Option<&'static SharedCluster> {
    if let Some(reason) = berth_localcluster::realnode::unsupported_reason() {
        eprintln!("SKIPPED: this machine cannot run a real node: {reason}");
        return None;
    }
    let started = REAL_NODE_CLUSTER.get_or_init(|| {
        // The agent's own image, for its canary Jobs (issue 53).
        let agent = workspace_binary("berth-agent", "berth-agent", "BERTH_AGENT_BIN");
        start_named(
            &format!("cluster-{}-real", std::process::id()),
            &[
                // Who wrote what at rest, by the apiserver's own account
                // (real_node_canary::).
                "--audit",
                "--nodes",
                "0",
                "--real-nodes",
                "1",
                "--agent-binary",
                &agent.display().to_string(),
            ],
        )
    });
    match started {
        Ok(c) => Some(c),
        Err(e) => panic!("local cluster with a real node unavailable: {e}"),
    }
}

impl SharedCluster {
    /// Restarts one component (`etcd`, `kube-apiserver`, …) of this
    /// cluster and waits until it serves again (at most `timeout`).
    /// Blocking: call it through `spawn_blocking` from async code.
    pub fn restart(&self, component: &str, timeout: Duration) -> Result<(), String> {
        self.control("restart", component, timeout)
    }

    /// Stops one component and keeps it stopped (the cluster stays up
    /// without it) until [`SharedCluster::start`]. Blocking.
    pub fn stop(&self, component: &str, timeout: Duration) -> Result<(), String> {
        self.control("stop", component, timeout)
    }

    /// Starts a component stopped by [`SharedCluster::stop`] again and
    /// waits until it serves (at most `timeout`). Blocking.
    pub fn start(&self, component: &str, timeout: Duration) -> Result<(), String> {
        self.control("start", component, timeout)
    }

    /// Sends `VERB COMPONENT TOKEN` to the cluster's launcher and waits
    /// for its answer.
    fn control(&self, verb: &str, component: &str, timeout: Duration) -> Result<(), String> {
        use std::io::Write;
        static TOKENS: AtomicU32 = AtomicU32::new(0);
        let token = format!("{verb}-{}", TOKENS.fetch_add(1, Ordering::SeqCst));
        let answer = self.dir.join("control").join(&token);
        {
            let mut stdin = berth_shared::sync::lock(&self._stdin);
            writeln!(stdin, "{verb} {component} {token}").map_err(|e| e.to_string())?;
            stdin.flush().map_err(|e| e.to_string())?;
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(text) = std::fs::read_to_string(&answer) {
                return if text.trim() == "ok" {
                    Ok(())
                } else {
                    Err(text)
                };
            }
            if Instant::now() > deadline {
                return Err(format!("{verb} {component}: no answer within {timeout:?}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The apiserver's address (`host:port`) from the kubeconfig.
    pub fn apiserver_addr(&self) -> std::net::SocketAddr {
        let text = std::fs::read_to_string(&self.kubeconfig).expect("kubeconfig");
        text.lines()
            .find_map(|l| l.trim().strip_prefix("server: https://"))
            .and_then(|a| a.trim().parse().ok())
            .expect("server address in the kubeconfig")
    }

    /// The berth-localcluster process id (for the parent-death test).
    pub fn pid(&self) -> u32 {
        berth_shared::sync::lock(&self._child).id()
    }

    /// A cluster-admin client of this cluster.
    pub async fn admin_client(&self) -> Client {
        client_from_kubeconfig(&self.kubeconfig)
            .await
            .expect("admin client from kubeconfig")
    }
}

/// Writes to `out` one kubeconfig holding each member's current context
/// under the name given with it (its cluster and user renamed alike), so
/// that one file reaches several clusters (`berth --context a,b`). A
/// kubeconfig may be named twice, as two contexts of one cluster.
pub fn merge_kubeconfigs(out: &Path, members: &[(&str, &Path)]) -> Result<(), String> {
    use kube::config::Kubeconfig;
    let mut merged = Kubeconfig::default();
    for (name, path) in members {
        let kc = Kubeconfig::read_from(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let current = kc.current_context.clone().ok_or("no current context")?;
        let mut context = kc
            .contexts
            .iter()
            .find(|c| c.name == current)
            .cloned()
            .ok_or("no such context")?;
        let inner = context.context.as_mut().ok_or("an empty context")?;
        let mut cluster = kc
            .clusters
            .iter()
            .find(|c| c.name == inner.cluster)
            .cloned()
            .ok_or("no such cluster")?;
        let user = inner.user.clone().unwrap_or_default();
        let mut auth = kc
            .auth_infos
            .iter()
            .find(|a| a.name == user)
            .cloned()
            .ok_or("no such user")?;
        context.name = (*name).to_string();
        cluster.name = (*name).to_string();
        auth.name = (*name).to_string();
        inner.cluster = (*name).to_string();
        inner.user = Some((*name).to_string());
        merged.clusters.push(cluster);
        merged.auth_infos.push(auth);
        merged.contexts.push(context);
    }
    merged.current_context = members.first().map(|(n, _)| (*n).to_string());
    let text = yaml_serde::to_string(&merged).map_err(|e| e.to_string())?;
    std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))
}

/// Sum of the apiserver's `apiserver_request_total` samples whose labels
/// satisfy `filter` (the label text between the braces).
pub async fn apiserver_requests(client: &Client, filter: impl Fn(&str) -> bool) -> f64 {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("metrics request");
    let text = client
        .request_text(request)
        .await
        .expect("apiserver /metrics");
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("apiserver_request_total{")?;
            let (labels, value) = rest.rsplit_once("} ")?;
            filter(labels).then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

/// Whether an `apiserver_request_total` label set is a write to something
/// the agent writes: Runtimes and RuntimeGrants (any subresource), its
/// managed kinds (not their status or scale, which controllers write) and
/// events.k8s.io Events (the agent's recorder; kube-controller-manager's
/// HPA warnings go to core Events).
pub fn agent_kind_write(labels: &str) -> bool {
    let has = |k: &str, v: &str| labels.contains(&format!("{k}=\"{v}\""));
    let write = [
        "POST",
        "PUT",
        "PATCH",
        "APPLY",
        "DELETE",
        "DELETECOLLECTION",
    ]
    .iter()
    .any(|v| has("verb", v));
    let no_sub = has("subresource", "");
    let kind = has("group", "berth.dev")
        || (has("group", "events.k8s.io") && has("resource", "events"))
        || (has("group", "")
            && ["configmaps", "serviceaccounts", "services"]
                .iter()
                .any(|r| has("resource", r)))
        || (no_sub
            && [
                ("apps", "deployments"),
                ("policy", "poddisruptionbudgets"),
                ("networking.k8s.io", "networkpolicies"),
                ("autoscaling", "horizontalpodautoscalers"),
                ("batch", "jobs"),
                ("batch", "cronjobs"),
            ]
            .iter()
            .any(|(g, r)| has("group", g) && has("resource", r)));
    write && kind
}

/// A client with cluster-admin rights.
pub async fn admin_client() -> Client {
    let path = tokio::task::spawn_blocking(|| cluster().kubeconfig.clone())
        .await
        .expect("cluster start-up thread");
    client_from_kubeconfig(&path)
        .await
        .expect("admin client from kubeconfig")
}

/// A client for `berth-restricted` (group `berth:restricted`), which has no
/// rights until a test binds some.
pub async fn restricted_client() -> Client {
    let path = tokio::task::spawn_blocking(|| cluster().restricted_kubeconfig.clone())
        .await
        .expect("cluster start-up thread");
    client_from_kubeconfig(&path)
        .await
        .expect("restricted client from kubeconfig")
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A fresh namespace for one test, with an admin client.
#[derive(Clone)]
pub struct TestNamespace {
    pub client: Client,
    pub name: String,
}

impl TestNamespace {
    /// Creates `PREFIX-<pid>-<n>` and waits for its default ServiceAccount
    /// (pods are refused before it exists).
    pub async fn new(prefix: &str) -> Self {
        Self::with_labels(prefix, &[]).await
    }

    /// Like [`TestNamespace::new`], with extra namespace labels (for example
    /// berth's identity labels).
    pub async fn with_labels(prefix: &str, labels: &[(&str, &str)]) -> Self {
        let client = admin_client().await;
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let name = format!("{prefix}-{}-{n}", std::process::id());
        Self::create(client, name, labels).await
    }

    /// Creates namespace `name` with these labels through `client` (for
    /// example a private cluster's) and waits for its default
    /// ServiceAccount.
    pub async fn create(client: Client, name: String, labels: &[(&str, &str)]) -> Self {
        let mut all =
            std::collections::BTreeMap::from([("berth.dev/test".to_string(), "true".to_string())]);
        for (k, v) in labels {
            all.insert((*k).to_string(), (*v).to_string());
        }
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(all),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("create test namespace");
        let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &name);
        wait_for("default ServiceAccount", Duration::from_secs(60), || {
            let sas = sas.clone();
            async move { matches!(sas.get_opt("default").await, Ok(Some(_))) }
        })
        .await;
        Self { client, name }
    }
}

/// Polls `check` until it returns true; panics naming `what` after `timeout`.
pub async fn wait_for<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if check().await {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {}s waiting for {what}",
            timeout.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Polls `get` until it yields `Some`, returning the value; panics naming
/// `what` after `timeout`.
pub async fn wait_for_value<T, F, Fut>(what: &str, timeout: Duration, mut get: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = get().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {}s waiting for {what}",
            timeout.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Polls `get` until it yields `Ok`, returning the value; after `timeout`
/// panics naming `what` and the last `Err`: what was seen instead, so that
/// a timeout says what state the wait was stuck in.
pub async fn wait_for_ok<T, F, Fut>(what: &str, timeout: Duration, mut get: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let seen = match get().await {
            Ok(v) => return v,
            Err(seen) => seen,
        };
        assert!(
            Instant::now() < deadline,
            "timed out after {}s waiting for {what}; last seen: {seen}",
            timeout.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Applies berth's CRDs (server-side apply, so concurrent tests and reruns
/// are idempotent) and waits until each is Established.
pub async fn install_crds(client: &Client) {
    apply_crds(client, berth_shared::api::crds(), "berth-tests").await;
}

/// Applies `crds` as field manager `manager` (server-side apply, forced:
/// idempotent across tests and reruns) and waits until each is
/// Established.
pub async fn apply_crds(
    client: &Client,
    crds: impl IntoIterator<
        Item = k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    >,
    manager: &str,
) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Patch, PatchParams};

    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        let name = crd.metadata.name.clone().expect("CRD has a name");
        api.patch(
            &name,
            &PatchParams::apply(manager).force(),
            &Patch::Apply(&crd),
        )
        .await
        .unwrap_or_else(|e| panic!("apply CRD {name}: {e}"));
        let api = api.clone();
        wait_for(
            &format!("CRD {name} Established"),
            Duration::from_secs(60),
            || {
                let api = api.clone();
                let name = name.clone();
                async move {
                    api.get_opt(&name)
                        .await
                        .ok()
                        .flatten()
                        .and_then(|c| c.status)
                        .and_then(|s| s.conditions)
                        .is_some_and(|cs| {
                            cs.iter()
                                .any(|c| c.type_ == "Established" && c.status == "True")
                        })
                }
            },
        )
        .await;
    }
}

/// `<target>/<profile>`: where cargo puts this package's binaries. Test
/// executables live in its `deps/`; a binary of this package (the
/// benchmark) lives in it directly.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("own executable");
    let dir = exe.parent().expect("<target>/<profile>");
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().expect("<target>/<profile>/deps").to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

static BINARIES: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());

/// A binary of this workspace for tests to run: `$ENV_VAR` when set (e.g.
/// `BERTH_AGENT_BIN`), otherwise built once per test process with the cargo
/// that runs the tests (`cargo test -p berth-tests` builds no binary of
/// another package) and copied to a private path, so that another cargo
/// run relinking `target/debug/NAME` cannot pull it from under running
/// tests. Blocking: call it through `spawn_blocking` from async code.
pub fn workspace_binary(package: &str, bin: &str, env_var: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env_var) {
        return PathBuf::from(p);
    }
    // Held for the build: concurrent tests wait for one build, not several.
    let mut built = berth_shared::sync::lock(&BINARIES);
    if let Some((_, path)) = built.iter().find(|(b, _)| b == bin) {
        return path.clone();
    }
    let profile = profile_dir();
    let target = profile.parent().expect("<target>");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "-p", package, "--bin", bin])
        .arg("--target-dir")
        .arg(target)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."));
    if profile.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let out = cmd.output().expect("run cargo");
    assert!(
        out.status.success(),
        "cargo build -p {package} --bin {bin} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = target
        .join("berth-it")
        .join(format!("bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("binary dir");
    let copy = dir.join(bin);
    std::fs::copy(profile.join(bin), &copy).expect("copy binary");
    built.push((bin.to_string(), copy.clone()));
    copy
}

/// Creates a RuntimeClass `name` with `handler`. RuntimeClasses are
/// cluster-scoped: tests prefix the name with their namespace.
pub async fn create_runtime_class(client: &Client, name: &str, handler: &str) {
    let rc = k8s_openapi::api::node::v1::RuntimeClass {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        handler: handler.to_string(),
        ..Default::default()
    };
    Api::<k8s_openapi::api::node::v1::RuntimeClass>::all(client.clone())
        .create(&PostParams::default(), &rc)
        .await
        .expect("create RuntimeClass");
}
