//! An in-process CPU profile for measurements (the `profile` cargo
//! feature; never in a release image). `perf` cannot sample in the
//! containers berth is benchmarked in, so the agent samples itself
//! (`setitimer`, through `pprof`): with `BERTH_PROFILE_DIR` set, sampling
//! starts at launch, and each SIGUSR1 writes what was sampled so far as
//! folded stacks (`agent.folded`, the input of any flame-graph tool) and
//! the functions with the most samples (`agent.top.txt`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Starts sampling when `BERTH_PROFILE_DIR` is set; the task writing the
/// profile on SIGUSR1 runs until the process ends.
pub fn start() {
    let Some(dir) = std::env::var_os("BERTH_PROFILE_DIR").map(PathBuf::from) else {
        return;
    };
    let guard = match pprof::ProfilerGuardBuilder::default()
        .frequency(199)
        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
        .build()
    {
        Ok(g) => g,
        Err(e) => {
            tracing::warn!(error = %e, "profiling not started");
            return;
        }
    };
    tracing::info!(dir = %dir.display(), "profiling; SIGUSR1 writes the profile");
    tokio::spawn(async move {
        let Ok(mut usr1) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())
        else {
            return;
        };
        while usr1.recv().await.is_some() {
            match guard.report().build() {
                Ok(report) => write(&dir, &report),
                Err(e) => tracing::warn!(error = %e, "building the profile"),
            }
        }
    });
}

fn write(dir: &std::path::Path, report: &pprof::Report) {
    let mut folded = String::new();
    // Function → (self samples, samples with it anywhere on the stack).
    let mut by_function: HashMap<String, (isize, isize)> = HashMap::new();
    let mut total = 0isize;
    for (frames, count) in &report.data {
        total += count;
        // Leaf first in `frames.frames`; a function counts once per stack.
        let names: Vec<String> = frames
            .frames
            .iter()
            .flat_map(|f| f.iter().map(|s| s.name()))
            .skip_while(|n| is_profiler(n))
            .collect();
        let mut seen = std::collections::HashSet::new();
        for (i, name) in names.iter().enumerate() {
            let entry = by_function.entry(name.clone()).or_default();
            if i == 0 {
                entry.0 += count;
            }
            if seen.insert(name.clone()) {
                entry.1 += count;
            }
        }
        let stack: Vec<&str> = names.iter().rev().map(String::as_str).collect();
        let _ = writeln!(folded, "{};{} {count}", frames.thread_name, stack.join(";"));
    }
    let mut top: Vec<(String, (isize, isize))> = by_function.into_iter().collect();
    let pct = |n: isize| 100.0 * n as f64 / total.max(1) as f64;
    let mut text = format!("{total} samples at 199 Hz\n\nby self share:\n  self%  function\n");
    top.sort_by_key(|t| std::cmp::Reverse(t.1.0));
    for (name, (own, _)) in top.iter().take(25) {
        let _ = writeln!(text, "{:7.1}  {name}", pct(*own));
    }
    // Inclusive, without the runtime's and the standard library's frames
    // that sit under everything.
    text.push_str("\nby inclusive share (runtime plumbing left out):\ninclusive%  function\n");
    top.sort_by_key(|t| std::cmp::Reverse(t.1.1));
    for (name, (_, all)) in top.iter().filter(|t| !is_plumbing(&t.0)).take(40) {
        let _ = writeln!(text, "{:9.1}  {name}", pct(*all));
    }
    for (file, body) in [("agent.folded", folded), ("agent.top.txt", text)] {
        if let Err(e) = std::fs::write(dir.join(file), body) {
            tracing::warn!(error = %e, file, "writing the profile");
        }
    }
    tracing::info!(dir = %dir.display(), samples = total, "profile written");
}

/// The profiler's own frames at the leaf of every sample.
fn is_profiler(name: &str) -> bool {
    ["backtrace::", "<pprof::", "pprof::", "perf_signal_handler"]
        .iter()
        .any(|p| name.starts_with(p))
        || name.contains("pprof::profiler")
}

/// Frames that sit under every sample (the async runtime, unwinding).
fn is_plumbing(name: &str) -> bool {
    [
        "tokio::runtime::",
        "std::",
        "core::",
        "<core::",
        "__rust",
        "<std::",
        "start_thread",
        "clone",
        "<tokio::runtime::",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}
