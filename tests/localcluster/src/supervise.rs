//! `berth-localcluster supervise -- BINARY ARGS…`: runs one component and
//! stops it when the cluster process is gone, however it ended.
//!
//! The supervisor's standard input is a pipe whose only writer is the
//! `berth-localcluster` process (Rust opens pipes close-on-exec, so no
//! other child holds it). When that process exits — even by SIGKILL, which
//! runs no cleanup — the kernel closes the pipe, the supervisor reads EOF
//! and stops its component: SIGTERM, then SIGKILL after a grace period.
//! This needs no `unsafe` (no `prctl(PR_SET_PDEATHSIG)` between fork and
//! exec), and unlike a parent-death signal it does not depend on which
//! thread spawned the child.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};
use tokio::io::AsyncReadExt;
use tokio::signal::unix::{SignalKind, signal};

/// How long a component may take to stop after SIGTERM.
const GRACE: Duration = Duration::from_secs(10);

async fn stdin_closed() {
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 64];
    loop {
        match stdin.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Runs `binary args` until it exits (returning its exit code), or until
/// standard input closes or SIGTERM/SIGINT arrives (then stops it).
pub async fn supervise(binary: &Path, args: &[OsString]) -> std::io::Result<i32> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    // Same process group as the supervisor (the cluster signals the group).
    let mut child = tokio::process::Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .spawn()?;
    let pid = child
        .id()
        .and_then(|id| Pid::from_raw(i32::try_from(id).ok()?));
    tokio::select! {
        status = child.wait() => return Ok(status?.code().unwrap_or(1)),
        () = stdin_closed() => {}
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    if let Some(pid) = pid {
        let _ = kill_process(pid, Signal::TERM);
    }
    match tokio::time::timeout(GRACE, child.wait()).await {
        Ok(status) => Ok(status?.code().unwrap_or(1)),
        Err(_) => {
            let _ = child.kill().await;
            Ok(1)
        }
    }
}
