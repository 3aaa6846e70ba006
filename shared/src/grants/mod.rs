//! The grants file (docs/grants-file.md): a strict, safe loader.
//!
//! The grants file is the only source of grants; it decides which service may
//! run on which RuntimeClass, so it is treated like sudoers:
//!
//! - [`load`] resolves and opens the file under the file-safety rules
//!   (see [`file_safety`](self) docs and `docs/grants-file.md`), reads at most
//!   [`MAX_FILE_BYTES`] + 1 bytes, and validates the content strictly;
//! - any broken rule is a [`GrantsError`]; content errors list every problem
//!   found with its line and column;
//! - a successful load is a [`LoadedGrants`]: the bindings, the sha256 of the
//!   exact bytes read, and the load time. [`LoadedGrants::changed_on_disk`]
//!   tells whether the file now has different content (the agent reports
//!   "restart required"; it never reloads).
//!
//! ```toml
//! schema_version = 1
//! [[bindings]]
//! name = "bounded-worker"
//! project = "demo"
//! environment = "production"
//! application = "analytics"
//! service = "worker"
//! runtime_class = "bounded-worker"
//! handler = "bounded-runc"
//! ```

mod error;
mod excerpt;
mod file_safety;
mod limits;
mod parse;
pub mod validate;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest as _, Sha256};

/// One grant, as the loader parses it (the crate's one binding type).
pub use crate::binding::{Binding, FileForm};
pub use error::{Diagnostic, FormatIssue, GrantsError, Position, Problem, TableRef, UnsafeFile};
pub use limits::{LoadOptions, MAX_BINDINGS, MAX_FILE_BYTES, MAX_SYMLINKS, SCHEMA_VERSION};
pub use parse::{MAX_REPORTED_PROBLEMS, parse_bytes};

/// A grants file that passed every rule.
#[derive(Debug, Clone)]
pub struct LoadedGrants {
    /// The bindings, in file order.
    pub bindings: Vec<Binding>,
    /// Lowercase hex sha256 of the exact bytes read.
    pub sha256: String,
    /// When the file was loaded.
    pub loaded_at: SystemTime,
    /// The path as configured.
    pub path: PathBuf,
    /// The real file read (symlinks replaced by their targets).
    pub resolved_path: PathBuf,
    options: LoadOptions,
}

impl LoadedGrants {
    /// The binding with this alias, if any.
    pub fn binding(&self, name: &str) -> Option<&Binding> {
        self.bindings.iter().find(|b| b.name == name)
    }

    /// Re-read the configured path (same safety rules, no parsing) and tell
    /// whether its content differs from what was loaded. An error means the
    /// file can no longer be read safely, which is also a reason to restart.
    pub fn changed_on_disk(&self) -> Result<bool, GrantsError> {
        Ok(current_sha256_with(&self.path, &self.options)? != self.sha256)
    }

    /// Validate bytes that did not come from a checked file (tests, tools).
    /// Applies every content rule and the size limit, but no file-safety rule:
    /// never use this for the agent's grants.
    pub fn from_unchecked_bytes(
        path: impl Into<PathBuf>,
        bytes: &[u8],
    ) -> Result<LoadedGrants, GrantsError> {
        let path = path.into();
        if bytes.len() > MAX_FILE_BYTES {
            return Err(GrantsError::TooLarge {
                path,
                limit: MAX_FILE_BYTES,
            });
        }
        let bindings = parse_bytes(bytes).map_err(|problems| GrantsError::Invalid {
            path: path.clone(),
            problems,
        })?;
        Ok(LoadedGrants {
            bindings,
            sha256: sha256_hex(bytes),
            loaded_at: SystemTime::now(),
            resolved_path: path.clone(),
            path,
            options: LoadOptions::default(),
        })
    }
}

/// Lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Load the grants file at `path` with the default owners (root and the
/// effective uid).
pub fn load(path: &Path) -> Result<LoadedGrants, GrantsError> {
    load_with(path, &LoadOptions::default())
}

/// Load the grants file at `path`, trusting the owners in `options`.
pub fn load_with(path: &Path, options: &LoadOptions) -> Result<LoadedGrants, GrantsError> {
    let content = file_safety::read_trusted(path, options)?;
    let bindings = parse_bytes(&content.bytes).map_err(|problems| GrantsError::Invalid {
        path: path.to_owned(),
        problems,
    })?;
    Ok(LoadedGrants {
        bindings,
        sha256: sha256_hex(&content.bytes),
        loaded_at: SystemTime::now(),
        path: path.to_owned(),
        resolved_path: content.resolved,
        options: options.clone(),
    })
}

/// sha256 of the file's current content, read under the same safety rules
/// (for "restart required" detection), with the default owners.
pub fn current_sha256(path: &Path) -> Result<String, GrantsError> {
    current_sha256_with(path, &LoadOptions::default())
}

/// [`current_sha256`] with explicit options.
pub fn current_sha256_with(path: &Path, options: &LoadOptions) -> Result<String, GrantsError> {
    let content = file_safety::read_trusted(path, options)?;
    Ok(sha256_hex(&content.bytes))
}
