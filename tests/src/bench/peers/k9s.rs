//! k9s in a tmux server of its own: started on its all-namespaces pods
//! view, timed until that view shows every pod, used (scrolled, switched
//! to Deployments and back), then its memory and idle CPU read from /proc.
//!
//! Whatever the cluster holds reaches only k9s's terminal (tmux) and files
//! in the run's directory, never this process's output: a screen that did
//! not complete is saved to a file, and the panic names the file.

use std::path::Path;
use std::time::{Duration, Instant};

use super::screen::k9s_count;
use super::{PeerRun, process};
use crate::tmux::Server;

/// How long the pods view may take before the run gives up (as long as
/// berth's first frames may take).
const TIMEOUT: Duration = Duration::from_secs(600);
/// How often the screen is read while timing (as for berth's frames).
const POLL: Duration = Duration::from_millis(10);

/// What the RSS row says was done before it was read.
const USED: &str = "after every pod showed: scrolled to the last row and back, \
                    switched to Deployments and back to every pod";

/// The tmux server, ended (with k9s in it) however the measurement ends.
struct Session(Server);

impl Drop for Session {
    fn drop(&mut self) {
        self.0.kill();
    }
}

/// The pane's shell script: k9s with a scratch home (k9s writes its
/// config, state, cache and logs there, never into the user's), on the
/// all-namespaces pods view, read-only, without the splash screen (a fixed
/// one-second delay before the first view).
fn script(k9s: &Path, kubeconfig: &Path, dir: &Path) -> String {
    let home = dir.join("home");
    let q = |p: &Path| format!("'{}'", p.display());
    let mut out = String::from("#!/bin/sh\nexport TERM=xterm-256color\n");
    for (var, sub) in [
        ("HOME", ""),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_DATA_HOME", ".local/share"),
        ("K9S_CONFIG_DIR", ".config/k9s"),
        ("K9S_LOGS_DIR", ".local/state/k9s"),
    ] {
        let path = home.join(sub);
        std::fs::create_dir_all(&path).expect("k9s's scratch home");
        out.push_str(&format!("export {var}={}\n", q(&path)));
    }
    out.push_str(&format!(
        "exec {} --kubeconfig {} --all-namespaces --command pods --readonly --splashless 2>{}\n",
        q(k9s),
        q(kubeconfig),
        q(&dir.join("k9s.stderr"))
    ));
    out
}

/// Runs k9s against the cluster of `kubeconfig`, which holds `pods` pods;
/// its CPU is read over `idle`.
pub fn run(k9s: &Path, kubeconfig: &Path, dir: &Path, pods: usize, idle: Duration) -> PeerRun {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("the k9s run's directory");
    let script_path = dir.join("k9s.sh");
    std::fs::write(&script_path, script(k9s, kubeconfig, dir)).expect("k9s's script");
    let tmux = Session(Server::at(&dir.join("tmux.sock")));
    // The same terminal size as berth's console in the bench.
    let started = Instant::now();
    tmux.0
        .new_session(160, 50, &format!("sh '{}'", script_path.display()));
    let pid = tmux.0.pane_pid().expect("k9s's pid");
    let every_pod = |s: &str| k9s_count(s, "pods") == Some(pods);
    wait(&tmux.0, pid, dir, "every pod", started, every_pod);
    let pods_view = started.elapsed();
    save(dir, "pods-complete.txt", &tmux.0.pane());

    // Use: to the last row and back (k9s's G and g), then another view
    // and back (its command prompt), each waited for on the screen.
    for key in ["G", "g"] {
        tmux.0.send(&[key]);
        std::thread::sleep(Duration::from_millis(500));
    }
    command(&tmux.0, "deploy");
    let t = Instant::now();
    wait(&tmux.0, pid, dir, "the Deployments view", t, |s| {
        k9s_count(s, "deployments").is_some_and(|n| n > 0)
    });
    command(&tmux.0, "pods");
    let t = Instant::now();
    wait(&tmux.0, pid, dir, "every pod again", t, every_pod);
    let rss = process::rss(pid).expect("k9s's RSS");

    let cpu0 = process::cpu_time(pid).expect("k9s's CPU time");
    std::thread::sleep(idle);
    let cpu1 = process::cpu_time(pid).expect("k9s's CPU time");
    save(dir, "after-idle.txt", &tmux.0.pane());
    PeerRun {
        pods_view,
        rss,
        idle_cpu: (cpu1 - cpu0).as_secs_f64() / idle.as_secs_f64().max(0.001),
        used: USED,
    }
}

/// Types `:WHAT` and Enter at k9s's command prompt.
fn command(tmux: &Server, what: &str) {
    tmux.send(&[":"]);
    std::thread::sleep(Duration::from_millis(200));
    tmux.send(&["-l", what]);
    tmux.send(&["Enter"]);
}

/// Waits, reading the screen every [`POLL`], until `done`; fails the run
/// (saving the screen to a file, not printing it) when k9s exits or
/// [`TIMEOUT`] passes since `since`.
fn wait(
    tmux: &Server,
    pid: u32,
    dir: &Path,
    what: &str,
    since: Instant,
    done: impl Fn(&str) -> bool,
) {
    loop {
        let screen = tmux.pane();
        if done(&screen) {
            return;
        }
        let gone = process::cpu_time(pid).is_none();
        if gone || since.elapsed() > TIMEOUT {
            let file = save(dir, "pane-at-failure.txt", &screen);
            panic!(
                "k9s {} before showing {what} (after {:.0?}); its last screen is in {}, its stderr in {}",
                if gone { "exited" } else { "timed out" },
                since.elapsed(),
                file.display(),
                dir.join("k9s.stderr").display()
            );
        }
        std::thread::sleep(POLL);
    }
}

fn save(dir: &Path, name: &str, screen: &str) -> std::path::PathBuf {
    let file = dir.join(name);
    let _ = std::fs::write(&file, screen);
    file
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k9s_runs_with_a_scratch_home_on_the_pods_view() {
        let dir = std::env::temp_dir().join(format!("berth-k9s-script-{}", std::process::id()));
        let text = script(Path::new("/c/k9s"), Path::new("/k/config"), &dir);
        for var in [
            "HOME",
            "XDG_CONFIG_HOME",
            "XDG_STATE_HOME",
            "XDG_CACHE_HOME",
        ] {
            assert!(
                text.contains(&format!("export {var}='{}", dir.join("home").display())),
                "{var}: {text}"
            );
        }
        assert!(text.contains(
            "exec '/c/k9s' --kubeconfig '/k/config' --all-namespaces --command pods --readonly --splashless"
        ));
        assert!(dir.join("home/.config/k9s").is_dir());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
