//! What every peer's measurement shares: the peer in a tmux server of its
//! own with a scratch home, waits on its screen, and screens saved to
//! files.
//!
//! Whatever the cluster holds reaches only the peer's terminal (tmux) and
//! files in the run's directory, never this process's output: a screen
//! that did not complete is saved to a file, and the panic names the file.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::process;
use berth_test_support::tmux::Server;

/// What one peer measured.
#[derive(Clone, Debug)]
pub struct PeerRun {
    /// From the peer's start until its pods view shows every pod.
    pub pods_view: Duration,
    pub rss: process::Rss,
    /// Share of a core over the idle window.
    pub idle_cpu: f64,
    /// What was done before the RSS was read (for the row's name).
    pub used: &'static str,
}

/// How long a view may take before the run gives up (as long as berth's
/// first frames may take).
const TIMEOUT: Duration = Duration::from_secs(600);
/// How often the screen is read while timing (as for berth's frames).
const POLL: Duration = Duration::from_millis(10);

/// A peer running in its own tmux server, ended (with the peer in it)
/// however the measurement ends.
pub struct Session {
    /// The peer's name, for errors.
    peer: &'static str,
    dir: PathBuf,
    pub tmux: Server,
    pub pid: u32,
    /// When the peer was started.
    pub started: Instant,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.tmux.kill();
    }
}

impl Session {
    /// Starts `command` (arguments already quoted for sh) in a fresh `dir`
    /// with a scratch home: the peer writes its config, state, cache and
    /// logs there, never into the user's (`home_vars`: the peer's own
    /// variables, each set to a directory below that home); its stderr
    /// goes to `PEER.stderr`. The terminal is as large as berth's
    /// console's in the bench.
    pub fn start(
        peer: &'static str,
        dir: &Path,
        home_vars: &[(&str, &str)],
        command: &str,
    ) -> Session {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).expect("the peer run's directory");
        let script_path = dir.join(format!("{peer}.sh"));
        let text = script(peer, dir, home_vars, command);
        std::fs::write(&script_path, text).expect("the peer's script");
        let tmux = Server::at(&dir.join("tmux.sock"));
        let started = Instant::now();
        tmux.new_session(160, 50, &format!("sh '{}'", script_path.display()));
        let pid = tmux.pane_pid().expect("the peer's pid");
        Session {
            peer,
            dir: dir.to_path_buf(),
            tmux,
            pid,
            started,
        }
    }

    /// Waits, reading the screen every [`POLL`], until `done`; fails the
    /// run (saving the screen to a file, not printing it) when the peer
    /// exits or [`TIMEOUT`] passes since `since`.
    pub fn wait(&self, what: &str, since: Instant, done: impl Fn(&str) -> bool) {
        loop {
            let screen = self.tmux.pane();
            if done(&screen) {
                return;
            }
            let gone = process::cpu_time(self.pid).is_none();
            if gone || since.elapsed() > TIMEOUT {
                let file = self.save("pane-at-failure.txt", &screen);
                panic!(
                    "{} {} before showing {what} (after {:.0?}); its last screen is in {}, its stderr in {}",
                    self.peer,
                    if gone { "exited" } else { "timed out" },
                    since.elapsed(),
                    file.display(),
                    self.dir.join(format!("{}.stderr", self.peer)).display()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Keys sent one after the other, with a pause after each for the peer
    /// to draw.
    pub fn keys(&self, keys: &[&str], pause: Duration) {
        for key in keys {
            self.tmux.send(&[key]);
            std::thread::sleep(pause);
        }
    }

    /// The screen now, saved as `name` in the run's directory.
    pub fn save_screen(&self, name: &str) {
        self.save(name, &self.tmux.pane());
    }

    fn save(&self, name: &str, screen: &str) -> PathBuf {
        let file = self.dir.join(name);
        let _ = std::fs::write(&file, screen);
        file
    }

    /// What the peer measured: `pods_view` as timed, its RSS now (after
    /// the use `used` names), then its CPU share of a core over `idle`
    /// (its screen saved after).
    pub fn measured(&self, pods_view: Duration, used: &'static str, idle: Duration) -> PeerRun {
        let rss = process::rss(self.pid).expect("the peer's RSS");
        let cpu0 = process::cpu_time(self.pid).expect("the peer's CPU time");
        std::thread::sleep(idle);
        let cpu1 = process::cpu_time(self.pid).expect("the peer's CPU time");
        self.save_screen("after-idle.txt");
        PeerRun {
            pods_view,
            rss,
            idle_cpu: (cpu1 - cpu0).as_secs_f64() / idle.as_secs_f64().max(0.001),
            used,
        }
    }
}

/// The pane's shell script: the scratch home's variables, then `command`
/// with its stderr to a file.
fn script(peer: &str, dir: &Path, home_vars: &[(&str, &str)], command: &str) -> String {
    let home = dir.join("home");
    let mut out = String::from("#!/bin/sh\nexport TERM=xterm-256color\n");
    let xdg = [
        ("HOME", ""),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_DATA_HOME", ".local/share"),
    ];
    for &(var, sub) in xdg.iter().chain(home_vars) {
        let path = home.join(sub);
        std::fs::create_dir_all(&path).expect("the peer's scratch home");
        out.push_str(&format!("export {var}={}\n", quote(&path)));
    }
    let stderr = quote(&dir.join(format!("{peer}.stderr")));
    out.push_str(&format!("exec {command} 2>{stderr}\n"));
    out
}

/// A path quoted for sh.
pub fn quote(path: &Path) -> String {
    format!("'{}'", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_gives_the_peer_a_scratch_home_and_keeps_its_stderr() {
        let dir = std::env::temp_dir().join(format!("berth-peer-script-{}", std::process::id()));
        let text = script("p", &dir, &[("P_DIR", ".config/p")], "'/c/p' --flag");
        for var in [
            "HOME",
            "XDG_CONFIG_HOME",
            "XDG_STATE_HOME",
            "XDG_CACHE_HOME",
            "XDG_DATA_HOME",
            "P_DIR",
        ] {
            assert!(
                text.contains(&format!("export {var}='{}", dir.join("home").display())),
                "{var}: {text}"
            );
        }
        assert!(
            text.ends_with(&format!(
                "exec '/c/p' --flag 2>'{}'\n",
                dir.join("p.stderr").display()
            )),
            "{text}"
        );
        assert!(dir.join("home/.config/p").is_dir());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
