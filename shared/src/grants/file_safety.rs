//! Opening the grants file safely (docs/grants-file.md, file-safety rules).
//!
//! The path is resolved one component at a time from `/`, with
//! `openat(…, O_PATH | O_NOFOLLOW)` on the directory descriptor checked just
//! before, and `fstat` on each new descriptor:
//!
//! - every directory that is traversed — the ones that hold the file, hold a
//!   symlink, or are on the way to a symlink's target — must be owned by a
//!   trusted uid (root or the agent's effective uid) and must not be writable
//!   by group or others. The one exception: a directory on a mount that is
//!   read-only where the agent sees it (`statvfs` `ST_RDONLY`), because write
//!   bits mean nothing there. Kubernetes mounts Secret and ConfigMap volumes
//!   read-only into containers while their root directory has mode 1777 or
//!   0777; without this exception the volume layout could not work. /tmp and
//!   other sticky world-writable directories on writable mounts are refused.
//! - symlinks in directory position are followed (at most [`MAX_SYMLINKS`]),
//!   and their targets are resolved under the same rules;
//! - a symlink as the last component is refused, except for the exact
//!   Kubernetes atomic-writer layout: `DIR/FILE -> ..data/FILE`,
//!   `DIR/..data -> ..<timestamp>` (one component, beside it), with
//!   `DIR/..<timestamp>` a real directory and `DIR/..<timestamp>/FILE` a real
//!   file; the timestamp directory and the file are checked like any other.
//! - the file must be a regular file (checked on an `O_PATH` descriptor, so a
//!   FIFO or device is never opened for reading), owned by a trusted uid,
//!   without group/other write bits, with exactly one hard link. It is then
//!   opened `O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY`
//!   relative to its checked directory, `fstat`ed again (same device and
//!   inode, same rules) and read bounded: at most the limit + 1 bytes.
//!
//! Because each lookup happens inside a directory already proven to be
//! writable only by trusted users, nothing an untrusted user does between two
//! steps can change what the next step finds.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{self as rfs, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::error::{GrantsError, UnsafeFile};
use super::limits::{LoadOptions, MAX_FILE_BYTES, MAX_SYMLINKS};

/// Longest configured path accepted (Linux `PATH_MAX`).
const MAX_PATH_BYTES: usize = 4096;

/// The content of a file that passed every safety rule.
#[derive(Debug)]
pub(crate) struct TrustedContent {
    pub bytes: Vec<u8>,
    /// The real path that was read (symlinks replaced by their targets).
    pub resolved: PathBuf,
}

/// A checked directory: its `O_PATH` descriptor and its resolved path.
struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// Context for building errors about the configured path.
struct Ctx<'a> {
    configured: &'a Path,
    options: &'a LoadOptions,
}

impl Ctx<'_> {
    fn unsafe_file(&self, reason: UnsafeFile) -> GrantsError {
        GrantsError::Unsafe {
            path: self.configured.to_owned(),
            reason,
        }
    }

    fn io(&self, action: &'static str, target: &Path, errno: Errno) -> GrantsError {
        GrantsError::Io {
            path: self.configured.to_owned(),
            action,
            target: target.to_owned(),
            source: errno.into(),
        }
    }

    fn trusted(&self, uid: u32) -> bool {
        self.options.trusted_uids.contains(&uid)
    }

    fn trusted_list(&self) -> String {
        let mut uids = self.options.trusted_uids.clone();
        uids.sort_unstable();
        uids.dedup();
        let parts: Vec<String> = uids
            .iter()
            .map(|u| {
                if *u == 0 {
                    "root (uid 0)".to_owned()
                } else {
                    format!("uid {u}")
                }
            })
            .collect();
        if parts.is_empty() {
            "no one (no trusted uid configured)".to_owned()
        } else {
            parts.join(" or ")
        }
    }
}

fn kind_name(ft: FileType) -> &'static str {
    match ft {
        FileType::RegularFile => "regular file",
        FileType::Directory => "directory",
        FileType::Symlink => "symbolic link",
        FileType::Fifo => "FIFO (named pipe)",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        _ => "special file",
    }
}

fn open_path(dir: &OwnedFd, name: &OsStr, extra: OFlags) -> Result<OwnedFd, Errno> {
    rfs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC | extra,
        Mode::empty(),
    )
}

fn is_read_only_mount(fd: &OwnedFd) -> bool {
    rfs::fstatvfs(fd)
        .map(|v| v.f_flag.contains(rfs::StatVfsMountFlags::RDONLY))
        .unwrap_or(false)
}

/// Owner and write-bit rules for a directory (the descriptor is known to be one).
fn check_dir(ctx: &Ctx<'_>, fd: &OwnedFd, st: &rfs::Stat, path: &Path) -> Result<(), GrantsError> {
    if !ctx.trusted(st.st_uid) {
        return Err(ctx.unsafe_file(UnsafeFile::DirOwner {
            path: path.to_owned(),
            uid: st.st_uid,
            trusted: ctx.trusted_list(),
        }));
    }
    if st.st_mode & 0o022 != 0 && !is_read_only_mount(fd) {
        return Err(ctx.unsafe_file(UnsafeFile::DirWritable {
            path: path.to_owned(),
            mode: st.st_mode & 0o7777,
        }));
    }
    Ok(())
}

/// Type, owner, mode, link-count and size rules for the file itself.
fn check_file(ctx: &Ctx<'_>, st: &rfs::Stat, path: &Path) -> Result<(), GrantsError> {
    let ft = FileType::from_raw_mode(st.st_mode);
    if ft != FileType::RegularFile {
        return Err(ctx.unsafe_file(UnsafeFile::NotRegular {
            path: path.to_owned(),
            kind: kind_name(ft),
        }));
    }
    if !ctx.trusted(st.st_uid) {
        return Err(ctx.unsafe_file(UnsafeFile::FileOwner {
            path: path.to_owned(),
            uid: st.st_uid,
            trusted: ctx.trusted_list(),
        }));
    }
    if st.st_mode & 0o022 != 0 {
        return Err(ctx.unsafe_file(UnsafeFile::FileWritable {
            path: path.to_owned(),
            mode: st.st_mode & 0o7777,
        }));
    }
    #[allow(
        clippy::useless_conversion,
        reason = "st_nlink is u32 or u64 by target"
    )]
    let nlink = u64::from(st.st_nlink);
    if nlink != 1 {
        return Err(ctx.unsafe_file(UnsafeFile::HardLinks {
            path: path.to_owned(),
            nlink,
        }));
    }
    if usize::try_from(st.st_size).map_or(true, |size| size > MAX_FILE_BYTES) {
        return Err(GrantsError::TooLarge {
            path: ctx.configured.to_owned(),
            limit: MAX_FILE_BYTES,
        });
    }
    Ok(())
}

/// Check the file `name` in the checked directory `dir`, open it and read it.
fn read_file(
    ctx: &Ctx<'_>,
    dir: &Dir,
    name: &OsStr,
    pathfd: &OwnedFd,
) -> Result<TrustedContent, GrantsError> {
    let path = dir.path.join(name);
    let st = rfs::fstat(pathfd).map_err(|e| ctx.io("inspect", &path, e))?;
    check_file(ctx, &st, &path)?;

    let fd = rfs::openat(
        &dir.fd,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| ctx.io("open", &path, e))?;
    let opened = rfs::fstat(&fd).map_err(|e| ctx.io("inspect", &path, e))?;
    if opened.st_dev != st.st_dev || opened.st_ino != st.st_ino {
        return Err(ctx.unsafe_file(UnsafeFile::Replaced { path }));
    }
    check_file(ctx, &opened, &path)?;

    let limit = MAX_FILE_BYTES as u64 + 1;
    let mut bytes = Vec::with_capacity(
        usize::try_from(opened.st_size)
            .unwrap_or(0)
            .min(MAX_FILE_BYTES)
            + 1,
    );
    std::fs::File::from(fd)
        .take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| GrantsError::Io {
            path: ctx.configured.to_owned(),
            action: "read",
            target: path.clone(),
            source: e,
        })?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(GrantsError::TooLarge {
            path: ctx.configured.to_owned(),
            limit: MAX_FILE_BYTES,
        });
    }
    Ok(TrustedContent {
        bytes,
        resolved: path,
    })
}

fn readlink(ctx: &Ctx<'_>, dir: &Dir, name: &OsStr) -> Result<OsString, GrantsError> {
    let target = rfs::readlinkat(&dir.fd, name, Vec::new())
        .map_err(|e| ctx.io("read the symbolic link", &dir.path.join(name), e))?;
    Ok(OsString::from_vec(target.into_bytes()))
}

/// The last component `name` of `dir` is a symlink: accept only the
/// Kubernetes atomic-writer layout, then read the real file.
fn read_volume_file(ctx: &Ctx<'_>, dir: &Dir, name: &OsStr) -> Result<TrustedContent, GrantsError> {
    let link_path = dir.path.join(name);
    let target = readlink(ctx, dir, name)?;
    let mut expected = OsString::from("..data/");
    expected.push(name);
    if target != expected {
        return Err(ctx.unsafe_file(UnsafeFile::Symlink {
            path: link_path,
            target: super::excerpt::sanitize(&target.to_string_lossy(), 64),
        }));
    }

    let data = OsStr::new("..data");
    let data_path = dir.path.join(data);
    let data_fd =
        open_path(&dir.fd, data, OFlags::empty()).map_err(|e| ctx.io("open", &data_path, e))?;
    let data_st = rfs::fstat(&data_fd).map_err(|e| ctx.io("inspect", &data_path, e))?;
    if FileType::from_raw_mode(data_st.st_mode) != FileType::Symlink {
        return Err(ctx.unsafe_file(UnsafeFile::VolumeLayout {
            path: data_path,
            reason: "..data must be a symbolic link",
        }));
    }
    let ts = readlink(ctx, dir, data)?;
    let ts_bytes = ts.as_bytes();
    if ts_bytes.len() <= 2
        || !ts_bytes.starts_with(b"..")
        || ts_bytes.contains(&b'/')
        || ts_bytes == b"..data"
    {
        return Err(ctx.unsafe_file(UnsafeFile::VolumeLayout {
            path: data_path,
            reason: "..data must point to a ..<timestamp> directory in the same directory",
        }));
    }

    let ts_path = dir.path.join(&ts);
    let ts_fd =
        open_path(&dir.fd, &ts, OFlags::empty()).map_err(|e| ctx.io("open", &ts_path, e))?;
    let ts_st = rfs::fstat(&ts_fd).map_err(|e| ctx.io("inspect", &ts_path, e))?;
    if FileType::from_raw_mode(ts_st.st_mode) != FileType::Directory {
        return Err(ctx.unsafe_file(UnsafeFile::VolumeLayout {
            path: ts_path,
            reason: "the ..data target must be a real directory",
        }));
    }
    check_dir(ctx, &ts_fd, &ts_st, &ts_path)?;
    let ts_dir = Dir {
        fd: ts_fd,
        path: ts_path,
    };

    let file_path = ts_dir.path.join(name);
    let file_fd =
        open_path(&ts_dir.fd, name, OFlags::empty()).map_err(|e| ctx.io("open", &file_path, e))?;
    let file_st = rfs::fstat(&file_fd).map_err(|e| ctx.io("inspect", &file_path, e))?;
    if FileType::from_raw_mode(file_st.st_mode) == FileType::Symlink {
        return Err(ctx.unsafe_file(UnsafeFile::VolumeLayout {
            path: file_path,
            reason: "the file inside ..data must not be a symbolic link",
        }));
    }
    read_file(ctx, &ts_dir, name, &file_fd)
}

/// Push the components of `path` to the front of `pending`, in order.
/// Returns whether the path is absolute.
fn push_front_components(pending: &mut VecDeque<OsString>, path: &Path) -> bool {
    let mut absolute = false;
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir => absolute = true,
            Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => parts.push(OsString::from("..")),
            Component::Normal(n) => parts.push(n.to_owned()),
        }
    }
    for p in parts.into_iter().rev() {
        pending.push_front(p);
    }
    absolute
}

/// Resolve `configured` under the file-safety rules and read it, bounded.
pub(crate) fn read_trusted(
    configured: &Path,
    options: &LoadOptions,
) -> Result<TrustedContent, GrantsError> {
    let ctx = Ctx {
        configured,
        options,
    };
    check_path(&ctx)?;
    let absolute = absolute(configured)?;
    let mut stack = vec![open_root(&ctx)?];
    let mut pending = VecDeque::new();
    push_front_components(&mut pending, &absolute);
    let mut links = 0usize;

    while let Some(name) = pending.pop_front() {
        if name == ".." {
            if stack.len() > 1 {
                stack.pop();
            }
            continue;
        }
        let is_last = pending.is_empty();
        let Some(dir) = stack.last() else {
            // The stack always keeps `/`; this is unreachable.
            return Err(ctx.unsafe_file(UnsafeFile::BadPath {
                reason: "it could not be resolved",
            }));
        };
        let path = dir.path.join(&name);
        let fd =
            open_path(&dir.fd, &name, OFlags::empty()).map_err(|e| ctx.io("open", &path, e))?;
        let st = rfs::fstat(&fd).map_err(|e| ctx.io("inspect", &path, e))?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Symlink if is_last => return read_volume_file(&ctx, dir, &name),
            FileType::Symlink => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(ctx.unsafe_file(UnsafeFile::SymlinkLoop { max: MAX_SYMLINKS }));
                }
                let target = readlink(&ctx, dir, &name)?;
                if target.is_empty() {
                    return Err(ctx.io("follow the symbolic link", &path, Errno::NOENT));
                }
                if push_front_components(&mut pending, Path::new(&target)) {
                    stack.truncate(1);
                }
            }
            FileType::Directory if is_last => {
                return Err(ctx.unsafe_file(UnsafeFile::NotRegular {
                    path,
                    kind: "directory",
                }));
            }
            FileType::Directory => {
                check_dir(&ctx, &fd, &st, &path)?;
                stack.push(Dir { fd, path });
            }
            _ if is_last => return read_file(&ctx, dir, &name, &fd),
            _ => return Err(ctx.unsafe_file(UnsafeFile::NotADirectory { path })),
        }
    }

    // Ran out of components on a directory (`/`, or a path ending in `..`).
    let path = stack
        .last()
        .map_or_else(|| PathBuf::from("/"), |d| d.path.clone());
    Err(ctx.unsafe_file(UnsafeFile::NotRegular {
        path,
        kind: "directory",
    }))
}

/// The configured path itself: not empty, no NUL byte, not too long, not
/// naming a directory.
fn check_path(ctx: &Ctx<'_>) -> Result<(), GrantsError> {
    let raw = ctx.configured.as_os_str().as_bytes();
    if raw.is_empty() {
        return Err(ctx.unsafe_file(UnsafeFile::BadPath {
            reason: "it is empty",
        }));
    }
    if raw.contains(&0) {
        return Err(ctx.unsafe_file(UnsafeFile::BadPath {
            reason: "it contains a NUL byte",
        }));
    }
    if raw.len() > MAX_PATH_BYTES {
        return Err(ctx.unsafe_file(UnsafeFile::BadPath {
            reason: "it is longer than 4096 bytes",
        }));
    }
    if raw.ends_with(b"/") {
        return Err(ctx.unsafe_file(UnsafeFile::BadPath {
            reason: "it ends with '/', so it names a directory",
        }));
    }
    Ok(())
}

/// The configured path made absolute (against the current directory).
fn absolute(configured: &Path) -> Result<PathBuf, GrantsError> {
    Ok(if configured.is_absolute() {
        configured.to_owned()
    } else {
        let cwd = std::env::current_dir().map_err(|e| GrantsError::Io {
            path: configured.to_owned(),
            action: "determine the current directory for",
            target: configured.to_owned(),
            source: e,
        })?;
        cwd.join(configured)
    })
}

/// `/`, opened and checked: where the walk starts.
fn open_root(ctx: &Ctx<'_>) -> Result<Dir, GrantsError> {
    let root_path = PathBuf::from("/");
    let root_fd = rfs::openat(
        rfs::CWD,
        "/",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| ctx.io("open", &root_path, e))?;
    let root_st = rfs::fstat(&root_fd).map_err(|e| ctx.io("inspect", &root_path, e))?;
    check_dir(ctx, &root_fd, &root_st, &root_path)?;

    Ok(Dir {
        fd: root_fd,
        path: root_path,
    })
}
