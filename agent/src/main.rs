//! berth-agent: loads the grants file, reconciles Runtimes, serves admission.
//!
//! The binary's edge: parses the command line, installs color-eyre, and hands
//! each subcommand to its own module.

mod admission;
mod canary;
mod check_grants;
mod controller;
mod crds;
mod docs;
mod grants_config;
mod grants_publisher;
mod http;
mod kube_client;
#[cfg(test)]
mod layering_tests;
mod leader;
mod lease_timing;
mod metrics;
mod otel;
mod pending_grants;
#[cfg(feature = "profile")]
mod profile;
mod run;
mod signals;

use clap::{CommandFactory, Parser, Subcommand};

/// jemalloc, not glibc's malloc (issue 14): the caches' relists parse
/// whole pages of full objects at once, and glibc kept those pages'
/// memory after they were freed. At a quarter of scale S
/// (`berth-bench --runtimes 500 --replicas 4 --nodes 50 --no-console`,
/// the same binary preloaded with each allocator, one run each) an agent
/// restarted into the converged cluster held 108 MB under glibc, 101 MB
/// with `glibc.malloc.arena_max=2` and 75 MB under jemalloc (57 MB after
/// convergence under all three). mimalloc held more than glibc here.
/// Its options (one arena, a background thread) are set when jemalloc is
/// built: `.cargo/config.toml` (issue 32).
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// berth's in-cluster agent.
#[derive(Debug, Parser)]
#[command(
    name = "berth-agent",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("BERTH_GIT_COMMIT"), ")"),
    about
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print every berth CRD as multi-document YAML.
    Crds,
    /// Validate a grants file and print its bindings or every error
    /// (exit 0 valid, 1 invalid, 2 usage).
    CheckGrants(check_grants::CheckGrantsArgs),
    /// Serve only the validating admission webhook for Runtimes (no controller).
    Webhook(Box<admission::WebhookCommandArgs>),
    /// Run the agent: reconcile Runtimes, publish RuntimeGrants, serve
    /// /health and /metrics, with Lease-based leader election.
    Run(Box<run::RunArgs>),
    /// Inside a canary Job's pod: check the sandbox against what the
    /// RuntimeClass claims and the production contract; exit 0, or with
    /// the code of the first failed check (the agent reads it back from
    /// the Job's pod failure policy).
    Canary(canary::probe::CanaryArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) for berth-agent.
    Man,
    /// Print the table of every metric the agent exports (name, type,
    /// labels, meaning), as docs/metrics.md shows it.
    MetricsDoc,
}

fn main() -> color_eyre::Result<()> {
    color_eyre::install()?;
    let cli = Cli::parse();
    match cli.command {
        Command::Crds => crds::run(),
        Command::CheckGrants(args) => check_grants::run(&args),
        Command::Webhook(args) => admission::run_command(&args),
        Command::Run(args) => run::run(*args),
        Command::Canary(args) => canary::probe::run(&args),
        Command::Completions { shell } => docs::completions(Cli::command(), shell),
        Command::Man => docs::man_page(Cli::command()),
        Command::MetricsDoc => docs::metrics_table(),
    }
}
