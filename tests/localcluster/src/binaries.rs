//! Finds the control plane's binaries: built from source by `tests/k8s/build.sh`
//! (cached outside the checkout) or taken from `BERTH_K8S_BIN_DIR`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::Error;

/// Every binary the local control plane runs.
pub const COMPONENTS: [&str; 6] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "kubectl",
];

/// Every binary and image a real node needs (gVisor's are optional).
pub const REAL_NODE_COMPONENTS: [&str; 11] = [
    "kubelet",
    "containerd",
    "containerd-shim-runc-v2",
    "ctr",
    "runc",
    "bridge",
    "host-local",
    "loopback",
    "portmap",
    "testapp-image",
    "pause-image",
];

/// The pinned versions (`tests/k8s/versions.env`, the one place they live).
pub const VERSIONS_ENV: &str = include_str!("../../k8s/versions.env");

/// Returns the value of `KEY=VALUE` in versions.env.
pub fn pinned_version(key: &str) -> Option<&'static str> {
    VERSIONS_ENV
        .lines()
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim())
}

/// The Kubernetes version the local control plane runs: the pinned
/// `KUBERNETES_VERSION`, or another supported minor's when
/// `BERTH_KUBERNETES_VERSION` names one (build.sh builds it from its own
/// wrapper module, `tests/k8s/kubernetes-1.<minor>/`; README "Supported
/// Kubernetes").
pub fn kubernetes_version() -> String {
    match std::env::var("BERTH_KUBERNETES_VERSION") {
        Ok(v) if !v.is_empty() => v,
        _ => pinned_version("KUBERNETES_VERSION")
            .expect("KUBERNETES_VERSION in versions.env")
            .to_string(),
    }
}

/// Whether the local control plane runs the pinned (newest supported)
/// Kubernetes version, not an older minor's chosen by
/// `BERTH_KUBERNETES_VERSION`.
pub fn runs_pinned_kubernetes() -> bool {
    Some(kubernetes_version().as_str()) == pinned_version("KUBERNETES_VERSION")
}

/// Absolute paths of every component binary.
#[derive(Debug, Clone)]
pub struct Binaries {
    paths: BTreeMap<String, PathBuf>,
}

impl Binaries {
    /// Runs the build script (which builds nothing when the cache is warm, and
    /// only checks `BERTH_K8S_BIN_DIR` when that is set) and collects its answer.
    pub fn resolve(log_dir: &Path) -> Result<Self, Error> {
        Self::resolve_with(log_dir, false)
    }

    /// [`Binaries::resolve`], and with `real_node` also what a real node
    /// runs (`build.sh --real-node`: kubelet, containerd, runc, gVisor …).
    pub fn resolve_with(log_dir: &Path, real_node: bool) -> Result<Self, Error> {
        if real_node {
            Self::build(log_dir, &["--real-node"], &REAL_NODE_COMPONENTS)
        } else {
            Self::build(log_dir, &[], &[])
        }
    }

    /// [`Binaries::resolve`], and the packaging tests' tools too
    /// (`build.sh --test-tools`: helm, kube-score, promtool). With
    /// `BERTH_K8S_BIN_DIR` set, a tool that directory lacks is left out, for
    /// the test that needs it to name.
    pub fn resolve_test_tools(log_dir: &Path) -> Result<Self, Error> {
        Self::build(log_dir, &["--test-tools"], &[])
    }

    /// Runs build.sh with `flags` and checks that it named every control
    /// plane component and every one of `needed`.
    fn build(log_dir: &Path, flags: &[&str], needed: &[&str]) -> Result<Self, Error> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../k8s/build.sh");
        let log = log_dir.join("build.log");
        let log_file = std::fs::File::create(&log).map_err(|e| Error::io(&log, e))?;
        let output = Command::new("bash")
            .arg(&script)
            .args(flags)
            .stderr(log_file)
            .output()
            .map_err(|e| Error::Build {
                detail: format!("could not run {}: {e}", script.display()),
                log: log.clone(),
            })?;
        if !output.status.success() {
            return Err(Error::Build {
                detail: format!("{} exited with {}", script.display(), output.status),
                log,
            });
        }
        let mut paths = BTreeMap::new();
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            if let Some((name, path)) = line.split_once('=') {
                paths.insert(name.to_string(), PathBuf::from(path));
            }
        }
        for component in COMPONENTS.iter().chain(needed) {
            match paths.get(*component) {
                Some(p) if p.is_file() => {}
                _ => {
                    return Err(Error::MissingBinary {
                        component: (*component).to_string(),
                        log,
                    });
                }
            }
        }
        Ok(Self { paths })
    }

    /// The path of one component's binary.
    pub fn path(&self, component: &str) -> Result<&Path, Error> {
        self.paths
            .get(component)
            .map(PathBuf::as_path)
            .ok_or_else(|| Error::MissingBinary {
                component: component.to_string(),
                log: PathBuf::from("build.log"),
            })
    }

    /// The path of an optional binary (gVisor's), when it was built.
    pub fn optional(&self, component: &str) -> Option<&Path> {
        self.paths
            .get(component)
            .map(PathBuf::as_path)
            .filter(|p| p.is_file())
    }

    /// An image's name (`testapp-image`, `pause-image`), as build.sh built it.
    pub fn image_name(&self, image: &str) -> Result<String, Error> {
        self.path(&format!("{image}-name"))
            .map(|p| p.display().to_string())
    }

    /// Why gVisor is missing: the tail of its recorded build failure.
    pub fn runsc_failure(&self) -> String {
        match self.paths.get("runsc-failed") {
            Some(p) => format!(
                "gVisor did not build ({}):\n{}",
                p.display(),
                super::process::log_tail(p, 15)
            ),
            None => "gVisor was not built".into(),
        }
    }
}
