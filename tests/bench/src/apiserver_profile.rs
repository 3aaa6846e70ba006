//! The apiserver's own CPU profile over each half's Ready phase
//! (`--profile-apiserver`): where a longer phase spent the apiserver's
//! extra CPU. The request and watch-event counts (`requests.rs`) say what
//! the apiserver was asked; only its profile says what that cost, so that
//! berth's share (its Runtime status applies, its watches) can be told
//! from the same work done at a higher cost per request.
//!
//! The apiserver serves `/debug/pprof` only when started with
//! `--profiling` (`berth-localcluster up --profiling`). A profile cannot
//! outlast the apiserver's timeout for ordinary requests (60 s), so the
//! window is recorded as consecutive profiles of [`WINDOW_SECONDS`]; the
//! one in flight when the phase ends is dropped. `go tool pprof` (Go is on
//! any machine that built the control plane) merges each half's profiles
//! and reads them; without it the profiles are kept and nothing is printed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::AsyncReadExt;
use kube::Client;

use super::table::{Figure, Unit};

/// Length of each recorded profile.
pub const WINDOW_SECONDS: u64 = 30;

/// Where the apiserver's CPU goes, by the functions whose inclusive time
/// ("cum" in `go tool pprof -top -cum`) stands for each kind of work. A
/// write's storage work runs in a goroutine of its own (the request
/// finisher), so a handler's own frame holds little of it: the groups are
/// the storage calls of each kind (`StatusREST.Update` of Runtimes, Pods,
/// Deployments …), which hold the patch, admission, managed fields,
/// validation and the etcd round trip. A sample counts in every group
/// whose function is on its stack.
pub const GROUPS: [(&str, &str); 14] = [
    (
        "Runtime status writes",
        "k8s.io/apiextensions-apiserver/pkg/registry/customresource.(*StatusREST).Update",
    ),
    (
        "Pod status writes",
        "k8s.io/kubernetes/pkg/registry/core/pod/storage.(*StatusREST).Update",
    ),
    (
        "Deployment status writes",
        "k8s.io/kubernetes/pkg/registry/apps/deployment/storage.(*StatusREST).Update",
    ),
    (
        "ReplicaSet status writes",
        "k8s.io/kubernetes/pkg/registry/apps/replicaset/storage.(*StatusREST).Update",
    ),
    (
        "PDB status writes",
        "k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget/storage.(*StatusREST).Update",
    ),
    (
        "creates (every kind)",
        "k8s.io/apiserver/pkg/registry/generic/registry.(*Store).Create",
    ),
    (
        "server-side apply merges",
        "k8s.io/apiserver/pkg/endpoints/handlers.(*applyPatcher).applyPatchToCurrentObject",
    ),
    (
        "managed fields of other writes",
        "k8s.io/apimachinery/pkg/util/managedfields/internal.(*FieldManager).Update",
    ),
    (
        "watches served (each watcher's events encoded and sent)",
        "k8s.io/apiserver/pkg/endpoints/handlers.handleWatch",
    ),
    (
        "watch cache, events to each watcher",
        "k8s.io/apiserver/pkg/storage/cacher.(*cacheWatcher).processInterval",
    ),
    (
        "lists",
        "k8s.io/apiserver/pkg/endpoints/handlers.handleList",
    ),
    (
        "memory allocation (GC assists included)",
        "runtime.mallocgc",
    ),
    ("garbage collection, background", "runtime.gcBgMarkWorker"),
    ("garbage collection, assists", "runtime.gcAssistAlloc"),
];

/// Profiles being recorded for one half.
pub struct Recording {
    half: &'static str,
    files: Arc<Mutex<Vec<PathBuf>>>,
    task: tokio::task::JoinHandle<()>,
}

/// Starts recording the apiserver's CPU profile, window after window, into
/// `dir` as `apiserver-HALF-N.pb.gz`.
pub fn start(client: &Client, dir: &Path, half: &'static str) -> Recording {
    let files = Arc::new(Mutex::new(Vec::new()));
    let (client, dir, kept) = (client.clone(), dir.to_path_buf(), files.clone());
    let task = tokio::spawn(async move {
        for n in 0.. {
            match profile(&client, WINDOW_SECONDS).await {
                Ok(bytes) => {
                    let path = dir.join(format!("apiserver-{half}-{n:03}.pb.gz"));
                    match std::fs::write(&path, bytes) {
                        Ok(()) => berth_shared::sync::lock(&kept).push(path),
                        Err(e) => eprintln!("bench: {}: {e}", path.display()),
                    }
                }
                Err(e) => {
                    // Another profile still running (the last window of
                    // the previous half), or no --profiling: try again.
                    eprintln!("bench: apiserver profile ({half}): {e}");
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            }
        }
    });
    Recording { half, files, task }
}

/// One CPU profile of `seconds`, as the apiserver sends it (gzipped protobuf).
async fn profile(client: &Client, seconds: u64) -> Result<Vec<u8>, ProfileError> {
    let request = http::Request::get(format!("/debug/pprof/profile?seconds={seconds}"))
        .body(Vec::new())
        .expect("profile request");
    let mut body = client.request_stream(request).await?;
    let mut bytes = Vec::new();
    body.read_to_end(&mut bytes).await?;
    // An error comes back as text; a profile is gzip.
    if bytes.starts_with(&[0x1f, 0x8b]) {
        Ok(bytes)
    } else {
        Err(ProfileError::NotAProfile(
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned(),
        ))
    }
}

#[derive(Debug, thiserror::Error)]
enum ProfileError {
    #[error("request: {0}")]
    Request(#[from] kube::Error),
    #[error("reading the profile: {0}")]
    Read(#[from] std::io::Error),
    #[error("not a profile: {0}")]
    NotAProfile(String),
}

/// What one half's profiles say: seconds of apiserver CPU in all, and in
/// each of [`GROUPS`].
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub half: &'static str,
    pub windows: usize,
    pub total: f64,
    pub groups: Vec<f64>,
}

impl Recording {
    /// Stops recording (the window in flight is dropped) and reads what was
    /// recorded with `go tool pprof`, leaving its top functions in
    /// `apiserver-HALF.top.txt`. `None` when nothing was recorded or Go is
    /// not on the PATH.
    pub async fn finish(self, dir: &Path) -> Option<Summary> {
        self.task.abort();
        let files = berth_shared::sync::lock(&self.files).clone();
        if files.is_empty() {
            eprintln!("bench: no apiserver profile recorded ({})", self.half);
            return None;
        }
        let half = self.half;
        let dir = dir.to_path_buf();
        tokio::task::spawn_blocking(move || summarize(half, &files, &dir))
            .await
            .ok()
            .flatten()
    }
}

fn summarize(half: &'static str, files: &[PathBuf], dir: &Path) -> Option<Summary> {
    let top = Command::new("go")
        .args([
            "tool",
            "pprof",
            "-top",
            "-cum",
            "-unit=s",
            "-nodefraction=0",
            "-nodecount=100000",
        ])
        .args(files)
        .output();
    let text = match top {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        Ok(out) => {
            eprintln!(
                "bench: go tool pprof: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return None;
        }
        Err(e) => {
            eprintln!("bench: go tool pprof not run ({e}); the profiles are kept");
            return None;
        }
    };
    let path = dir.join(format!("apiserver-{half}.top.txt"));
    let head: String = text.lines().take(120).map(|l| format!("{l}\n")).collect();
    if let Err(e) = std::fs::write(&path, head) {
        eprintln!("bench: {}: {e}", path.display());
    }
    let (total, cum) = parse_top(&text);
    Some(Summary {
        half,
        windows: files.len(),
        total,
        groups: GROUPS
            .iter()
            .map(|(_, f)| cum.iter().find(|(n, _)| n == f).map_or(0.0, |(_, s)| *s))
            .collect(),
    })
}

/// The total samples and every function's inclusive seconds from
/// `go tool pprof -top -cum -unit=s` output.
fn parse_top(text: &str) -> (f64, Vec<(String, f64)>) {
    let seconds = |s: &str| s.strip_suffix('s').and_then(|v| v.parse::<f64>().ok());
    let mut total = 0.0;
    let mut rows = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.split("Total samples = ").nth(1) {
            total = rest
                .split_whitespace()
                .next()
                .and_then(seconds)
                .unwrap_or(0.0);
            continue;
        }
        // flat flat% sum% cum cum% name
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() < 6 || !cols[1].ends_with('%') || !cols[4].ends_with('%') {
            continue;
        }
        if let Some(cum) = seconds(cols[3]) {
            rows.push((cols[5..].join(" "), cum));
        }
    }
    (total, rows)
}

/// The rows of the table: the agent's half against the floor's. The
/// windows cover each phase but its last partial window, so the halves'
/// seconds sampled differ with their lengths: each group is given as its
/// share of its half's samples (the CPU rows give the apiserver's CPU in
/// each phase, so a share times that is seconds).
pub fn figures(phase: &str, agent: &Summary, floor: Option<&Summary>) -> Vec<Figure> {
    let row = |name: String, unit: Unit, measured: f64, floor: Option<f64>| {
        Figure::compared(&name, unit, measured, floor)
    };
    let share = |s: &Summary, i: usize| {
        if s.total > 0.0 {
            s.groups[i] / s.total
        } else {
            0.0
        }
    };
    let mut out = vec![row(
        format!(
            "apiserver CPU profile, {phase}: seconds sampled ({} and {} windows of {WINDOW_SECONDS} s)",
            agent.windows,
            floor.map_or(0, |f| f.windows)
        ),
        Unit::Seconds,
        agent.total,
        floor.map(|f| f.total),
    )];
    for (i, (name, _)) in GROUPS.iter().enumerate() {
        out.push(row(
            format!("apiserver CPU profile, {phase}: share in {name}"),
            Unit::Cpu,
            share(agent, i),
            floor.map(|f| share(f, i)),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_is_read_by_function() {
        let text = "\
File: kube-apiserver
Type: cpu
Duration: 60.10s, Total samples = 81.25s (135.19%)
Showing nodes accounting for 81.25s, 100% of 81.25s total
      flat  flat%   sum%        cum   cum%
     0.10s  0.12%  0.12%     40.50s 49.85%  k8s.io/apiserver/pkg/server.(*APIServerHandler).ServeHTTP
     9.00s 11.08% 11.20%     12.00s 14.77%  runtime.gcBgMarkWorker
         0     0% 11.20%      1.25s  1.54%  k8s.io/x.(*T).f.func1 (inline)
";
        let (total, rows) = parse_top(text);
        assert_eq!(total, 81.25);
        assert_eq!(
            rows,
            vec![
                (
                    "k8s.io/apiserver/pkg/server.(*APIServerHandler).ServeHTTP".to_string(),
                    40.5
                ),
                ("runtime.gcBgMarkWorker".to_string(), 12.0),
                ("k8s.io/x.(*T).f.func1 (inline)".to_string(), 1.25),
            ]
        );
    }

    #[test]
    fn each_group_is_a_share_of_its_half() {
        let summary = |total: f64, first: f64| Summary {
            half: "x",
            windows: 2,
            total,
            groups: std::iter::once(first)
                .chain(std::iter::repeat(0.0))
                .take(GROUPS.len())
                .collect(),
        };
        let rows = figures("phase", &summary(80.0, 8.0), Some(&summary(40.0, 2.0)));
        assert_eq!(rows.len(), GROUPS.len() + 1);
        assert_eq!((rows[0].measured, rows[0].floor), (80.0, Some(40.0)));
        assert!(rows[1].name.ends_with(GROUPS[0].0));
        assert_eq!((rows[1].measured, rows[1].floor), (0.1, Some(0.05)));
    }
}
