//! Breaking a handler on a real node the way an operator does, and mending
//! it (issue 53): the handler's binaries moved out of the node's `bin`
//! directory (containerd's PATH, where it finds runtimes and shims) into
//! `bin-aside` beside it, and back. The node keeps reporting the handler
//! (containerd's config still names it), so only a canary can tell.
//!
//! `berth-localcluster break-handler|restore-handler HANDLER` (the demo's
//! README) and the real-node canary test use these same functions.

use std::path::{Path, PathBuf};

use super::{RealNodeInfo, RealNodesInfo};

/// Why a handler could not be broken or restored.
#[derive(Debug, thiserror::Error)]
pub enum BreakageError {
    #[error(
        "handler {0:?} cannot be broken alone: only runsc has binaries of its own (runc, bounded-runc and extra-runc share runc and its shim, and the node's own pods need them)"
    )]
    NotBreakable(String),
    #[error("node {node} does not configure handler {handler:?} (it has {has:?})")]
    NotOnNode {
        node: String,
        handler: String,
        has: Vec<String>,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is neither in the node's bin directory nor moved aside", path.display())]
    Lost { path: PathBuf },
    #[error(transparent)]
    Info(#[from] super::InfoError),
}

/// The binaries of `handler` that no other handler needs: runsc and its
/// containerd shim.
pub fn handler_binaries(handler: &str) -> Result<&'static [&'static str], BreakageError> {
    match handler {
        "runsc" => Ok(&["runsc", "containerd-shim-runsc-v1"]),
        other => Err(BreakageError::NotBreakable(other.to_string())),
    }
}

/// The node's `bin` directory (containerd's PATH) and `bin-aside`.
fn dirs(node: &RealNodeInfo) -> Result<(PathBuf, PathBuf), BreakageError> {
    let conf = node
        .containerd_config
        .parent()
        .ok_or_else(|| BreakageError::Lost {
            path: node.containerd_config.clone(),
        })?;
    Ok((conf.join("bin"), conf.join("bin-aside")))
}

/// One binary moved from `from` to `to`: `Ok(true)` when it moved,
/// `Ok(false)` when it already was in `to`.
fn shift(name: &str, from: &Path, to: &Path) -> Result<bool, BreakageError> {
    let (src, dst) = (from.join(name), to.join(name));
    // The node's binaries are symlinks into the build cache: look at the
    // link itself, not what it points to.
    if src.symlink_metadata().is_ok() {
        std::fs::create_dir_all(to).map_err(|source| BreakageError::Io {
            path: to.to_path_buf(),
            source,
        })?;
        std::fs::rename(&src, &dst).map_err(|source| BreakageError::Io { path: src, source })?;
        return Ok(true);
    }
    if dst.symlink_metadata().is_ok() {
        return Ok(false);
    }
    Err(BreakageError::Lost { path: src })
}

fn check_node(node: &RealNodeInfo, handler: &str) -> Result<(), BreakageError> {
    if node.handlers.iter().any(|h| h == handler) {
        Ok(())
    } else {
        Err(BreakageError::NotOnNode {
            node: node.name.clone(),
            handler: handler.to_string(),
            has: node.handlers.clone(),
        })
    }
}

/// Moves `handler`'s binaries away on `node`; returns the paths moved
/// (none when they already were away).
pub fn break_handler(node: &RealNodeInfo, handler: &str) -> Result<Vec<PathBuf>, BreakageError> {
    let names = handler_binaries(handler)?;
    check_node(node, handler)?;
    let (bin, aside) = dirs(node)?;
    let mut moved = Vec::new();
    for name in names {
        if shift(name, &bin, &aside)? {
            moved.push(bin.join(name));
        }
    }
    Ok(moved)
}

/// Puts `handler`'s binaries back on `node`; returns the paths restored
/// (none when nothing was away).
pub fn restore_handler(node: &RealNodeInfo, handler: &str) -> Result<Vec<PathBuf>, BreakageError> {
    let names = handler_binaries(handler)?;
    check_node(node, handler)?;
    let (bin, aside) = dirs(node)?;
    let mut restored = Vec::new();
    for name in names {
        if shift(name, &aside, &bin)? {
            restored.push(bin.join(name));
        }
    }
    Ok(restored)
}

/// The real nodes of the cluster in `cluster_dir`, or the one named `node`.
pub fn nodes(cluster_dir: &Path, node: Option<&str>) -> Result<Vec<RealNodeInfo>, BreakageError> {
    let info = RealNodesInfo::read(cluster_dir)?;
    Ok(info
        .nodes
        .into_iter()
        .filter(|n| node.is_none_or(|want| n.name == want))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(dir: &Path) -> RealNodeInfo {
        RealNodeInfo {
            name: "berth-real-0".into(),
            handlers: vec!["runc".into(), "runsc".into()],
            ip: std::net::Ipv4Addr::LOCALHOST,
            containerd_config: dir.join("containerd.toml"),
            containerd_socket: dir.join("containerd.sock"),
        }
    }

    #[test]
    fn runsc_moves_away_and_back_and_runc_is_refused() {
        let dir = std::env::temp_dir().join(format!("berth-breakage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).expect("bin");
        for b in ["runsc", "containerd-shim-runsc-v1", "runc"] {
            // Dangling, as a link into a removed cache would be: still moved.
            std::os::unix::fs::symlink(dir.join("nowhere").join(b), dir.join("bin").join(b))
                .expect("link");
        }
        let n = node(&dir);
        let moved = break_handler(&n, "runsc").expect("break");
        assert_eq!(moved.len(), 2, "{moved:?}");
        assert!(dir.join("bin-aside/runsc").symlink_metadata().is_ok());
        assert!(dir.join("bin/runsc").symlink_metadata().is_err());
        assert!(
            dir.join("bin/runc").symlink_metadata().is_ok(),
            "runc stays"
        );
        assert!(break_handler(&n, "runsc").expect("again").is_empty());
        assert!(matches!(
            break_handler(&n, "runc"),
            Err(BreakageError::NotBreakable(_))
        ));
        let restored = restore_handler(&n, "runsc").expect("restore");
        assert_eq!(restored.len(), 2, "{restored:?}");
        assert!(
            dir.join("bin/containerd-shim-runsc-v1")
                .symlink_metadata()
                .is_ok()
        );
        assert!(restore_handler(&n, "runsc").expect("again").is_empty());
        let mut without = n.clone();
        without.handlers.retain(|h| h != "runsc");
        assert!(matches!(
            break_handler(&without, "runsc"),
            Err(BreakageError::NotOnNode { .. })
        ));
        std::fs::remove_file(dir.join("bin/runsc")).expect("lose it");
        assert!(matches!(
            break_handler(&n, "runsc"),
            Err(BreakageError::Lost { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
