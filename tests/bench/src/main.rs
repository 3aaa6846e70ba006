//! `berth-bench`: measures the agent and the console at scale on a private
//! local control plane and prints one table (figure, floor, ratio,
//! target). `cargo run --release -p berth-bench -- --help`.

use berth_bench::Options;
use clap::Parser;

/// The console's allocator (console/src/main.rs): the bench times the
/// console's model and its LIST floors in this process, so it must
/// allocate as the console does. Under glibc's malloc the model phase
/// measured glibc as much as berth: `perf record` of it at S/4 put 63 % of
/// the watch event → frame time in `_int_malloc`, `malloc_consolidate`,
/// `_int_free` and friends, on a heap fragmented by parsing the store's
/// objects (issue 32: the figure grew 25× for 4× the world at S, while the
/// synthetic world, built without that fragmentation, stayed at 5 ms).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    let report = if cli.options.fleet > 0 {
        runtime.block_on(berth_bench::fleet::run(&cli.options))
    } else {
        runtime.block_on(berth_bench::run(&cli.options))
    };
    println!("{}", report.render());
    Ok(())
}
