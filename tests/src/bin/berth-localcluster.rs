//! berth-localcluster: a real local Kubernetes control plane on loopback.
//!
//! `berth-localcluster up --dir DIR` starts etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok, creates simulated nodes
//! that report runtime handlers, writes `DIR/kubeconfig` once everything is
//! healthy, and stays up until SIGINT/SIGTERM.

use std::path::PathBuf;

use berth_tests::localcluster::{LocalCluster, NodeSpec, Options};
use clap::{Parser, Subcommand};
use color_eyre::eyre::{Result, WrapErr, eyre};
use tokio::io::AsyncReadExt;
use tokio::signal::unix::{SignalKind, signal};

#[derive(Debug, Parser)]
#[command(name = "berth-localcluster", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start a cluster and keep it running until interrupted.
    Up(UpArgs),
    /// Build (or find in the cache) every component binary and print their paths.
    Build,
}

#[derive(Debug, clap::Args)]
struct UpArgs {
    /// Directory for logs, data, certificates and DIR/kubeconfig.
    #[arg(long)]
    dir: PathBuf,
    /// Number of simulated (kwok) nodes.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Runtime handlers every node reports in status.runtimeHandlers.
    #[arg(long, value_delimiter = ',', default_value = "runc,bounded-runc")]
    handlers: Vec<String>,
    /// Override one node's handlers: NODE=h1,h2 (repeatable), e.g.
    /// kwok-node-2=runc to leave a handler off one node.
    #[arg(long = "node-handlers", value_name = "NODE=H1,H2")]
    node_handlers: Vec<String>,
    /// Also stop when standard input closes (used by the test harness, so the
    /// cluster never outlives the process that started it).
    #[arg(long)]
    exit_on_stdin_eof: bool,
}

fn options(args: &UpArgs) -> Result<Options> {
    let mut opts = Options::uniform(args.dir.clone(), args.nodes, &args.handlers);
    for o in &args.node_handlers {
        let (node, hs) = o
            .split_once('=')
            .ok_or_else(|| eyre!("--node-handlers {o:?}: expected NODE=H1,H2"))?;
        let spec: &mut NodeSpec = opts
            .nodes
            .iter_mut()
            .find(|n| n.name == node)
            .ok_or_else(|| eyre!("--node-handlers {o:?}: there is no node {node:?}"))?;
        spec.handlers = hs
            .split(',')
            .filter(|h| !h.is_empty())
            .map(str::to_string)
            .collect();
    }
    Ok(opts)
}

async fn stdin_closed() {
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 64];
    loop {
        match stdin.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

async fn up(args: UpArgs) -> Result<()> {
    let opts = options(&args)?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    // A closed terminal (SIGHUP) must stop the cluster too, not orphan it.
    let mut sighup = signal(SignalKind::hangup())?;
    let mut cluster = tokio::select! {
        c = LocalCluster::start(&opts) => c.wrap_err("starting the local cluster")?,
        _ = sigint.recv() => return Ok(()),
        _ = sigterm.recv() => return Ok(()),
        _ = sighup.recv() => return Ok(()),
    };
    println!("berth-localcluster is up: {}", cluster.server);
    println!("  export KUBECONFIG={}", cluster.kubeconfig.display());
    println!("  kubectl get nodes -o wide");
    println!("Press Ctrl-C to stop.");
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(2));
    let eof = async {
        if args.exit_on_stdin_eof {
            stdin_closed().await
        } else {
            std::future::pending().await
        }
    };
    tokio::pin!(eof);
    let result = loop {
        tokio::select! {
            _ = sigint.recv() => break Ok(()),
            _ = sigterm.recv() => break Ok(()),
            _ = sighup.recv() => break Ok(()),
            _ = &mut eof => break Ok(()),
            _ = tick.tick() => {
                if let Err(e) = cluster.check_running() {
                    break Err(eyre!(e));
                }
            }
        }
    };
    cluster.stop();
    println!("berth-localcluster stopped");
    result
}

fn main() -> Result<()> {
    color_eyre::install()?;
    let cli = Cli::parse();
    let rt = tokio::runtime::Runtime::new()?;
    match cli.command {
        Command::Up(args) => rt.block_on(up(args)),
        Command::Build => {
            let dir = std::env::temp_dir();
            let bins = berth_tests::localcluster::binaries::Binaries::resolve(&dir)?;
            for c in berth_tests::localcluster::binaries::COMPONENTS {
                println!("{c}={}", bins.path(c)?.display());
            }
            Ok(())
        }
    }
}
