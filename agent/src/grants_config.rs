//! Where the agent's grants come from: `--grants-file PATH` or
//! `BERTH_GRANTS_FILE` (docs/grants-file.md).
//!
//! The `run` command flattens [`GrantsFileArgs`] into its arguments and calls
//! [`GrantsFileArgs::load`] first thing, before it creates any Kubernetes
//! client: an invalid file must stop the agent from starting. No file
//! configured means the feature is off and no service is granted anything.
//! The file is read once; [`LoadedGrants::changed_on_disk`] later tells
//! whether a restart is required.

// Until the `run` command lands and flattens `GrantsFileArgs`, nothing in the
// binary calls this module outside its tests.
#![allow(
    dead_code,
    reason = "used by the `run` command, which lands separately"
)]

use std::path::{Path, PathBuf};

use berth_shared::grants::{self, GrantsError, LoadedGrants};

/// The grants-file option shared by every command that needs the grants.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GrantsFileArgs {
    /// The grants file (strict TOML, see docs/grants-file.md). Without it no
    /// service is granted any RuntimeClass. Read once at start: changing it
    /// requires a restart.
    #[arg(long = "grants-file", env = "BERTH_GRANTS_FILE", value_name = "PATH")]
    pub grants_file: Option<PathBuf>,
}

impl GrantsFileArgs {
    /// Load the configured file: `Ok(None)` when none is configured, an error
    /// (refuse to start) when it breaks any rule.
    pub fn load(&self) -> Result<Option<LoadedGrants>, GrantsError> {
        load_configured(self.grants_file.as_deref())
    }
}

/// Load an optional grants file: `None` → no grants; invalid → error.
pub fn load_configured(path: Option<&Path>) -> Result<Option<LoadedGrants>, GrantsError> {
    match path {
        None => Ok(None),
        Some(path) => grants::load(path).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::os::unix::fs::PermissionsExt as _;

    #[derive(Debug, Parser)]
    struct TestCli {
        #[command(flatten)]
        grants: GrantsFileArgs,
    }

    #[test]
    fn no_file_means_no_grants() {
        // Only meaningful when the variable is not set around the test run.
        if std::env::var_os("BERTH_GRANTS_FILE").is_some() {
            return;
        }
        let cli = TestCli::try_parse_from(["t"]).expect("parse");
        assert!(cli.grants.grants_file.is_none());
        assert!(cli.grants.load().expect("no file").is_none());
    }

    #[test]
    fn invalid_file_is_an_error() {
        let cli = TestCli::try_parse_from(["t", "--grants-file", "/dev/zero"]).expect("parse");
        let err = cli.grants.load().expect_err("a device is refused");
        assert_eq!(err.rule(), "file-type");

        // An explicitly empty path is a usage error (exit 2), never "no grants".
        let err = TestCli::try_parse_from(["t", "--grants-file", ""]).expect_err("empty path");
        assert_eq!(err.kind(), clap::error::ErrorKind::InvalidValue);
    }

    #[test]
    fn valid_file_loads() {
        // A trusted directory next to the test binary (not /tmp, which the
        // loader refuses by design): <target>/<profile>/berth-grants-tests.
        let exe = std::env::current_exe().expect("exe");
        let base = exe
            .parent()
            .and_then(Path::parent)
            .expect("<target>/<profile>/deps")
            .join("berth-grants-tests");
        std::fs::create_dir_all(&base).expect("mkdir");
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        let file = base.join(format!("agent-config-{}.toml", std::process::id()));
        std::fs::write(
            &file,
            "schema_version = 1\n[[bindings]]\nname = \"a\"\nproject = \"p\"\nenvironment = \"e\"\n\
             application = \"x\"\nservice = \"s\"\nruntime_class = \"gvisor\"\nhandler = \"runsc\"\n",
        )
        .expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let arg = file.to_string_lossy().into_owned();
        let cli = TestCli::try_parse_from(["t", "--grants-file", arg.as_str()]).expect("parse");
        let result = cli.grants.load();
        let _ = std::fs::remove_file(&file);
        match result {
            Ok(Some(loaded)) => assert_eq!(loaded.bindings.len(), 1),
            Ok(None) => panic!("configured file ignored"),
            // Not fatal: the checkout may sit under a directory the loader does
            // not trust (the shared crate's tests cover the rules themselves).
            Err(e) if e.rule().starts_with("dir-") => eprintln!("skipped: {e}"),
            Err(e) => panic!("{e}"),
        }
    }
}
