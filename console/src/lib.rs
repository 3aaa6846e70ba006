//! berth's terminal console (`berth`): live views of Runtimes, grants,
//! handlers, retained workloads and rollouts, and `berth get` for scripts.
//!
//! Layers, each importing only the ones below it (a unit test checks):
//! - [`store`]: the console's copy of the cluster and [`store::ingest`],
//!   where every object is sanitized on the way in;
//! - [`rows`]: pure functions from the store to rows (one module per
//!   family, a [`rows::Row`] trait, one generic [`rows::TableData`]);
//! - [`model`]: the app state and its pure update function, the one key
//!   table ([`model::keymap`]);
//! - [`watch`]: collection — the client and the watchers that feed the
//!   model with messages;
//! - [`views`]: drawing, on top of everything, imported by nothing below.
//!
//! Around them: [`terminal`] sets up and always restores the terminal,
//! [`tui`] holds it (and lets it go while a credential plugin prompts),
//! [`run`] owns the app task (drawing when [`frames`] allows), [`get`] prints rows without the TUI,
//! [`retire`] plans, reviews and carries out retirement changes, [`cli`]
//! parses the command line.

pub mod check;
pub mod cli;
pub mod explain_cli;
pub mod fleet_cli;
pub mod frames;
pub mod get;
pub mod model;
pub mod plan_grants;
pub mod retire;
pub mod rows;
pub mod run;
pub mod store;
pub mod terminal;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod tui;
pub mod views;
pub mod watch;

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod fleet_cli_tests;
#[cfg(test)]
mod injection_tests;
#[cfg(test)]
mod layering_tests;
#[cfg(test)]
mod readme_tests;
#[cfg(test)]
pub(crate) mod test_rng;

/// The unit tests allocate as the `berth` binary does (console/src/main.rs),
/// so that the benchmark among them (`frame_time_ratio_50k_vs_100`)
/// measures the allocator that ships, as those in `benches/` do: under
/// glibc's malloc, `berth-bench` measured the allocator more than the
/// console (issue 32).
#[cfg(all(test, not(feature = "system-allocator")))]
#[global_allocator]
static TEST_ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(all(test, target_os = "linux"))]
mod huge_pages_tests {
    /// What the console's first step leaves (console/src/main.rs): the
    /// process's transparent huge pages off, as the kernel reports them.
    #[test]
    fn the_console_turns_transparent_huge_pages_off() {
        crate::cli::without_huge_pages();
        let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
        let thp = status
            .lines()
            .find_map(|l| l.strip_prefix("THP_enabled:"))
            .map(str::trim);
        assert_eq!(thp, Some("0"), "{status}");
    }
}
