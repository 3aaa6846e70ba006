//! The previous release, what the upgrade test installs first: the commit
//! `PREVIOUS_RELEASE_COMMIT` of `tests/k8s/versions.env` (berth has no
//! tags; the commit is the last round's submitted main, bumped there at
//! each release). Its tree is taken from this clone with `git archive`, its
//! image built by that tree's own `assets/image/build.sh`, and both are
//! cached outside the checkout, keyed by the commit, where the control
//! plane's binaries are (`${BERTH_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/berth}`,
//! tests/k8s/build.sh): `previous-release/<commit>/src` and
//! `previous-release/<commit>/berth-agent.oci.tar`. A warm run builds
//! nothing.
//!
//! The build uses this test run's target directory, so the dependencies
//! this run's image already compiled are reused; only what differs (the
//! workspace's own crates, at another path, and whatever the older
//! `Cargo.toml` compiles differently) is built. Cold, on CI's two cores:
//! docs/testing.md.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use berth_tests::localcluster::binaries::pinned_version;

use crate::chart::stdout_of;

/// The repository's root (this checkout).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The previous release's commit (full hash).
pub(crate) fn commit() -> &'static str {
    pinned_version("PREVIOUS_RELEASE_COMMIT").expect("PREVIOUS_RELEASE_COMMIT in versions.env")
}

/// Where cached builds live, as tests/k8s/build.sh has it.
fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("BERTH_CACHE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    base.join("berth")
}

/// The previous release: its source tree (its chart is
/// `src/assets/chart/berth`) and its image as an OCI archive.
pub(crate) struct Previous {
    pub(crate) commit: &'static str,
    pub(crate) src: PathBuf,
    pub(crate) archive: PathBuf,
}

impl Previous {
    /// Its chart.
    pub(crate) fn chart(&self) -> PathBuf {
        self.src.join("assets/chart/berth")
    }

    /// The image's name in its archive.
    pub(crate) fn reference(&self) -> String {
        reference(self.commit)
    }
}

fn reference(commit: &str) -> String {
    format!("localhost/berth-agent:previous-{}", &commit[..7])
}

/// The previous release's tree and image, built (once per machine) when
/// not cached. Panics, naming the commit and how to fetch it, when this
/// clone lacks the commit (a shallow clone): the test cannot be done
/// without it, and is not skipped.
pub(crate) fn previous() -> Previous {
    let commit = commit();
    let dir = cache_root().join("previous-release").join(commit);
    let src = dir.join("src");
    if !src.join("assets/image/build.sh").is_file() {
        extract(commit, &dir, &src);
    }
    let archive = dir.join("berth-agent.oci.tar");
    if !archive.is_file() {
        // This run's own image first: the two builds share the target
        // directory and its uplifted `berth-agent`, so they must not
        // overlap (the image is built once per process; later callers
        // get it without a build).
        crate::image::image();
        let started = Instant::now();
        build(commit, &src, &dir, &archive);
        eprintln!(
            "as_shipped: the previous release's image ({commit}) built in {:?} (cold: not cached in {})",
            started.elapsed(),
            dir.display()
        );
    }
    Previous {
        commit,
        src,
        archive,
    }
}

/// `git archive COMMIT | tar -x` into `src` (through a temporary directory,
/// renamed when complete).
fn extract(commit: &str, dir: &Path, src: &Path) {
    let present = Command::new("git")
        .args(["cat-file", "-e", &format!("{commit}^{{commit}}")])
        .current_dir(root())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        present,
        "the previous release's commit {commit} (PREVIOUS_RELEASE_COMMIT in tests/k8s/versions.env) \
         is not in this clone, which the upgrade test installs first: a shallow clone? \
         Fetch it with `git fetch --unshallow` or `git fetch origin {commit}`"
    );
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let tmp = dir.join(format!("src.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).expect("temporary source directory");
    let out = Command::new("bash")
        .arg("-c")
        .arg(r#"set -o pipefail; git -C "$1" archive "$2" | tar -x -C "$3""#)
        .arg("extract")
        .arg(root())
        .arg(commit)
        .arg(&tmp)
        .output()
        .expect("git archive | tar -x");
    stdout_of(&format!("git archive {commit} | tar -x"), &out);
    let _ = std::fs::remove_dir_all(src);
    std::fs::rename(&tmp, src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
}

/// Runs the previous tree's `assets/image/build.sh` with this run's cargo
/// and target directory (as `image::image` does for the current tree),
/// the commit given (the tree has no `.git`), and keeps only the archive.
fn build(commit: &str, src: &Path, dir: &Path, archive: &Path) {
    let reference = reference(commit);
    let tmp = dir.join(format!("berth-agent.oci.tar.tmp-{}", std::process::id()));
    let mut cmd = crate::image::build_command(src, &reference, &tmp);
    // The tree has no .git: the commit for --version and the labels.
    cmd.env("BERTH_GIT_COMMIT", commit);
    let out = cmd
        .output()
        .expect("run the previous assets/image/build.sh");
    stdout_of(
        &format!("the previous release's assets/image/build.sh ({commit})"),
        &out,
    );
    std::fs::rename(&tmp, archive).unwrap_or_else(|e| panic!("{}: {e}", archive.display()));
    // The archive is what is kept; the image store's copy is not needed.
    let _ = Command::new("podman")
        .args(["rmi", "-f", &reference])
        .output();
}
