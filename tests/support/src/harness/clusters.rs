//! The local control planes tests run against: the shared cluster of the
//! test process, the one with a real node, and private ones for a single
//! test. Each runs in a child `berth-localcluster up --exit-on-stdin-eof`
//! process whose stdin is a pipe held here for the life of the value:
//! however the test binary ends, the kernel closes the pipe and the cluster
//! stops every component it started. Its components can be restarted,
//! stopped and started through that same pipe.

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use kube::Client;

use berth_localcluster::health::client_from_kubeconfig;

use super::binaries::{localcluster_binary, profile_dir, workspace_binary};

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
    super::panic_summary::install();
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
    super::panic_summary::install();
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
