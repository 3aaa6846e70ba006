//! The machine's processes as `/proc` shows them: the one scan that the
//! benchmark (its processes, by command line) and the real node's
//! teardown (the node's processes, by state directory and cgroup) share.

use std::path::PathBuf;

/// One process found in `/proc`. Any read may fail: the process may have
/// ended since the scan.
#[derive(Clone, Debug)]
pub struct Process {
    pub pid: u32,
    dir: PathBuf,
}

/// Every process now running.
pub fn processes() -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse().ok()?;
            Some(Process { pid, dir: e.path() })
        })
        .collect()
}

/// The process `pid` (whether or not it still runs).
pub fn process(pid: u32) -> Process {
    Process {
        pid,
        dir: PathBuf::from(format!("/proc/{pid}")),
    }
}

/// Every process's pid and arguments; processes that end while being
/// read are left out.
pub fn command_lines() -> Vec<(u32, Vec<String>)> {
    processes()
        .into_iter()
        .filter_map(|p| Some((p.pid, p.cmdline()?)))
        .collect()
}

impl Process {
    /// `/proc/PID/cmdline` split at its NULs.
    pub fn cmdline(&self) -> Option<Vec<String>> {
        let raw = std::fs::read(self.dir.join("cmdline")).ok()?;
        Some(split_cmdline(&raw))
    }

    /// `/proc/PID/stat`'s fields from the third (the state) on.
    pub fn stat(&self) -> Option<Vec<String>> {
        let text = std::fs::read_to_string(self.dir.join("stat")).ok()?;
        Some(stat_fields(&text)?.map(str::to_string).collect())
    }

    /// Dead already; only its parent's reaping is left.
    pub fn zombie(&self) -> bool {
        self.stat()
            .is_some_and(|f| f.first().is_some_and(|s| s == "Z"))
    }

    /// The cgroup paths of `/proc/PID/cgroup` (one per hierarchy).
    pub fn cgroups(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("cgroup"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.splitn(3, ':').nth(2))
            .map(str::to_string)
            .collect()
    }

    /// `/proc/PID/status`.
    pub fn status(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.join("status")).ok()
    }
}

fn split_cmdline(raw: &[u8]) -> Vec<String> {
    raw.split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// The fields of a `/proc/PID/stat` line from the third on: the command
/// name in field 2 may hold spaces and parentheses, so count after the
/// last `)`. Field N is then at index N - 3.
pub fn stat_fields(stat: &str) -> Option<impl Iterator<Item = &str>> {
    Some(stat[stat.rfind(')')? + 1..].split_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_splits_at_nuls() {
        assert_eq!(
            split_cmdline(b"/bin/etcd\0--data-dir=/x\0\0"),
            vec!["/bin/etcd", "--data-dir=/x"]
        );
        assert!(split_cmdline(b"").is_empty());
    }

    #[test]
    fn stat_fields_start_after_the_command_name() {
        let stat = "42 (a (b) c) S 1 2";
        assert_eq!(
            stat_fields(stat).map(|f| f.collect::<Vec<_>>()),
            Some(vec!["S", "1", "2"])
        );
        assert!(stat_fields("garbage").is_none());
    }

    #[test]
    fn finds_this_process() {
        let me = std::process::id();
        let own = processes().into_iter().find(|p| p.pid == me).expect("self");
        assert!(!own.cmdline().expect("cmdline").is_empty());
        assert!(!own.zombie());
        assert!(process(me).status().is_some_and(|s| s.contains("VmRSS")));
    }
}
