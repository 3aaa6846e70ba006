//! Where the CPU went during a measured window: the CPU time of the agent
//! and of each control-plane component (found by their command lines,
//! which name the cluster's directory), and how busy the whole machine
//! was. A convergence time far above its floor means little until one
//! knows whether the agent or the control plane held the cores.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use super::process::cpu_time;

/// CPU times at one instant.
#[derive(Clone, Debug)]
pub struct Sample {
    at: Instant,
    /// Component name → CPU time used so far.
    by_component: BTreeMap<String, Duration>,
    /// Machine-wide (busy, total) jiffies from /proc/stat.
    machine: Option<(u64, u64)>,
}

/// CPU used between two samples.
#[derive(Clone, Debug, PartialEq)]
pub struct Usage {
    /// Wall time between the samples.
    pub wall: Duration,
    /// Component → share of one core over the window (0–N).
    pub cores: BTreeMap<String, f64>,
    /// The whole machine's busy share (0–1 of all its cores).
    pub machine_busy: Option<f64>,
}

/// The processes of the local cluster in `cluster_dir` (by component
/// name) and the agent (`agent_pid`), at this instant.
pub fn sample(cluster_dir: &Path, agent_pid: Option<u32>) -> Sample {
    let needle = cluster_dir.to_string_lossy().into_owned();
    let mut by_component: BTreeMap<String, Duration> = BTreeMap::new();
    for (pid, name) in cluster_processes(&needle) {
        if let Some(t) = cpu_time(pid) {
            *by_component.entry(name).or_default() += t;
        }
    }
    if let Some(t) = agent_pid.and_then(cpu_time) {
        by_component.insert("berth-agent".into(), t);
    }
    Sample {
        at: Instant::now(),
        by_component,
        machine: std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|s| machine_jiffies(&s)),
    }
}

/// What was used from `a` to `b`.
pub fn usage(a: &Sample, b: &Sample) -> Usage {
    let wall = b.at.saturating_duration_since(a.at);
    let secs = wall.as_secs_f64().max(1e-9);
    let cores = b
        .by_component
        .iter()
        .map(|(name, t)| {
            let before = a.by_component.get(name).copied().unwrap_or_default();
            (name.clone(), t.saturating_sub(before).as_secs_f64() / secs)
        })
        .collect();
    let machine_busy = match (a.machine, b.machine) {
        (Some((busy0, total0)), Some((busy1, total1))) if total1 > total0 => {
            Some(busy1.saturating_sub(busy0) as f64 / (total1 - total0) as f64)
        }
        _ => None,
    };
    Usage {
        wall,
        cores,
        machine_busy,
    }
}

/// (pid, component) of every process whose command line names `needle`,
/// except the supervisors (`berth-localcluster supervise`), which only
/// wait.
fn cluster_processes(needle: &str) -> Vec<(u32, String)> {
    berth_localcluster::procfs::command_lines()
        .into_iter()
        .filter_map(|(pid, args)| Some((pid, component(&args, needle)?)))
        .collect()
}

/// The component a command line belongs to: the base name of its program,
/// when an argument names `needle` and it is not a supervisor.
fn component(args: &[String], needle: &str) -> Option<String> {
    let program = args.first()?;
    let name = program.rsplit('/').next()?.to_string();
    if name == "berth-localcluster" || !args.iter().skip(1).any(|a| a.contains(needle)) {
        return None;
    }
    Some(name)
}

/// (busy, total) jiffies from the first line of /proc/stat; idle and
/// iowait are not busy.
fn machine_jiffies(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().next()?;
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let values: Vec<u64> = fields.filter_map(|f| f.parse().ok()).collect();
    let total: u64 = values.iter().sum();
    let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
    Some((total.saturating_sub(idle), total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_named_by_program_and_supervisors_skipped() {
        let line = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        let dir = "/tmp/berth-it/bench-1";
        assert_eq!(
            component(
                &line(&[
                    "/cache/k8s/kube-apiserver",
                    "--cert-dir=/tmp/berth-it/bench-1/pki"
                ]),
                dir
            ),
            Some("kube-apiserver".into())
        );
        assert_eq!(
            component(&line(&["/x/berth-localcluster", "supervise", dir]), dir),
            None
        );
        assert_eq!(
            component(&line(&["/usr/bin/etcd", "--data-dir=/elsewhere"]), dir),
            None
        );
        assert_eq!(component(&[], dir), None);
    }

    #[test]
    fn machine_busy_leaves_out_idle_and_iowait() {
        let stat = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3\n";
        assert_eq!(machine_jiffies(stat), Some((150, 1000)));
        assert_eq!(machine_jiffies("intr 1 2"), None);
    }

    #[test]
    fn usage_is_the_share_of_a_core_over_the_window() {
        let t0 = Instant::now();
        let a = Sample {
            at: t0,
            by_component: BTreeMap::from([("etcd".into(), Duration::from_secs(1))]),
            machine: Some((100, 1000)),
        };
        let b = Sample {
            at: t0 + Duration::from_secs(10),
            by_component: BTreeMap::from([
                ("etcd".into(), Duration::from_secs(6)),
                ("berth-agent".into(), Duration::from_secs(2)),
            ]),
            machine: Some((1100, 3000)),
        };
        let u = usage(&a, &b);
        assert_eq!(u.wall, Duration::from_secs(10));
        assert!((u.cores["etcd"] - 0.5).abs() < 1e-9);
        assert!((u.cores["berth-agent"] - 0.2).abs() < 1e-9, "new since a");
        assert_eq!(u.machine_busy, Some(0.5));
    }
}
