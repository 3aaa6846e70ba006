//! Component processes: each runs in its own process group with its output
//! in `DIR/logs/NAME.log`, and is stopped by signalling the whole group so
//! that nothing it forked outlives the cluster. With a supervisor (see
//! `supervise`), each runs under `SUPERVISOR supervise -- BINARY ARGS`
//! whose stdin pipe this process holds: the component stops even when
//! this process is killed with SIGKILL.
use std::fs::OpenOptions;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};

use super::Error;

/// One running component.
#[derive(Debug)]
pub struct Component {
    pub name: String,
    pub log: PathBuf,
    child: Child,
    /// How it was started (for a restart).
    launch: Launch,
    /// The supervisor's stdin: held for the component's life, never written.
    _lifeline: Option<ChildStdin>,
    /// Stopped on purpose, to be started again: not a failure.
    pub held: bool,
}

/// What starting a component again needs.
#[derive(Debug, Clone)]
struct Launch {
    binary: PathBuf,
    args: Vec<String>,
    supervisor: Option<PathBuf>,
}

impl Component {
    /// Starts `binary args…` as component `name`, logging to
    /// `log_dir/NAME.log` (appending: a restarted component keeps its
    /// earlier output), under `supervisor` when given.
    pub fn spawn(
        name: &str,
        binary: &Path,
        args: &[String],
        log_dir: &Path,
        supervisor: Option<&Path>,
    ) -> Result<Self, Error> {
        let launch = Launch {
            binary: binary.to_path_buf(),
            args: args.to_vec(),
            supervisor: supervisor.map(Path::to_path_buf),
        };
        Self::launch(name, launch, log_dir)
    }

    fn launch(name: &str, launch: Launch, log_dir: &Path) -> Result<Self, Error> {
        let log = log_dir.join(format!("{name}.log"));
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| Error::io(&log, e))?;
        let err = out.try_clone().map_err(|e| Error::io(&log, e))?;
        let mut cmd = match &launch.supervisor {
            Some(sup) => {
                let mut c = Command::new(sup);
                c.arg("supervise")
                    .arg("--")
                    .arg(&launch.binary)
                    .args(&launch.args)
                    .stdin(Stdio::piped());
                c
            }
            None => {
                let mut c = Command::new(&launch.binary);
                c.args(&launch.args).stdin(Stdio::null());
                c
            }
        };
        let mut child = cmd
            .stdout(out)
            .stderr(err)
            // A group of its own: stopping the component signals the group.
            .process_group(0)
            .spawn()
            .map_err(|e| Error::Start {
                component: name.to_string(),
                detail: format!("could not execute {}: {e}", launch.binary.display()),
                log: log.clone(),
            })?;
        let lifeline = child.stdin.take();
        Ok(Self {
            name: name.to_string(),
            log,
            child,
            launch,
            _lifeline: lifeline,
            held: false,
        })
    }

    /// Starts it again as it was started first (after [`Component::stop`]).
    pub fn relaunch(&mut self) -> Result<(), Error> {
        let log_dir = self.log.parent().map(Path::to_path_buf).unwrap_or_default();
        *self = Self::launch(&self.name.clone(), self.launch.clone(), &log_dir)?;
        Ok(())
    }

    /// An error naming the component and its log when it has exited.
    pub fn check_running(&mut self) -> Result<(), Error> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(Error::Exited {
                component: self.name.clone(),
                status: status.to_string(),
                log: self.log.clone(),
                tail: log_tail(&self.log, 15),
            }),
            Err(e) => Err(Error::io(&self.log, e)),
        }
    }

    /// SIGTERM to the group, then SIGKILL after `grace`.
    pub fn stop(&mut self, grace: Duration) {
        let pid = Pid::from_child(&self.child);
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            // The leader is gone; still sweep the group for stragglers.
            let _ = kill_process_group(pid, Signal::KILL);
            return;
        }
        let _ = kill_process_group(pid, Signal::TERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                let _ = kill_process_group(pid, Signal::KILL);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = kill_process_group(pid, Signal::KILL);
        let _ = self.child.wait();
    }
}

/// The last `n` lines of a log file, for error messages.
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
