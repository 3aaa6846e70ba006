//! Table tests for the grants loader: every rule of docs/grants-file.md.
//!
//! Test files live under a *trusted* base directory, because the loader
//! refuses any file whose parent directories are writable by others — and
//! `std::env::temp_dir()` (`/tmp`, mode 1777) is exactly such a directory.
//! The base is `BERTH_GRANTS_TEST_DIR` if set, otherwise
//! `<target>/<profile>/berth-grants-tests` next to the test binary (created
//! with mode 0700). Every directory from `/` down to it must be owned by root
//! or the test's uid and not group/other-writable; `trusted_base` checks that
//! and explains what to do if not. Cases that need "another owner" chown a
//! file or directory to uid 12345, which needs root (as the test machines
//! run); they are skipped with a note otherwise.

use std::fs;
use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;

use super::*;

const STRANGER: u32 = 12345;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn trusted_base() -> PathBuf {
    let base = match std::env::var_os("BERTH_GRANTS_TEST_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let exe = std::env::current_exe().expect("test binary path");
            // <target>/<profile>/deps/<test binary>
            let profile_dir = exe
                .parent()
                .and_then(Path::parent)
                .expect("test binary lives in <target>/<profile>/deps");
            let beside_target = profile_dir.join("berth-grants-tests");
            // A checkout under /tmp (or any shared directory) puts the
            // target dir below an untrusted ancestor: fall back to the
            // user's cache directory, which is normally private.
            let in_home = std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/berth/grants-tests"));
            match in_home {
                Some(home) if !ancestors_trusted(&beside_target) => home,
                _ => beside_target,
            }
        }
    };
    if !base.exists() {
        let _ = fs::create_dir_all(&base);
        fs::set_permissions(&base, fs::Permissions::from_mode(0o700)).expect("chmod base");
    }
    base
}

/// Whether every existing ancestor of `path` is owned by root or us and not
/// group/other-writable (the loader's parent-directory rule, roughly).
fn ancestors_trusted(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let me = rustix::process::geteuid().as_raw();
    path.ancestors().filter(|a| a.exists()).all(|a| {
        fs::metadata(a).is_ok_and(|m| (m.uid() == 0 || m.uid() == me) && m.mode() & 0o022 == 0)
    })
}

/// A fresh directory for one case, removed on drop.
struct CaseDir(PathBuf);

impl CaseDir {
    fn new(label: &str) -> CaseDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let dir = trusted_base().join(format!("{label}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir(&dir).expect("create case dir");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod case dir");
        CaseDir(dir)
    }
}

impl Drop for CaseDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn write(path: &Path, bytes: &[u8], mode: u32) {
    fs::write(path, bytes).expect("write test file");
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod test file");
}

fn mkdir(path: &Path, mode: u32) {
    fs::create_dir_all(path).expect("mkdir");
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod dir");
}

fn binding(name: &str, service: &str) -> String {
    format!(
        "[[bindings]]\nname = \"{name}\"\nproject = \"demo\"\nenvironment = \"production\"\n\
         application = \"analytics\"\nservice = \"{service}\"\nruntime_class = \"bounded-worker\"\n\
         handler = \"bounded-runc\"\n"
    )
}

fn valid() -> String {
    format!(
        "schema_version = 1\n{}",
        binding("bounded-worker", "worker")
    )
}

fn with_field(field: &str, value: &str) -> String {
    let mut fields = vec![
        ("name", "\"bounded-worker\"".to_owned()),
        ("project", "\"demo\"".to_owned()),
        ("environment", "\"production\"".to_owned()),
        ("application", "\"analytics\"".to_owned()),
        ("service", "\"worker\"".to_owned()),
        ("runtime_class", "\"bounded-worker\"".to_owned()),
        ("handler", "\"bounded-runc\"".to_owned()),
    ];
    for f in &mut fields {
        if f.0 == field {
            f.1 = value.to_owned();
        }
    }
    let body: String = fields.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
    format!("schema_version = 1\n[[bindings]]\n{body}")
}

fn many(n: usize) -> String {
    let mut s = String::from("schema_version = 1\n");
    for i in 0..n {
        s.push_str(&binding(&format!("alias-{i}"), &format!("svc-{i}")));
    }
    s
}

/// Pad `content` with a trailing comment to exactly `len` bytes.
fn padded(content: &str, len: usize) -> Vec<u8> {
    let mut out = content.as_bytes().to_vec();
    out.extend_from_slice(b"#");
    while out.len() < len - 1 {
        out.push(b'x');
    }
    out.push(b'\n');
    assert_eq!(out.len(), len);
    out
}

/// The Kubernetes atomic-writer layout: `dir/FILE -> ..data/FILE`,
/// `dir/..data -> ..TS`, `dir/..TS/FILE`.
fn projected(dir: &Path, file: &str, ts: &str, ts_mode: u32, bytes: &[u8]) -> PathBuf {
    let vol = dir.join("volume");
    mkdir(&vol, 0o755);
    mkdir(&vol.join(ts), 0o755);
    write(&vol.join(ts).join(file), bytes, 0o644);
    fs::set_permissions(vol.join(ts), fs::Permissions::from_mode(ts_mode)).expect("chmod ts");
    symlink(ts, vol.join("..data")).expect("..data link");
    symlink(format!("..data/{file}"), vol.join(file)).expect("file link");
    vol.join(file)
}

enum Expect {
    /// Loads, with this many bindings.
    Ok(usize),
    /// Refused with this single rule (file safety, I/O, size).
    Refused(&'static str),
    /// Invalid content with exactly these problems, in position order.
    Problems(&'static [&'static str]),
}

type Setup = Box<dyn Fn(&Path) -> PathBuf>;

struct Case {
    name: &'static str,
    setup: Setup,
    options: Option<LoadOptions>,
    needs_root: bool,
    expect: Expect,
}

fn content(name: &'static str, bytes: impl Into<Vec<u8>>, expect: Expect) -> Case {
    let bytes = bytes.into();
    Case {
        name,
        setup: Box::new(move |dir| {
            let p = dir.join("grants.toml");
            write(&p, &bytes, 0o644);
            p
        }),
        options: None,
        needs_root: false,
        expect,
    }
}

fn file_case(
    name: &'static str,
    setup: impl Fn(&Path) -> PathBuf + 'static,
    expect: Expect,
) -> Case {
    Case {
        name,
        setup: Box::new(setup),
        options: None,
        needs_root: false,
        expect,
    }
}

fn mode_case(name: &'static str, mode: u32, expect: Expect) -> Case {
    file_case(
        name,
        move |d| {
            let p = d.join("grants.toml");
            write(&p, valid().as_bytes(), mode);
            p
        },
        expect,
    )
}

fn parent_mode_case(name: &'static str, mode: u32, expect: Expect) -> Case {
    file_case(
        name,
        move |d| {
            let sub = d.join("etc");
            mkdir(&sub, 0o755);
            let p = sub.join("grants.toml");
            write(&p, valid().as_bytes(), 0o644);
            fs::set_permissions(&sub, fs::Permissions::from_mode(mode)).expect("chmod");
            p
        },
        expect,
    )
}

fn cases() -> Vec<Case> {
    use Expect::{Ok as Loads, Problems, Refused};
    let ts = "..2026_04_20_10_11_12.123456789";
    vec![
        // ---- valid files -------------------------------------------------
        content("valid", valid(), Loads(1)),
        content("crlf line endings", valid().replace('\n', "\r\n"), Loads(1)),
        content(
            "empty bindings array",
            "schema_version = 1\nbindings = []\n",
            Loads(0),
        ),
        content(
            "inline array of tables",
            "schema_version = 1\nbindings = [{name = \"a\", project = \"p\", environment = \"e\", application = \"a\", service = \"s\", runtime_class = \"gvisor\", handler = \"runsc\"}]\n",
            Loads(1),
        ),
        content(
            "one scope under two names",
            format!(
                "schema_version = 1\n{}{}",
                binding("alias-a", "worker"),
                binding("alias-b", "worker")
            ),
            Loads(2),
        ),
        content("64 bindings", many(64), Loads(64)),
        content(
            "name of 63 characters",
            with_field("name", &format!("\"{}\"", "a".repeat(63))),
            Loads(1),
        ),
        content(
            "runtime_class subdomain",
            with_field("runtime_class", "\"kata.example.com\""),
            Loads(1),
        ),
        content("exactly 64 KiB", padded(&valid(), MAX_FILE_BYTES), Loads(1)),
        mode_case("mode 0400", 0o400, Loads(1)),
        mode_case("mode 0600", 0o600, Loads(1)),
        mode_case("mode 0644", 0o644, Loads(1)),
        // ---- size ---------------------------------------------------------
        content(
            "64 KiB + 1",
            padded(&valid(), MAX_FILE_BYTES + 1),
            Refused("file-size"),
        ),
        // ---- encoding -----------------------------------------------------
        content(
            "UTF-8 BOM",
            [b"\xEF\xBB\xBF".as_slice(), valid().as_bytes()].concat(),
            Problems(&["encoding-bom"]),
        ),
        content(
            "NUL byte",
            valid().replace("worker\"\n", "work\0er\"\n"),
            Problems(&["encoding-nul"]),
        ),
        content(
            "invalid UTF-8",
            [valid().as_bytes(), b"# \xC3\x28\n".as_slice()].concat(),
            Problems(&["encoding-utf8"]),
        ),
        content(
            "TOML syntax error",
            "schema_version = 1\n[[bindings]\n",
            Problems(&["toml-syntax"]),
        ),
        content(
            "duplicate TOML key",
            format!("{}name = \"again\"\n", valid()),
            Problems(&["toml-syntax"]),
        ),
        // ---- schema -------------------------------------------------------
        content(
            "schema_version 2",
            valid().replace("schema_version = 1", "schema_version = 2"),
            Problems(&["schema-version"]),
        ),
        content(
            "schema_version \"1\"",
            valid().replace("schema_version = 1", "schema_version = \"1\""),
            Problems(&["type"]),
        ),
        content(
            "schema_version 1.0",
            valid().replace("schema_version = 1", "schema_version = 1.0"),
            Problems(&["type"]),
        ),
        content(
            "schema_version missing",
            valid().replace("schema_version = 1\n", ""),
            Problems(&["key-missing"]),
        ),
        content(
            "bindings missing: no grants (the last table was deleted)",
            "schema_version = 1\n",
            Loads(0),
        ),
        content(
            "only a comment besides the version",
            "# every grant revoked on 2026-11-30\nschema_version = 1\n",
            Loads(0),
        ),
        content(
            "bindings not an array",
            "schema_version = 1\nbindings = \"all\"\n",
            Problems(&["type"]),
        ),
        content(
            "binding not a table",
            "schema_version = 1\nbindings = [1]\n",
            Problems(&["type"]),
        ),
        content(
            "unknown top-level key",
            format!("debug = true\n{}", valid()),
            Problems(&["key-unknown"]),
        ),
        content(
            "unknown binding key",
            format!("{}namespace = \"x\"\n", valid()),
            Problems(&["key-unknown"]),
        ),
        content(
            "missing binding key",
            valid().replace("handler = \"bounded-runc\"\n", ""),
            Problems(&["key-missing"]),
        ),
        content(
            "wrong value type",
            with_field("project", "1"),
            Problems(&["type"]),
        ),
        content(
            "array value",
            with_field("service", "[\"worker\"]"),
            Problems(&["type"]),
        ),
        content("65 bindings", many(65), Problems(&["bindings-max"])),
        content(
            "duplicate names",
            format!(
                "schema_version = 1\n{}{}",
                binding("same", "a"),
                binding("same", "b")
            ),
            Problems(&["name-unique"]),
        ),
        // ---- value formats ------------------------------------------------
        content(
            "empty string",
            with_field("environment", "\"\""),
            Problems(&["identity-format"]),
        ),
        content(
            "uppercase name",
            with_field("name", "\"Bounded\""),
            Problems(&["name-format"]),
        ),
        content(
            "uppercase project",
            with_field("project", "\"Demo\""),
            Problems(&["identity-format"]),
        ),
        content(
            "wildcard project",
            with_field("project", "\"*\""),
            Problems(&["identity-format"]),
        ),
        content(
            "wildcard service",
            with_field("service", "\"work*\""),
            Problems(&["identity-format"]),
        ),
        content(
            "name of 64 characters",
            with_field("name", &format!("\"{}\"", "a".repeat(64))),
            Problems(&["name-format"]),
        ),
        content(
            "handler with '/'",
            with_field("handler", "\"runsc/v2\""),
            Problems(&["handler-format"]),
        ),
        content(
            "runtime_class with '..'",
            with_field("runtime_class", "\"a..b\""),
            Problems(&["runtime-class-format"]),
        ),
        content(
            "identity starting with a digit",
            with_field("application", "\"1app\""),
            Problems(&["identity-format"]),
        ),
        content(
            "every binding error reported",
            format!(
                "schema_version = 1\n{}{}{}",
                binding("Bad", "ok"),
                binding("fine", "Bad"),
                binding("also-fine", "x").replace(
                    "handler = \"bounded-runc\"\n",
                    "handler = \"a/b\"\nextra = 1\n"
                ),
            ),
            Problems(&[
                "name-format",
                "identity-format",
                "handler-format",
                "key-unknown",
            ]),
        ),
        // ---- file type and identity ---------------------------------------
        file_case(
            "symlink as last component",
            |d| {
                write(&d.join("real.toml"), valid().as_bytes(), 0o644);
                symlink("real.toml", d.join("grants.toml")).expect("symlink");
                d.join("grants.toml")
            },
            Refused("file-symlink"),
        ),
        file_case(
            "absolute symlink as last component",
            |d| {
                write(&d.join("real.toml"), valid().as_bytes(), 0o644);
                symlink(d.join("real.toml"), d.join("grants.toml")).expect("symlink");
                d.join("grants.toml")
            },
            Refused("file-symlink"),
        ),
        file_case(
            "hard link",
            |d| {
                write(&d.join("grants.toml"), valid().as_bytes(), 0o644);
                fs::hard_link(d.join("grants.toml"), d.join("copy.toml")).expect("hard link");
                d.join("grants.toml")
            },
            Refused("file-links"),
        ),
        file_case(
            "FIFO",
            |d| {
                let p = d.join("grants.toml");
                rustix::fs::mknodat(
                    rustix::fs::CWD,
                    &p,
                    rustix::fs::FileType::Fifo,
                    rustix::fs::Mode::from_raw_mode(0o644),
                    0,
                )
                .expect("mkfifo");
                p
            },
            Refused("file-type"),
        ),
        file_case("directory", |d| d.to_path_buf(), Refused("file-type")),
        file_case(
            "/dev/zero",
            |_| PathBuf::from("/dev/zero"),
            Refused("file-type"),
        ),
        file_case("missing file", |d| d.join("nope.toml"), Refused("io")),
        file_case(
            "file used as a directory",
            |d| {
                write(&d.join("f"), b"x", 0o644);
                d.join("f/grants.toml")
            },
            Refused("dir-type"),
        ),
        Case {
            name: "another owner",
            setup: Box::new(|d| {
                let p = d.join("grants.toml");
                write(&p, valid().as_bytes(), 0o644);
                std::os::unix::fs::chown(&p, Some(STRANGER), Some(STRANGER)).expect("chown");
                p
            }),
            options: None,
            needs_root: true,
            expect: Refused("file-owner"),
        },
        Case {
            name: "another owner that is the agent's uid",
            setup: Box::new(|d| {
                let p = d.join("grants.toml");
                write(&p, valid().as_bytes(), 0o644);
                std::os::unix::fs::chown(&p, Some(STRANGER), Some(STRANGER)).expect("chown");
                p
            }),
            options: Some(LoadOptions::trusting([0, STRANGER])),
            needs_root: true,
            expect: Loads(1),
        },
        mode_case("mode 0620", 0o620, Refused("file-mode")),
        mode_case("mode 0602", 0o602, Refused("file-mode")),
        mode_case("mode 0666", 0o666, Refused("file-mode")),
        // ---- parent directories -------------------------------------------
        parent_mode_case("parent 0777", 0o777, Refused("dir-mode")),
        parent_mode_case("parent 1777", 0o1777, Refused("dir-mode")),
        parent_mode_case("parent 0775", 0o775, Refused("dir-mode")),
        parent_mode_case("parent 0700", 0o700, Loads(1)),
        Case {
            name: "parent owned by another uid",
            setup: Box::new(|d| {
                let sub = d.join("etc");
                mkdir(&sub, 0o755);
                let p = sub.join("grants.toml");
                write(&p, valid().as_bytes(), 0o644);
                std::os::unix::fs::chown(&sub, Some(STRANGER), None).expect("chown");
                p
            }),
            options: None,
            needs_root: true,
            expect: Refused("dir-owner"),
        },
        file_case(
            "file under /tmp",
            |_| {
                let f = tempfile::Builder::new()
                    .prefix("berth-grants-")
                    .tempfile_in("/tmp")
                    .expect("tempfile");
                let (_, p) = f.keep().expect("keep");
                write(&p, valid().as_bytes(), 0o644);
                p
            },
            Refused("dir-mode"),
        ),
        file_case(
            "dot-dot in the path",
            |d| {
                mkdir(&d.join("a"), 0o755);
                write(&d.join("grants.toml"), valid().as_bytes(), 0o644);
                d.join("a/../grants.toml")
            },
            Loads(1),
        ),
        file_case(
            "trailing slash",
            |d| {
                write(&d.join("grants.toml"), valid().as_bytes(), 0o644);
                PathBuf::from(format!("{}/", d.join("grants.toml").display()))
            },
            Refused("path"),
        ),
        // ---- symlinks in directory position --------------------------------
        file_case(
            "symlinked directory",
            |d| {
                mkdir(&d.join("real"), 0o755);
                write(&d.join("real/grants.toml"), valid().as_bytes(), 0o644);
                symlink("real", d.join("link")).expect("symlink");
                d.join("link/grants.toml")
            },
            Loads(1),
        ),
        file_case(
            "symlinked directory into a writable directory",
            |d| {
                mkdir(&d.join("open"), 0o755);
                write(&d.join("open/grants.toml"), valid().as_bytes(), 0o644);
                fs::set_permissions(d.join("open"), fs::Permissions::from_mode(0o777))
                    .expect("chmod");
                symlink(d.join("open"), d.join("link")).expect("symlink");
                d.join("link/grants.toml")
            },
            Refused("dir-mode"),
        ),
        file_case(
            "symlink loop",
            |d| {
                symlink("b", d.join("a")).expect("symlink");
                symlink("a", d.join("b")).expect("symlink");
                d.join("a/grants.toml")
            },
            Refused("symlink-loop"),
        ),
        // ---- Kubernetes projected-volume layout ---------------------------
        file_case(
            "projected volume",
            move |d| projected(d, "grants.toml", ts, 0o755, valid().as_bytes()),
            Loads(1),
        ),
        file_case(
            "projected volume, group-writable ..data target",
            move |d| projected(d, "grants.toml", ts, 0o775, valid().as_bytes()),
            Refused("dir-mode"),
        ),
        file_case(
            "projected volume, invalid content",
            move |d| {
                projected(
                    d,
                    "grants.toml",
                    ts,
                    0o755,
                    with_field("name", "\"X\"").as_bytes(),
                )
            },
            Problems(&["name-format"]),
        ),
        file_case(
            "projected volume, link to another key",
            move |d| {
                let p = projected(d, "grants.toml", ts, 0o755, valid().as_bytes());
                write(
                    &d.join("volume").join(ts).join("other.toml"),
                    valid().as_bytes(),
                    0o644,
                );
                fs::remove_file(&p).expect("rm");
                symlink("..data/other.toml", &p).expect("symlink");
                p
            },
            Refused("file-symlink"),
        ),
        file_case(
            "projected volume, ..data escapes the volume",
            move |d| {
                let p = projected(d, "grants.toml", ts, 0o755, valid().as_bytes());
                let data = d.join("volume/..data");
                fs::remove_file(&data).expect("rm");
                symlink(format!("../volume/{ts}"), &data).expect("symlink");
                p
            },
            Refused("volume-layout"),
        ),
        file_case(
            "projected volume, file inside ..data is a link",
            move |d| {
                let p = projected(d, "grants.toml", ts, 0o755, valid().as_bytes());
                let inner = d.join("volume").join(ts).join("grants.toml");
                write(
                    &d.join("volume").join(ts).join("real.toml"),
                    valid().as_bytes(),
                    0o644,
                );
                fs::remove_file(&inner).expect("rm");
                symlink("real.toml", &inner).expect("symlink");
                p
            },
            Refused("volume-layout"),
        ),
        file_case(
            "projected volume, nested item path",
            move |d| {
                let vol = d.join("volume");
                mkdir(&vol.join(ts).join("sub"), 0o755);
                write(
                    &vol.join(ts).join("sub/grants.toml"),
                    valid().as_bytes(),
                    0o644,
                );
                symlink(ts, vol.join("..data")).expect("symlink");
                symlink("..data/sub", vol.join("sub")).expect("symlink");
                vol.join("sub/grants.toml")
            },
            Loads(1),
        ),
    ]
}

fn check_case(case: &Case) -> Result<(), String> {
    let dir = CaseDir::new("case");
    let path = (case.setup)(&dir.0);
    let options = case.options.clone().unwrap_or_default();
    let result = load_with(&path, &options);
    if case.name == "file under /tmp" {
        let _ = fs::remove_file(&path);
    }
    if std::env::var_os("BERTH_GRANTS_TEST_VERBOSE").is_some() {
        match &result {
            Ok(l) => eprintln!("--- {}: ok, {} binding(s)", case.name, l.bindings.len()),
            Err(e) => eprintln!("--- {}:\n{e}", case.name),
        }
    }
    match (&case.expect, result) {
        (Expect::Ok(n), Ok(loaded)) if loaded.bindings.len() == *n => {
            if loaded.sha256.len() != 64 {
                return Err(format!("bad sha256 {}", loaded.sha256));
            }
            Ok(())
        }
        (Expect::Ok(n), Ok(loaded)) => Err(format!(
            "expected {n} bindings, got {}",
            loaded.bindings.len()
        )),
        (Expect::Ok(_), Err(e)) => Err(format!("expected to load, got: {e}")),
        (_, Ok(_)) => Err("expected an error, but the file loaded".to_owned()),
        (Expect::Refused(rule), Err(e)) => {
            if e.rule() != *rule {
                return Err(format!("expected rule {rule}, got {}: {e}", e.rule()));
            }
            let msg = e.to_string();
            if !msg.contains(&format!("[{rule}]")) {
                return Err(format!("message does not name the rule: {msg}"));
            }
            Ok(())
        }
        (Expect::Problems(rules), Err(e)) => {
            let GrantsError::Invalid { problems, .. } = &e else {
                return Err(format!("expected content problems {rules:?}, got: {e}"));
            };
            let got: Vec<&str> = problems.iter().map(Problem::rule).collect();
            if got != *rules {
                return Err(format!("expected {rules:?}, got {got:?}: {e}"));
            }
            let msg = e.to_string();
            for rule in *rules {
                if !msg.contains(&format!("[{rule}]")) {
                    return Err(format!("message does not name rule {rule}: {msg}"));
                }
            }
            Ok(())
        }
    }
}

#[test]
fn table() {
    let cases = cases();
    assert!(cases.len() >= 40, "the issue asks for at least 40 cases");
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in &cases {
        if case.needs_root && !is_root() {
            eprintln!("skipped (needs root to chown): {}", case.name);
            continue;
        }
        ran += 1;
        if let Err(why) = check_case(case) {
            failures.push(format!("{}: {why}", case.name));
        }
    }
    eprintln!("grants table: {ran} of {} cases ran", cases.len());
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn base_directory_is_trusted() {
    let dir = CaseDir::new("base");
    let p = dir.0.join("grants.toml");
    write(&p, valid().as_bytes(), 0o644);
    if let Err(e) = load(&p) {
        panic!(
            "the test base directory is not trusted by the loader ({e}); set BERTH_GRANTS_TEST_DIR \
             to a directory whose every ancestor is owned by root or you and not group/other-writable"
        );
    }
}

#[test]
fn messages_name_path_line_and_column() {
    let dir = CaseDir::new("msg");
    let p = dir.0.join("grants.toml");
    write(&p, with_field("project", "\"Demo\"").as_bytes(), 0o644);
    let err = load(&p).expect_err("invalid");
    let msg = err.to_string();
    // project is on line 4 of with_field's output, value at column 11.
    let shown = p.display().to_string();
    assert!(
        msg.contains(&format!("{shown}:4:11: [identity-format]")),
        "{msg}"
    );
    assert!(msg.contains("uppercase"), "{msg}");
    let diags = err.diagnostics();
    assert_eq!(diags.len(), 1);
    assert_eq!((diags[0].line, diags[0].column), (Some(4), Some(11)));
    assert_eq!(diags[0].rule, "identity-format");

    write(&p, b"schema_version = 1\nbindings = [\n", 0o644);
    let err = load(&p).expect_err("syntax");
    let d = &err.diagnostics()[0];
    assert_eq!(d.rule, "toml-syntax");
    assert!(d.line.is_some() && d.column.is_some(), "{d:?}");

    let unsafe_err = load(Path::new("/dev/zero")).expect_err("device");
    assert!(unsafe_err.to_string().contains("/dev/zero"));
    assert!(unsafe_err.to_string().contains("[file-type]"));
}

#[test]
fn excerpts_are_sanitized_and_bounded() {
    let evil = format!("\\u001b]0;pwned\\u0007\\u202e{}", "x".repeat(500));
    let bytes = with_field("service", &format!("\"{evil}\""));
    let problems = parse_bytes(bytes.as_bytes()).expect_err("invalid");
    let msg = problems[0].to_string();
    assert!(
        !msg.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "{msg:?}"
    );
    assert!(msg.len() < 400, "message not bounded: {} bytes", msg.len());
    assert!(!msg.contains(&"x".repeat(100)));

    // Unknown keys are sanitized too.
    let bytes = format!("{}\"k\\u001b[2J\" = 1\n", valid());
    let problems = parse_bytes(bytes.as_bytes()).expect_err("invalid");
    assert!(!problems[0].to_string().contains('\u{1b}'));
}

#[test]
fn every_problem_has_a_position_and_they_are_sorted() {
    let text = format!(
        "schema_version = 1\n{}{}",
        binding("Bad", "Bad"),
        binding("bad-", "x").replace("project = \"demo\"\n", "")
    );
    let problems = parse_bytes(text.as_bytes()).expect_err("invalid");
    assert_eq!(problems.len(), 4, "{problems:?}");
    let positions: Vec<_> = problems
        .iter()
        .map(|p| p.position().expect("position"))
        .collect();
    let mut sorted = positions.clone();
    sorted.sort();
    assert_eq!(positions, sorted);
}

#[test]
fn fifo_does_not_hang() {
    // The table covers the FIFO rule; this makes the "does not block" part
    // explicit: nobody ever opens the write end.
    let dir = CaseDir::new("fifo");
    let p = dir.0.join("grants.toml");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &p,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    let started = std::time::Instant::now();
    let err = load(&p).expect_err("fifo");
    assert_eq!(err.rule(), "file-type");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn change_detection() {
    let dir = CaseDir::new("change");
    let p = dir.0.join("grants.toml");
    write(&p, valid().as_bytes(), 0o644);
    let loaded = load(&p).expect("load");
    assert_eq!(loaded.sha256, sha256_hex(valid().as_bytes()));
    assert_eq!(current_sha256(&p).expect("sha"), loaded.sha256);
    assert!(!loaded.changed_on_disk().expect("check"));
    write(&p, many(2).as_bytes(), 0o644);
    assert!(loaded.changed_on_disk().expect("check"));
    // A file that became unsafe is an error, not "unchanged".
    fs::set_permissions(&p, fs::Permissions::from_mode(0o666)).expect("chmod");
    assert!(loaded.changed_on_disk().is_err());
}

#[test]
fn change_detection_in_projected_volume() {
    let dir = CaseDir::new("proj-change");
    let ts1 = "..2026_01_01_00_00_00.000000001";
    let p = projected(&dir.0, "grants.toml", ts1, 0o755, valid().as_bytes());
    let loaded = load(&p).expect("load");
    assert!(
        loaded
            .resolved_path
            .ends_with(format!("volume/{ts1}/grants.toml"))
    );
    assert!(!loaded.changed_on_disk().expect("check"));
    // What kubelet does on update: new timestamp dir, swap ..data.
    let vol = dir.0.join("volume");
    let ts2 = "..2026_01_02_00_00_00.000000002";
    mkdir(&vol.join(ts2), 0o755);
    write(
        &vol.join(ts2).join("grants.toml"),
        many(3).as_bytes(),
        0o644,
    );
    symlink(ts2, vol.join("..data_tmp")).expect("symlink");
    fs::rename(vol.join("..data_tmp"), vol.join("..data")).expect("swap");
    assert!(loaded.changed_on_disk().expect("check"));
    assert_eq!(load(&p).expect("reload").bindings.len(), 3);
}

#[test]
fn lookup_helpers() {
    let loaded = LoadedGrants::from_unchecked_bytes("mem", valid().as_bytes()).expect("valid");
    let b = loaded.binding("bounded-worker").expect("binding");
    let mut id = crate::decide::Identity {
        project: "demo".into(),
        environment: "production".into(),
        application: "analytics".into(),
        service: "worker".into(),
    };
    assert!(b.matches(&id));
    id.environment = "staging".into();
    assert!(!b.matches(&id));
    assert!(loaded.binding("other").is_none());
    assert_eq!(b.runtime_class, "bounded-worker");
    assert_eq!(b.handler, "bounded-runc");
}

#[test]
fn schema_version_integer_forms() {
    // TOML integers are values: 0x1, +1 and 1 are the same integer 1.
    for form in ["1", "+1", "0x1", "0o1", "0b1"] {
        let text = valid().replace("schema_version = 1", &format!("schema_version = {form}"));
        assert!(parse_bytes(text.as_bytes()).is_ok(), "{form}");
    }
    for form in ["0", "-1", "99999999999999999999999", "true", "1e0"] {
        let text = valid().replace("schema_version = 1", &format!("schema_version = {form}"));
        assert!(parse_bytes(text.as_bytes()).is_err(), "{form}");
    }
}

/// Mutate a valid file: insert, replace or delete a few bytes.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    let base = many(3).into_bytes();
    let len = base.len();
    proptest::collection::vec((0..len, any::<u8>(), 0u8..3), 1..8).prop_map(move |edits| {
        let mut b = base.clone();
        for (at, byte, op) in edits {
            let at = at.min(b.len());
            match op {
                0 => b.insert(at, byte),
                1 if at < b.len() => b[at] = byte,
                _ if at < b.len() => {
                    b.remove(at);
                }
                _ => {}
            }
        }
        b
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let _ = parse_bytes(&bytes);
    }

    #[test]
    fn parsing_toml_like_text_never_panics(text in "[\\[\\]a-z_=\"'{}.,#0-9 \\n\\r\\t\\\\-]{0,600}") {
        let _ = parse_bytes(text.as_bytes());
    }

    #[test]
    fn parsing_mutated_files_never_panics(bytes in mutated()) {
        if let Err(problems) = parse_bytes(&bytes) {
            prop_assert!(!problems.is_empty());
            for p in &problems {
                let msg = p.to_string();
                prop_assert!(!msg.chars().any(char::is_control), "{:?}", msg);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn loading_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..(MAX_FILE_BYTES + 64))) {
        let dir = CaseDir::new("prop");
        let p = dir.0.join("grants.toml");
        write(&p, &bytes, 0o644);
        match load(&p) {
            Ok(loaded) => prop_assert_eq!(loaded.sha256, sha256_hex(&bytes)),
            Err(e) => {
                if bytes.len() > MAX_FILE_BYTES {
                    prop_assert_eq!(e.rule(), "file-size");
                }
                let _ = e.to_string();
                let _ = e.diagnostics();
            }
        }
    }
}

/// Unmounts on drop (also when the test panics).
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

fn mount(args: &[&str], target: &Path) -> bool {
    std::process::Command::new("mount")
        .args(args)
        .arg(target)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What a pod really sees: kubelet's Secret/ConfigMap volume is a tmpfs (or
/// emptyDir) whose root has mode 1777 (or 0777), mounted read-only into the
/// container. Write bits on a read-only mount are accepted; the same layout on
/// a writable mount is refused. Needs permission to mount (root with
/// CAP_SYS_ADMIN); skipped with a note otherwise.
#[test]
fn projected_volume_on_read_only_tmpfs() {
    let dir = CaseDir::new("ro-volume");
    let vol = dir.0.join("volume");
    mkdir(&vol, 0o755);
    if !mount(&["-t", "tmpfs", "-o", "size=1m", "tmpfs"], &vol) {
        eprintln!("skipped: cannot mount a tmpfs here (needs CAP_SYS_ADMIN)");
        return;
    }
    let guard = Mounted(vol.clone());
    let ts = "..2026_04_20_10_11_12.123456789";
    mkdir(&vol.join(ts), 0o755);
    write(&vol.join(ts).join("grants.toml"), valid().as_bytes(), 0o644);
    symlink(ts, vol.join("..data")).expect("symlink");
    symlink("..data/grants.toml", vol.join("grants.toml")).expect("symlink");
    fs::set_permissions(&vol, fs::Permissions::from_mode(0o1777)).expect("chmod");
    let p = vol.join("grants.toml");

    // Writable mount: the 1777 volume root is refused like /tmp.
    let err = load(&p).expect_err("writable 1777 root");
    assert_eq!(err.rule(), "dir-mode", "{err}");

    // Read-only mount: accepted.
    assert!(mount(&["-o", "remount,ro"], &vol), "remount read-only");
    let loaded = load(&p).unwrap_or_else(|e| panic!("read-only volume refused: {e}"));
    assert_eq!(loaded.bindings.len(), 1);

    // Read-only does not excuse a writable file or an untrusted owner: those
    // rules still hold (checked on a group-writable ..data target).
    assert!(mount(&["-o", "remount,rw"], &vol), "remount read-write");
    fs::set_permissions(
        vol.join(ts).join("grants.toml"),
        fs::Permissions::from_mode(0o664),
    )
    .expect("chmod");
    assert!(mount(&["-o", "remount,ro"], &vol), "remount read-only");
    assert_eq!(load(&p).expect_err("writable file").rule(), "file-mode");
    drop(guard);
}

#[test]
fn hostile_files_give_bounded_reports_quickly() {
    // ~16 000 unknown keys in one binding, and the same on a single line.
    let mut many_keys = valid();
    while many_keys.len() < MAX_FILE_BYTES - 16 {
        let n = many_keys.len();
        many_keys.push_str(&format!("k{n} = 1\n"));
    }
    let mut one_line = String::from("schema_version = 1\nbindings = [{");
    let mut i = 0;
    while one_line.len() < MAX_FILE_BYTES - 16 {
        one_line.push_str(&format!("k{i}=1,"));
        i += 1;
    }
    one_line.push_str("x=1}]\n");
    for text in [many_keys, one_line] {
        let started = std::time::Instant::now();
        let problems = parse_bytes(text.as_bytes()).expect_err("invalid");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(problems.len(), MAX_REPORTED_PROBLEMS + 1);
        let last = problems.last().expect("last");
        assert_eq!(last.rule(), "more-problems");
        assert!(last.to_string().contains("more problem(s) not listed"));
    }
}

#[test]
fn every_error_of_64_bindings_is_listed() {
    // 64 bindings with all seven values wrong: 448 problems, all listed.
    let mut text = String::from("schema_version = 1\n");
    for _ in 0..MAX_BINDINGS {
        text.push_str(
            "[[bindings]]\nname = \"N\"\nproject = \"P\"\nenvironment = \"E\"\napplication = \"A\"\n\
             service = \"S\"\nruntime_class = \"C\"\nhandler = \"H\"\n",
        );
    }
    let problems = parse_bytes(text.as_bytes()).expect_err("invalid");
    assert_eq!(problems.len(), 64 * 7);
    assert!(problems.iter().all(|p| p.rule() != "more-problems"));
}

#[test]
fn positions_with_multibyte_characters_and_crlf() {
    let text = "schema_version = 1\r\n# é ü\r\n[[bindings]]\r\nname = \"é\"\r\n";
    let problems = parse_bytes(text.as_bytes()).expect_err("invalid");
    let p = problems
        .iter()
        .find(|p| p.rule() == "name-format")
        .expect("name-format");
    assert_eq!(p.position(), Some(Position { line: 4, column: 8 }));
}
