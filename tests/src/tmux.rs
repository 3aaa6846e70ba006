//! A terminal for driving the real `berth` binary: a tmux server of its
//! own (named, or at a socket path) with one session called `berth`. The
//! console tests, the fault suite's console pane and the benchmark all
//! start and read it the same way.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

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

    /// The session's visible text.
    pub fn pane(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", SESSION])
    }

    /// Ends the server and whatever runs in it.
    pub fn kill(&self) {
        self.run(&["kill-server"]);
    }
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
}
