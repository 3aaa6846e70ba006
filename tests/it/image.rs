//! The agent's container image, built without a Docker daemon and run with
//! a daemonless runtime: `assets/image/build.sh` (buildah) builds it from a
//! statically linked release binary; these tests check its configuration
//! and content, then run it with podman as uid 65532 with a read-only root
//! filesystem, no network and no capabilities, for `berth-agent --version`
//! and `berth-agent check-grants` on a mounted grants file.
//!
//! They need buildah, podman and runc (Debian's packages; `.ci/run`
//! installs them) and root (the image storage is the system one). Without
//! the tools they are skipped with a message on stderr, except under CI
//! (`CI` set), where a missing tool fails them.
//!
//! Runtime notes for this kind of machine (see `podman_run`): crun refuses
//! a host whose cgroup v2 hierarchy holds a controller while v1 is mounted
//! ("cgroups in hybrid mode not supported"), so runc is used when present;
//! and podman's default open-files limit (1048576) is above the hard limit a
//! process without CAP_SYS_RESOURCE can set, so explicit limits are passed.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

use crate::chart::stdout_of;

const REPOSITORY: &str = "localhost/berth-agent";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()))
}

/// True when the image tools are here. Otherwise: under CI a failure, else
/// a skip with the reason written to stderr (past the test harness's
/// output capture, so that it shows).
pub(crate) fn tools_present(test: &str) -> bool {
    let mut missing: Vec<&str> = ["buildah", "podman", "readelf", "strip"]
        .into_iter()
        .filter(|t| !on_path(t))
        .collect();
    if !rustix::process::geteuid().is_root() {
        // `podman image mount` and the system image storage need root.
        missing.push("root (run as root)");
    }
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: {missing:?} missing; .ci/run installs buildah, podman, runc and binutils, as root"
    );
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED image::{test}: {} missing (apt-get install buildah podman runc binutils, as root); CI runs it",
        missing.join(", ")
    );
    false
}

fn run(what: &str, cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("{what}: could not run: {e}"))
}

/// The commit the workspace is at (what `--version` and the revision label
/// must name).
pub(crate) fn head_commit() -> String {
    let out = run(
        "git rev-parse HEAD",
        Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(root()),
    );
    stdout_of("git rev-parse HEAD", &out).trim().to_string()
}

#[derive(Debug)]
pub(crate) struct Built {
    /// `localhost/berth-agent:it-<pid>`.
    pub(crate) reference: String,
    /// The same image as an OCI archive (`BERTH_IMAGE_ARCHIVE`), what the
    /// as-shipped test imports into the real node's containerd.
    pub(crate) archive: PathBuf,
}

/// Removes the images (and their archives) of earlier test processes that
/// are gone.
fn remove_stale_images() {
    if let Ok(entries) = std::fs::read_dir(env!("CARGO_TARGET_TMPDIR")) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name
                .strip_prefix("berth-agent-image-")
                .and_then(|r| r.strip_suffix(".oci.tar"))
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let Ok(out) = Command::new("podman")
        .args(["images", "--format", "{{.Repository}}:{{.Tag}}", REPOSITORY])
        .output()
    else {
        return;
    };
    for reference in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(pid) = reference.strip_prefix(&format!("{REPOSITORY}:it-"))
            && !Path::new("/proc").join(pid).exists()
        {
            let _ = Command::new("podman")
                .args(["rmi", "-f", reference])
                .output();
        }
    }
}

/// The image, built once per test process by `assets/image/build.sh` with
/// the cargo and target directory of this test run.
pub(crate) fn image() -> &'static Built {
    static IMAGE: OnceLock<Built> = OnceLock::new();
    IMAGE.get_or_init(|| {
        remove_stale_images();
        let reference = format!("{REPOSITORY}:it-{}", std::process::id());
        let archive = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("berth-agent-image-{}.oci.tar", std::process::id()));
        let mut cmd = build_command(&root(), &reference, &archive);
        let out = run("assets/image/build.sh", &mut cmd);
        stdout_of("assets/image/build.sh", &out);
        Built { reference, archive }
    })
}

/// `bash <tree>/assets/image/build.sh REFERENCE` for the tree at `tree`,
/// with the cargo and target directory of this test run, writing the image
/// as an OCI archive to `archive` (`BERTH_IMAGE_ARCHIVE`).
pub(crate) fn build_command(tree: &Path, reference: &str, archive: &Path) -> Command {
    let target = berth_tests::harness::profile_dir()
        .parent()
        .expect("<target>")
        .to_path_buf();
    let mut cmd = Command::new("bash");
    // Without the CARGO_* variables cargo sets for this test process:
    // some crates record them at build time, and a value that differs
    // from a shell's would make the release build start over each time.
    for (key, _) in std::env::vars_os() {
        if let Some(key) = key.to_str()
            && key.starts_with("CARGO_")
            && key != "CARGO_HOME"
        {
            cmd.env_remove(key);
        }
    }
    cmd.arg(tree.join("assets/image/build.sh"))
        .arg(reference)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("BERTH_AGENT_STATIC_BIN")
        .env("BERTH_IMAGE_ARCHIVE", archive)
        .current_dir(tree);
    if let Some(cargo) = std::env::var_os("CARGO") {
        // build.sh runs `cargo`: the one running these tests.
        let dir = Path::new(&cargo).parent().map(Path::to_path_buf);
        if let (Some(dir), Some(path)) = (dir, std::env::var_os("PATH")) {
            let mut paths = vec![dir];
            paths.extend(std::env::split_paths(&path));
            cmd.env("PATH", std::env::join_paths(paths).expect("PATH"));
        }
    }
    cmd
}

/// `podman image inspect` of the image: its OCI configuration.
fn inspect(reference: &str) -> Value {
    let out = run(
        "podman image inspect",
        Command::new("podman").args(["image", "inspect", reference]),
    );
    let all: Value =
        serde_json::from_str(&stdout_of("podman image inspect", &out)).expect("inspect JSON");
    all[0].clone()
}

/// Runs the image: uid/gid 65532, read-only root filesystem (and no tmpfs
/// added by podman), no network, every capability dropped, no new
/// privileges; `mounts` are (host dir, container dir) read-only binds.
fn podman_run(reference: &str, mounts: &[(&Path, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new("podman");
    if on_path("runc") {
        cmd.args(["--runtime", "runc"]);
    }
    cmd.args([
        "run",
        "--rm",
        "--pull=never",
        "--network=none",
        "--user=65532:65532",
        "--read-only",
        "--read-only-tmpfs=false",
        "--cap-drop=all",
        "--security-opt=no-new-privileges",
        "--ulimit=nofile=1024:1024",
        "--ulimit=nproc=1024:1024",
    ]);
    for (host, dir) in mounts {
        cmd.arg(format!("--volume={}:{dir}:ro", host.display()));
    }
    cmd.arg(reference).args(args);
    run("podman run", &mut cmd)
}

/// A fresh directory holding `grants.toml` with `mode`, itself 0755.
fn grants_dir(name: &str, mode: u32) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("image-grants")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("grants dir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod dir");
    let file = dir.join("grants.toml");
    std::fs::copy(root().join("assets/examples/grants.toml"), &file).expect("copy grants");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).expect("chmod file");
    dir
}

/// Whether an ELF executable names a program interpreter (is dynamically
/// linked): a PT_INTERP entry in its program headers (ELF64, little endian).
fn has_interpreter(elf: &[u8]) -> bool {
    let u16_at = |o: usize| elf.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| {
        elf.get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |o: usize| {
        elf.get(o..o + 8).map(|b| {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_le_bytes(a)
        })
    };
    assert_eq!(elf.get(0..4), Some(&b"\x7fELF"[..]), "not an ELF file");
    assert_eq!(elf.get(4), Some(&2), "not ELF64");
    let phoff = u64_at(0x20).expect("e_phoff") as usize;
    let phentsize = usize::from(u16_at(0x36).expect("e_phentsize"));
    let phnum = usize::from(u16_at(0x38).expect("e_phnum"));
    (0..phnum).any(|i| u32_at(phoff + i * phentsize) == Some(3))
}

/// The image's configuration: non-root user, entrypoint and command, the
/// OCI image-spec labels naming this commit; and the Dockerfile (the path
/// for builders with Docker) declares the same.
#[test]
fn image_config_is_non_root_with_entrypoint_and_oci_labels() {
    if !tools_present("image_config_is_non_root_with_entrypoint_and_oci_labels") {
        return;
    }
    let built = image();
    let info = inspect(&built.reference);
    let config = &info["Config"];
    assert_eq!(config["User"], "65532:65532", "{config}");
    assert_eq!(
        config["Entrypoint"],
        serde_json::json!(["/usr/local/bin/berth-agent"])
    );
    assert_eq!(
        config["Cmd"],
        serde_json::json!(["run", "--grants-file", "/etc/berth/grants/grants.toml"])
    );
    assert_eq!(info["Os"], "linux");
    assert_eq!(info["Architecture"], "amd64");

    let labels: BTreeMap<String, String> =
        serde_json::from_value(config["Labels"].clone()).expect("labels");
    let want = [
        ("org.opencontainers.image.title", "berth-agent".to_string()),
        (
            "org.opencontainers.image.version",
            env!("CARGO_PKG_VERSION").to_string(),
        ),
        ("org.opencontainers.image.revision", head_commit()),
        (
            "org.opencontainers.image.licenses",
            "Apache-2.0".to_string(),
        ),
    ];
    for (key, value) in &want {
        assert_eq!(labels.get(*key), Some(value), "label {key}: {labels:?}");
    }
    for key in [
        "org.opencontainers.image.description",
        "org.opencontainers.image.source",
        "org.opencontainers.image.created",
    ] {
        assert!(
            labels.get(key).is_some_and(|v| !v.is_empty()),
            "label {key}: {labels:?}"
        );
    }
    let created = &labels["org.opencontainers.image.created"];
    assert!(
        created.len() == 20 && created.ends_with('Z') && created.as_bytes()[10] == b'T',
        "created is RFC 3339 UTC: {created}"
    );
    let size = info["Size"].as_u64().unwrap_or_default();
    let _ = writeln!(std::io::stderr(), "image {}: {size} bytes", built.reference);

    // The Dockerfile builds the same configuration.
    let dockerfile = std::fs::read_to_string(root().join("Dockerfile")).expect("read Dockerfile");
    let line = |instr: &str| {
        dockerfile
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix(instr))
            .map(str::trim)
            .unwrap_or_else(|| panic!("Dockerfile has no {instr}"))
            .to_string()
    };
    assert_eq!(line("USER "), "65532:65532");
    assert_eq!(
        serde_json::from_str::<Value>(&line("ENTRYPOINT ")).expect("ENTRYPOINT JSON"),
        config["Entrypoint"]
    );
    assert_eq!(
        serde_json::from_str::<Value>(&line("CMD ")).expect("CMD JSON"),
        config["Cmd"]
    );
    assert!(
        dockerfile.contains("\nFROM scratch\n"),
        "final stage is scratch"
    );
    for key in labels.keys().filter(|k| {
        k.starts_with("org.opencontainers.") && *k != "org.opencontainers.image.created"
    }) {
        assert!(
            dockerfile.contains(&format!("{key}=")),
            "Dockerfile sets {key}"
        );
    }
}

/// The image holds the static agent binary and the user database, and
/// nothing else: no shell, no libraries.
#[test]
fn image_holds_only_the_static_agent_and_no_shell() {
    if !tools_present("image_holds_only_the_static_agent_and_no_shell") {
        return;
    }
    let built = image();
    let out = run(
        "podman image mount",
        Command::new("podman").args(["image", "mount", &built.reference]),
    );
    let rootfs = PathBuf::from(stdout_of("podman image mount", &out).trim());
    let mut entries = BTreeMap::new();
    let mut stack = vec![rootfs.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("read image dir").flatten() {
            let path = e.path();
            let meta = std::fs::symlink_metadata(&path).expect("stat");
            let rel = path
                .strip_prefix(&rootfs)
                .expect("inside")
                .display()
                .to_string();
            if meta.is_dir() {
                stack.push(path.clone());
            }
            entries.insert(rel, (meta.is_file(), meta.mode() & 0o7777, meta.uid()));
        }
    }
    let binary = std::fs::read(rootfs.join("usr/local/bin/berth-agent"));
    let _ = Command::new("podman")
        .args(["image", "unmount", &built.reference])
        .output();

    let files: Vec<&str> = entries
        .iter()
        .filter(|(_, (is_file, _, _))| *is_file)
        .map(|(p, _)| p.as_str())
        .collect();
    assert_eq!(
        files,
        ["etc/group", "etc/passwd", "usr/local/bin/berth-agent"],
        "every entry: {entries:?}"
    );
    assert!(!entries.contains_key("bin/sh") && !entries.contains_key("bin"));
    assert_eq!(
        entries["usr/local/bin/berth-agent"],
        (true, 0o555, 0),
        "root-owned, not writable"
    );
    assert_eq!(entries["etc/passwd"], (true, 0o444, 0));
    let binary = binary.expect("read the agent binary");
    assert!(
        !has_interpreter(&binary),
        "the agent binary is statically linked (no program interpreter)"
    );
}

/// The image runs under a daemonless runtime as uid 65532 with a read-only
/// root filesystem: `--version` names this commit, `check-grants` accepts
/// the mounted example file and refuses a group-writable one for that
/// reason.
#[test]
fn image_runs_version_and_check_grants_as_uid_65532_read_only() {
    if !tools_present("image_runs_version_and_check_grants_as_uid_65532_read_only") {
        return;
    }
    let built = image();

    let out = podman_run(&built.reference, &[], &["--version"]);
    let version = stdout_of("berth-agent --version in the image", &out);
    assert_eq!(
        version.trim(),
        format!(
            "berth-agent {} (commit {})",
            env!("CARGO_PKG_VERSION"),
            head_commit()
        )
    );

    let good = grants_dir("good", 0o444);
    let out = podman_run(
        &built.reference,
        &[(&good, "/etc/berth/grants")],
        &["check-grants", "/etc/berth/grants/grants.toml"],
    );
    let table = stdout_of("berth-agent check-grants in the image", &out);
    for name in ["bounded-worker", "sandboxed-api"] {
        assert!(table.contains(name), "{name} in:\n{table}");
    }

    let bad = grants_dir("group-writable", 0o464);
    let out = podman_run(
        &built.reference,
        &[(&bad, "/etc/berth/grants")],
        &["check-grants", "/etc/berth/grants/grants.toml"],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        all.contains("must not be writable by group or others"),
        "the refusal names the rule:\n{all}"
    );
    let _ = std::fs::remove_dir_all(good);
    let _ = std::fs::remove_dir_all(bad);
}
