//! `berth-bench --peers`: the peer consoles measured on the same cluster as
//! berth's console, one after the other (never beside it): the time until
//! the peer's all-namespaces pods view shows every pod, its resident memory
//! after use and its CPU while idle. Their rows go beside berth's Handlers
//! and Retained first frames.
//!
//! The peers: k9s (Go, watches) and kdash (Rust and ratatui, as berth;
//! polls with LISTs). They are built only by `tests/k8s/build.sh --peers`
//! (CI does not pay for it); a missing one fails the run at its start,
//! naming that command.

mod k9s;
mod kdash;
mod screen;
mod session;

pub use session::PeerRun;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client};

use super::table::{Figure, Target, Unit};
use super::{Options, progress};
use berth_localcluster::binaries::{Binaries, pinned_version};

/// The peer binaries, found before anything is built or measured.
#[derive(Clone, Debug)]
pub struct Peers {
    k9s: PathBuf,
    kdash: PathBuf,
}

/// The command that builds the peers.
pub const BUILD_COMMAND: &str = "tests/k8s/build.sh --peers";

impl Peers {
    /// Finds k9s and kdash as `build.sh` reports them (cached by `build.sh
    /// --peers`, or in `BERTH_K8S_BIN_DIR`). Panics naming the build
    /// command when one is missing: a run at scale takes an hour, and must
    /// not find out at its end.
    pub fn find(log_dir: &Path) -> Peers {
        std::fs::create_dir_all(log_dir).expect("the peers' log directory");
        let binaries = Binaries::resolve(log_dir)
            .unwrap_or_else(|e| panic!("--peers: the local cluster's binaries: {e}"));
        let find = |name: &str, version: &str| {
            let Some(path) = binaries.optional(name) else {
                panic!(
                    "--peers: {name} {} is not built; build it with `{BUILD_COMMAND}` (minutes, cached in ~/.cache/berth/k8s)",
                    pinned_version(version).unwrap_or("?")
                );
            };
            path.to_path_buf()
        };
        Peers {
            k9s: find("k9s", "K9S_VERSION"),
            kdash: find("kdash", "KDASH_VERSION"),
        }
    }
}

/// The floor of a peer's pods view: one raw LIST of every Pod, cluster-wide
/// (what an all-namespaces pods view needs, unprocessed), and the number of
/// pods it returned (what the view must show).
async fn pods_floor(client: &Client) -> (Duration, usize) {
    let started = Instant::now();
    let pods = Api::<Pod>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("LIST every Pod (the peers' floor)");
    (started.elapsed(), pods.items.len())
}

/// Measures every peer and places its rows after berth's first-frame rows
/// in `figures`.
pub async fn measure(
    started: Instant,
    opts: &Options,
    client: &Client,
    kubeconfig: &Path,
    work: &Path,
    peers: &Peers,
    figures: &mut Vec<Figure>,
) {
    type Run = fn(&Path, &Path, &Path, usize, Duration) -> PeerRun;
    let mut all = Vec::new();
    for (peer, bin, run) in [
        ("k9s", &peers.k9s, k9s::run as Run),
        ("kdash", &peers.kdash, kdash::run as Run),
    ] {
        // Each peer against a LIST taken just before it starts.
        let (floor, pods) = pods_floor(client).await;
        progress(
            started,
            &format!("peer {peer}: pods view of {pods} pods (LIST floor {floor:.2?})"),
        );
        let (bin, k, w, idle) = (
            bin.clone(),
            kubeconfig.to_path_buf(),
            work.join(format!("peer-{peer}")),
            Duration::from_secs(opts.console_idle_seconds),
        );
        let measured = tokio::task::spawn_blocking(move || run(&bin, &k, &w, pods, idle))
            .await
            .unwrap_or_else(|e| panic!("the {peer} measurement: {e}"));
        all.extend(rows(
            peer,
            &measured,
            pods,
            floor,
            opts.console_idle_seconds,
            figures,
        ));
    }
    place(figures, all);
}

/// The peer's rows, and berth's first frames and memory against it.
fn rows(
    peer: &str,
    run: &PeerRun,
    pods: usize,
    floor: Duration,
    idle_seconds: u64,
    berth: &[Figure],
) -> Vec<Figure> {
    let mut out = vec![Figure::time(
        &format!(
            "peer {peer}: pods view shows every pod ({pods}), from its start (floor: one raw LIST of every Pod)"
        ),
        run.pods_view,
        Some(floor),
        Target::None,
    )];
    // berth's Runtimes frame is timed from the console's start, as the
    // peer's view is; Handlers and Retained from their key press in a
    // console already showing Runtimes (connected, its API discovered).
    for (view, from) in [
        ("Runtimes", "from its start"),
        ("Handlers", "from its key"),
        ("Retained", "from its key"),
    ] {
        let name = format!("console: first complete {view} frame");
        if let Some(b) = berth.iter().find(|f| f.name.starts_with(&name)) {
            out.push(Figure::compared(
                &format!(
                    "berth {view} first frame ({from}) / {peer} pods view (floor column: {peer}'s pods view)"
                ),
                Unit::Seconds,
                b.measured,
                Some(run.pods_view.as_secs_f64()),
            ));
        }
    }
    out.push(Figure::of(
        &format!(
            "peer {peer}: RSS after use ({}; {})",
            run.used,
            run.rss.parts()
        ),
        Unit::Bytes,
        run.rss.total as f64,
        Target::None,
    ));
    if let Some(b) = berth
        .iter()
        .find(|f| f.name.starts_with("console: RSS with every view visited"))
    {
        out.push(Figure::compared(
            &format!("berth console RSS, every view visited / {peer} RSS after use"),
            Unit::Bytes,
            b.measured,
            Some(run.rss.total as f64),
        ));
    }
    out.push(Figure::of(
        &format!("peer {peer}: CPU while idle ({idle_seconds} s, share of a core)"),
        Unit::Cpu,
        run.idle_cpu,
        Target::None,
    ));
    out
}

/// Puts `rows` after berth's last first-frame row (or at the end, when the
/// console was not measured).
fn place(figures: &mut Vec<Figure>, rows: Vec<Figure>) {
    let at = figures
        .iter()
        .rposition(|f| f.name.starts_with("console: first complete"))
        .map_or(figures.len(), |i| i + 1);
    figures.splice(at..at, rows);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> PeerRun {
        PeerRun {
            pods_view: Duration::from_secs(2),
            rss: crate::process::Rss {
                total: 100_000_000,
                anon: 60_000_000,
                file: 40_000_000,
            },
            idle_cpu: 0.02,
            used: "scrolled",
        }
    }

    #[test]
    fn rows_go_after_the_first_frames_with_berth_against_the_peer() {
        let mut figures = vec![
            Figure::of("agent: x", Unit::Count, 0.0, Target::None),
            Figure::time(
                "console: first complete Runtimes frame",
                Duration::from_secs(4),
                Some(Duration::from_secs(1)),
                Target::RatioAtMost(1.2),
            ),
            Figure::time(
                "console: first complete Handlers frame",
                Duration::from_secs(3),
                Some(Duration::from_secs(1)),
                Target::RatioAtMost(1.2),
            ),
            Figure::time(
                "console: first complete Retained frame",
                Duration::from_secs(1),
                Some(Duration::from_secs(1)),
                Target::RatioAtMost(1.2),
            ),
            Figure::of(
                "console: RSS with every view visited (anon)",
                Unit::Bytes,
                50e6,
                Target::AtMost(150e6),
            ),
        ];
        let r = rows("k9s", &run(), 400, Duration::from_secs(1), 20, &figures);
        place(&mut figures, r);
        let names: Vec<&str> = figures.iter().map(|f| f.name.as_str()).collect();
        assert!(names[4].starts_with("peer k9s: pods view shows every pod (400)"));
        assert!(
            names[5].starts_with("berth Runtimes first frame (from its start) / k9s pods view")
        );
        assert!(names[6].starts_with("berth Handlers first frame (from its key) / k9s pods view"));
        assert!(names[7].starts_with("berth Retained first frame (from its key) / k9s pods view"));
        assert!(names[8].starts_with("peer k9s: RSS after use (scrolled; anon 60 MB"));
        assert!(names[9].starts_with("berth console RSS"));
        assert!(names[10].starts_with("peer k9s: CPU while idle (20 s"));
        assert!(names[11].starts_with("console: RSS with every view visited"));
        // The peer against its LIST floor; berth's Handlers frame took 1.5×
        // k9s's pods view; berth's console half k9s's memory.
        assert_eq!(figures[4].ratio(), Some(2.0));
        assert_eq!(figures[5].ratio(), Some(2.0));
        assert_eq!(figures[6].ratio(), Some(1.5));
        assert_eq!(figures[9].ratio(), Some(0.5));
        assert!(figures.iter().skip(4).take(7).all(|f| f.holds().is_none()));
    }

    #[test]
    fn without_berth_rows_the_peer_rows_stand_alone_at_the_end() {
        let mut figures = vec![Figure::of("agent: x", Unit::Count, 0.0, Target::None)];
        let r = rows("k9s", &run(), 4, Duration::from_secs(1), 3, &figures);
        place(&mut figures, r);
        let names: Vec<&str> = figures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(names[1].starts_with("peer k9s: pods view"));
    }
}
