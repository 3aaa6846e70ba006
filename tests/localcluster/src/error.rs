//! What can go wrong starting the cluster: its own module, so that every
//! part of the launcher reports through it without reaching back into the
//! launcher itself.

use std::path::{Path, PathBuf};

/// Everything that can go wrong starting the cluster; each names the
/// component and where to look.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("building the control plane failed: {detail}; see {}", log.display())]
    Build { detail: String, log: PathBuf },
    #[error("no {component} binary was found; see {}", log.display())]
    MissingBinary { component: String, log: PathBuf },
    #[error("{component} could not start: {detail}; see {}", log.display())]
    Start {
        component: String,
        detail: String,
        log: PathBuf,
    },
    #[error("{component} exited ({status}); see {} — last lines:\n{tail}", log.display())]
    Exited {
        component: String,
        status: String,
        log: PathBuf,
        tail: String,
    },
    #[error("{component} did not become healthy within {secs}s: {detail}; see {}", log.display())]
    Unhealthy {
        component: String,
        secs: u64,
        detail: String,
        log: PathBuf,
    },
    #[error(
        "{} is already in use by another process (port clash) for {component}",
        port
    )]
    PortClash { component: String, port: u16 },
    #[error("choosing free loopback ports failed: {0}")]
    Ports(String),
    #[error("creating certificates failed: {0}")]
    Pki(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("kubernetes client: {0}")]
    Kube(String),
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
