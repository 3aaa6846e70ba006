//! Command line: kubectl-like connection flags, the TUI by default, and
//! `berth get …` for scripts.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use color_eyre::eyre::{Result, WrapErr, eyre};
use k8s_openapi::jiff::Timestamp;

use crate::get::{self, Format, What};
use crate::kube::{ConnectOptions, connect, load};
use crate::model::{DEFAULT_AGENT_LEASE, ObjKey, Scope};
use crate::run::{RunOptions, run};

/// berth's console: live views of Runtimes, grants, handlers, retained
/// workloads and rollouts.
#[derive(Debug, Parser)]
#[command(name = "berth", version, about)]
pub struct Cli {
    /// Path to the kubeconfig (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// The namespace (default: the context's).
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long, global = true, conflicts_with = "namespace")]
    pub all_namespaces: bool,
    /// Never offer changes (retirement actions stay disabled).
    #[arg(long, global = true)]
    pub read_only: bool,
    /// The agent's leader-election Lease, NAMESPACE/NAME.
    #[arg(long, global = true, default_value_t = format!("{}/{}", DEFAULT_AGENT_LEASE.0, DEFAULT_AGENT_LEASE.1))]
    pub agent_lease: String,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands (none = the TUI).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the rows of a view, for scripts.
    Get {
        /// What to print.
        #[arg(value_enum)]
        what: What,
        /// Output format.
        #[arg(short = 'o', long, value_enum, default_value_t = Format::Table)]
        output: Format,
    },
}

impl Cli {
    fn scope(&self) -> Option<Scope> {
        if self.all_namespaces {
            Some(Scope::All)
        } else {
            self.namespace.clone().map(Scope::Namespace)
        }
    }

    fn lease(&self) -> Result<ObjKey> {
        let (ns, name) = self
            .agent_lease
            .split_once('/')
            .ok_or_else(|| eyre!("--agent-lease must be NAMESPACE/NAME"))?;
        Ok((ns.to_string(), name.to_string()))
    }

    fn connect_options(&self) -> ConnectOptions {
        ConnectOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
        }
    }
}

/// Parses the command line and runs.
pub fn main() -> Result<()> {
    color_eyre::install()?;
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .wrap_err("starting the async runtime")?;
    rt.block_on(async_main(cli))
}

async fn async_main(cli: Cli) -> Result<()> {
    let lease = cli.lease()?;
    match &cli.command {
        None => {
            run(RunOptions {
                connect: cli.connect_options(),
                scope: cli.scope(),
                read_only: cli.read_only,
                agent_lease: lease,
            })
            .await
        }
        Some(Command::Get { what, output }) => {
            let out =
                get_output(&cli.connect_options(), cli.scope(), &lease, *what, *output).await?;
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(out.as_bytes())?;
            Ok(())
        }
    }
}

/// Connects, lists what `what` needs once, and formats it.
pub async fn get_output(
    opts: &ConnectOptions,
    scope: Option<Scope>,
    lease: &ObjKey,
    what: What,
    fmt: Format,
) -> Result<String> {
    let conn = connect(opts).await.wrap_err("connecting to the cluster")?;
    let scope = scope.unwrap_or_else(|| Scope::Namespace(conn.default_namespace.clone()));
    let store = load(&conn, &scope, lease, &what.kinds())
        .await
        .wrap_err("reading from the cluster")?;
    Ok(get::format(what, &store, Timestamp::now(), fmt))
}
