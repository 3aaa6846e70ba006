//! What the loader accepts: the file's size, its bindings' count, the
//! schema version, the symlinks followed, and whose files it trusts. Read
//! by the loader ([`super::load`]), the parser and the file-safety checks
//! alike, so none of them reaches back into the loader.

/// Largest accepted file, in bytes (64 KiB). Never more than this + 1 is read.
pub const MAX_FILE_BYTES: usize = 64 * 1024;
/// Most bindings a file may hold.
pub const MAX_BINDINGS: usize = 64;
/// The only `schema_version` this code reads.
pub const SCHEMA_VERSION: i64 = 1;
/// Most symbolic links followed while resolving the path (as Linux's ELOOP limit).
pub const MAX_SYMLINKS: usize = 40;

/// How files are judged. The default trusts root and the process's effective
/// uid as owners; tests and tools may choose another set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// Owners accepted for the file and every directory on its path.
    pub trusted_uids: Vec<u32>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        let euid = rustix::process::geteuid().as_raw();
        let mut trusted_uids = vec![0];
        if euid != 0 {
            trusted_uids.push(euid);
        }
        LoadOptions { trusted_uids }
    }
}

impl LoadOptions {
    /// Trust exactly these owners.
    pub fn trusting(uids: impl IntoIterator<Item = u32>) -> Self {
        LoadOptions {
            trusted_uids: uids.into_iter().collect(),
        }
    }
}
