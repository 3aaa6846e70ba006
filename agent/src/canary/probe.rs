//! `berth-agent canary`: the check a canary Job runs inside its pod
//! (issue 53). It gathers what the pod sees of its sandbox — the kernel,
//! its uid, the root mount, capabilities, no-new-privileges, a token, the
//! open-files limit — hands that to the pure checks
//! (`berth_shared::attest::run_checks`) and exits with the code of the
//! first failure (0 when every check passed). The Job's pod failure policy
//! turns each code into a rule of its own, so the agent learns which
//! check failed from the Job alone.
//!
//! It prints one JSON line of what it saw and decided (the pod's log, and
//! its termination message where the kubelet provides one), for a person
//! reading the pod; the agent never reads it.

use std::io::Write as _;
use std::path::Path;

use berth_shared::attest::checks::{Facts, Failure, SandboxSeen, parse_cap, run_checks};
use berth_shared::attest::{CanaryClass, SandboxKind};

/// Where the kubelet mounts a service-account token.
const TOKEN: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";
/// A file the canary tries to create at the root (never there on a
/// read-only root).
const PROBE_FILE: &str = "/.berth-canary";

/// Arguments of `canary` (the agent renders them into the Job).
#[derive(Debug, clap::Args)]
pub struct CanaryArgs {
    /// The RuntimeClass the pod runs on (for the report).
    #[arg(long)]
    pub class: String,
    /// The kind of sandbox the class claims: host, gvisor or vm.
    #[arg(long, value_parser = parse_sandbox)]
    pub sandbox: SandboxKind,
    /// The node's kernel release (`status.nodeInfo.kernelVersion`): a
    /// host-kernel sandbox must see it, gVisor must not.
    #[arg(long)]
    pub host_kernel: Option<String>,
    /// The open-files limit the class declares (soft RLIMIT_NOFILE).
    #[arg(long)]
    pub nofile: Option<u64>,
}

fn parse_sandbox(s: &str) -> Result<SandboxKind, String> {
    SandboxKind::parse(s).ok_or_else(|| format!("{s:?} is not one of host, gvisor, vm"))
}

/// What the pod sees, read from the kernel that answers it.
fn gather() -> Facts {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k == name).then(|| v.trim().to_string())
        })
    };
    let root_write_error = match std::fs::write(PROBE_FILE, b"x") {
        Ok(()) => {
            let _ = std::fs::remove_file(PROBE_FILE);
            None
        }
        Err(e) => Some(e.to_string()),
    };
    // The last "/" mount is the one in effect.
    let root_mount_options = std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 4 && f[1] == "/").then(|| f[3].to_string())
        })
        .next_back();
    Facts {
        uid: rustix::process::getuid().as_raw(),
        root_write_error,
        root_mount_options,
        cap_eff: field("CapEff").and_then(|v| parse_cap(&v)),
        no_new_privs: field("NoNewPrivs").map(|v| v == "1"),
        token_present: Path::new(TOKEN).exists(),
        kernel_release: rustix::system::uname()
            .release()
            .to_string_lossy()
            .into_owned(),
        proc_version: std::fs::read_to_string("/proc/version")
            .unwrap_or_default()
            .trim()
            .to_string(),
        nofile_soft: rustix::process::getrlimit(rustix::process::Resource::Nofile).current,
    }
}

/// The exit code for what was seen: 0, or the first failure's.
fn verdict(args: &CanaryArgs, facts: &Facts) -> (i32, serde_json::Value) {
    let result = run_checks(
        args.sandbox,
        args.nofile,
        args.host_kernel.as_deref(),
        facts,
    );
    let seen = match SandboxSeen::of(facts, args.host_kernel.as_deref()) {
        SandboxSeen::Host => "host",
        SandboxSeen::Gvisor => "gvisor",
        SandboxSeen::Other => "other",
    };
    let class = CanaryClass {
        name: args.class.clone(),
        handler: String::new(),
        sandbox: args.sandbox,
        nofile: args.nofile,
        invalid: None,
    };
    let (code, outcome) = match &result {
        Ok(passed) => (0, serde_json::json!({"verdict": "pass", "passed": passed})),
        Err(f) => (
            f.exit_code(),
            serde_json::json!({
                "verdict": "fail",
                "failure": format!("{f:?}"),
                "message": f.message(&class, args.host_kernel.as_deref()),
            }),
        ),
    };
    let report = serde_json::json!({
        "class": args.class,
        "expected": args.sandbox.word(),
        "seen": seen,
        "outcome": outcome,
        "uid": facts.uid,
        "rootWrite": facts.root_write_error,
        "rootMount": facts.root_mount_options,
        "capEff": facts.cap_eff,
        "noNewPrivs": facts.no_new_privs,
        "tokenMounted": facts.token_present,
        "kernel": facts.kernel_release,
        "procVersion": facts.proc_version,
        "nofile": facts.nofile_soft,
    });
    (code, report)
}

/// Runs the checks and exits with their code.
pub fn run(args: &CanaryArgs) -> ! {
    let (code, report) = verdict(args, &gather());
    let line = report.to_string();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
    // The kubelet's termination-message file, when mounted.
    let _ = std::fs::write("/dev/termination-log", &line);
    std::process::exit(if code == 0 {
        0
    } else {
        debug_assert!(Failure::from_exit_code(code).is_some());
        code
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_is_not_a_canary_pod() {
        // Run outside a pod (as root, with a writable root, on the host
        // kernel): the facts are read, and the contract checks fail.
        let facts = gather();
        assert!(!facts.kernel_release.is_empty());
        assert!(facts.proc_version.starts_with("Linux version"), "{facts:?}");
        assert!(facts.nofile_soft.is_some());
        let args = CanaryArgs {
            class: "runc".into(),
            sandbox: SandboxKind::Host,
            host_kernel: Some(facts.kernel_release.clone()),
            nofile: None,
        };
        let (code, report) = verdict(&args, &facts);
        assert_eq!(report["seen"], "host", "{report}");
        if facts.uid != 10001 {
            assert_eq!(code, Failure::Uid.exit_code(), "{report}");
        }
        // Claiming gVisor on the host kernel is the typo berth must catch.
        let claimed = CanaryArgs {
            sandbox: SandboxKind::Gvisor,
            ..args
        };
        let (code, report) = verdict(&claimed, &facts);
        assert_eq!(code, Failure::KernelIsHost.exit_code(), "{report}");
        assert!(
            report["outcome"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("expected gVisor, saw the host kernel")),
            "{report}"
        );
    }
}
