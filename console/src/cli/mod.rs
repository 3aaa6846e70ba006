//! Command line: kubectl-like connection flags, the TUI by default, and
//! `berth get …` for scripts. The flags are [`flags`], what each
//! subcommand does is [`commands`]; this file starts the process (the
//! async runtime, transparent huge pages off) and prints its error.

mod commands;
mod flags;

use clap::Parser;
use color_eyre::eyre::{Result, WrapErr, eyre};

pub use commands::get_output;
pub use flags::{Cli, Command, RetireHow};

/// Parses the command line and runs.
pub fn main() -> Result<()> {
    without_huge_pages();
    color_eyre::install()?;
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .wrap_err("starting the async runtime")?;
    rt.block_on(commands::async_main(cli)).map_err(clean_report)
}

/// Turns transparent huge pages off for this process, before its first
/// lists are parsed: see console/src/main.rs (the kernel zeroing 2 MB
/// pages was a third of a first frame's CPU). mimalloc is built not to ask
/// for them; this also covers hosts where THP is `always`. A kernel that
/// refuses the flag keeps its default: slower, nothing lost, so the error
/// is ignored.
pub fn without_huge_pages() {
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

/// Most characters of one printed error cause.
const ERROR_CHARS: usize = 2048;

/// The error as it will be printed, every cause sanitized: an API Status
/// message, a context name or a kubeconfig value is cluster or file text
/// and may carry escape sequences. The chain is kept as one line per cause.
pub fn clean_report(e: color_eyre::Report) -> color_eyre::Report {
    let causes: Vec<String> = e
        .chain()
        .map(|c| berth_shared::sanitize::line(&c.to_string(), ERROR_CHARS))
        .collect();
    let mut it = causes.into_iter().rev();
    let mut report = eyre!(it.next().unwrap_or_default());
    for c in it {
        report = report.wrap_err(c);
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_errors_are_sanitized_cause_by_cause() {
        let inner = eyre!("namespaces \"x\u{1b}]52;c;ZXZpbA==\u{7}\" is forbidden\u{202e}");
        let report = clean_report(inner.wrap_err("reading from the cluster\u{1b}[2J"));
        let causes: Vec<String> = report.chain().map(ToString::to_string).collect();
        assert_eq!(
            causes,
            [
                "reading from the cluster",
                "namespaces \"x\" is forbidden<U+202E>"
            ]
        );
        let printed = format!("{report:?}");
        assert!(
            !printed.contains('\u{1b}') && !printed.contains('\u{7}'),
            "{printed}"
        );
    }
}
