//! Starting and stopping the real nodes.

use std::fs::File;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Client};

use super::config::{self, NodeLayout};
use super::{LABEL_KEY, RealNodeInfo, RealNodesInfo, STATE_ROOT, host, images};
use crate::binaries::Binaries;
use crate::pki::{KUBELET_CLIENT_USER, Pki};
use crate::process::Component;
use crate::{Error, kubeconfig, ports};

/// What starting the real nodes needs from the cluster.
#[derive(Debug)]
pub struct Context<'a> {
    pub dir: &'a Path,
    pub logs: &'a Path,
    pub binaries: &'a Binaries,
    pub pki: &'a Pki,
    pub server: &'a str,
    pub supervisor: Option<&'a Path>,
    pub timeout: Duration,
    /// The `berth-agent` whose image canaries run (`agent_image`).
    pub agent_binary: Option<&'a Path>,
}

/// One running real node; its kubelet and containerd are components of the
/// cluster (`kubelet-NAME`, `containerd-NAME`), this holds the rest.
#[derive(Debug)]
pub struct RealNode {
    pub layout: NodeLayout,
    /// `berth-localcluster node-janitor`: tears the node down when its
    /// stdin closes, even when the launcher was SIGKILLed.
    janitor: Option<(Child, ChildStdin)>,
}

/// The real nodes and the machine-wide lock they hold.
#[derive(Debug)]
pub struct RealNodes {
    pub nodes: Vec<RealNode>,
    /// The `kubernetes` Service's proxy for pods ([`super::service_proxy`]).
    service_proxy: Option<tokio::task::JoinHandle<()>>,
    _lock: File,
}

/// The binaries every node needs in its `bin` directory (the CNI plugins,
/// runc, the shims). containerd finds shims on its PATH.
const NODE_BINARIES: [&str; 6] = [
    "runc",
    "containerd-shim-runc-v2",
    "bridge",
    "host-local",
    "loopback",
    "portmap",
];

/// A /24 for node `i` that no interface of this machine uses yet.
fn choose_network(i: usize, bridge: &str) -> Result<Ipv4Addr, Error> {
    for third in (20 + i as u8 * 10)..=250 {
        let prefix = format!("10.231.{third}.");
        if !host::network_in_use(&prefix, bridge) {
            return Ok(Ipv4Addr::new(10, 231, third, 1));
        }
    }
    Err(Error::Start {
        component: "real-node".into(),
        detail: "no free 10.231.x.0/24 on this machine".into(),
        log: PathBuf::from(host::HOST_DIR),
    })
}

fn layout(
    i: usize,
    dir: &Path,
    handlers: Vec<String>,
    pause_image: String,
) -> Result<NodeLayout, Error> {
    let name = format!("berth-real-{i}");
    let bridge = format!("berthrn{i}");
    let [kubelet_port, healthz_port]: [u16; 2] = ports::free_loopback_ports(2)?
        .try_into()
        .map_err(|_| Error::Ports("wrong number of ports".into()))?;
    Ok(NodeLayout {
        conf: dir.join(format!("real-node-{i}")),
        state: Path::new(STATE_ROOT).join(&name),
        cgroup_root: name.clone(),
        node_ip: Ipv4Addr::UNSPECIFIED,
        bridge,
        name,
        kubelet_port,
        healthz_port,
        handlers,
        pause_image,
    })
}

fn write(path: &Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

/// The `bounded-runc` base spec: containerd's default spec with a low
/// open-files limit and no new privileges, so a pod shows where it runs.
fn bounded_spec(ctr: &Path) -> Result<String, Error> {
    let out = Command::new(ctr)
        .args(["oci", "spec"])
        .output()
        .map_err(|e| Error::io(ctr, e))?;
    let mut spec: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| Error::Start {
            component: "ctr".into(),
            detail: format!("`ctr oci spec` printed no spec: {e}"),
            log: ctr.to_path_buf(),
        })?;
    spec["process"]["rlimits"] = serde_json::json!([
        {"type": "RLIMIT_NOFILE", "hard": 256, "soft": 256}
    ]);
    spec["process"]["noNewPrivileges"] = serde_json::json!(true);
    Ok(spec.to_string())
}

impl RealNodes {
    /// Starts `count` real nodes: under the machine-wide lock, cleans up
    /// what a crashed run left, then per node writes its files, creates its
    /// bridge, starts containerd (imports the images), then the kubelet,
    /// and waits until the node is Ready with its handlers. Writes
    /// `DIR/real-nodes.json`.
    pub async fn start(
        ctx: &Context<'_>,
        count: usize,
        client: &Client,
        components: &mut Vec<Component>,
    ) -> Result<Self, Error> {
        if let Some(reason) = super::unsupported_reason() {
            return Err(Error::Start {
                component: "real-node".into(),
                detail: format!("this machine cannot run a real node: {reason}"),
                log: ctx.logs.to_path_buf(),
            });
        }
        let lock = tokio::task::block_in_place(|| host::lock(Duration::from_secs(900)))?;
        bind_kubelet_api(client).await?;
        let mut handlers = vec![
            "runc".to_string(),
            "bounded-runc".into(),
            "extra-runc".into(),
        ];
        let runsc = ctx.binaries.optional("runsc").is_some()
            && ctx.binaries.optional("containerd-shim-runsc-v1").is_some();
        if runsc {
            handlers.push("runsc".into());
        }
        let pause_archive = ctx.binaries.path("pause-image")?.to_path_buf();
        let app_archive = ctx.binaries.path("testapp-image")?.to_path_buf();
        let ctr = ctx.binaries.path("ctr")?.to_path_buf();
        let mut nodes = Self {
            nodes: Vec::new(),
            service_proxy: None,
            _lock: lock,
        };
        let mut info = RealNodesInfo {
            nodes: Vec::new(),
            testapp_image: String::new(),
            runsc_missing: (!runsc).then(|| ctx.binaries.runsc_failure()),
            agent_image: None,
            agent_image_missing: None,
            ctr: Some(ctr.clone()),
        };
        // An image that does not build leaves the node without canaries,
        // not without pods: real-nodes.json says why (the tests that need
        // the image assert it is there).
        let agent_archive = match ctx.agent_binary {
            Some(bin) => {
                let t0 = std::time::Instant::now();
                match tokio::task::block_in_place(|| super::agent_image::build(bin, ctx.dir)) {
                    Ok(built) => {
                        eprintln!("built the agent's image in {:?}", t0.elapsed());
                        Some(built)
                    }
                    Err(e) => {
                        eprintln!("the agent's image did not build: {e}");
                        info.agent_image_missing = Some(e.to_string());
                        None
                    }
                }
            }
            None => None,
        };
        for i in 0..count {
            // The pause image's name is only known after import; containerd
            // reads it from the config, so import with a first containerd?
            // No: the archive's name is fixed by build.sh (its file stem).
            let pause_name = ctx.binaries.image_name("pause-image")?;
            let mut l = layout(i, ctx.dir, handlers.clone(), pause_name)?;
            // Leftovers of a crashed run (under the lock, so not another run's).
            for line in tokio::task::block_in_place(|| host::teardown(&l)) {
                eprintln!("real node {}: cleanup: {line}", l.name);
            }
            l.node_ip = choose_network(i, &l.bridge)?;
            let bin = l.bin_dir();
            std::fs::create_dir_all(&bin).map_err(|e| Error::io(&bin, e))?;
            std::fs::create_dir_all(l.conf.join("cni")).map_err(|e| Error::io(&l.conf, e))?;
            std::fs::create_dir_all(&l.state).map_err(|e| Error::io(&l.state, e))?;
            let mut linked: Vec<&str> = NODE_BINARIES.to_vec();
            if runsc {
                linked.extend(["runsc", "containerd-shim-runsc-v1"]);
            }
            for b in linked {
                let link = bin.join(b);
                let _ = std::fs::remove_file(&link);
                std::os::unix::fs::symlink(ctx.binaries.path(b)?, &link)
                    .map_err(|e| Error::io(&link, e))?;
            }
            write(&l.conf.join("containerd.toml"), &config::containerd(&l))?;
            write(&l.conf.join("cni/10-berth.conflist"), &config::cni(&l))?;
            write(&l.conf.join("runsc.toml"), &config::runsc(&l))?;
            write(&l.conf.join("bounded-runc-spec.json"), &bounded_spec(&ctr)?)?;
            write(
                &l.conf.join("layout.json"),
                &serde_json::to_string(&l).unwrap_or_default(),
            )?;
            ctx.pki.node_certs(&l.name, l.node_ip)?;
            let p = |f: String| ctx.pki.file(&f);
            write(
                &l.conf.join("kubelet.yaml"),
                &config::kubelet(
                    &l,
                    &ctx.pki.file("ca.crt"),
                    &p(format!("kubelet-{}.crt", l.name)),
                    &p(format!("kubelet-{}.key", l.name)),
                ),
            )?;
            kubeconfig::write_atomic(
                &l.conf.join("kubelet.kubeconfig"),
                &kubeconfig::render(
                    ctx.server,
                    &ctx.pki.dir,
                    kubeconfig::DEFAULT_NAME,
                    &format!("system:node:{}", l.name),
                    &format!("node-{}.crt", l.name),
                    &format!("node-{}.key", l.name),
                ),
            )?;
            tokio::task::block_in_place(host::save_sysctls)?;
            let mut node = RealNode {
                janitor: spawn_janitor(ctx, &l)?,
                layout: l.clone(),
            };
            tokio::task::block_in_place(|| host::create_bridge(&l))?;
            tokio::task::block_in_place(|| host::create_cgroups(&l))?;
            if nodes.service_proxy.is_none() {
                let apiserver = super::service_proxy::apiserver_addr(ctx.server)?;
                nodes.service_proxy = Some(super::service_proxy::start(apiserver).await?);
            }

            // containerd, with a PATH of the node's binaries and no /sbin:
            // nothing it runs can find iptables.
            let path_env = format!("PATH={}:/usr/local/bin:/usr/bin:/bin", bin.display());
            let containerd = ctx.binaries.path("containerd")?.display().to_string();
            let args = vec![
                path_env.clone(),
                containerd,
                format!("--config={}", l.conf.join("containerd.toml").display()),
                "--log-level=info".into(),
            ];
            // Both run under `env`, with the node's PATH as first argument.
            let spawn = |what: &str, args: &[String]| {
                Component::spawn(
                    &format!("{what}-{}", l.name),
                    Path::new("/usr/bin/env"),
                    args,
                    ctx.logs,
                    ctx.supervisor,
                )
            };
            components.push(spawn("containerd", &args)?);
            wait_for_socket(
                components.last_mut().expect("pushed"),
                &l.containerd_socket(),
                ctx.timeout,
            )
            .await?;
            let sock = l.containerd_socket();
            let (pause, _) =
                tokio::task::block_in_place(|| images::import(&ctr, &sock, &pause_archive))?;
            let (app, digest) =
                tokio::task::block_in_place(|| images::import(&ctr, &sock, &app_archive))?;
            info.testapp_image =
                tokio::task::block_in_place(|| images::tag_by_digest(&ctr, &sock, &app, &digest))?;
            if let Some((archive, _)) = &agent_archive {
                let (agent, digest) =
                    tokio::task::block_in_place(|| images::import(&ctr, &sock, archive))?;
                info.agent_image = Some(tokio::task::block_in_place(|| {
                    images::tag_by_digest(&ctr, &sock, &agent, &digest)
                })?);
            }
            if pause != l.pause_image {
                return Err(Error::Start {
                    component: format!("containerd-{}", l.name),
                    detail: format!("imported pause image {pause}, configured {}", l.pause_image),
                    log: ctx.logs.to_path_buf(),
                });
            }

            let kubelet = ctx.binaries.path("kubelet")?.display().to_string();
            let args = vec![
                path_env,
                kubelet,
                format!("--config={}", l.conf.join("kubelet.yaml").display()),
                format!(
                    "--kubeconfig={}",
                    l.conf.join("kubelet.kubeconfig").display()
                ),
                format!("--hostname-override={}", l.name),
                format!("--node-ip={}", l.node_ip),
                format!("--root-dir={}", l.state.join("kubelet").display()),
                format!("--cert-dir={}", l.conf.join("kubelet-pki").display()),
                format!("--node-labels={LABEL_KEY}=true,type=real"),
                "--v=1".into(),
            ];
            components.push(spawn("kubelet", &args)?);
            wait_node_ready(client, &l, components, ctx.timeout).await?;
            for c in tokio::task::block_in_place(|| host::restore_sysctls(false)) {
                eprintln!(
                    "real node {}: restored {c} (the kubelet had changed it)",
                    l.name
                );
            }
            info.nodes.push(RealNodeInfo {
                name: l.name.clone(),
                handlers: l.handlers.clone(),
                ip: l.node_ip,
                containerd_config: l.conf.join("containerd.toml"),
                containerd_socket: l.containerd_socket(),
            });
            node.layout = l;
            nodes.nodes.push(node);
        }
        let path = RealNodesInfo::path(ctx.dir);
        write(
            &path,
            &serde_json::to_string_pretty(&info).unwrap_or_default(),
        )?;
        Ok(nodes)
    }

    /// Deletes the pods on the real nodes while their kubelets still run
    /// (cordoned first, so that no replacement lands there), and waits
    /// until the kubelets have stopped them.
    pub async fn drain(&self, client: &Client, timeout: Duration) {
        let nodes: Api<Node> = Api::all(client.clone());
        let pods: Api<Pod> = Api::all(client.clone());
        for n in &self.nodes {
            let patch = serde_json::json!({"spec": {"unschedulable": true}});
            let _ = nodes
                .patch(
                    &n.layout.name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await;
        }
        let deadline = Instant::now() + timeout;
        loop {
            let mut left = 0;
            for n in &self.nodes {
                let lp = ListParams::default().fields(&format!("spec.nodeName={}", n.layout.name));
                let Ok(list) = pods.list(&lp).await else {
                    return;
                };
                for p in list.items {
                    left += 1;
                    if p.metadata.deletion_timestamp.is_none() {
                        let ns = p.metadata.namespace.clone().unwrap_or_default();
                        let name = p.metadata.name.clone().unwrap_or_default();
                        let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
                        let _ = api
                            .delete(&name, &DeleteParams::default().grace_period(1))
                            .await;
                    }
                }
            }
            if left == 0 || Instant::now() > deadline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Tears every node down (after their kubelets and containerds stopped):
    /// through its janitor, or here when there is none.
    pub fn stop(&mut self) {
        if let Some(proxy) = self.service_proxy.take() {
            proxy.abort();
        }
        for n in &mut self.nodes {
            match n.janitor.take() {
                Some((mut child, stdin)) => {
                    drop(stdin);
                    let deadline = Instant::now() + Duration::from_secs(90);
                    while Instant::now() < deadline {
                        if matches!(child.try_wait(), Ok(Some(_))) {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
                None => {
                    for line in host::teardown(&n.layout) {
                        eprintln!("real node {}: teardown: {line}", n.layout.name);
                    }
                }
            }
        }
        self.nodes.clear();
    }
}

impl Drop for RealNodes {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The ClusterRoleBinding that gives the apiserver's kubelet client
/// (`--kubelet-client-certificate`, user [`KUBELET_CLIENT_USER`]) the
/// kubelet API: the bootstrap ClusterRole `system:kubelet-api-admin`
/// (nodes/proxy, nodes/log, nodes/stats, …), as kubeadm and managed
/// clusters bind it. Without it `kubectl logs` and `exec` get the kubelet's
/// 403.
pub const KUBELET_API_BINDING: &str = "berth-localcluster:kubelet-api-admin";

async fn bind_kubelet_api(client: &Client) -> Result<(), Error> {
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": KUBELET_API_BINDING},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "system:kubelet-api-admin",
        },
        "subjects": [{
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "User",
            "name": KUBELET_CLIENT_USER,
        }],
    }))
    .map_err(|e| Error::Kube(e.to_string()))?;
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch(
            KUBELET_API_BINDING,
            &PatchParams::apply("berth-localcluster").force(),
            &Patch::Apply(&binding),
        )
        .await
        .map_err(|e| Error::Kube(format!("ClusterRoleBinding {KUBELET_API_BINDING}: {e}")))?;
    Ok(())
}

/// `SUPERVISOR node-janitor LAYOUT` in a process group of its own (a
/// Ctrl-C at the terminal must not reach it), its stdin a pipe held here.
fn spawn_janitor(ctx: &Context<'_>, l: &NodeLayout) -> Result<Option<(Child, ChildStdin)>, Error> {
    let Some(sup) = ctx.supervisor else {
        return Ok(None);
    };
    use std::os::unix::process::CommandExt;
    let log = ctx.logs.join(format!("janitor-{}.log", l.name));
    let out = File::create(&log).map_err(|e| Error::io(&log, e))?;
    let err = out.try_clone().map_err(|e| Error::io(&log, e))?;
    let mut child = Command::new(sup)
        .arg("node-janitor")
        .arg(l.conf.join("layout.json"))
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| Error::Start {
            component: "node-janitor".into(),
            detail: e.to_string(),
            log: log.clone(),
        })?;
    let stdin = child.stdin.take().ok_or_else(|| Error::Start {
        component: "node-janitor".into(),
        detail: "no stdin pipe".into(),
        log,
    })?;
    Ok(Some((child, stdin)))
}

/// The body of `berth-localcluster node-janitor LAYOUT`: waits until stdin
/// closes (or SIGTERM/SIGINT), lets the node's kubelet and containerd stop
/// (their supervisors stop them at the same moment), then tears down.
pub async fn janitor(layout_file: &Path) -> std::io::Result<()> {
    use tokio::io::AsyncReadExt;
    use tokio::signal::unix::{SignalKind, signal};
    let text = std::fs::read_to_string(layout_file)?;
    let l: NodeLayout = serde_json::from_str(&text).map_err(std::io::Error::other)?;
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 64];
    tokio::select! {
        _ = async { while !matches!(stdin.read(&mut buf).await, Ok(0) | Err(_)) {} } => {}
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    println!("tearing down real node {}", l.name);
    tokio::time::sleep(Duration::from_secs(2)).await;
    for line in tokio::task::spawn_blocking(move || host::teardown(&l)).await? {
        println!("{line}");
    }
    println!("done");
    Ok(())
}

async fn wait_for_socket(c: &mut Component, socket: &Path, timeout: Duration) -> Result<(), Error> {
    let deadline = Instant::now() + timeout;
    loop {
        c.check_running()?;
        if std::os::unix::net::UnixStream::connect(socket).is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::Unhealthy {
                component: c.name.clone(),
                secs: timeout.as_secs(),
                detail: format!("nothing answers on {}", socket.display()),
                log: c.log.clone(),
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the node is Ready and reports every handler its containerd has.
async fn wait_node_ready(
    client: &Client,
    l: &NodeLayout,
    components: &mut [Component],
    timeout: Duration,
) -> Result<(), Error> {
    let api: Api<Node> = Api::all(client.clone());
    let deadline = Instant::now() + timeout;
    let mut last = String::from("not registered");
    loop {
        for c in components.iter_mut() {
            c.check_running()?;
        }
        if let Ok(Some(n)) = api.get_opt(&l.name).await {
            let status = n.status.unwrap_or_default();
            let ready = status
                .conditions
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            let reported: Vec<String> = status
                .runtime_handlers
                .unwrap_or_default()
                .into_iter()
                .filter_map(|h| h.name)
                .filter(|h| !h.is_empty())
                .collect();
            if ready && l.handlers.iter().all(|h| reported.contains(h)) {
                return Ok(());
            }
            last = format!("Ready={ready}, runtimeHandlers={reported:?}");
        }
        if Instant::now() > deadline {
            return Err(Error::Unhealthy {
                component: format!("kubelet-{}", l.name),
                secs: timeout.as_secs(),
                detail: format!(
                    "node {} not Ready with handlers {:?}: {last}",
                    l.name, l.handlers
                ),
                log: components
                    .iter()
                    .find(|c| c.name == format!("kubelet-{}", l.name))
                    .map(|c| c.log.clone())
                    .unwrap_or_default(),
            });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
