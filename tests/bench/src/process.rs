//! The processes the benchmark measures: the agent (its `/metrics`) and
//! what `/proc` says about any child (resident memory, CPU time).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use berth_localcluster::procfs;

/// A process's resident memory, in bytes, and what it is made of.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rss {
    /// `VmRSS`: what the targets are about.
    pub total: u64,
    /// `RssAnon`: the heap, stacks, the allocator's own.
    pub anon: u64,
    /// `RssFile`: the binary's pages mapped from the page cache (its code,
    /// nearly all of it once the kernel's fault-around has mapped the
    /// neighbours of every page run).
    pub file: u64,
}

impl Rss {
    /// "anon A MB + file F MB", for a figure's name.
    pub fn parts(&self) -> String {
        format!(
            "anon {} MB + file {} MB",
            self.anon / 1_000_000,
            self.file / 1_000_000
        )
    }
}

/// [`Rss`] of a process, from /proc/PID/status.
pub fn rss(pid: u32) -> Option<Rss> {
    parse_rss(&procfs::process(pid).status()?)
}

fn status_kb(status: &str, field: &str) -> Option<u64> {
    let line = status
        .lines()
        .find(|l| l.split(':').next() == Some(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn parse_rss(status: &str) -> Option<Rss> {
    Some(Rss {
        total: status_kb(status, "VmRSS")?,
        anon: status_kb(status, "RssAnon").unwrap_or(0),
        file: status_kb(status, "RssFile").unwrap_or(0),
    })
}

/// CPU time (user + system) a process has used so far.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ticks = parse_stat_ticks(&text)?;
    Some(Duration::from_secs_f64(ticks as f64 / clock_ticks() as f64))
}

/// utime + stime from /proc/PID/stat (fields 14 and 15).
fn parse_stat_ticks(stat: &str) -> Option<u64> {
    let fields: Vec<&str> = procfs::stat_fields(stat)?.collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// A free local TCP port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The agent as it runs in production (cluster-wide), a child process.
pub struct AgentProcess {
    child: Child,
    port: u16,
    pub log: PathBuf,
}

/// How to run the agent.
pub struct AgentRun<'a> {
    pub binary: &'a Path,
    pub kubeconfig: &'a Path,
    pub grants: &'a Path,
    pub log: PathBuf,
    pub resync_seconds: u64,
    pub concurrency: usize,
    /// Where an agent built with `--features profile` writes its profile.
    pub profile_dir: Option<PathBuf>,
    /// Canaries on with this period (s), or off (no canary image).
    pub canary_period: Option<u64>,
    /// With canaries: `--canary-budget-per-hour` (none: the agent's
    /// default; an older agent knows no such flag).
    pub canary_budget: Option<String>,
    /// With canaries: run them on kwok's simulated nodes too
    /// (`--canary-attest-simulated-nodes-for-benchmark`), to measure their
    /// cost at a size one real node cannot carry.
    pub canaries_on_simulated_nodes: bool,
}

/// The canary image the bench's agent names with `--canaries`: no node
/// of the bench pulls it (kwok's nodes are simulated and skipped).
pub const CANARY_IMAGE: &str = "berth-bench/berth-agent:canary";

impl AgentProcess {
    /// Starts `berth-agent run` with the Lease in `berth-system`.
    pub fn start(run: AgentRun<'_>) -> AgentProcess {
        let port = free_port();
        let file = std::fs::File::create(&run.log).expect("agent log file");
        let mut command = Command::new(run.binary);
        if let Some(dir) = &run.profile_dir {
            command.env("BERTH_PROFILE_DIR", dir);
        }
        command
            .arg("run")
            .args(["--http-addr", &format!("127.0.0.1:{port}")])
            .args(["--lease-namespace", "berth-system"])
            .args(["--identity", "berth-bench-agent"])
            .args(["--resync-seconds", &run.resync_seconds.to_string()])
            .args(["--concurrency", &run.concurrency.to_string()])
            .arg("--grants-file")
            .arg(run.grants);
        // Canaries as the bench's options say, not as the environment
        // does: without an image the agent runs none (an older agent,
        // from before canaries, is started with no canary flag at all).
        command
            .env_remove("BERTH_CANARIES")
            .env_remove("BERTH_CANARY_IMAGE")
            .env_remove("BERTH_CANARY_PERIOD_SECONDS")
            .env_remove("BERTH_CANARY_BUDGET_PER_HOUR");
        if let Some(period) = run.canary_period {
            command
                .args(["--canary-image", CANARY_IMAGE])
                .args(["--canary-period-seconds", &period.to_string()]);
            if let Some(budget) = &run.canary_budget {
                command.args(["--canary-budget-per-hour", budget]);
            }
            if run.canaries_on_simulated_nodes {
                command.arg("--canary-attest-simulated-nodes-for-benchmark");
            }
        }
        let child = command
            .env("KUBECONFIG", run.kubeconfig)
            .env_remove("BERTH_GRANTS_FILE")
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("agent log file"))
            .stderr(file)
            .spawn()
            .expect("spawn berth-agent");
        AgentProcess {
            child,
            port,
            log: run.log,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// GET a path on the agent's HTTP port: (status code, body).
    pub async fn get(&self, path: &str) -> Option<(u16, String)> {
        http_get(self.port, path, Duration::from_secs(10)).await
    }

    /// Leads with synced caches.
    pub async fn is_leading(&self) -> bool {
        matches!(self.get("/health/leader").await, Some((200, _)))
    }

    pub async fn metrics(&self) -> String {
        self.get("/metrics")
            .await
            .map(|(_, b)| b)
            .unwrap_or_default()
    }

    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Waits, looking every second, until the agent has reconciled
    /// `runtimes` Runtimes and, with `must_lead`, leads with synced caches:
    /// its first pass over the world. Panics if the agent exits (naming
    /// its log) or takes 30 min (naming `who`).
    pub async fn await_first_pass(&mut self, runtimes: usize, must_lead: bool, who: &str) {
        let begun = Instant::now();
        loop {
            let m = self.metrics().await;
            if (!must_lead || self.is_leading().await) && reconciles(&m) >= runtimes as f64 {
                return;
            }
            assert!(
                !self.exited(),
                "the agent exited; see {}",
                self.log.display()
            );
            assert!(
                begun.elapsed() < Duration::from_secs(1800),
                "{who} did not {} every Runtime in 30 min",
                if must_lead {
                    "lead and reconcile"
                } else {
                    "reconcile"
                }
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET `path` on 127.0.0.1:`port` (the agent's operations endpoints, a
/// test's Prometheus): (status code, body), `None` when nothing answers.
/// HTTP/1.0, so that no server answers with a chunked body (Go's does for
/// an HTTP/1.1 request without a known length), which this reads raw.
pub async fn http_get(port: u16, path: &str, timeout: Duration) -> Option<(u16, String)> {
    let path = path.to_string();
    tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.set_read_timeout(Some(timeout)).ok()?;
        write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
        let mut buf = Vec::new();
        // A timeout after a complete response is fine: use what arrived.
        let _ = s.read_to_end(&mut buf);
        let out = String::from_utf8_lossy(&buf).into_owned();
        let code = out.split_whitespace().nth(1)?.parse().ok()?;
        let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
        Some((code, body))
    })
    .await
    .ok()
    .flatten()
}

/// Write requests the agent sent, excluding Lease renewals.
pub fn writes(metrics: &str) -> f64 {
    metric_sum(metrics, "berth_agent_api_requests_total", |l| {
        !l.contains("method=\"GET\"") && !l.contains("resource=\"leases\"")
    })
}

/// Of [`writes`], those of RuntimeGrant status: a grant's node coverage
/// counts every Node, so other tests adding Nodes to a shared cluster
/// make the agent write them (idle checks allow them only then).
pub fn grant_status_writes(metrics: &str) -> f64 {
    metric_sum(metrics, "berth_agent_api_requests_total", |l| {
        !l.contains("method=\"GET\"") && l.contains("resource=\"runtimegrants\"")
    })
}

/// The canary Jobs the agent created (`berth_agent_canaries_started_total`).
pub fn canaries_started(metrics: &str) -> f64 {
    metric_sum(metrics, "berth_agent_canaries_started_total", |_| true)
}

/// The effective period between two canaries of one pair
/// (`berth_agent_canary_effective_period_seconds`) and the pairs attested
/// (`berth_agent_canary_pairs`).
pub fn canary_pace(metrics: &str) -> (f64, f64) {
    (
        metric_sum(
            metrics,
            "berth_agent_canary_effective_period_seconds",
            |_| true,
        ),
        metric_sum(metrics, "berth_agent_canary_pairs", |_| true),
    )
}

/// The granted (class, node) pairs whose canary verdict is `state`
/// (verified, failing, unverified), over every class.
pub fn handler_nodes(metrics: &str, state: &str) -> f64 {
    let label = format!("state=\"{state}\"");
    metric_sum(metrics, "berth_agent_handler_nodes", |l| {
        l.split(',').any(|kv| kv == label)
    })
}

/// Reconciles done so far.
pub fn reconciles(metrics: &str) -> f64 {
    metric_sum(metrics, "berth_agent_reconciles_total", |_| true)
}

/// Sum of the samples of `metric` whose label set satisfies `filter`.
pub fn metric_sum(text: &str, metric: &str, filter: impl Fn(&str) -> bool) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name_labels, value) = l.rsplit_once(' ')?;
            let (name, labels) = match name_labels.split_once('{') {
                Some((n, rest)) => (n, rest.trim_end_matches('}')),
                None => (name_labels, ""),
            };
            (name == metric && filter(labels)).then(|| value.parse::<f64>().ok())?
        })
        .fold(0.0, super::requests::add)
}

/// Asks the agent for its profile of the convergence (SIGUSR1) and prints
/// the top of it.
pub async fn profile_report(agent: &AgentProcess, work: &std::path::Path) {
    let top = work.join("agent.top.txt");
    let _ = std::fs::remove_file(&top);
    let sent = std::process::Command::new("kill")
        .args(["-USR1", &agent.pid().to_string()])
        .status();
    if !sent.is_ok_and(|s| s.success()) {
        eprintln!("profile: could not signal the agent");
        return;
    }
    for _ in 0..100 {
        if let Ok(text) = std::fs::read_to_string(&top) {
            let head: Vec<&str> = text.lines().take(40).collect();
            eprintln!(
                "profile of the agent while it converged ({}):\n{}",
                work.join("agent.folded").display(),
                head.join("\n")
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!("profile: none written; was the agent built with --features profile?");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rss_and_cpu_from_proc_text() {
        let status = "Name:\tx\nVmPeak:\t  9000 kB\nVmRSS:\t   1234 kB\nRssAnon:\t  1000 kB\nRssFile:\t   234 kB\nThreads:\t3\n";
        let rss = parse_rss(status).expect("VmRSS");
        assert_eq!(
            (rss.total, rss.anon, rss.file),
            (1234 * 1024, 1000 * 1024, 234 * 1024)
        );
        assert_eq!(rss.parts(), "anon 1 MB + file 0 MB");
        assert_eq!(parse_rss("Name:\tx\n"), None);
        // A command name with spaces and a parenthesis.
        let stat = "42 (berth (x) y) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 4 0";
        assert_eq!(parse_stat_ticks(stat), Some(325));
        assert_eq!(parse_stat_ticks("garbage"), None);
    }

    #[test]
    fn reads_this_process_from_proc() {
        let pid = std::process::id();
        assert!(rss(pid).is_some_and(|r| r.anon > 0 && r.anon + r.file <= r.total + 4096));
        assert!(cpu_time(pid).is_some());
    }

    #[test]
    fn sums_metric_samples_by_label() {
        let text = "# HELP x\nberth_agent_writes_total{kind=\"a\"} 2\nberth_agent_writes_total{kind=\"b\"} 3\nother 9\n";
        assert_eq!(metric_sum(text, "berth_agent_writes_total", |_| true), 5.0);
        assert_eq!(
            metric_sum(text, "berth_agent_writes_total", |l| l.contains("\"b\"")),
            3.0
        );
    }
}
