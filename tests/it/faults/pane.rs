//! Fault (f): the real console (`berth`) in a tmux pane, connected through
//! its own proxy, watched while the apiserver restarts and while its
//! connection is cut: what the pane shows, and whether the console listed
//! again (from the audit log, by its User-Agent).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use berth_tests::audit;
use berth_tests::proxy::Proxy;

use crate::console::{berth_binary, tmux};

/// The console in tmux; the session ends when dropped.
pub struct Console {
    socket: String,
    /// Between the console and the apiserver (only the console uses it).
    pub proxy: Proxy,
}

/// What a pane showed while a fault lasted.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// The status bar said "reconnecting…".
    pub reconnecting: bool,
    /// Runtime rows were drawn dimmed, the heading said "last known data".
    pub dimmed: bool,
    /// The distinct "reconnecting… KIND: error" texts (the first few).
    pub errors: Vec<String>,
}

impl Console {
    /// Starts `berth` on the Runtimes of `namespace`, with the agent's
    /// Lease, in a pane tall enough for a few dozen rows.
    pub async fn start(
        kubeconfig: &Path,
        apiserver: std::net::SocketAddr,
        dir: &Path,
        namespace: &str,
        lease: &str,
    ) -> Console {
        let proxy = Proxy::start(apiserver).await.expect("console proxy");
        let proxied = proxy.kubeconfig(kubeconfig, "faults-console");
        let bin = tokio::task::spawn_blocking(berth_binary)
            .await
            .expect("build berth");
        let (bin, proxied) = (bin.display().to_string(), proxied.display().to_string());
        let agent_lease = format!("{namespace}/{lease}");
        let text = berth_tests::tmux::script(
            &[],
            &[
                &bin,
                "--kubeconfig",
                &proxied,
                "-n",
                namespace,
                "--agent-lease",
                &agent_lease,
            ],
            &dir.join("console.stderr"),
            "sleep 600\n",
        );
        let socket = format!("berth-faults-{}", std::process::id());
        berth_tests::tmux::Server::named(&socket).new_script_session(
            200,
            50,
            &dir.join("console.sh"),
            &text,
        );
        Console { socket, proxy }
    }

    /// Waits until the pane satisfies `pred`; the pane and how long it took.
    pub fn wait(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> (String, Duration) {
        berth_tests::tmux::Server::named(&self.socket).wait_for(
            &format!("the console: {what}"),
            timeout,
            Duration::from_millis(200),
            pred,
        )
    }

    /// Watches the pane on a thread until [`Observer::finish`].
    pub fn observe(&self) -> Observer {
        let stop = Arc::new(AtomicBool::new(false));
        let socket = self.socket.clone();
        let handle = std::thread::spawn({
            let stop = stop.clone();
            move || {
                let mut seen = Seen::default();
                while !stop.load(Ordering::Relaxed) {
                    let styled = berth_tests::tmux::Server::named(&socket).styled_pane();
                    let (r, d) = judge(&styled);
                    seen.reconnecting |= r;
                    seen.dimmed |= d;
                    if let Some(e) = reconnecting_text(&strip_escapes(&styled))
                        && seen.errors.len() < 4
                        && !seen.errors.contains(&e)
                    {
                        seen.errors.push(e);
                    }
                    // Often enough for a state of a fraction of a second,
                    // rarely enough not to load the machine (a tmux
                    // process per look) while the agents hold 4 s leases.
                    std::thread::sleep(Duration::from_millis(150));
                }
                seen
            }
        });
        Observer { stop, handle }
    }
}

/// A thread watching a pane.
pub struct Observer {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Seen>,
}

impl Observer {
    /// Stops watching; what was seen.
    pub fn finish(self) -> Seen {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        tmux(&self.socket, &["kill-server"]);
    }
}

/// From a styled capture: whether the status bar says "reconnecting…", and
/// whether the table says "last known data" with every world Runtime row
/// dimmed (SGR 2).
pub fn judge(styled: &str) -> (bool, bool) {
    // The status bar's, not the table heading's ("last known data, reconnecting…").
    let reconnecting = styled
        .lines()
        .any(|l| l.contains("reconnecting…") && !l.contains("last known data"));
    let rows: Vec<&str> = styled.lines().filter(|l| l.contains("rt-")).collect();
    let dimmed =
        styled.contains("last known data") && !rows.is_empty() && rows.iter().all(|l| sets_dim(l));
    (reconnecting, dimmed)
}

/// A styled capture without its CSI sequences.
fn strip_escapes(styled: &str) -> String {
    let mut out = String::with_capacity(styled.len());
    let mut chars = styled.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                // Parameters up to the final byte (@ to ~).
                for f in chars.by_ref() {
                    if ('@'..='~').contains(&f) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The status bar's "reconnecting… KIND: error" part, if shown.
fn reconnecting_text(pane: &str) -> Option<String> {
    let line = pane
        .lines()
        .find(|l| l.contains("reconnecting… ") && !l.contains("last known data"))?;
    let rest = &line[line.find("reconnecting… ")?..];
    let end = rest.find(" │").unwrap_or(rest.len());
    Some(rest[..end].trim().to_string())
}

/// Whether a line of a styled capture turns on dim/faint (SGR 2), skipping
/// the parameters of 38/48 colour specifications (`38;2;r;g;b`, `38;5;n`).
pub fn sets_dim(line: &str) -> bool {
    line.split("\u{1b}[").skip(1).any(|seq| {
        let Some((params, _)) = seq.split_once('m') else {
            return false;
        };
        let mut it = params.split(';');
        while let Some(p) = it.next() {
            match p {
                "38" | "48" | "58" => match it.next() {
                    Some("5") => {
                        it.next();
                    }
                    Some("2") => {
                        it.nth(2);
                    }
                    _ => {}
                },
                "2" => return true,
                _ => {}
            }
        }
        false
    })
}

/// Lists of Runtimes the console has sent so far (completed).
pub fn console_lists(audit_log: &Path) -> usize {
    audit::reads_by(audit_log, "berth-console/")
        .iter()
        .filter(|(verb, resource, stage)| {
            verb == "list" && resource == "runtimes" && stage == "ResponseComplete"
        })
        .count()
}

/// Watches of Runtimes the console has started so far.
pub fn console_watches(audit_log: &Path) -> usize {
    audit::reads_by(audit_log, "berth-console/")
        .iter()
        .filter(|(verb, resource, stage)| {
            verb == "watch" && resource == "runtimes" && stage == "ResponseStarted"
        })
        .count()
}

#[test]
fn dim_is_found_in_styled_lines() {
    assert!(sets_dim("\u{1b}[2mrt-001"));
    assert!(sets_dim("\u{1b}[33;2;7mrt-001"));
    assert!(!sets_dim("\u{1b}[38;2;30;30;30mrt-001"));
    assert!(!sets_dim("\u{1b}[48;5;2mrt-001\u{1b}[0m"));
    assert!(!sets_dim("rt-001"));
    let (r, d) = judge("x last known data\n\u{1b}[2m rt-001\n\u{1b}[2;7m rt-002\n");
    assert!(!r && d);
    let (r, _) = judge(
        "x last known data, reconnecting… ──\n rt-001\n ctx │ reconnecting… Runtime: refused │ ns\n",
    );
    assert!(r);
    assert_eq!(
        strip_escapes("a\u{1b}[2;33mb\u{1b}[0m c\u{1b}[38;2;1;2;3md"),
        "ab cd"
    );
    assert_eq!(
        reconnecting_text(
            "x last known data, reconnecting… ──\n ctx │ reconnecting… Runtime: refused │ ns\n"
        )
        .as_deref(),
        Some("reconnecting… Runtime: refused")
    );
    let (_, d) = judge("x last known data\n\u{1b}[2m rt-001\n rt-002\n");
    assert!(!d);
}
