//! The real node's images: OCI archives built by `tests/k8s/build.sh`
//! (buildah, no registry) imported into containerd's `k8s.io` namespace,
//! where the CRI finds them.

use std::path::Path;
use std::process::Command;

use crate::Error;

fn ctr(ctr: &Path, socket: &Path, args: &[&str]) -> Result<String, Error> {
    let out = Command::new(ctr)
        .arg("--address")
        .arg(socket)
        .args(["--namespace", "k8s.io"])
        .args(args)
        .output()
        .map_err(|e| Error::Start {
            component: "ctr".into(),
            detail: format!("{}: {e}", ctr.display()),
            log: socket.to_path_buf(),
        })?;
    if !out.status.success() {
        return Err(Error::Start {
            component: "ctr".into(),
            detail: format!(
                "ctr {}: {}: {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            log: socket.to_path_buf(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Imports `archive` and returns its image's name and manifest digest.
pub fn import(ctr_bin: &Path, socket: &Path, archive: &Path) -> Result<(String, String), Error> {
    let archive_s = archive.display().to_string();
    let out = ctr(
        ctr_bin,
        socket,
        &["images", "import", "--local", &archive_s],
    )
    .or_else(|_| ctr(ctr_bin, socket, &["images", "import", &archive_s]))?;
    // "unpacking NAME (sha256:…)...done"
    for line in out.lines() {
        if let Some(rest) = line.trim().strip_prefix("unpacking ")
            && let Some((name, rest)) = rest.split_once(" (")
            && let Some(digest) = rest.split(')').next()
            && digest.starts_with("sha256:")
        {
            return Ok((name.to_string(), digest.to_string()));
        }
    }
    Err(Error::Start {
        component: "ctr".into(),
        detail: format!("importing {archive_s}: no image in the answer: {out}"),
        log: socket.to_path_buf(),
    })
}

/// Gives image `name` a second name, `REPOSITORY@DIGEST`: the CRI resolves a
/// digest reference by that name only (an imported image has none), and a
/// pod pinned by digest must not need a registry.
pub fn tag_by_digest(
    ctr_bin: &Path,
    socket: &Path,
    name: &str,
    digest: &str,
) -> Result<String, Error> {
    let repo = name
        .rsplit_once(':')
        .filter(|(r, _)| !r.ends_with("localhost") && !r.is_empty())
        .map_or(name, |(r, _)| r);
    let by_digest = format!("{repo}@{digest}");
    let listed = ctr(ctr_bin, socket, &["images", "ls", "--quiet"])?;
    if !listed.lines().any(|l| l.trim() == by_digest) {
        ctr(ctr_bin, socket, &["images", "tag", name, &by_digest])?;
    }
    Ok(by_digest)
}
