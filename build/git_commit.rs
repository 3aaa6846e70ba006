//! Build script of berth-agent and berth-console (both name this file in
//! their Cargo.toml): sets `BERTH_GIT_COMMIT`, the commit the binary is built
//! from, which `--version` prints.
//!
//! Taken from `$BERTH_GIT_COMMIT` when set (builds without a `.git`, e.g. an
//! image built from an exported tree), else from `git rev-parse HEAD`, else
//! `unknown`. Uncommitted changes are not marked: a release is built from a
//! clean checkout.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Asks cargo to run this script again when `path` (a `git rev-parse
/// --git-path` answer) changes; only for files that exist (a missing one
/// would rerun the script on every build).
fn watch(git_path: &str) {
    if let Some(p) = git(&[
        "rev-parse",
        "--path-format=absolute",
        "--git-path",
        git_path,
    ]) {
        let p = PathBuf::from(p);
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
}

fn main() {
    println!("cargo:rerun-if-env-changed=BERTH_GIT_COMMIT");
    let commit = match std::env::var("BERTH_GIT_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => {
            // HEAD, the branch it points at, and packed refs: a commit or a
            // checkout changes one of them.
            watch("HEAD");
            if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
                watch(&branch);
            }
            watch("packed-refs");
            git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".to_string())
        }
    };
    println!("cargo:rustc-env=BERTH_GIT_COMMIT={commit}");
}
