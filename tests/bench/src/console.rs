//! Console figures: the real `berth` binary in tmux (first complete frame
//! of each view, memory, CPU idle and under churn), `berth get` against
//! the LIST floor, and key press → frame on the model with a TestBackend.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use berth_console::get::What;
use berth_console::model::{App, ListView, Scope, Screen};
use berth_console::store::Kind;
use berth_console::store::visit::{KindFn, Watched};
use berth_console::watch::{self, Connection};
use futures::FutureExt;
use futures::future::{BoxFuture, join_all};
use kube::Client;
use kube::api::ListParams;

use berth_localcluster::health::client_from_kubeconfig;
use berth_test_support::tmux::Server;

/// A raw LIST of one kind, cluster-wide (what a view needs, unprocessed).
async fn raw_list(client: &Client, kind: Kind) -> usize {
    /// The LIST of a kind's type ([`Kind::visit`]).
    struct Count(Client);
    impl KindFn for Count {
        type Out = BoxFuture<'static, usize>;
        fn call<K: Watched>(self) -> Self::Out {
            async move {
                K::api(self.0, None)
                    .list(&ListParams::default())
                    .await
                    .map(|l| l.items.len())
                    .unwrap_or(0)
            }
            .boxed()
        }
    }
    match kind {
        // Only the agent's one object: no floor to measure.
        Kind::Lease | Kind::PendingGrantsFile => 0,
        kind => kind.visit(Count(client.clone())).await,
    }
}

/// The floor of a view's first frame: its kinds listed in parallel.
pub async fn list_floor(client: &Client, view: ListView) -> Duration {
    kinds_floor(client, Screen::List(view).kinds()).await
}

/// The floor of `berth get what`: the kinds it reads listed in parallel
/// (for rollouts that includes Events, which no list view reads).
pub async fn get_floor(client: &Client, what: What) -> Duration {
    kinds_floor(client, what.kinds()).await
}

async fn kinds_floor(client: &Client, kinds: Vec<Kind>) -> Duration {
    let started = Instant::now();
    join_all(kinds.into_iter().map(|k| raw_list(client, k))).await;
    started.elapsed()
}

/// The floor of work a new process does (`berth get`, the console's first
/// Runtimes frame): a client made from the kubeconfig as that process
/// makes one (the file read and parsed, then a TLS connection for each
/// request in flight), and the same parallel LIST on it. Only the process
/// start and the drawing are left out. A LIST on the bench's connected
/// client (the floor until 2026-12-04) left the connection out as well.
pub async fn connecting_floor(kubeconfig: &Path, kinds: Vec<Kind>) -> Duration {
    let started = Instant::now();
    let client = client_from_kubeconfig(kubeconfig)
        .await
        .expect("a client from the kubeconfig");
    kinds_floor(&client, kinds).await;
    started.elapsed()
}

/// The `berth` console running in its own tmux server.
pub struct Console {
    tmux: Server,
    pub pid: u32,
}

impl Console {
    /// Starts `berth -A` on a 160x50 terminal; returns once the process runs.
    pub fn start(berth: &Path, kubeconfig: &Path, dir: &Path) -> Console {
        Console::start_with(berth, kubeconfig, dir, "")
    }

    /// [`Console::start`] with more arguments (`--context a,b,c`).
    pub fn start_with(berth: &Path, kubeconfig: &Path, dir: &Path, args: &str) -> Console {
        let socket = dir.join("tmux.sock");
        let _ = std::fs::remove_file(&socket);
        let tmux = Server::at(&socket);
        let cmd = format!(
            "KUBECONFIG={} exec {} -A {args}",
            kubeconfig.display(),
            berth.display()
        );
        tmux.new_session(160, 50, &cmd);
        let pid = tmux.pane_pid().expect("the console's pid");
        Console { tmux, pid }
    }

    pub fn pane(&self) -> String {
        self.tmux.pane()
    }

    pub fn send(&self, key: &str) {
        self.tmux.send(&[key]);
    }

    /// Waits until `view` is drawn complete (its title carries the row
    /// count, which the console shows only once every kind the view needs
    /// has listed, and no watch is syncing); the time since `since`,
    /// polled every 10 ms.
    pub fn until_complete(&self, view: ListView, since: Instant, timeout: Duration) -> Duration {
        let title = view.title();
        self.tmux.wait_for(
            &format!("{title} complete"),
            timeout.saturating_sub(since.elapsed()),
            Duration::from_millis(10),
            |pane| pane_complete(pane, title),
        );
        since.elapsed()
    }
}

/// The tabs in order with their keys.
pub const TABS: [(&str, ListView); 4] = [
    ("1", ListView::Runtimes),
    ("2", ListView::Grants),
    ("3", ListView::Handlers),
    ("4", ListView::Retained),
];

/// How long a first complete frame may take before the bench gives up.
const FRAME_TIMEOUT: Duration = Duration::from_secs(600);

/// One sample of a tab's first complete frame, in a console of its own:
/// Runtimes from the console's start, every other tab from its key press
/// once Runtimes is complete. (One console visiting the tabs in turn would
/// find Retained's kinds already listed for Handlers and time a key press,
/// not a first frame.)
pub fn first_frame(
    berth: &Path,
    kubeconfig: &Path,
    dir: &Path,
    key: &str,
    view: ListView,
) -> Duration {
    let tui = Console::start(berth, kubeconfig, dir);
    let t = Instant::now();
    let runtimes = tui.until_complete(ListView::Runtimes, t, FRAME_TIMEOUT);
    if view == ListView::Runtimes {
        return runtimes;
    }
    let t = Instant::now();
    tui.send(key);
    tui.until_complete(view, t, FRAME_TIMEOUT)
}

/// A console that has shown every tab complete (for its memory and CPU).
pub fn visit_all(berth: &Path, kubeconfig: &Path, dir: &Path) -> Console {
    visit_all_with(berth, kubeconfig, dir, "")
}

/// [`visit_all`] with more arguments (`--context a,b,c`).
pub fn visit_all_with(berth: &Path, kubeconfig: &Path, dir: &Path, args: &str) -> Console {
    let tui = Console::start_with(berth, kubeconfig, dir, args);
    for (key, view) in TABS {
        let t = Instant::now();
        tui.send(key);
        tui.until_complete(view, t, FRAME_TIMEOUT);
    }
    tui
}

/// A new console's first complete Runtimes frame, from its start.
pub fn first_runtimes_frame(berth: &Path, kubeconfig: &Path, dir: &Path, args: &str) -> Duration {
    let tui = Console::start_with(berth, kubeconfig, dir, args);
    let t = Instant::now();
    tui.until_complete(ListView::Runtimes, t, FRAME_TIMEOUT)
}

impl Console {
    /// Key press → the view's complete frame on the terminal, `n` times
    /// (Grants and Runtimes in turn), the median; polled every 5 ms, so
    /// it includes the terminal's own latency, alike for every console.
    /// Waits until the fleet header says a cluster is unreachable.
    pub fn until_unreachable(&self) {
        self.tmux.wait_for(
            "a cluster unreachable",
            FRAME_TIMEOUT,
            Duration::from_millis(100),
            |pane| pane.contains("unreachable ("),
        );
    }

    pub fn key_to_frame(&self, n: usize) -> Duration {
        let mut took = Vec::with_capacity(n);
        for i in 0..n {
            let (key, view) = if i % 2 == 0 {
                ("2", ListView::Grants)
            } else {
                ("1", ListView::Runtimes)
            };
            let t = Instant::now();
            self.send(key);
            self.tmux.wait_for(
                &format!("{} after its key", view.title()),
                FRAME_TIMEOUT,
                Duration::from_millis(5),
                |pane| pane.contains(&format!("┌ {} [", view.title())),
            );
            took.push(t.elapsed());
        }
        median(took)
    }
}

fn pane_complete(pane: &str, title: &str) -> bool {
    let heading = format!("┌ {title} [");
    let counted = pane.lines().any(|l| {
        l.split_once(heading.as_str())
            .and_then(|(_, rest)| rest.split_once("] "))
            .is_some_and(|(_, count)| count.starts_with(|c: char| c.is_ascii_digit()))
    });
    counted && !pane.contains("syncing") && !pane.contains("loading…")
}

impl Drop for Console {
    fn drop(&mut self) {
        self.tmux.kill();
    }
}

/// `berth get WHAT -A -o json`: its wall time.
pub fn berth_get(berth: &Path, kubeconfig: &Path, what: &str) -> Duration {
    let started = Instant::now();
    let out = Command::new(berth)
        .args(["get", what, "-A", "-o", "json"])
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("run berth get");
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "berth get {what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

pub use berth_console::testkit::median;

/// The console's model with every list view's kinds loaded from the
/// cluster, as the bench times it.
pub async fn model_app(conn: &Connection) -> App {
    fleet_model_app(std::slice::from_ref(conn)).await
}

/// [`model_app`] over several clusters, one per connection (a fleet).
pub async fn fleet_model_app(conns: &[Connection]) -> App {
    let ids = conns.iter().map(Connection::cluster).collect();
    let mut app = App::of_fleet(ids, Scope::All, k8s_openapi::jiff::Timestamp::now());
    let kinds: Vec<Kind> = [
        ListView::Runtimes,
        ListView::Grants,
        ListView::Handlers,
        ListView::Retained,
    ]
    .into_iter()
    .flat_map(|v| Screen::List(v).kinds())
    .collect();
    let lease = app.session.agent_lease.clone();
    for (i, conn) in conns.iter().enumerate() {
        let data = &mut app.clusters[i].data;
        data.store = watch::load(conn, &Scope::All, &lease, &kinds)
            .await
            .expect("load the console's store");
        data.synced.extend(
            kinds
                .iter()
                .map(|k| berth_console::model::WatchKey::all(*k)),
        );
    }
    app
}

/// The model's figures (`berth_console::testkit`): one loop for the bench
/// and the console's own benchmarks.
pub use berth_console::testkit::{ModelTimes, model_times};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_is_complete_only_without_loading_or_syncing() {
        let t = "Runtimes";
        assert!(pane_complete("┌ Runtimes [all] 3/3 ──┐\n connected", t));
        assert!(!pane_complete("┌ Runtimes [all] … ──┐\n connected", t));
        assert!(!pane_complete(
            "┌ Runtimes [all] 3/3 ─┐\n syncing nodes…",
            t
        ));
        assert!(!pane_complete("┌ Runtimes [all] 0/0 ─┐\n loading…", t));
        assert!(!pane_complete("┌ Grants [all] 2/2 ─┐", t));
    }
}
