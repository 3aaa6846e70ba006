//! kdash in a tmux server of its own: it starts on its overview, whose
//! resource tabs open on every namespace's pods; timed until that table
//! shows every pod, used (to the last row and back, the Deployments tab and
//! back), then its memory and idle CPU read from /proc.
//!
//! kdash does not watch: it lists every kind its tabs show every
//! `--poll-rate` (5 s by default), so its idle CPU is those LISTs.

use std::path::Path;
use std::time::{Duration, Instant};

use super::screen::kdash_count;
use super::session::PeerRun;
use super::session::{Session, quote};

/// What the RSS row says was done before it was read.
const USED: &str = "after every pod showed: to the last row and back, \
                    the Deployments tab and back to every pod";

/// kdash with the kubeconfig given as kubectl's tools take it (kdash has
/// no flag for it) and its defaults otherwise: every namespace, polling
/// every 5 s.
fn command(kdash: &Path, kubeconfig: &Path) -> String {
    format!("env KUBECONFIG={} {}", quote(kubeconfig), quote(kdash))
}

/// Runs kdash against the cluster of `kubeconfig`, which holds `pods`
/// pods; its CPU is read over `idle`.
pub fn run(kdash: &Path, kubeconfig: &Path, dir: &Path, pods: usize, idle: Duration) -> PeerRun {
    let s = Session::start("kdash", dir, &[], &command(kdash, kubeconfig));
    let every_pod = |screen: &str| kdash_count(screen, "Pods") == Some(pods);
    s.wait("every pod", s.started, every_pod);
    let pods_view = s.started.elapsed();
    s.save_screen("pods-complete.txt");

    // Use: to the last row and back, then the Deployments tab (its key 7)
    // and back to Pods (1), each waited for on the screen.
    s.keys(&["End", "Home"], Duration::from_millis(500));
    s.keys(&["7"], Duration::ZERO);
    s.wait("the Deployments tab", Instant::now(), |screen| {
        kdash_count(screen, "Deployments").is_some_and(|n| n > 0)
    });
    s.keys(&["1"], Duration::ZERO);
    s.wait("every pod again", Instant::now(), every_pod);
    s.measured(pods_view, USED, idle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kdash_gets_the_kubeconfig_from_its_environment() {
        assert_eq!(
            command(Path::new("/c/kdash"), Path::new("/k/config")),
            "env KUBECONFIG='/k/config' '/c/kdash'"
        );
    }
}
