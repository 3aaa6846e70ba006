//! The real `berth` binary, run as a command (the CLI tests: `get`,
//! `retire`, `plan-grants`).

use std::path::{Path, PathBuf};

use berth_tests::harness;

/// `berth`: `BERTH_BIN`, or built once for the run.
pub fn binary() -> PathBuf {
    harness::workspace_binary("berth-console", "berth", "BERTH_BIN")
}

/// `berth ARGS` with `kubeconfig` (the shared cluster's admin one when
/// `None`), stdin not a terminal: (exit code, stdout, stderr).
pub async fn run(kubeconfig: Option<&Path>, args: &[&str]) -> (i32, String, String) {
    let bin = tokio::task::spawn_blocking(binary).await.expect("build");
    let kubeconfig = match kubeconfig {
        Some(k) => k.to_path_buf(),
        None => tokio::task::spawn_blocking(|| harness::cluster().kubeconfig.clone())
            .await
            .expect("cluster"),
    };
    let out = tokio::process::Command::new(bin)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("run berth");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
