//! berth: the operator's terminal console.

use clap::Parser;

/// berth's terminal console.
#[derive(Debug, Parser)]
#[command(name = "berth", version, about)]
struct Cli {}

fn main() -> color_eyre::Result<()> {
    color_eyre::install()?;
    let _cli = Cli::parse();
    Ok(())
}
