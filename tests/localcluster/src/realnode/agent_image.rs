//! The agent's own image on a real node (issue 53): canary Jobs run the
//! agent's image (`berth-agent canary`), and a real node pulls from no
//! registry. The image is built from the very `berth-agent` binary the
//! tests and the demo run (`--agent-binary`), with buildah, without a
//! daemon: the stripped binary at `/usr/local/bin/berth-agent` (as in
//! `assets/image/build.sh`), the shared libraries it links (a debug build
//! is not static: `ldd` names them), and `assets/image/{passwd,group}`.
//! It is imported into the node's containerd and named by its digest.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;

fn run(what: &str, cmd: &mut Command) -> Result<String, Error> {
    let out = cmd.output().map_err(|e| Error::Start {
        component: "agent-image".into(),
        detail: format!("{what}: {e}"),
        log: PathBuf::from(what),
    })?;
    if !out.status.success() {
        return Err(Error::Start {
            component: "agent-image".into(),
            detail: format!(
                "{what}: {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            log: PathBuf::from(what),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The absolute library paths `ldd` names for `bin` (none for a static
/// binary).
fn libraries(bin: &Path) -> Result<Vec<PathBuf>, Error> {
    let out = Command::new("ldd")
        .arg(bin)
        .output()
        .map_err(|e| Error::io(bin, e))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)" or
            // "/lib64/ld-linux-x86-64.so.2 (0x…)".
            let path = l.split("=>").last()?.split_whitespace().next()?;
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect())
}

/// Builds the image of `bin` as the OCI archive `dir/agent-image.oci.tar`
/// and returns it with the image's name.
pub fn build(bin: &Path, dir: &Path) -> Result<(PathBuf, String), Error> {
    // The repository's root (this crate lives in tests/localcluster/).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let stripped = dir.join("berth-agent.stripped");
    run(
        "strip the agent",
        Command::new("strip")
            .arg("--strip-all")
            .arg("-o")
            .arg(&stripped)
            .arg(bin),
    )?;
    let name = "localhost/berth-agent:real-node".to_string();
    let ctr = run(
        "buildah from",
        Command::new("buildah").args(["from", "--quiet", "scratch"]),
    )?;
    let result = (|| {
        let copy = |from: &Path, to: &str, mode: &str| {
            run(
                &format!("buildah copy {}", from.display()),
                Command::new("buildah")
                    .args(["copy", "--quiet", "--chown", "0:0", "--chmod", mode, &ctr])
                    .arg(from)
                    .arg(to),
            )
        };
        copy(&stripped, "/usr/local/bin/berth-agent", "0555")?;
        for lib in libraries(bin)? {
            let real = std::fs::canonicalize(&lib).map_err(|e| Error::io(&lib, e))?;
            copy(&real, &lib.display().to_string(), "0555")?;
        }
        copy(&root.join("assets/image/passwd"), "/etc/passwd", "0444")?;
        copy(&root.join("assets/image/group"), "/etc/group", "0444")?;
        run(
            "buildah config",
            Command::new("buildah").args([
                "config",
                "--user",
                "65532:65532",
                "--entrypoint",
                r#"["/usr/local/bin/berth-agent"]"#,
                "--cmd",
                "",
                &ctr,
            ]),
        )?;
        let id = run(
            "buildah commit",
            Command::new("buildah").args([
                "commit",
                "--quiet",
                "--format",
                "oci",
                "--timestamp",
                "0",
                &ctr,
                &name,
            ]),
        )?;
        let archive = dir.join("agent-image.oci.tar");
        let _ = std::fs::remove_file(&archive);
        run(
            "buildah push",
            Command::new("buildah")
                .args(["push", "--quiet", &id])
                .arg(format!("oci-archive:{}:{name}", archive.display())),
        )?;
        let _ = Command::new("buildah").args(["rmi", &id]).output();
        Ok(archive)
    })();
    let _ = Command::new("buildah").args(["rm", &ctr]).output();
    let _ = std::fs::remove_file(&stripped);
    Ok((result?, name))
}
