//! The grants loader's typed errors.
//!
//! Three layers:
//! - [`GrantsError`]: why a file could not be loaded (one of: unsafe file,
//!   I/O error, too large, invalid content).
//! - [`UnsafeFile`]: which file-safety rule a path broke.
//! - [`Problem`]: one content problem (encoding, TOML syntax, schema, value
//!   format); an invalid file carries every problem found, sorted by position.
//!
//! Every variant has a stable rule id ([`GrantsError::rule`],
//! [`UnsafeFile::rule`], [`Problem::rule`]) that messages show in brackets and
//! that `docs/grants-file.md` lists. Messages quote untrusted text only through
//! [`super::excerpt`]: at most the offending key and a short sanitized excerpt
//! of its value.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::excerpt;

/// A 1-based line and column (in characters) inside the grants file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Position {
    /// 1-based line number.
    pub line: u32,
    /// 1-based column, counted in characters (not bytes).
    pub column: u32,
}

impl Position {
    /// Line and column of byte offset `offset` in `text` (clamped to the text).
    pub fn of_offset(text: &str, offset: usize) -> Position {
        let mut end = offset.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let before = &text[..end];
        let line = before.bytes().filter(|b| *b == b'\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        Position {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
        }
    }

    /// The start of the file.
    pub const START: Position = Position { line: 1, column: 1 };
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// Which table of the document a problem is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableRef {
    /// The top level of the document.
    TopLevel,
    /// `bindings[i]` (0-based index in file order).
    Binding(usize),
}

impl fmt::Display for TableRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableRef::TopLevel => f.write_str("the top level"),
            TableRef::Binding(i) => write!(f, "bindings[{i}]"),
        }
    }
}

/// Why a value does not have the required format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatIssue {
    /// The empty string.
    #[error("it is empty")]
    Empty,
    /// Longer than allowed.
    #[error("it is {len} characters long, the maximum is {max}")]
    TooLong {
        /// Length in characters.
        len: usize,
        /// Maximum length.
        max: usize,
    },
    /// Contains `*` or `?`.
    #[error("wildcards are not supported, give the exact value")]
    Wildcard,
    /// Contains an uppercase ASCII letter.
    #[error("uppercase letters are not allowed")]
    Uppercase,
    /// Contains a character outside the allowed set.
    #[error("character {ch} is not allowed")]
    InvalidChar {
        /// The character, described safely (`'/'` or `U+001B`).
        ch: String,
    },
    /// Starts with a character that may not start it.
    #[error("it must start with {must}")]
    BadStart {
        /// What the first character must be.
        must: &'static str,
    },
    /// Ends with a character that may not end it.
    #[error("it must end with a letter or digit")]
    BadEnd,
    /// A DNS subdomain with an empty or malformed dot-separated part.
    #[error("each dot-separated part must be non-empty and start and end with a letter or digit")]
    BadLabel,
}

/// One problem with the content of the grants file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// The bytes are not UTF-8.
    #[error("the file is not valid UTF-8")]
    NotUtf8 {
        /// Where the first invalid byte is.
        at: Position,
    },
    /// A NUL byte anywhere in the file.
    #[error("the file contains a NUL byte")]
    NulByte {
        /// Where the first NUL byte is.
        at: Position,
    },
    /// A UTF-8 byte order mark at the start.
    #[error("the file starts with a UTF-8 byte order mark (U+FEFF); save it without one")]
    ByteOrderMark,
    /// The TOML parser refused the document.
    #[error("TOML syntax error: {message}")]
    Syntax {
        /// Where the parser stopped, when it said.
        at: Option<Position>,
        /// The parser's message, sanitized and bounded.
        message: String,
    },
    /// A key the schema does not have.
    #[error("unknown key {key} in {table}")]
    UnknownKey {
        /// Where the key is.
        at: Position,
        /// The table that holds it.
        table: TableRef,
        /// The key, quoted and sanitized.
        key: String,
    },
    /// A required key is absent.
    #[error("missing required key `{key}` in {table}")]
    MissingKey {
        /// The table header, or `None` for the top level.
        at: Option<Position>,
        /// The table that lacks it.
        table: TableRef,
        /// The key's name.
        key: &'static str,
    },
    /// A value of the wrong TOML type.
    #[error("{what} must be {expected}, found {found}")]
    WrongType {
        /// Where the value is.
        at: Position,
        /// Which value (`schema_version`, `bindings[2].name`, …).
        what: String,
        /// The type the schema wants.
        expected: &'static str,
        /// The type found.
        found: &'static str,
    },
    /// `schema_version` is an integer other than 1.
    #[error("schema_version = {found} is not supported: this agent reads schema_version = 1 only")]
    UnsupportedSchemaVersion {
        /// Where the value is.
        at: Position,
        /// The value, sanitized.
        found: String,
    },
    /// More bindings than allowed.
    #[error("the file has {count} bindings, the maximum is {max}")]
    TooManyBindings {
        /// Where the first binding past the limit starts.
        at: Position,
        /// How many bindings there are.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A string value without the required format.
    #[error("{table}.{key} = {value} is not a valid {syntax}: {issue}")]
    InvalidValue {
        /// Where the value is.
        at: Position,
        /// The binding.
        table: TableRef,
        /// The key.
        key: &'static str,
        /// A short sanitized excerpt of the value, quoted.
        value: String,
        /// The format required.
        syntax: &'static str,
        /// What is wrong with it.
        issue: FormatIssue,
    },
    /// Two bindings with the same `name`.
    #[error(
        "{table}.name = {name} is already used by bindings[{first_index}] (line {first_line}); names must be unique"
    )]
    DuplicateName {
        /// Where the second use is.
        at: Position,
        /// The binding that repeats the name.
        table: TableRef,
        /// The name, quoted.
        name: String,
        /// Index of the first binding with it.
        first_index: usize,
        /// Line of the first binding's name.
        first_line: u32,
    },
    /// More problems than [`super::MAX_REPORTED_PROBLEMS`]: the rest are only counted.
    #[error("{omitted} more problem(s) not listed")]
    Truncated {
        /// How many were not listed.
        omitted: usize,
    },
}

impl Problem {
    /// The stable id of the rule broken (as listed in `docs/grants-file.md`).
    pub fn rule(&self) -> &'static str {
        match self {
            Problem::NotUtf8 { .. } => "encoding-utf8",
            Problem::NulByte { .. } => "encoding-nul",
            Problem::ByteOrderMark => "encoding-bom",
            Problem::Syntax { .. } => "toml-syntax",
            Problem::UnknownKey { .. } => "key-unknown",
            Problem::MissingKey { .. } => "key-missing",
            Problem::WrongType { .. } => "type",
            Problem::UnsupportedSchemaVersion { .. } => "schema-version",
            Problem::TooManyBindings { .. } => "bindings-max",
            Problem::InvalidValue { key, .. } => match *key {
                "name" => "name-format",
                "runtime_class" => "runtime-class-format",
                "handler" => "handler-format",
                _ => "identity-format",
            },
            Problem::DuplicateName { .. } => "name-unique",
            Problem::Truncated { .. } => "more-problems",
        }
    }

    /// Where in the file the problem is, when it has a place.
    pub fn position(&self) -> Option<Position> {
        match self {
            Problem::NotUtf8 { at }
            | Problem::NulByte { at }
            | Problem::UnknownKey { at, .. }
            | Problem::WrongType { at, .. }
            | Problem::UnsupportedSchemaVersion { at, .. }
            | Problem::TooManyBindings { at, .. }
            | Problem::InvalidValue { at, .. }
            | Problem::DuplicateName { at, .. } => Some(*at),
            Problem::ByteOrderMark => Some(Position::START),
            Problem::Syntax { at, .. } | Problem::MissingKey { at, .. } => *at,
            Problem::Truncated { .. } => None,
        }
    }
}

/// Which file-safety rule a path broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnsafeFile {
    /// The configured path cannot be used at all.
    #[error("the path is not usable: {reason}")]
    BadPath {
        /// Why.
        reason: &'static str,
    },
    /// The last component is a symlink outside the Kubernetes volume layout.
    #[error("{} is a symbolic link (to {target}); the only symlinked file accepted is the Kubernetes volume layout FILE -> ..data/FILE", excerpt::path(.path))]
    Symlink {
        /// The link.
        path: PathBuf,
        /// Its target, sanitized and bounded.
        target: String,
    },
    /// The Kubernetes volume layout is malformed (`..data` is not a link to a
    /// `..timestamp` directory next to it, or the file inside is a link).
    #[error("{} does not follow the Kubernetes volume layout: {reason}", excerpt::path(.path))]
    VolumeLayout {
        /// The entry that broke it.
        path: PathBuf,
        /// How.
        reason: &'static str,
    },
    /// More symlinks than [`super::MAX_SYMLINKS`] while resolving.
    #[error("more than {max} symbolic links while resolving the path")]
    SymlinkLoop {
        /// The limit.
        max: usize,
    },
    /// A path component used as a directory is something else.
    #[error("{} is not a directory", excerpt::path(.path))]
    NotADirectory {
        /// The component.
        path: PathBuf,
    },
    /// The file is not a regular file (FIFO, device, directory, socket).
    #[error("{} is a {kind}, not a regular file", excerpt::path(.path))]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// The file's owner is not trusted.
    #[error("{} is owned by uid {uid}; it must be owned by {trusted}", excerpt::path(.path))]
    FileOwner {
        /// The file.
        path: PathBuf,
        /// Its owner.
        uid: u32,
        /// The trusted uids, rendered.
        trusted: String,
    },
    /// The file has the group or other write bit.
    #[error("{} has mode {mode:04o}: it must not be writable by group or others", excerpt::path(.path))]
    FileWritable {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file has more than one hard link.
    #[error("{} has {nlink} hard links: the file must have exactly one name", excerpt::path(.path))]
    HardLinks {
        /// The file.
        path: PathBuf,
        /// Its link count.
        nlink: u64,
    },
    /// A directory's owner is not trusted.
    #[error("directory {} is owned by uid {uid}; it must be owned by {trusted}", excerpt::path(.path))]
    DirOwner {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        uid: u32,
        /// The trusted uids, rendered.
        trusted: String,
    },
    /// A directory is writable by group or others (sticky or not) on a
    /// writable mount.
    #[error("directory {} has mode {mode:04o}: it must not be writable by group or others (a sticky world-writable directory such as /tmp is not trusted)", excerpt::path(.path))]
    DirWritable {
        /// The directory.
        path: PathBuf,
        /// Its permission bits, with sticky/setgid.
        mode: u32,
    },
    /// The file opened for reading is not the one that was checked.
    #[error("{} changed while it was being opened", excerpt::path(.path))]
    Replaced {
        /// The file.
        path: PathBuf,
    },
}

impl UnsafeFile {
    /// The stable id of the rule broken.
    pub fn rule(&self) -> &'static str {
        match self {
            UnsafeFile::BadPath { .. } => "path",
            UnsafeFile::Symlink { .. } => "file-symlink",
            UnsafeFile::VolumeLayout { .. } => "volume-layout",
            UnsafeFile::SymlinkLoop { .. } => "symlink-loop",
            UnsafeFile::NotADirectory { .. } => "dir-type",
            UnsafeFile::NotRegular { .. } => "file-type",
            UnsafeFile::FileOwner { .. } => "file-owner",
            UnsafeFile::FileWritable { .. } => "file-mode",
            UnsafeFile::HardLinks { .. } => "file-links",
            UnsafeFile::DirOwner { .. } => "dir-owner",
            UnsafeFile::DirWritable { .. } => "dir-mode",
            UnsafeFile::Replaced { .. } => "file-replaced",
        }
    }
}

/// Why a grants file could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GrantsError {
    /// A file-safety rule was broken; the file was not read.
    #[error("grants file {}: [{}] {reason}", excerpt::path(.path), .reason.rule())]
    Unsafe {
        /// The configured path.
        path: PathBuf,
        /// The rule broken.
        reason: UnsafeFile,
    },
    /// The operating system refused an operation.
    #[error("grants file {}: [io] cannot {action} {}: {source}", excerpt::path(.path), excerpt::path(.target))]
    Io {
        /// The configured path.
        path: PathBuf,
        /// What was attempted (`open`, `read`, `inspect`, …).
        action: &'static str,
        /// The path the operation was on (a component or the file).
        target: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Larger than [`super::MAX_FILE_BYTES`].
    #[error("grants file {}: [file-size] the file is larger than the limit of {limit} bytes", excerpt::path(.path))]
    TooLarge {
        /// The configured path.
        path: PathBuf,
        /// The limit.
        limit: usize,
    },
    /// The content broke one or more rules; every problem found is listed.
    #[error("{}", render_invalid(.path, .problems))]
    Invalid {
        /// The configured path.
        path: PathBuf,
        /// Every problem, sorted by position.
        problems: Vec<Problem>,
    },
}

fn render_invalid(path: &Path, problems: &[Problem]) -> String {
    use fmt::Write as _;
    let shown = excerpt::path(path);
    let mut out = format!(
        "grants file {shown} is invalid ({} problem{}):",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    for p in problems {
        let _ = match p.position() {
            Some(at) => write!(
                out,
                "\n  {shown}:{}:{}: [{}] {p}",
                at.line,
                at.column,
                p.rule()
            ),
            None => write!(out, "\n  {shown}: [{}] {p}", p.rule()),
        };
    }
    out
}

/// One error as plain data, for JSON output and structured logs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Stable rule id.
    pub rule: &'static str,
    /// The configured path, sanitized.
    pub path: String,
    /// 1-based line, for content problems that have a place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based column, for content problems that have a place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// The message, without the path and position prefix.
    pub message: String,
}

impl GrantsError {
    /// The stable id of the rule broken (`invalid` for content problems, whose
    /// individual rules are in [`GrantsError::diagnostics`]).
    pub fn rule(&self) -> &'static str {
        match self {
            GrantsError::Unsafe { reason, .. } => reason.rule(),
            GrantsError::Io { .. } => "io",
            GrantsError::TooLarge { .. } => "file-size",
            GrantsError::Invalid { .. } => "invalid",
        }
    }

    /// The configured path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            GrantsError::Unsafe { path, .. }
            | GrantsError::Io { path, .. }
            | GrantsError::TooLarge { path, .. }
            | GrantsError::Invalid { path, .. } => path,
        }
    }

    /// Every error as plain data (one entry, or one per content problem).
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let path = excerpt::path(self.path());
        match self {
            GrantsError::Invalid { problems, .. } => problems
                .iter()
                .map(|p| Diagnostic {
                    rule: p.rule(),
                    path: path.clone(),
                    line: p.position().map(|at| at.line),
                    column: p.position().map(|at| at.column),
                    message: p.to_string(),
                })
                .collect(),
            GrantsError::Unsafe { reason, .. } => vec![Diagnostic {
                rule: self.rule(),
                path,
                line: None,
                column: None,
                message: reason.to_string(),
            }],
            GrantsError::Io {
                action,
                target,
                source,
                ..
            } => vec![Diagnostic {
                rule: self.rule(),
                path,
                line: None,
                column: None,
                message: format!("cannot {action} {}: {source}", excerpt::path(target)),
            }],
            GrantsError::TooLarge { limit, .. } => vec![Diagnostic {
                rule: self.rule(),
                path,
                line: None,
                column: None,
                message: format!("the file is larger than the limit of {limit} bytes"),
            }],
        }
    }
}
