//! The canary's checks, over what it saw inside its pod ([`Facts`]). The
//! `berth-agent canary` subcommand gathers the facts (the only I/O) and
//! exits with the code of the first failure ([`Failure::exit_code`]); the
//! canary Job maps every code to a pod-failure-policy rule of its own
//! (`super::job`), and the agent reads the rule back from the Job
//! (`super::record`). Exit 0: every check passed.

use super::expect::{CanaryClass, SandboxKind};
use crate::render::RUN_AS_ID;

/// The line of `/proc/version` gVisor writes (its fixed, fake Linux
/// version): seen inside a gVisor sandbox whatever the host runs.
pub const GVISOR_PROC_VERSION: &str = "#1 SMP Sun Jan 10 15:06:54 PST 2016";

/// What the canary saw inside its pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// Its real uid.
    pub uid: u32,
    /// What writing a file at `/` gave: `None` when it succeeded.
    pub root_write_error: Option<String>,
    /// The options of the `/` mount (`/proc/self/mounts`).
    pub root_mount_options: Option<String>,
    /// `CapEff` of `/proc/self/status`, parsed.
    pub cap_eff: Option<u64>,
    /// `NoNewPrivs` of `/proc/self/status`.
    pub no_new_privs: Option<bool>,
    /// Whether a service-account token is mounted at the usual path.
    pub token_present: bool,
    /// `uname -r`.
    pub kernel_release: String,
    /// `/proc/version`.
    pub proc_version: String,
    /// The soft `RLIMIT_NOFILE`.
    pub nofile_soft: Option<u64>,
}

/// Which kernel the canary saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SandboxSeen {
    /// The node's own kernel release.
    Host,
    /// gVisor's.
    Gvisor,
    /// Another kernel: neither the host's nor gVisor's (a VM's).
    Other,
}

impl SandboxSeen {
    /// Tells the kernel from the facts and the node's kernel release
    /// (`None`: the node does not report it, and only gVisor's signature
    /// tells).
    pub fn of(facts: &Facts, host_kernel: Option<&str>) -> Self {
        if facts.proc_version.contains(GVISOR_PROC_VERSION)
            || facts.proc_version.to_ascii_lowercase().contains("gvisor")
        {
            SandboxSeen::Gvisor
        } else {
            match host_kernel {
                Some(host) if facts.kernel_release != host => SandboxSeen::Other,
                _ => SandboxSeen::Host,
            }
        }
    }
}

macro_rules! failures {
    ($( $variant:ident = $code:literal, $reason:ident; )*) => {
        /// Why a canary failed, one exit code each.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Failure { $( $variant, )* }

        impl Failure {
            /// Every failure, in the order of the Job's pod failure policy
            /// rules.
            pub const ALL: &'static [Failure] = &[ $( Failure::$variant, )* ];

            /// The canary's exit code for it (never 0, 1 or 128+).
            pub fn exit_code(self) -> i32 {
                match self { $( Failure::$variant => $code, )* }
            }

            /// The failure with this exit code.
            pub fn from_exit_code(code: i32) -> Option<Self> {
                match code { $( $code => Some(Failure::$variant), )* _ => None }
            }

            /// The attestation reason (`super::reasons`).
            pub fn reason(self) -> &'static str {
                match self { $( Failure::$variant => super::reasons::$reason, )* }
            }
        }
    };
}

failures! {
    KernelIsHost = 10, KERNEL_MISMATCH;
    KernelNotGvisor = 11, KERNEL_MISMATCH;
    KernelNotHost = 12, KERNEL_MISMATCH;
    KernelNotVm = 13, KERNEL_MISMATCH;
    Uid = 20, CONTRACT_BROKEN;
    RootWritable = 21, CONTRACT_BROKEN;
    Capabilities = 22, CONTRACT_BROKEN;
    NewPrivileges = 23, CONTRACT_BROKEN;
    TokenMounted = 24, CONTRACT_BROKEN;
    OpenFiles = 30, DECLARED_LIMIT_MISMATCH;
    Usage = 40, CANARY_FAILED;
}

impl Failure {
    /// What it means, for people: what the class claims against what the
    /// canary saw (the exit code carries no more than which check failed,
    /// so the message is built from what the agent knows: the class and
    /// the node's kernel).
    pub fn message(self, class: &CanaryClass, host_kernel: Option<&str>) -> String {
        let host = host_kernel.map_or_else(String::new, |k| format!(" ({k})"));
        match self {
            Failure::KernelIsHost => format!(
                "expected {}, saw the host kernel{host}",
                class.sandbox.described()
            ),
            Failure::KernelNotGvisor => format!(
                "expected gVisor, saw a kernel that is neither gVisor's nor the host's{host}"
            ),
            Failure::KernelNotHost => {
                format!("expected the host kernel{host}, saw another kernel (gVisor's or a VM's)")
            }
            Failure::KernelNotVm => "expected a VM's kernel, saw gVisor's".to_string(),
            Failure::Uid => format!("the pod does not run as uid {RUN_AS_ID}"),
            Failure::RootWritable => "the root filesystem is writable".to_string(),
            Failure::Capabilities => "the pod holds capabilities (CapEff is not 0)".to_string(),
            Failure::NewPrivileges => {
                "the pod may gain new privileges (NoNewPrivs is not 1)".to_string()
            }
            Failure::TokenMounted => "a service-account token is mounted in the pod".to_string(),
            Failure::OpenFiles => format!(
                "the open-files limit is not the {} RuntimeClass {} declares",
                class
                    .nofile
                    .map_or_else(|| "?".to_string(), |n| n.to_string()),
                class.name
            ),
            Failure::Usage => {
                "the canary could not run its checks (bad arguments, or /proc unreadable)"
                    .to_string()
            }
        }
    }
}

/// The checks, in order; the first failure ends them. `Ok` lists what was
/// checked.
pub fn run_checks(
    sandbox: SandboxKind,
    nofile: Option<u64>,
    host_kernel: Option<&str>,
    facts: &Facts,
) -> Result<Vec<&'static str>, Failure> {
    let mut passed = vec!["started"];
    let seen = SandboxSeen::of(facts, host_kernel);
    match (sandbox, seen) {
        (SandboxKind::Gvisor, SandboxSeen::Gvisor)
        | (SandboxKind::Host, SandboxSeen::Host)
        | (SandboxKind::Vm, SandboxSeen::Other) => {}
        (SandboxKind::Gvisor | SandboxKind::Vm, SandboxSeen::Host) => {
            return Err(Failure::KernelIsHost);
        }
        (SandboxKind::Gvisor, SandboxSeen::Other) => return Err(Failure::KernelNotGvisor),
        (SandboxKind::Host, _) => return Err(Failure::KernelNotHost),
        (SandboxKind::Vm, SandboxSeen::Gvisor) => return Err(Failure::KernelNotVm),
    }
    passed.push("kernel");
    if i64::from(facts.uid) != RUN_AS_ID {
        return Err(Failure::Uid);
    }
    passed.push("uid");
    // Whether a write fails says little on its own (uid 10001 may not
    // write to a root-owned / anyway): the mount must be read-only.
    let read_only = facts
        .root_mount_options
        .as_deref()
        .is_some_and(|o| o.split(',').any(|x| x == "ro"));
    if facts.root_write_error.is_none() || !read_only {
        return Err(Failure::RootWritable);
    }
    passed.push("read-only root");
    if facts.cap_eff != Some(0) {
        return Err(Failure::Capabilities);
    }
    passed.push("no capabilities");
    if facts.no_new_privs != Some(true) {
        return Err(Failure::NewPrivileges);
    }
    passed.push("no new privileges");
    if facts.token_present {
        return Err(Failure::TokenMounted);
    }
    passed.push("no token");
    if let Some(want) = nofile {
        if facts.nofile_soft != Some(want) {
            return Err(Failure::OpenFiles);
        }
        passed.push("open-files limit");
    }
    Ok(passed)
}

/// Parses `CapEff:\t0000000000000000` style hex.
pub fn parse_cap(hex: &str) -> Option<u64> {
    u64::from_str_radix(hex.trim(), 16).ok()
}
