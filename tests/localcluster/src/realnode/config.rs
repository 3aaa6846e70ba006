//! The configuration files of one real node, rendered as text: containerd's
//! (with its CRI plugin and one runtime per handler), the kubelet's, the CNI
//! network's and gVisor's.
//!
//! Each file is shaped by a trap this machine sets (see docs/local-cluster.md "Real node"):
//! the sandbox lacks CAP_SYS_RESOURCE, so nothing may lower an
//! `oom_score_adj` (`restrict_oom_score_adj`, kubelet `oomScoreAdj: 0`); the
//! cgroups are v1 (`failCgroupV1: false`); there is no registry (a pinned,
//! imported pause image; `disable_pause_image_pull`); and the machine is
//! shared, so the bridge has no gateway and no masquerade (no IP forwarding,
//! no iptables rule), every path is the node's own and the network
//! namespaces live under the node's state directory.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// Everything the files name: the node's own paths, addresses and ports.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct NodeLayout {
    pub name: String,
    /// Configuration files, certificates and the CNI binaries (in the cluster dir).
    pub conf: PathBuf,
    /// containerd's and the kubelet's data: outside the cluster dir, so that
    /// removing a stale cluster dir never walks into a live mount.
    pub state: PathBuf,
    /// The node's cgroup parent (under every v1 controller).
    pub cgroup_root: String,
    /// The Linux bridge the pods attach to.
    pub bridge: String,
    /// The bridge's own address (the node's InternalIP, where the kubelet
    /// listens) and the pods' subnet (a /24 holding it).
    pub node_ip: Ipv4Addr,
    pub kubelet_port: u16,
    pub healthz_port: u16,
    /// Handlers this node configures (`runc` first: the default).
    pub handlers: Vec<String>,
    /// The pinned pause image (an imported OCI archive).
    pub pause_image: String,
}

impl NodeLayout {
    pub fn containerd_socket(&self) -> PathBuf {
        self.state.join("containerd/containerd.sock")
    }
    pub fn subnet(&self) -> String {
        let [a, b, c, _] = self.node_ip.octets();
        format!("{a}.{b}.{c}.0/24")
    }
    pub fn bin_dir(&self) -> PathBuf {
        self.conf.join("bin")
    }
}

/// `runtimes.NAME` tables for the handlers; `bounded-runc` is runc with a
/// root of its own and a base spec whose limits are visibly tighter
/// (`bounded_spec`), `runsc` is gVisor through its containerd shim.
fn runtimes(l: &NodeLayout) -> String {
    let bin = l.bin_dir();
    let mut out = String::new();
    for h in &l.handlers {
        // The markers let a test remove one handler from the file.
        out.push_str(&format!("{}\n", handler_marker(h)));
        let table = format!("[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'{h}']");
        match h.as_str() {
            "runsc" => out.push_str(&format!(
                "{table}\n  runtime_type = \"io.containerd.runsc.v1\"\n  \
                 [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'{h}'.options]\n    \
                 TypeUrl = \"io.containerd.runsc.v1.options\"\n    ConfigPath = {}\n",
                toml_str(&l.conf.join("runsc.toml"))
            )),
            "bounded-runc" => out.push_str(&format!(
                "{table}\n  runtime_type = \"io.containerd.runc.v2\"\n  base_runtime_spec = {}\n  \
                 [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'{h}'.options]\n    \
                 BinaryName = {}\n    Root = {}\n",
                toml_str(&l.conf.join("bounded-runc-spec.json")),
                toml_str(&bin.join("runc")),
                toml_str(&l.state.join("bounded-runc"))
            )),
            _ => out.push_str(&format!(
                "{table}\n  runtime_type = \"io.containerd.runc.v2\"\n  \
                 [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'{h}'.options]\n    \
                 BinaryName = {}\n    Root = {}\n",
                toml_str(&bin.join("runc")),
                toml_str(&l.state.join(format!("runc-{h}")))
            )),
        }
        out.push_str(&format!("{}\n", handler_end_marker(h)));
    }
    out
}

/// The comment lines around handler `h`'s tables in containerd's config.
pub fn handler_marker(h: &str) -> String {
    format!("# berth handler {h}")
}
pub fn handler_end_marker(h: &str) -> String {
    format!("# berth handler {h} end")
}

fn toml_str(p: &Path) -> String {
    // serde_json's string quoting is valid TOML basic-string quoting.
    serde_json::to_string(&p.display().to_string()).unwrap_or_default()
}

/// containerd's `config.toml` (version 3, containerd v2).
pub fn containerd(l: &NodeLayout) -> String {
    let s = |p: &str| toml_str(&l.state.join(p));
    format!(
        r#"version = 3
root = {root}
state = {state}

[grpc]
  address = {sock}

[ttrpc]
  address = {ttrpc}

[debug]
  address = ""

[metrics]
  address = ""

[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  disable_apparmor = true
  # The sandbox has no CAP_SYS_RESOURCE: never ask for a lower oom_score_adj.
  restrict_oom_score_adj = true
  # Network namespaces under the node's own state dir, not /var/run/netns.
  netns_mounts_under_state_dir = true
  tolerate_missing_hugetlb_controller = true
  disable_hugetlb_controller = true

[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = "runc"

{runtimes}
[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = [{cni_bin}]
  conf_dir = {cni_conf}
  max_conf_num = 1
  use_internal_loopback = true

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  # No registry here: the pause image is imported, never pulled.
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = {pause}

[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"#,
        root = s("containerd/root"),
        state = s("containerd/state"),
        sock = toml_str(&l.containerd_socket()),
        ttrpc = s("containerd/containerd.sock.ttrpc"),
        runtimes = runtimes(l),
        cni_bin = toml_str(&l.bin_dir()),
        cni_conf = toml_str(&l.conf.join("cni")),
        pause = serde_json::to_string(&l.pause_image).unwrap_or_default(),
    )
}

/// The CNI network: a bridge the node created itself, without a gateway or
/// masquerade, so the plugin enables no forwarding and writes no iptables
/// rule; pods reach only addresses on the bridge (the node and each other)
/// and the `kubernetes` Service's ClusterIP, which is the node's too.
/// portmap is built but left out: it writes iptables rules for host ports.
pub fn cni(l: &NodeLayout) -> String {
    serde_json::json!({
        "cniVersion": "1.0.0",
        "name": format!("berth-{}", l.name),
        "plugins": [{
            "type": "bridge",
            "bridge": l.bridge,
            "isGateway": false,
            "isDefaultGateway": false,
            "ipMasq": false,
            "hairpinMode": false,
            "ipam": {
                "type": "host-local",
                "ranges": [[{
                    "subnet": l.subnet(),
                    "rangeStart": increment(l.node_ip, 1).to_string(),
                }]],
                // The one address off the subnet a pod reaches: the
                // `kubernetes` Service, an address of this machine on the
                // bridge (see `service_proxy`); no default route.
                "routes": [{
                    "dst": format!("{}/32", crate::pki::KUBERNETES_SERVICE_IP),
                    "gw": l.node_ip.to_string(),
                }],
                "dataDir": l.state.join("cni-ipam").display().to_string(),
            }
        }]
    })
    .to_string()
}

fn increment(ip: Ipv4Addr, by: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(ip).saturating_add(by))
}

/// gVisor's shim configuration: the runsc binary and its flags.
pub fn runsc(l: &NodeLayout) -> String {
    format!(
        "binary_name = {}\nroot = {}\n[runsc_config]\n  ignore-cgroups = \"true\"\n  network = \"sandbox\"\n  debug-log = {}\n",
        toml_str(&l.bin_dir().join("runsc")),
        toml_str(&l.state.join("runsc")),
        toml_str(&l.conf.join("runsc-logs/")),
    )
}

/// The nameserver and domain the kubelet gives pods (no server answers:
/// see [`kubelet`]).
pub const CLUSTER_DNS: &str = "10.96.0.10";
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// The kubelet's configuration file.
pub fn kubelet(l: &NodeLayout, ca: &Path, cert: &Path, key: &Path) -> String {
    serde_json::json!({
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": l.node_ip.to_string(),
        "port": l.kubelet_port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": l.healthz_port,
        "tlsCertFile": cert.display().to_string(),
        "tlsPrivateKeyFile": key.display().to_string(),
        // As a real cluster's kubelet: a client is a certificate of the
        // cluster's CA or a bearer token the apiserver vouches for
        // (TokenReview), never anonymous; what it may do is the apiserver's
        // answer to a SubjectAccessReview (nodes/proxy, nodes/log, …), so
        // a certificate of the CA without RBAC rights gets 403.
        "authentication": {
            "anonymous": {"enabled": false},
            "webhook": {"enabled": true, "cacheTTL": "10s"},
            "x509": {"clientCAFile": ca.display().to_string()}
        },
        "authorization": {
            "mode": "Webhook",
            "webhook": {"cacheAuthorizedTTL": "10s", "cacheUnauthorizedTTL": "10s"}
        },
        "containerRuntimeEndpoint": format!("unix://{}", l.containerd_socket().display()),
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": format!("/{}", l.cgroup_root),
        "cgroupsPerQOS": true,
        "failCgroupV1": false,
        "failSwapOn": false,
        // The sandbox has no CAP_SYS_RESOURCE: keep the default score.
        "oomScoreAdj": 0,
        "registerNode": true,
        "registerWithTaints": [{"key": super::TAINT_KEY, "value": "true", "effect": "NoSchedule"}],
        "resolvConf": "",
        // Pods get a cluster's resolv.conf (this nameserver, the search
        // path of `cluster.local`), so the kubelet does not fall back to
        // the host's and warn `MissingClusterDNS`. No DNS server runs:
        // 10.96.0.10 is the conventional kube-dns address of the Service
        // range, and without kube-proxy and with no gateway on the bridge
        // a pod's query fails at once (docs/local-cluster.md, "Real node").
        "clusterDNS": [CLUSTER_DNS],
        "clusterDomain": CLUSTER_DOMAIN,
        "rotateCertificates": false,
        "serverTLSBootstrap": false,
        "makeIPTablesUtilChains": false,
        "kernelMemcgNotification": false,
        // On: the node reports ephemeral-storage, which the contract now
        // requests on every pod (without it nothing schedules here).
        "localStorageCapacityIsolation": true,
        // A shared disk: never evict the tests' pods for others' usage.
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "nodeStatusUpdateFrequency": "2s",
        "nodeStatusReportFrequency": "10s",
        "syncFrequency": "5s",
        "fileCheckFrequency": "5s",
        "shutdownGracePeriod": "0s",
        "maxPods": 30,
    })
    .to_string()
}
