//! A terminal for driving the real `berth` binary: a tmux server of its
//! own (named, or at a socket path) with one session called `berth`. The
//! console tests, the fault suite's console pane and the benchmark all
//! start and read it the same way.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The session every helper here addresses.
pub const SESSION: &str = "berth";

/// One tmux server.
#[derive(Clone, Debug)]
pub struct Server {
    flag: &'static str,
    address: OsString,
}

impl Server {
    /// A server found by name (`tmux -L NAME`).
    pub fn named(name: &str) -> Server {
        Server {
            flag: "-L",
            address: name.into(),
        }
    }

    /// A server at a socket path (`tmux -S PATH`).
    pub fn at(socket: &Path) -> Server {
        Server {
            flag: "-S",
            address: socket.into(),
        }
    }

    /// Runs one tmux command on this server; its standard output.
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg(self.flag)
            .arg(&self.address)
            .args(args)
            .output()
            .expect("run tmux (apt-get install -y tmux)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts the detached session on a `width`×`height` terminal running
    /// `command` (a shell command line).
    pub fn new_session(&self, width: u16, height: u16, command: &str) {
        let (w, h) = (width.to_string(), height.to_string());
        self.run(&[
            "new-session",
            "-d",
            "-s",
            SESSION,
            "-x",
            &w,
            "-y",
            &h,
            command,
        ]);
    }

    /// Starts the session running the shell script `text`, written to
    /// `path` first.
    pub fn new_script_session(&self, width: u16, height: u16, path: &Path, text: &str) {
        std::fs::write(path, text).expect("write the pane's script");
        self.new_session(width, height, &format!("sh '{}'", path.display()));
    }

    /// The pid of the process in the session's pane (asked until tmux
    /// reports it: the pane starts asynchronously). `None` after 5 s.
    pub fn pane_pid(&self) -> Option<u32> {
        (0..100).find_map(|_| {
            let p = self.run(&["display-message", "-p", "-t", SESSION, "#{pane_pid}"]);
            let pid = p.trim().parse().ok();
            if pid.is_none() {
                std::thread::sleep(Duration::from_millis(50));
            }
            pid
        })
    }

    /// The session's visible text.
    pub fn pane(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", SESSION])
    }

    /// The session's visible text with its styles (SGR sequences).
    pub fn styled_pane(&self) -> String {
        self.run(&["capture-pane", "-p", "-e", "-t", SESSION])
    }

    /// Sends `keys` to the session (tmux key names, or text after `-l`).
    pub fn send(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", SESSION];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Waits, looking every `poll`, until the pane satisfies `pred`; the
    /// pane and how long it took. Fails the test after `timeout`.
    pub fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        poll: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> (String, Duration) {
        let t = Instant::now();
        loop {
            let pane = self.pane();
            if pred(&pane) {
                return (pane, t.elapsed());
            }
            assert!(
                t.elapsed() < timeout,
                "timed out after {timeout:?} waiting for {what}; pane:\n{pane}"
            );
            std::thread::sleep(poll);
        }
    }

    /// Ends the server and whatever runs in it.
    pub fn kill(&self) {
        self.run(&["kill-server"]);
    }
}

/// A pane's shell script: runs `argv` (each argument single-quoted) on a
/// colour terminal with `env` exported and its standard error in
/// `stderr`, prints `BERTH-EXIT=` and its exit status, then runs `after`
/// (what keeps the pane open to be read).
pub fn script(env: &[(&str, &str)], argv: &[&str], stderr: &Path, after: &str) -> String {
    let exports: String = env
        .iter()
        .map(|(k, v)| format!("export {k}='{v}'\n"))
        .collect();
    let command: Vec<String> = argv.iter().map(|a| format!("'{a}'")).collect();
    format!(
        "#!/bin/sh\nexport TERM=xterm-256color\n{exports}{} 2>'{}'\necho \"BERTH-EXIT=$?\"\n{after}",
        command.join(" "),
        stderr.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_a_server_by_name_or_by_socket() {
        let named = Server::named("x");
        assert_eq!(
            (named.flag, named.address.as_os_str()),
            ("-L", "x".as_ref())
        );
        let at = Server::at(Path::new("/run/t.sock"));
        assert_eq!(
            (at.flag, at.address.as_os_str()),
            ("-S", "/run/t.sock".as_ref())
        );
    }

    #[test]
    fn a_script_quotes_the_command_and_keeps_the_pane() {
        let text = script(
            &[("NO_COLOR", "1")],
            &["/bin/berth", "-n", "a b"],
            Path::new("/t/err"),
            "sleep 600\n",
        );
        assert_eq!(
            text,
            "#!/bin/sh\nexport TERM=xterm-256color\nexport NO_COLOR='1'\n'/bin/berth' '-n' 'a b' 2>'/t/err'\necho \"BERTH-EXIT=$?\"\nsleep 600\n"
        );
    }
}
