//! `berth-bench`: measures the agent and the console at scale on a private
//! local control plane and prints one table (figure, floor, ratio,
//! target). `cargo run --release -p berth-tests --bin berth-bench -- --help`.

use berth_tests::bench::{self, Options};
use clap::Parser;

#[derive(Debug, Parser)]
#[command(name = "berth-bench", version, about)]
struct Cli {
    #[command(flatten)]
    options: Options,
}

fn main() -> color_eyre::Result<()> {
    color_eyre::install()?;
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(bench::run(&cli.options));
    println!("{}", report.render());
    Ok(())
}
