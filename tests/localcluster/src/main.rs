//! berth-localcluster: a real local Kubernetes control plane on loopback.
//!
//! `berth-localcluster up --dir DIR` starts etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok, creates simulated nodes
//! that report runtime handlers, writes `DIR/kubeconfig` once everything is
//! healthy, and stays up until SIGINT/SIGTERM.
//!
//! With `--real-nodes N` (root only) it also starts N real nodes: a kubelet
//! and containerd each, on this machine, tainted so that only pods that
//! tolerate `berth.dev/real-node` run there (see docs/local-cluster.md "Real node").
//!
//! `berth-localcluster break-handler runsc [--dir DIR]` moves runsc and
//! its shim away on the real nodes (a handler the node still reports but
//! cannot run: what the agent's canaries catch); `restore-handler runsc`
//! puts them back.
//!
//! Every component runs under `berth-localcluster supervise`, which stops
//! it when this process is gone, even after SIGKILL. With
//! `--exit-on-stdin-eof`, standard input also takes commands, one per line:
//! `restart COMPONENT TOKEN` restarts `etcd`, `kube-apiserver`, … and then
//! writes `ok` or `error: …` to `DIR/control/TOKEN`; `stop COMPONENT TOKEN`
//! stops one and keeps it stopped (the cluster stays up) until `start
//! COMPONENT TOKEN`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use berth_localcluster::{LocalCluster, NodeSpec, Options};
use clap::{Parser, Subcommand};
use color_eyre::eyre::{Result, WrapErr, eyre};
use tokio::io::AsyncBufReadExt;
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
    /// Break HANDLER on the real nodes the way an operator does: move its
    /// binaries (runsc and its containerd shim) out of the node's bin
    /// directory. The node still reports the handler; its canary fails.
    BreakHandler(HandlerArgs),
    /// Put HANDLER's binaries back (undoes break-handler).
    RestoreHandler(HandlerArgs),
    /// Print the image canary Jobs run on the real nodes (by digest); or,
    /// when there is none, say why on standard error and exit 3 (the demo
    /// turns canaries off with that reason).
    CanaryImage {
        /// The cluster's directory (`up --dir`); the demo's by default.
        #[arg(long, default_value = ".demo/cluster")]
        dir: PathBuf,
    },
    /// (internal) Tear a real node down when stdin closes (LAYOUT: its layout.json).
    #[command(hide = true)]
    NodeJanitor {
        /// The node's layout.json.
        layout: PathBuf,
    },
    /// (internal) Run one component, stopping it when stdin closes.
    #[command(hide = true)]
    Supervise {
        /// The component's binary.
        binary: PathBuf,
        /// Its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
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
    /// cluster never outlives the process that started it), and read
    /// commands from it (`restart COMPONENT TOKEN`).
    #[arg(long)]
    exit_on_stdin_eof: bool,
    /// Write an audit log of every write request to DIR/logs/audit.log.
    #[arg(long)]
    audit: bool,
    /// Number of real nodes (kubelet + containerd on this machine; needs
    /// root). Their pods really run, under runc, bounded-runc, extra-runc
    /// and, when gVisor built, runsc.
    #[arg(long, default_value_t = 0)]
    real_nodes: usize,
    /// A berth-agent binary whose image every real node gets (imported,
    /// named by digest in DIR/real-nodes.json): what canary Jobs run.
    #[arg(long)]
    agent_binary: Option<PathBuf>,
    /// Serve the apiserver's /debug/pprof (for profiling it by hand or with
    /// `berth-bench --profile-apiserver`).
    #[arg(long)]
    profiling: bool,
    /// The kubeconfig's context and cluster name; under another name than
    /// the default its users are prefixed with it too, so that several
    /// clusters' kubeconfigs merge (`KUBECONFIG=a/kubeconfig:b/kubeconfig`).
    #[arg(long, default_value = berth_localcluster::kubeconfig::DEFAULT_NAME)]
    name: String,
}

#[derive(Debug, clap::Args)]
struct HandlerArgs {
    /// The handler (only runsc has binaries of its own).
    handler: String,
    /// The cluster's directory (`up --dir`); the demo's by default.
    #[arg(long, default_value = ".demo/cluster")]
    dir: PathBuf,
    /// Only this real node (all of them by default).
    #[arg(long)]
    node: Option<String>,
}

/// break-handler (`restore` false) or restore-handler: says what moved.
fn handler_command(args: &HandlerArgs, restore: bool) -> Result<()> {
    use berth_localcluster::realnode::{RealNodesInfo, breakage};
    breakage::handler_binaries(&args.handler)?;
    if !RealNodesInfo::path(&args.dir).is_file() {
        return Err(eyre!(
            "{} has no real node: is the demo (or `berth-localcluster up --real-nodes 1 --dir DIR`) running, as root, with one?",
            args.dir.display()
        ));
    }
    let nodes = breakage::nodes(&args.dir, args.node.as_deref())
        .wrap_err_with(|| format!("the real nodes of {}", args.dir.display()))?;
    if nodes.is_empty() {
        return Err(eyre!(
            "{} has no real node{}",
            args.dir.display(),
            args.node
                .as_deref()
                .map(|n| format!(" named {n}"))
                .unwrap_or_default()
        ));
    }
    for node in &nodes {
        let done = if restore {
            breakage::restore_handler(node, &args.handler)
        } else {
            breakage::break_handler(node, &args.handler)
        }
        .wrap_err_with(|| format!("node {}", node.name))?;
        let (verb, none) = if restore {
            ("restored", "nothing was moved away")
        } else {
            ("moved away", "already moved away")
        };
        if done.is_empty() {
            println!("{}: {} {none}", node.name, args.handler);
        }
        for path in done {
            println!("{}: {verb} {}", node.name, path.display());
        }
    }
    Ok(())
}

fn options(args: &UpArgs) -> Result<Options> {
    let mut opts = Options::uniform(args.dir.clone(), args.nodes, &args.handlers);
    opts.supervisor = Some(std::env::current_exe().wrap_err("locating berth-localcluster")?);
    opts.audit = args.audit;
    opts.real_nodes = args.real_nodes;
    opts.agent_binary = args.agent_binary.clone();
    opts.profiling = args.profiling;
    opts.name.clone_from(&args.name);
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

/// One line of standard input, `None` at EOF.
async fn next_command(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::io::Stdin>>,
    enabled: bool,
) -> Option<String> {
    if !enabled {
        return std::future::pending().await;
    }
    lines.next_line().await.ok().flatten()
}

/// Carries out `restart|stop|start COMPONENT TOKEN`, answering in
/// `DIR/control/TOKEN`.
async fn command(cluster: &mut LocalCluster, dir: &Path, line: &str) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let (answer, token) = match words.as_slice() {
        [verb @ ("restart" | "stop" | "start"), component, token] => {
            println!("{verb} {component}");
            let done = match *verb {
                "restart" => cluster.restart(component).await,
                "stop" => cluster.stop_component(component),
                _ => cluster.start_component(component).await,
            };
            let answer = match done {
                Ok(()) => "ok".to_string(),
                Err(e) => format!("error: {e}"),
            };
            println!("{verb} {component}: {answer}");
            (answer, *token)
        }
        _ => {
            println!("unknown command {line:?}");
            return;
        }
    };
    let control = dir.join("control");
    let _ = std::fs::create_dir_all(&control);
    let tmp = control.join(format!(".{token}"));
    if std::fs::write(&tmp, answer).is_ok() {
        let _ = std::fs::rename(&tmp, control.join(token));
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
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let result = loop {
        tokio::select! {
            _ = sigint.recv() => break Ok(()),
            _ = sigterm.recv() => break Ok(()),
            _ = sighup.recv() => break Ok(()),
            line = next_command(&mut lines, args.exit_on_stdin_eof) => match line {
                Some(line) => command(&mut cluster, &args.dir, &line).await,
                None => break Ok(()),
            },
            _ = tick.tick() => {
                if let Err(e) = cluster.check_running() {
                    break Err(eyre!(e));
                }
            }
        }
    };
    cluster.shutdown().await;
    println!("berth-localcluster stopped");
    result
}

/// `canary-image`: the image on stdout, or the reason on stderr and exit 3.
fn canary_image(dir: &Path) -> Result<()> {
    use berth_localcluster::realnode::RealNodesInfo;
    let why = match RealNodesInfo::read(dir) {
        Ok(info) => match info.canary_image() {
            Ok(image) => {
                println!("{image}");
                return Ok(());
            }
            Err(no) => no.to_string(),
        },
        Err(e) => format!("no real node ({e})"),
    };
    eprintln!("{why}");
    std::process::exit(3)
}

fn main() -> Result<()> {
    color_eyre::install()?;
    let cli = Cli::parse();
    let rt = tokio::runtime::Runtime::new()?;
    match cli.command {
        Command::Up(args) => rt.block_on(up(args)),
        Command::Build => {
            let dir = std::env::temp_dir();
            let bins = berth_localcluster::binaries::Binaries::resolve(&dir)?;
            for c in berth_localcluster::binaries::COMPONENTS {
                println!("{c}={}", bins.path(c)?.display());
            }
            Ok(())
        }
        Command::BreakHandler(args) => handler_command(&args, false),
        Command::RestoreHandler(args) => handler_command(&args, true),
        Command::CanaryImage { dir } => canary_image(&dir),
        Command::NodeJanitor { layout } => {
            rt.block_on(berth_localcluster::realnode::start::janitor(&layout))?;
            Ok(())
        }
        Command::Supervise { binary, args } => {
            let code = rt.block_on(berth_localcluster::supervise::supervise(&binary, &args))?;
            std::process::exit(code)
        }
    }
}
