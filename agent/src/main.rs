//! berth-agent: loads the grants file, reconciles Runtimes, serves admission.
//!
//! The binary's edge: parses the command line, installs color-eyre, and hands
//! each subcommand to its own module.

mod crds;

use clap::{Parser, Subcommand};

/// berth's in-cluster agent.
#[derive(Debug, Parser)]
#[command(name = "berth-agent", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print every berth CRD as multi-document YAML.
    Crds,
}

fn main() -> color_eyre::Result<()> {
    color_eyre::install()?;
    let cli = Cli::parse();
    match cli.command {
        Command::Crds => crds::run(),
    }
}
