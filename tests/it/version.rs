//! Release hygiene: both binaries' `--version` names the git commit they
//! were built from (set by `build/git_commit.rs`).

use std::path::Path;
use std::process::Command;

use berth_tests::harness::workspace_binary;

#[test]
fn both_binaries_print_their_version_and_commit() {
    let out = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .output()
        .expect("git rev-parse HEAD");
    assert!(out.status.success(), "git rev-parse HEAD: {out:?}");
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(commit.len(), 40, "{commit}");
    for (package, bin, env) in [
        ("berth-agent", "berth-agent", "BERTH_AGENT_BIN"),
        ("berth-console", "berth", "BERTH_BIN"),
    ] {
        if std::env::var_os(env).is_some() {
            continue; // a prebuilt binary may come from another commit
        }
        let path = workspace_binary(package, bin, env);
        let out = Command::new(&path)
            .arg("--version")
            .output()
            .expect("run --version");
        assert!(out.status.success(), "{bin} --version: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("{bin} {} (commit {commit})", env!("CARGO_PKG_VERSION"))
        );
    }
}
