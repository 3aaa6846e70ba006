//! berth's terminal console (`berth`): live views of Runtimes, grants,
//! handlers, retained workloads and rollouts, and `berth get` for scripts.
//!
//! Layout: [`kube`] collects data (client, watchers sending messages),
//! [`model`] holds the state and its pure update function, [`views`]
//! draws it; [`terminal`] sets up and always restores the terminal;
//! [`get`] prints the same rows without the TUI; [`retire`] plans,
//! reviews and carries out retirement changes (TUI and `berth retire`).

pub mod cli;
pub mod get;
pub mod kube;
pub mod model;
pub mod retire;
pub mod run;
pub mod terminal;
pub mod views;

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod injection_tests;
