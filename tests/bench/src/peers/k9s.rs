//! k9s in a tmux server of its own: started on its all-namespaces pods
//! view, timed until that view shows every pod, used (scrolled, switched
//! to Deployments and back), then its memory and idle CPU read from /proc.

use std::path::Path;
use std::time::{Duration, Instant};

use super::screen::k9s_count;
use super::session::PeerRun;
use super::session::{Session, quote};

/// What the RSS row says was done before it was read.
const USED: &str = "after every pod showed: scrolled to the last row and back, \
                    switched to Deployments and back to every pod";

/// k9s's own directories, in the scratch home.
const HOME_VARS: &[(&str, &str)] = &[
    ("K9S_CONFIG_DIR", ".config/k9s"),
    ("K9S_LOGS_DIR", ".local/state/k9s"),
];

/// k9s on the all-namespaces pods view, read-only, without the splash
/// screen (a fixed one-second delay before the first view).
fn command(k9s: &Path, kubeconfig: &Path) -> String {
    format!(
        "{} --kubeconfig {} --all-namespaces --command pods --readonly --splashless",
        quote(k9s),
        quote(kubeconfig)
    )
}

/// Runs k9s against the cluster of `kubeconfig`, which holds `pods` pods;
/// its CPU is read over `idle`.
pub fn run(k9s: &Path, kubeconfig: &Path, dir: &Path, pods: usize, idle: Duration) -> PeerRun {
    let s = Session::start("k9s", dir, HOME_VARS, &command(k9s, kubeconfig));
    let every_pod = |screen: &str| k9s_count(screen, "pods") == Some(pods);
    s.wait("every pod", s.started, every_pod);
    let pods_view = s.started.elapsed();
    s.save_screen("pods-complete.txt");

    // Use: to the last row and back (k9s's G and g), then another view
    // and back (its command prompt), each waited for on the screen.
    s.keys(&["G", "g"], Duration::from_millis(500));
    prompt(&s, "deploy");
    s.wait("the Deployments view", Instant::now(), |screen| {
        k9s_count(screen, "deployments").is_some_and(|n| n > 0)
    });
    prompt(&s, "pods");
    s.wait("every pod again", Instant::now(), every_pod);
    s.measured(pods_view, USED, idle)
}

/// Types `:WHAT` and Enter at k9s's command prompt.
fn prompt(s: &Session, what: &str) {
    s.keys(&[":"], Duration::from_millis(200));
    s.tmux.send(&["-l", what]);
    s.tmux.send(&["Enter"]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k9s_runs_on_the_all_namespaces_pods_view_read_only() {
        assert_eq!(
            command(Path::new("/c/k9s"), Path::new("/k/config")),
            "'/c/k9s' --kubeconfig '/k/config' --all-namespaces --command pods --readonly --splashless"
        );
        assert!(HOME_VARS.iter().any(|(v, _)| *v == "K9S_CONFIG_DIR"));
    }
}
