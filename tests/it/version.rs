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

/// The agent's allocator is configured when jemalloc is built
/// (`.cargo/config.toml`): one arena and a background thread. jemalloc
/// prints the options it runs with when asked to print its statistics at
/// exit (`_RJEM_MALLOC_CONF` is read at run time and adds to the built-in
/// configuration, so it is not what is checked).
#[test]
fn the_agent_runs_with_one_arena_and_a_background_thread() {
    if std::env::var_os("BERTH_AGENT_BIN").is_some() {
        return; // a prebuilt binary may come from another build
    }
    let path = workspace_binary("berth-agent", "berth-agent", "BERTH_AGENT_BIN");
    let out = Command::new(&path)
        .arg("crds")
        .env("_RJEM_MALLOC_CONF", "stats_print:true")
        .output()
        .expect("run berth-agent crds");
    assert!(out.status.success(), "berth-agent crds: {out:?}");
    let stats = String::from_utf8_lossy(&out.stderr);
    assert!(
        stats.contains("___ Begin jemalloc statistics ___"),
        "the agent is not running on jemalloc: {stats}"
    );
    for option in ["opt.narenas: 1\n", "opt.background_thread: true"] {
        assert!(
            stats.contains(option),
            "jemalloc's options lack {option:?}:\n{}",
            stats
                .lines()
                .filter(|l| l.trim_start().starts_with("opt."))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}
