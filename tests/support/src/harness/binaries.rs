//! The workspace's binaries for tests to run (the agent, the console,
//! `berth-localcluster`), built once per test process and copied to a
//! private path, and where cargo puts this package's own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The `berth-localcluster` binary these tests start clusters with: a
/// crate of its own (what the demo builds), built once per test process,
/// like the agent and the console (BERTH_LOCALCLUSTER_BIN to skip).
pub fn localcluster_binary() -> Result<PathBuf, String> {
    Ok(workspace_binary(
        "berth-localcluster",
        "berth-localcluster",
        "BERTH_LOCALCLUSTER_BIN",
    ))
}

/// `<target>/<profile>`: where cargo puts this package's binaries. Test
/// executables live in its `deps/`; a binary of this package (the
/// benchmark) lives in it directly.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("own executable");
    let dir = exe.parent().expect("<target>/<profile>");
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().expect("<target>/<profile>/deps").to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

static BINARIES: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());

/// A binary of this workspace for tests to run: `$ENV_VAR` when set (e.g.
/// `BERTH_AGENT_BIN`), otherwise built once per test process with the cargo
/// that runs the tests (`cargo test -p berth-tests` builds no binary of
/// another package) and copied to a private path, so that another cargo
/// run relinking `target/debug/NAME` cannot pull it from under running
/// tests. Blocking: call it through `spawn_blocking` from async code.
pub fn workspace_binary(package: &str, bin: &str, env_var: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env_var) {
        return PathBuf::from(p);
    }
    // Held for the build: concurrent tests wait for one build, not several.
    let mut built = berth_shared::sync::lock(&BINARIES);
    if let Some((_, path)) = built.iter().find(|(b, _)| b == bin) {
        return path.clone();
    }
    let profile = profile_dir();
    let target = profile.parent().expect("<target>");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "-p", package, "--bin", bin])
        .arg("--target-dir")
        .arg(target)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."));
    if profile.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let out = cmd.output().expect("run cargo");
    assert!(
        out.status.success(),
        "cargo build -p {package} --bin {bin} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = target
        .join("berth-it")
        .join(format!("bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("binary dir");
    let copy = dir.join(bin);
    std::fs::copy(profile.join(bin), &copy).expect("copy binary");
    built.push((bin.to_string(), copy.clone()));
    copy
}
