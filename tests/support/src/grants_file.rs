//! Grants files for tests and the benchmark: one writer of the TOML text
//! and of the file-safety rules the agent enforces (0600 file in a 0700
//! directory), so a change of the format is made in one place.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One `[[bindings]]` table.
#[derive(Clone, Copy, Debug)]
pub struct TestBinding<'a> {
    /// The alias Runtimes request (`runtimeProfile`).
    pub name: &'a str,
    /// Identity: project.
    pub project: &'a str,
    /// Identity: environment.
    pub environment: &'a str,
    /// Identity: application.
    pub application: &'a str,
    /// Identity: service.
    pub service: &'a str,
    /// The granted RuntimeClass.
    pub runtime_class: &'a str,
    /// Its handler.
    pub handler: &'a str,
}

impl TestBinding<'_> {
    /// The table's TOML text.
    pub fn toml(&self) -> String {
        format!(
            "[[bindings]]\nname = \"{}\"\nproject = \"{}\"\nenvironment = \"{}\"\n\
             application = \"{}\"\nservice = \"{}\"\nruntime_class = \"{}\"\nhandler = \"{}\"\n",
            self.name,
            self.project,
            self.environment,
            self.application,
            self.service,
            self.runtime_class,
            self.handler
        )
    }
}

/// A whole grants file from binding tables (TOML text, e.g. from
/// [`TestBinding::toml`]; invalid text is passed through for tests of the
/// loader's errors).
pub fn text(bindings: &[String]) -> String {
    let mut text = String::from("schema_version = 1\n");
    if bindings.is_empty() {
        text.push_str("bindings = []\n");
    }
    for b in bindings {
        text.push_str(b);
    }
    text
}

/// Writes `text` to `dir/file_name` as the agent requires: the directory
/// 0700, the file 0600.
pub fn write_private(dir: &Path, file_name: &str, text: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    let path = dir.join(file_name);
    std::fs::write(&path, text)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_a_valid_grants_file() {
        let b = TestBinding {
            name: "bw",
            project: "demo",
            environment: "production",
            application: "app",
            service: "web",
            runtime_class: "bounded",
            handler: "bounded-runc",
        };
        let file = text(&[b.toml()]);
        let bindings = berth_shared::grants::parse_bytes(file.as_bytes()).expect("valid");
        assert_eq!(bindings.len(), 1);
        assert_eq!(bindings[0].runtime_class, "bounded");
        assert_eq!(bindings[0].identity.service, "web");
        let empty = text(&[]);
        assert!(
            berth_shared::grants::parse_bytes(empty.as_bytes())
                .expect("valid")
                .is_empty()
        );
    }

    #[test]
    fn the_file_is_private() {
        let sub = std::env::temp_dir().join(format!("berth-grants-file-{}", std::process::id()));
        let path = write_private(&sub, "grants.toml", "x").expect("write");
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&sub), 0o700);
        assert_eq!(mode(&path), 0o600);
        std::fs::remove_dir_all(&sub).expect("clean up");
    }
}
