//! The host-global state a real node touches, and its cleanup.
//!
//! A kubelet and containerd are not namespaced like the control plane's
//! loopback processes: they mount, create cgroups and network devices, and
//! the kubelet rewrites kernel settings. This machine is shared, so: one
//! real node at a time holds a machine-wide lock; every name is the node's
//! own (bridge, cgroup parent, state directory); the kernel settings the
//! kubelet rewrites are saved before it starts and put back once the node is
//! Ready and again at teardown; and teardown runs the same at start, to
//! clean up after a crash.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::config::NodeLayout;
use crate::Error;

/// Machine-wide directory of the lock and the saved kernel settings.
pub const HOST_DIR: &str = "/run/berth-realnode";

/// The kernel settings the kubelet sets at start (`setupKernelTunables`).
pub const SYSCTLS: [&str; 6] = [
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
];

fn run(what: &str, cmd: &mut Command) -> Result<String, Error> {
    let out = cmd.output().map_err(|e| Error::Start {
        component: "real-node".into(),
        detail: format!("{what}: {e}"),
        log: PathBuf::from(HOST_DIR),
    })?;
    if !out.status.success() {
        return Err(Error::Start {
            component: "real-node".into(),
            detail: format!(
                "{what}: {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            log: PathBuf::from(HOST_DIR),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The machine-wide lock, held (an open file with an exclusive flock) for
/// the node's life. Waits up to `timeout` for another run's node to end.
pub fn lock(timeout: Duration) -> Result<File, Error> {
    let dir = Path::new(HOST_DIR);
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let path = dir.join("lock");
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    let deadline = Instant::now() + timeout;
    loop {
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(file),
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(500)),
            Err(e) => {
                return Err(Error::Start {
                    component: "real-node".into(),
                    detail: format!(
                        "another real node holds {} (waited {}s): {e}",
                        path.display(),
                        timeout.as_secs()
                    ),
                    log: path,
                });
            }
        }
    }
}

fn saved_sysctls() -> PathBuf {
    Path::new(HOST_DIR).join("sysctls.saved")
}

/// Saves the kernel settings the kubelet rewrites, unless a crashed run
/// already saved them (its file holds the values from before that run).
pub fn save_sysctls() -> Result<(), Error> {
    let path = saved_sysctls();
    if path.exists() {
        return Ok(());
    }
    let mut text = String::new();
    for key in SYSCTLS {
        let p = Path::new("/proc/sys").join(key);
        let v = std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))?;
        text.push_str(&format!("{key}={}\n", v.trim()));
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))
}

/// Writes the saved kernel settings back; with `forget`, removes the file
/// (at teardown: the next run saves afresh). Returns what it changed.
pub fn restore_sysctls(forget: bool) -> Vec<String> {
    let path = saved_sysctls();
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Vec::new();
    };
    let mut changed = Vec::new();
    for (key, value) in text.lines().filter_map(|l| l.split_once('=')) {
        let p = Path::new("/proc/sys").join(key);
        let now = std::fs::read_to_string(&p).unwrap_or_default();
        if now.trim() != value && std::fs::write(&p, value).is_ok() {
            changed.push(format!("{key}: {} -> {value}", now.trim()));
        }
    }
    if forget {
        let _ = std::fs::remove_file(&path);
    }
    changed
}

/// Creates the node's bridge with its address (the node IP) and the
/// `kubernetes` Service's, up.
pub fn create_bridge(l: &NodeLayout) -> Result<(), Error> {
    run(
        "creating the bridge",
        Command::new("ip").args(["link", "add", &l.bridge, "type", "bridge"]),
    )?;
    run(
        "addressing the bridge",
        Command::new("ip").args([
            "addr",
            "add",
            &format!("{}/24", l.node_ip),
            "dev",
            &l.bridge,
        ]),
    )?;
    // The `kubernetes` Service's ClusterIP as an address of this machine
    // (on the node's own bridge, gone with it): a pod's packet to it is
    // delivered locally, to `service_proxy`, and nothing is forwarded.
    run(
        "giving the bridge the kubernetes Service's address",
        Command::new("ip").args([
            "addr",
            "add",
            &format!("{}/32", crate::pki::KUBERNETES_SERVICE_IP),
            "dev",
            &l.bridge,
        ]),
    )?;
    run(
        "bringing the bridge up",
        Command::new("ip").args(["link", "set", &l.bridge, "up"]),
    )?;
    Ok(())
}

/// Whether any interface of this machine has an address in `subnet`'s /24
/// (a prefix like `10.231.7.`), or a device is named `bridge`.
pub fn network_in_use(prefix: &str, bridge: &str) -> bool {
    let out = Command::new("ip").args(["-o", "-4", "addr"]).output();
    let text = out
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    text.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.get(1) == Some(&bridge) || f.get(3).is_some_and(|a| a.starts_with(prefix))
    })
}

/// PIDs of processes that belong to the node: their command line names its
/// state directory (kubelet, containerd, the shims), or they live in its
/// cgroup parent (the pods' processes).
fn node_processes(l: &NodeLayout) -> Vec<i32> {
    let me = std::process::id();
    let state = l.state.display().to_string();
    let cg = format!("/{}/", l.cgroup_root);
    let cg_end = format!("/{}", l.cgroup_root);
    crate::procfs::processes()
        .into_iter()
        .filter(|p| p.pid != me && !p.zombie())
        .filter(|p| {
            let cmdline = p.cmdline().unwrap_or_default().join("\0");
            let in_cgroup = p
                .cgroups()
                .iter()
                .any(|path| path.starts_with(&cg) || *path == cg_end);
            cmdline.contains(&state) || in_cgroup
        })
        .map(|p| p.pid as i32)
        .collect()
}

/// Mount points under the node's state directory, deepest first.
fn node_mounts(l: &NodeLayout) -> Vec<String> {
    let state = l.state.display().to_string();
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut mounts: Vec<String> = text
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .filter(|m| *m == state || m.starts_with(&format!("{state}/")))
        .map(str::to_string)
        .collect();
    mounts.sort_by_key(|m| std::cmp::Reverse(m.len()));
    mounts.dedup();
    mounts
}

/// Creates the node's cgroup parent under every controller (the kubelet
/// refuses a `cgroupRoot` that is missing anywhere).
pub fn create_cgroups(l: &NodeLayout) -> Result<(), Error> {
    let base = Path::new("/sys/fs/cgroup");
    let dirs: Vec<PathBuf> = if base.join("cgroup.controllers").exists() {
        vec![base.join(&l.cgroup_root)]
    } else {
        std::fs::read_dir(base)
            .map_err(|e| Error::io(base, e))?
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path().join(&l.cgroup_root))
            .collect()
    };
    for d in dirs {
        std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
    }
    Ok(())
}

/// Removes every cgroup under the node's parent, children first.
fn remove_cgroups(l: &NodeLayout) {
    let Ok(controllers) = std::fs::read_dir("/sys/fs/cgroup") else {
        return;
    };
    for c in controllers.flatten() {
        let root = c.path().join(&l.cgroup_root);
        if root.is_dir() {
            remove_cgroup_tree(&root);
        }
    }
}

fn remove_cgroup_tree(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_cgroup_tree(&e.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// Everything the node left on the machine, removed in order: its processes
/// (SIGKILL: by now the kubelet has had its chance to stop the pods), its
/// mounts (network namespaces, rootfs overlays, volumes), its cgroups, its
/// bridge, its state directory; then the kernel settings go back. Safe to
/// run when nothing is left. Returns what it found, for the log.
pub fn teardown(l: &NodeLayout) -> Vec<String> {
    let mut found = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let pids = node_processes(l);
        if pids.is_empty() {
            break;
        }
        found.push(format!("killing {} processes: {pids:?}", pids.len()));
        for pid in pids {
            if let Some(p) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
        }
        if Instant::now() > deadline {
            found.push("some processes would not die".into());
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let mounts = node_mounts(l);
    if !mounts.is_empty() {
        found.push(format!("unmounting {} mounts", mounts.len()));
    }
    for m in &mounts {
        let _ = Command::new("umount").args(["-l", m]).output();
    }
    remove_cgroups(l);
    if Path::new("/sys/class/net").join(&l.bridge).exists() {
        found.push(format!("deleting bridge {}", l.bridge));
        let _ = Command::new("ip").args(["link", "del", &l.bridge]).output();
    }
    if node_mounts(l).is_empty() {
        let _ = std::fs::remove_dir_all(&l.state);
    } else {
        found.push(format!(
            "{} still has mounts; left in place",
            l.state.display()
        ));
    }
    for c in restore_sysctls(true) {
        found.push(format!("restored {c}"));
    }
    found
}
