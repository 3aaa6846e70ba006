//! Real nodes beside the kwok ones: a kubelet and containerd on this
//! machine, running the pods scheduled to them for real under the runtime
//! handlers containerd configures (`runc`, `bounded-runc` and, when gVisor
//! built, `runsc`), so that `status.runtimeHandlers` comes from the CRI.
//!
//! A real node carries the taint [`TAINT_KEY`] and the label [`LABEL_KEY`]:
//! only pods that tolerate it land there. What it leaves on the machine is
//! described in `host`; `DIR/real-nodes.json` tells tests the node names and
//! the test application's image reference (by digest).

pub mod agent_image;
pub mod breakage;
pub mod config;
pub mod host;
mod images;
pub mod service_proxy;
pub mod start;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use config::NodeLayout;
pub use start::{RealNode, RealNodes};

/// Taint (NoSchedule, value `true`) and label (value `true`) of every real node.
pub const TAINT_KEY: &str = "berth.dev/real-node";
pub const LABEL_KEY: &str = "berth.dev/real-node";

/// Where the real nodes keep containerd's and the kubelet's data.
pub const STATE_ROOT: &str = "/var/lib/berth-realnode";

/// What tests learn about the real nodes (`DIR/real-nodes.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RealNodesInfo {
    pub nodes: Vec<RealNodeInfo>,
    /// The test application, by digest (`localhost/berth-testapp@sha256:…`),
    /// imported into every real node's containerd.
    pub testapp_image: String,
    /// Why gVisor is absent, when it is (its build log's tail).
    pub runsc_missing: Option<String>,
    /// The agent's own image (from `--agent-binary`), by digest, imported
    /// into every real node's containerd: what canary Jobs run.
    #[serde(default)]
    pub agent_image: Option<String>,
    /// Why the agent's image is absent although `--agent-binary` asked for
    /// it (the build's error): canaries cannot run on the node, and the
    /// demo says so instead of failing the whole node.
    #[serde(default)]
    pub agent_image_missing: Option<String>,
    /// containerd's `ctr`, for importing more images into the nodes
    /// ([`RealNodesInfo::import_image`]).
    #[serde(default)]
    pub ctr: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RealNodeInfo {
    pub name: String,
    pub handlers: Vec<String>,
    pub ip: Ipv4Addr,
    /// containerd's configuration file and socket, for tests that edit the
    /// handlers and restart it.
    pub containerd_config: PathBuf,
    pub containerd_socket: PathBuf,
}

/// Why the real nodes have no image for canary Jobs.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoCanaryImage {
    /// The agent's image was asked for and did not build (its error).
    #[error("the agent's image did not build: {0}")]
    DidNotBuild(String),
    /// The nodes were started without `--agent-binary`.
    #[error("the real nodes were started without an agent binary, so they have no agent image")]
    NotAsked,
}

impl RealNodesInfo {
    /// The image canary Jobs run on these nodes (by digest), or why there
    /// is none: what the demo shows when it turns canaries off.
    pub fn canary_image(&self) -> Result<&str, NoCanaryImage> {
        match (&self.agent_image, &self.agent_image_missing) {
            (Some(image), _) if !image.is_empty() => Ok(image),
            (_, Some(why)) => Err(NoCanaryImage::DidNotBuild(why.clone())),
            _ => Err(NoCanaryImage::NotAsked),
        }
    }

    /// Imports the OCI archive `archive` into every real node's containerd
    /// and returns its image by digest (`REPOSITORY@sha256:…`, a name the
    /// CRI resolves without a registry), as the test app's is.
    pub fn import_image(&self, archive: &Path) -> Result<String, crate::Error> {
        let ctr = self.ctr.as_deref().ok_or_else(|| crate::Error::Start {
            component: "ctr".into(),
            detail: "real-nodes.json names no ctr (written by an older berth-localcluster)".into(),
            log: archive.to_path_buf(),
        })?;
        let mut by_digest = String::new();
        for node in &self.nodes {
            let (name, digest) = images::import(ctr, &node.containerd_socket, archive)?;
            by_digest = images::tag_by_digest(ctr, &node.containerd_socket, &name, &digest)?;
        }
        Ok(by_digest)
    }

    pub fn path(cluster_dir: &Path) -> PathBuf {
        cluster_dir.join("real-nodes.json")
    }

    pub fn read(cluster_dir: &Path) -> Result<Self, InfoError> {
        let path = Self::path(cluster_dir);
        let text = std::fs::read_to_string(&path).map_err(|source| InfoError::Read {
            path: path.clone(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| InfoError::Parse { path, source })
    }
}

/// Why `real-nodes.json` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InfoError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// Why this machine cannot run a kubelet, if it cannot: the reasons a test
/// may be skipped for. Anything else that stops a real node is a failure.
pub fn unsupported_reason() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("not running as root (a kubelet and containerd need root)".into());
    }
    let v1 = Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists();
    let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    if !v1 && !v2 {
        return Some("no cgroup filesystem under /sys/fs/cgroup".into());
    }
    let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !filesystems
        .lines()
        .any(|l| l.trim_end().ends_with("overlay"))
    {
        return Some("the kernel has no overlay filesystem (containerd's snapshotter)".into());
    }
    for tool in ["ip", "umount", "buildah"] {
        if !std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        {
            return Some(format!("{tool} is not installed"));
        }
    }
    if !Path::new("/sys/class/net").is_dir() {
        return Some("no /sys/class/net (no network devices can be created)".into());
    }
    None
}

#[cfg(test)]
mod canary_image_tests {
    use super::{NoCanaryImage, RealNodesInfo};

    fn info(image: Option<&str>, missing: Option<&str>) -> RealNodesInfo {
        RealNodesInfo {
            nodes: Vec::new(),
            testapp_image: String::new(),
            runsc_missing: None,
            agent_image: image.map(str::to_string),
            agent_image_missing: missing.map(str::to_string),
            ctr: None,
        }
    }

    #[test]
    fn the_image_or_why_there_is_none() {
        let built = info(Some("localhost/berth-agent@sha256:ab"), None);
        assert_eq!(built.canary_image(), Ok("localhost/berth-agent@sha256:ab"));
        let failed = info(None, Some("buildah: command not found"));
        assert_eq!(
            failed.canary_image(),
            Err(NoCanaryImage::DidNotBuild(
                "buildah: command not found".into()
            ))
        );
        assert_eq!(
            info(None, None).canary_image(),
            Err(NoCanaryImage::NotAsked)
        );
        assert_eq!(
            info(Some(""), None).canary_image(),
            Err(NoCanaryImage::NotAsked)
        );
    }
}
