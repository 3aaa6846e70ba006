//! A real local Kubernetes control plane on loopback: etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok (simulated nodes whose
//! `status.runtimeHandlers` list the configured handlers, and pods that
//! become Running/Ready), all built from source by `tests/k8s/build.sh`.
//!
//! With `Options::real_nodes`, real nodes (a kubelet and containerd on this
//! machine, see `realnode`) join beside the kwok ones.
//!
//! Everything it writes lives under one directory (a real node's data
//! excepted: see `realnode`); `DIR/kubeconfig` appears only once every
//! component is healthy and every node is Ready.

pub mod binaries;
mod error;
pub mod health;
pub mod kubeconfig;
#[cfg(test)]
mod layering_tests;
pub mod nodes;
pub mod pki;
pub mod ports;
pub mod process;
pub mod procfs;
pub mod realnode;
pub mod supervise;

use std::path::{Path, PathBuf};
use std::time::Duration;

use binaries::Binaries;
use pki::Pki;
use process::Component;

pub use error::Error;
pub use nodes::NodeSpec;

/// How to start a cluster.
#[derive(Debug, Clone)]
pub struct Options {
    /// Holds logs, data, certificates and the kubeconfig; nothing is written outside it.
    pub dir: PathBuf,
    /// Simulated nodes and the runtime handlers each reports.
    pub nodes: Vec<NodeSpec>,
    /// How long each start-up stage may take.
    pub timeout: Duration,
    /// Run each component under `SUPERVISOR supervise` (normally
    /// `berth-localcluster` itself), so that it stops even when this
    /// process is SIGKILLed.
    pub supervisor: Option<PathBuf>,
    /// Have the apiserver write an audit log of every write request to
    /// `DIR/logs/audit.log` (JSON lines, one per completed request).
    pub audit: bool,
    /// Real nodes to start beside the simulated ones (see `realnode`).
    pub real_nodes: usize,
    /// The `berth-agent` binary whose image the real nodes get (what the
    /// agent's canary Jobs run: `realnode::agent_image`).
    pub agent_binary: Option<PathBuf>,
    /// Serve the apiserver's `/debug/pprof` (off otherwise: the benchmark
    /// profiles the apiserver, nothing else needs it).
    pub profiling: bool,
    /// The kubeconfig's context and cluster name ([`kubeconfig::render`]).
    pub name: String,
}

impl Options {
    /// `n` nodes named `kwok-node-0…`, each reporting `handlers`.
    pub fn uniform(dir: PathBuf, n: usize, handlers: &[String]) -> Self {
        Self {
            dir,
            nodes: (0..n)
                .map(|i| NodeSpec {
                    name: format!("kwok-node-{i}"),
                    handlers: handlers.to_vec(),
                })
                .collect(),
            timeout: Duration::from_secs(180),
            supervisor: None,
            audit: false,
            real_nodes: 0,
            agent_binary: None,
            profiling: false,
            name: kubeconfig::DEFAULT_NAME.to_string(),
        }
    }
}

/// A running local control plane. Dropping it stops every process.
#[derive(Debug)]
pub struct LocalCluster {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    /// kubeconfig of `berth-restricted` (group `berth:restricted`), a user
    /// with no rights until a test grants some.
    pub restricted_kubeconfig: PathBuf,
    pub server: String,
    pub binaries: Binaries,
    /// The audit log, when asked for.
    pub audit_log: Option<PathBuf>,
    components: Vec<Component>,
    supervisor: Option<PathBuf>,
    etcd_client_port: u16,
    internal_kubeconfig: PathBuf,
    timeout: Duration,
    real_nodes: Option<realnode::start::RealNodes>,
}

/// The audit policy of `Options::audit`: every write, at Metadata level
/// (who, what, when, result), except the simulated nodes' own heartbeats
/// and status updates, which would only make the log large; and the lists
/// and watches of berth's own resources (whether a client resumed its
/// watches or listed everything again).
const AUDIT_POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: ["list", "watch"]
    resources:
      - group: "berth.dev"
  - level: None
    verbs: ["get", "list", "watch"]
  - level: None
    resources:
      - group: ""
        resources: ["nodes", "nodes/status", "pods/status", "pods/binding"]
  - level: None
    namespaces: ["kube-node-lease"]
  - level: Metadata
"#;

impl LocalCluster {
    /// Builds (or finds) the binaries, starts every component, waits for
    /// health and Ready nodes, then writes the kubeconfig.
    pub async fn start(opts: &Options) -> Result<Self, Error> {
        let dir = std::path::absolute(&opts.dir).map_err(|e| Error::io(&opts.dir, e))?;
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs).map_err(|e| Error::io(&logs, e))?;
        // A kubeconfig left by an earlier run must not be mistaken for readiness.
        let kubeconfig_path = dir.join("kubeconfig");
        let _ = std::fs::remove_file(&kubeconfig_path);

        let real_nodes = opts.real_nodes;
        let binaries = tokio::task::spawn_blocking({
            let logs = logs.clone();
            move || Binaries::resolve_with(&logs, real_nodes > 0)
        })
        .await
        .map_err(|e| Error::Kube(e.to_string()))??;

        let pki = Pki::create(&dir.join("pki"))?;
        let [etcd_client, etcd_peer, apiserver, kcm, scheduler, kwok]: [u16; 6] =
            ports::free_loopback_ports(6)?
                .try_into()
                .map_err(|_| Error::Ports("wrong number of ports".into()))?;
        let server = format!("https://127.0.0.1:{apiserver}");

        // Components authenticate with the admin certificate through a
        // private kubeconfig; the public one is written last.
        let internal_kubeconfig = dir.join("pki/components.kubeconfig");
        kubeconfig::write_atomic(
            &internal_kubeconfig,
            &kubeconfig::render(
                &server,
                &pki.dir,
                &opts.name,
                "berth-admin",
                "admin.crt",
                "admin.key",
            ),
        )?;

        let mut cluster = Self {
            dir: dir.clone(),
            kubeconfig: kubeconfig_path,
            restricted_kubeconfig: dir.join("kubeconfig-restricted"),
            server: server.clone(),
            binaries,
            audit_log: None,
            components: Vec::new(),
            supervisor: opts.supervisor.clone(),
            etcd_client_port: etcd_client,
            internal_kubeconfig: internal_kubeconfig.clone(),
            timeout: opts.timeout,
            real_nodes: None,
        };
        for (component, port) in [
            ("etcd", etcd_client),
            ("etcd", etcd_peer),
            ("kube-apiserver", apiserver),
            ("kube-controller-manager", kcm),
            ("kube-scheduler", scheduler),
            ("kwok", kwok),
        ] {
            if ports::is_listening(port) {
                return Err(Error::PortClash {
                    component: component.into(),
                    port,
                });
            }
        }

        let data = dir.join("etcd-data");
        let etcd_args = vec![
            "--name=berth".into(),
            format!("--data-dir={}", data.display()),
            format!("--listen-client-urls=http://127.0.0.1:{etcd_client}"),
            format!("--advertise-client-urls=http://127.0.0.1:{etcd_client}"),
            format!("--listen-peer-urls=http://127.0.0.1:{etcd_peer}"),
            format!("--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}"),
            format!("--initial-cluster=berth=http://127.0.0.1:{etcd_peer}"),
            "--listen-metrics-urls=".into(),
            // A throwaway test store: durability is not worth the fsyncs.
            "--unsafe-no-fsync=true".into(),
            "--log-level=warn".into(),
        ];
        cluster.spawn("etcd", &etcd_args, &logs)?;
        health::wait_for_port(&mut cluster.components[0], etcd_client, opts.timeout).await?;

        let p = |f: &str| pki.file(f).display().to_string();
        let mut apiserver_args = vec![
            format!("--etcd-servers=http://127.0.0.1:{etcd_client}"),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            format!("--secure-port={apiserver}"),
            format!("--tls-cert-file={}", p("apiserver.crt")),
            format!("--tls-private-key-file={}", p("apiserver.key")),
            format!("--client-ca-file={}", p("ca.crt")),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!("--service-account-key-file={}", p("sa.pub")),
            format!("--service-account-signing-key-file={}", p("sa.key")),
            "--service-cluster-ip-range=10.96.0.0/16".into(),
            "--authorization-mode=Node,RBAC".into(),
            // The default plugin set (RuntimeClass, ServiceAccount,
            // validating/mutating webhooks, ValidatingAdmissionPolicy …) stays on.
            "--allow-privileged=true".into(),
            // The `kubernetes` Service cannot point at a loopback address.
            "--endpoint-reconciler-type=none".into(),
            format!("--profiling={}", opts.profiling),
            "--v=1".into(),
        ];
        if opts.real_nodes > 0 {
            // A webhook's Service is called at a Ready endpoint (the pod's
            // IP, on the node's bridge: reachable from this machine), not
            // at its ClusterIP, which only kube-proxy's rules would route:
            // the apiserver's one service resolver, also used by CRD
            // conversion webhooks and aggregated APIs.
            apiserver_args.push("--enable-aggregator-routing=true".into());
            // `kubectl logs/exec` reach a real kubelet at its InternalIP
            // (an address on this machine), as `kube-apiserver-kubelet-client`:
            // the kubelet authorizes it by a SubjectAccessReview, which its
            // RBAC binding answers (`realnode::start::bind_kubelet_api`).
            apiserver_args.extend([
                "--kubelet-preferred-address-types=InternalIP".into(),
                format!(
                    "--kubelet-client-certificate={}",
                    p("apiserver-kubelet-client.crt")
                ),
                format!("--kubelet-client-key={}", p("apiserver-kubelet-client.key")),
                format!("--kubelet-certificate-authority={}", p("ca.crt")),
            ]);
        }
        if opts.audit {
            let policy = dir.join("audit-policy.yaml");
            std::fs::write(&policy, AUDIT_POLICY).map_err(|e| Error::io(&policy, e))?;
            let log = logs.join("audit.log");
            apiserver_args.extend([
                format!("--audit-policy-file={}", policy.display()),
                format!("--audit-log-path={}", log.display()),
                "--audit-log-format=json".into(),
                // Synchronous: a test reading the log sees every completed write.
                "--audit-log-mode=blocking".into(),
                "--audit-log-maxsize=0".into(),
            ]);
            cluster.audit_log = Some(log);
        }
        cluster.spawn("kube-apiserver", &apiserver_args, &logs)?;
        let admin = health::wait_for_apiserver(
            &mut cluster.components[1],
            &internal_kubeconfig,
            opts.timeout,
        )
        .await?;

        let kc = internal_kubeconfig.display().to_string();
        let kcm_args = vec![
            format!("--kubeconfig={kc}"),
            format!("--authentication-kubeconfig={kc}"),
            format!("--authorization-kubeconfig={kc}"),
            "--bind-address=127.0.0.1".into(),
            format!("--secure-port={kcm}"),
            "--leader-elect=false".into(),
            format!("--root-ca-file={}", p("ca.crt")),
            format!("--service-account-private-key-file={}", p("sa.key")),
            format!("--cluster-signing-cert-file={}", p("ca.crt")),
            format!("--cluster-signing-key-file={}", p("ca.key")),
            "--use-service-account-credentials=false".into(),
            // Fast, but not frantic, for short test timeouts.
            "--concurrent-deployment-syncs=5".into(),
            // The default client limit (20 QPS) makes tens of thousands
            // of pods take an hour to appear; the benchmark needs minutes.
            "--kube-api-qps=200".into(),
            "--kube-api-burst=400".into(),
            "--v=1".into(),
        ];
        cluster.spawn("kube-controller-manager", &kcm_args, &logs)?;
        let scheduler_args = vec![
            format!("--kubeconfig={kc}"),
            format!("--authentication-kubeconfig={kc}"),
            format!("--authorization-kubeconfig={kc}"),
            "--bind-address=127.0.0.1".into(),
            format!("--secure-port={scheduler}"),
            "--leader-elect=false".into(),
            "--v=1".into(),
        ];
        cluster.spawn("kube-scheduler", &scheduler_args, &logs)?;
        let stages = cluster.binaries.path("kwok-stages")?.display().to_string();
        let kwok_args = vec![
            format!("--kubeconfig={kc}"),
            format!("--config={stages}"),
            "--manage-all-nodes=false".into(),
            format!(
                "--manage-nodes-with-annotation-selector={}=fake",
                nodes::KWOK_ANNOTATION
            ),
            format!("--server-address=127.0.0.1:{kwok}"),
            "--node-lease-duration-seconds=40".into(),
            "--cidr=10.244.0.0/16".into(),
            "--node-ip=10.0.0.1".into(),
        ];
        cluster.spawn("kwok", &kwok_args, &logs)?;

        for (i, port, https) in [(2usize, kcm, true), (3, scheduler, true), (4, kwok, false)] {
            health::wait_for_healthz(&mut cluster.components[i], port, https, opts.timeout).await?;
        }

        nodes::create(&admin, &opts.nodes).await?;
        nodes::wait_ready(&admin, &opts.nodes, &mut cluster.components, opts.timeout).await?;
        health::wait_for_default_service_account(&admin, &mut cluster.components, opts.timeout)
            .await?;
        if opts.real_nodes > 0 {
            let ctx = realnode::start::Context {
                dir: &dir,
                logs: &logs,
                binaries: &cluster.binaries,
                pki: &pki,
                server: &server,
                supervisor: opts.supervisor.as_deref(),
                timeout: opts.timeout,
                agent_binary: opts.agent_binary.as_deref(),
            };
            let mut components = std::mem::take(&mut cluster.components);
            let started =
                realnode::start::RealNodes::start(&ctx, opts.real_nodes, &admin, &mut components)
                    .await;
            cluster.components = components;
            cluster.real_nodes = Some(started?);
        }

        kubeconfig::write_atomic(
            &cluster.restricted_kubeconfig,
            &kubeconfig::render(
                &server,
                &pki.dir,
                &opts.name,
                "berth-restricted",
                "restricted.crt",
                "restricted.key",
            ),
        )?;
        kubeconfig::write_atomic(
            &cluster.kubeconfig,
            &kubeconfig::render(
                &server,
                &pki.dir,
                &opts.name,
                "berth-admin",
                "admin.crt",
                "admin.key",
            ),
        )?;
        Ok(cluster)
    }

    fn spawn(&mut self, name: &str, args: &[String], logs: &Path) -> Result<(), Error> {
        let binary = self.binaries.path(name)?.to_path_buf();
        let c = Component::spawn(name, &binary, args, logs, self.supervisor.as_deref())?;
        self.components.push(c);
        Ok(())
    }

    /// An error naming the first component that has exited, if any (one
    /// stopped on purpose, [`LocalCluster::stop_component`], excepted).
    pub fn check_running(&mut self) -> Result<(), Error> {
        self.components
            .iter_mut()
            .filter(|c| !c.held)
            .try_for_each(Component::check_running)
    }

    fn component(&mut self, name: &str) -> Result<usize, Error> {
        self.components
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| Error::Start {
                component: name.to_string(),
                detail: "no such component".into(),
                log: self.dir.join("logs"),
            })
    }

    /// Stops component `name` (`etcd`, `kube-apiserver`, …) and starts it
    /// again with the same arguments and data, waiting until it serves.
    pub async fn restart(&mut self, name: &str) -> Result<(), Error> {
        self.stop_component(name)?;
        self.start_component(name).await
    }

    /// Stops component `name` and keeps it stopped (the cluster stays up
    /// without it) until [`LocalCluster::start_component`]: an apiserver
    /// gone for a while, as its clients see it.
    pub fn stop_component(&mut self, name: &str) -> Result<(), Error> {
        let i = self.component(name)?;
        let c = &mut self.components[i];
        tokio::task::block_in_place(|| c.stop(Duration::from_secs(10)));
        c.held = true;
        Ok(())
    }

    /// Starts a component stopped by [`LocalCluster::stop_component`]
    /// again, with the same arguments and data, and waits until it serves.
    pub async fn start_component(&mut self, name: &str) -> Result<(), Error> {
        let i = self.component(name)?;
        let c = &mut self.components[i];
        c.relaunch()?;
        match name {
            "etcd" => health::wait_for_port(c, self.etcd_client_port, self.timeout).await,
            "kube-apiserver" => {
                health::wait_for_apiserver(c, &self.internal_kubeconfig, self.timeout)
                    .await
                    .map(drop)
            }
            _ => Ok(()),
        }
    }

    /// Deletes the real nodes' pods while their kubelets run, then stops
    /// everything ([`LocalCluster::stop`]).
    pub async fn shutdown(&mut self) {
        if let Some(real) = &self.real_nodes
            && let Ok(client) = health::client_from_kubeconfig(&self.internal_kubeconfig).await
        {
            real.drain(&client, Duration::from_secs(60)).await;
        }
        tokio::task::block_in_place(|| self.stop());
    }

    /// Stops every component, newest first (the real nodes' kubelets and
    /// containerds, kwok … etcd), then tears the real nodes down.
    pub fn stop(&mut self) {
        while let Some(mut c) = self.components.pop() {
            c.stop(Duration::from_secs(10));
        }
        if let Some(mut real) = self.real_nodes.take() {
            real.stop();
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.stop();
    }
}
