//! kubeconfig files for the admin and the restricted test user.

use std::path::Path;

use super::Error;

/// Renders a kubeconfig whose credentials are files in `pki_dir`.
pub fn render(server: &str, pki_dir: &Path, user: &str, cert: &str, key: &str) -> String {
    let ca = pki_dir.join("ca.crt");
    let cert = pki_dir.join(cert);
    let key = pki_dir.join(key);
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: berth-local
  cluster:
    server: {server}
    certificate-authority: {ca}
users:
- name: {user}
  user:
    client-certificate: {cert}
    client-key: {key}
contexts:
- name: berth-local
  context:
    cluster: berth-local
    user: {user}
current-context: berth-local
",
        ca = ca.display(),
        cert = cert.display(),
        key = key.display(),
    )
}

/// Writes `content` to `path` atomically (temp file + rename), so a reader
/// that sees the file sees all of it.
pub fn write_atomic(path: &Path, content: &str) -> Result<(), Error> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}
