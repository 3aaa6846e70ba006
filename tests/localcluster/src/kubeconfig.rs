//! kubeconfig files for the admin and the restricted test user.

use std::path::Path;

use super::Error;

/// The name of a cluster's context (and kubeconfig cluster) unless
/// `berth-localcluster up --name` gives another.
pub const DEFAULT_NAME: &str = "berth-local";

/// Renders a kubeconfig whose credentials are files in `pki_dir`; its
/// cluster and context are `name`. Under another name than
/// [`DEFAULT_NAME`] the user is `NAME-USER`, so that the kubeconfigs of
/// several clusters merge without a clash (`KUBECONFIG=a:b`).
pub fn render(
    server: &str,
    pki_dir: &Path,
    name: &str,
    user: &str,
    cert: &str,
    key: &str,
) -> String {
    let ca = pki_dir.join("ca.crt");
    let cert = pki_dir.join(cert);
    let key = pki_dir.join(key);
    let user = if name == DEFAULT_NAME {
        user.to_string()
    } else {
        format!("{name}-{user}")
    };
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: {server}
    certificate-authority: {ca}
users:
- name: {user}
  user:
    client-certificate: {cert}
    client-key: {key}
contexts:
- name: {name}
  context:
    cluster: {name}
    user: {user}
current-context: {name}
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
