//! `berth-bench`: builds a world of Runtimes and pods on a private local
//! control plane and measures the agent and the console against floors
//! measured in the same run (never against fixed times: these machines
//! are noisy). See docs/benchmark.md.

mod agent_run;
mod apiserver_profile;
pub mod console;
mod console_run;
pub mod cpu;
mod figures;
pub mod fleet;
pub mod floor;
pub mod peers;
mod plain;
pub mod process;
mod requests;
pub mod table;
mod wait;
pub mod world;

use std::time::{Duration, Instant};

use agent_run::{AgentOutcome, AgentWorld, agent_figures};
use berth_test_support::harness;
use console_run::console_figures;
use table::Figure;

/// What to build and how long to watch.
#[derive(Clone, Debug, clap::Args)]
pub struct Options {
    /// Runtimes (100 per namespace).
    #[arg(long, default_value_t = 2000)]
    pub runtimes: usize,
    /// Replicas of each Runtime.
    #[arg(long, default_value_t = 10)]
    pub replicas: usize,
    /// Simulated nodes.
    #[arg(long, default_value_t = 200)]
    pub nodes: usize,
    /// Granted Runtimes (the first ones), spread over the classes.
    #[arg(long, default_value_t = 64)]
    pub granted: usize,
    /// RuntimeClasses.
    #[arg(long, default_value_t = 20)]
    pub classes: usize,
    /// The agent's `--concurrency`, and the floor's.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// The resync of the agent that converges the world (the agent's own
    /// default).
    #[arg(long, default_value_t = 300)]
    pub resync_seconds: u64,
    /// The resync of the agent restarted for the idle-writes window (forced
    /// short, so that the window sees every Runtime resynced).
    #[arg(long, default_value_t = 15)]
    pub idle_resync_seconds: u64,
    /// How long the world may take to have every Runtime Ready (its pods
    /// running) before the run goes on without; the floor waits as long
    /// for its pods.
    #[arg(long, default_value_t = 3600)]
    pub ready_timeout_seconds: u64,
    /// Length of the idle-writes window.
    #[arg(long, default_value_t = 45)]
    pub idle_seconds: u64,
    /// Length of the console's idle-CPU window.
    #[arg(long, default_value_t = 20)]
    pub console_idle_seconds: u64,
    /// Pods created by another Deployment while the console's CPU is
    /// measured.
    #[arg(long, default_value_t = 2000)]
    pub churn_pods: usize,
    /// Samples of each `berth get` and each first frame, every one right
    /// after a floor of its own; the table gives the median of each.
    #[arg(long, default_value_t = 3)]
    pub samples: usize,
    /// Key presses (and watch events) timed on the model.
    #[arg(long, default_value_t = 30)]
    pub presses: usize,
    /// Skip the console figures.
    #[arg(long)]
    pub no_console: bool,
    /// Pause the floor's Deployments: no pods are made, so the floor only
    /// applies (cheaper, but unlike the agent's work) and there is no
    /// floor for "every Runtime Ready". By default the control plane makes
    /// the floor's pods as it does the agent's, the floor waits until they
    /// are Ready, then until they are gone before the agent starts.
    #[arg(long)]
    pub floor_paused: bool,
    /// Profile the agent while it converges: needs an agent built with
    /// `--features profile` (BERTH_AGENT_BIN); writes `agent.folded` and
    /// `agent.top.txt` into the run's directory and prints the top.
    #[arg(long)]
    pub profile: bool,
    /// After the figures, print the table and keep the control plane and
    /// the (restarted) agent up for this long, for profiling the agent and
    /// the console at this size by hand (docs/bench-runs.md, "How the memory grows").
    #[arg(long, default_value_t = 0)]
    pub hold_seconds: u64,
    /// Also measure the peer consoles (k9s) on the same cluster, after
    /// berth's console: built by `tests/k8s/build.sh --peers` (docs/benchmark.md,
    /// "The peers").
    #[arg(long)]
    pub peers: bool,
    /// Record the apiserver's CPU profile over each half's Ready phase and
    /// print where it went (`bench/apiserver_profile.rs`); the cluster is
    /// started with `--profiling`. Needs `go` on the PATH to print.
    #[arg(long)]
    pub profile_apiserver: bool,
    /// Instead of the agent and one console: N clusters of this size each,
    /// and the console on one of them against the console on all N
    /// (`bench/fleet.rs`; issue 56). 0: the usual run.
    #[arg(long, default_value_t = 0)]
    pub fleet: usize,
    /// Run the agent's canary scheduler (issue 53): the agent starts with
    /// `--canary-image` and `--canary-period-seconds`, and the table gives
    /// the canary Jobs it created and the (class, node) pairs by verdict.
    /// Without it the agent has no canary image: canaries off. kwok's
    /// nodes are simulated, so no canary runs on them: what a run with
    /// them shows is the scheduler's own cost (docs/benchmark.md).
    #[arg(long)]
    pub canaries: bool,
    /// The agent's `--canary-period-seconds` with `--canaries`.
    #[arg(long, default_value_t = 600)]
    pub canary_period_seconds: u64,
}

/// A line on standard error: how far the run is.
fn progress(started: Instant, what: &str) {
    eprintln!("[{:>7.1}s] {what}", started.elapsed().as_secs_f64());
}

/// The components that made and ran the floor's pods, restarted before
/// the agent's half: otherwise the agent's half runs on workers that have
/// just made, run and deleted 20,000 pods at S, and kwok (which berth never
/// talks to) spent 1.21–1.68× its floor-half CPU for the same pods there
/// (issue 32, stop 40). The floor's half starts on freshly started ones
/// too (the cluster was made for this run), so both halves start alike.
/// etcd and the apiserver keep running: the bench's clients and the
/// Runtimes stay, and the apiserver's request counters must span the run.
const WORKERS: [&str; 3] = ["kube-controller-manager", "kube-scheduler", "kwok"];

fn fresh_workers(cluster: &harness::SharedCluster, started: Instant) {
    for component in WORKERS {
        progress(
            started,
            &format!("restarting {component} before the agent's half"),
        );
        // Blocking, called as is: `block_in_place` needs a multi-threaded
        // runtime, and `bench_smoke` runs the bench on a current-thread
        // one; nothing else of the bench runs while the workers restart.
        cluster
            .restart(component, Duration::from_secs(120))
            .unwrap_or_else(|e| panic!("restart {component}: {e}"));
    }
}

/// Waits until the restarted workers serve again, end to end: a probe
/// Deployment of one pod made (controller-manager), scheduled (scheduler)
/// and Ready (kwok), then deleted. Started before that, the agent's clock
/// would run while the controller-manager still syncs its informers.
async fn workers_serve(client: &kube::Client, started: Instant) {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::{DeleteParams, PostParams};
    const PROBE: &str = "berth-bench-workers-probe";
    let deps: kube::Api<Deployment> = kube::Api::namespaced(client.clone(), "default");
    let t = Instant::now();
    deps.create(&PostParams::default(), &plain::deployment(PROBE, 1))
        .await
        .expect("create the workers' probe");
    let every = Duration::from_millis(200);
    assert!(
        plain::until_ready(&deps, PROBE, 1, every, Duration::from_secs(300)).await,
        "the restarted workers made no Ready pod in 300 s"
    );
    progress(
        started,
        &format!(
            "the restarted workers serve: a probe pod Ready after {:.2}s",
            t.elapsed().as_secs_f64()
        ),
    );
    deps.delete(PROBE, &DeleteParams::foreground())
        .await
        .expect("delete the workers' probe");
    // Gone before the agent starts: the garbage collector's last writes to
    // it (its finalizer, its deletion) are Deployment writes, which the
    // idle window counts.
    let t = Instant::now();
    while deps.get_opt(PROBE).await.ok().flatten().is_some() {
        assert!(
            t.elapsed() < Duration::from_secs(300),
            "the workers' probe not deleted in 300 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// The world and settings, in words.
    pub title: String,
    pub figures: Vec<Figure>,
}

impl Report {
    /// The figure whose name starts with `prefix`.
    pub fn figure(&self, prefix: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.name.starts_with(prefix))
    }

    /// A Markdown table.
    pub fn render(&self) -> String {
        table::render(&self.title, &self.figures)
    }
}

/// Runs the benchmark.
pub async fn run(opts: &Options) -> Report {
    let started = Instant::now();
    let size = world::Size {
        runtimes: opts.runtimes,
        replicas: opts.replicas,
        granted: opts.granted.min(opts.runtimes),
        classes: opts.classes.max(1),
        nodes: opts.nodes,
    };
    let agent_bin = tokio::task::spawn_blocking(|| {
        harness::workspace_binary("berth-agent", "berth-agent", "BERTH_AGENT_BIN")
    })
    .await
    .expect("build berth-agent");
    let berth_bin = tokio::task::spawn_blocking(|| {
        harness::workspace_binary("berth-console", "berth", "BERTH_BIN")
    })
    .await
    .expect("build berth");
    progress(
        started,
        &format!("starting a control plane with {} nodes", opts.nodes),
    );
    let nodes = opts.nodes.to_string();
    let profiling = opts.profile_apiserver;
    let cluster = tokio::task::spawn_blocking(move || {
        let mut args = vec!["--nodes", &nodes];
        if profiling {
            args.push("--profiling");
        }
        harness::private_cluster_with("bench", &args)
    })
    .await
    .expect("cluster thread");
    let client = cluster.admin_client().await;
    let work = cluster.dir.join("bench");
    std::fs::create_dir_all(&work).expect("bench directory");
    // Before anything is measured: a missing peer fails now, not at the end.
    let peers = opts.peers.then(|| peers::Peers::find(&work));

    let plan = size.plan();
    progress(started, &format!("creating {} Runtimes", plan.len()));
    world::create(&client, &size, &plan).await;
    let stored = world::stored(&client, &plan).await;

    let floor = floor::run(&client, &cluster.dir, &stored, &size, opts, started).await;
    if !floor.paused {
        fresh_workers(&cluster, started);
        workers_serve(&client, started).await;
    }

    let AgentOutcome {
        mut figures,
        agent,
        grants,
    } = agent_figures(
        &AgentWorld {
            started,
            opts,
            size: &size,
            plan: &plan,
            client: &client,
            cluster_dir: &cluster.dir,
            kubeconfig: &cluster.kubeconfig,
            agent_bin: &agent_bin,
            work: &work,
        },
        &floor,
    )
    .await;

    if !opts.no_console {
        progress(started, "console figures");
        figures.extend(
            console_figures(
                started,
                opts,
                &client,
                &cluster.kubeconfig,
                &berth_bin,
                &work,
            )
            .await,
        );
    }
    if let Some(peers) = &peers {
        let (k, w) = (&cluster.kubeconfig, &work);
        peers::measure(started, opts, &client, k, w, peers, &mut figures).await;
    }
    let title = format!(
        "berth-bench: {} Runtimes ({} granted over {} classes) × {} replicas = {} pods, {} nodes, \
         concurrency {}, resync {} s (idle window: {} s); canaries {}; floor: {}; total {:.0} s",
        size.runtimes,
        size.granted,
        size.classes,
        size.replicas,
        size.runtimes * size.replicas,
        opts.nodes,
        opts.concurrency,
        opts.resync_seconds,
        opts.idle_resync_seconds,
        if opts.canaries {
            format!("on (period {} s)", opts.canary_period_seconds)
        } else {
            "off".to_string()
        },
        if floor.paused {
            "the rendered objects applied, Deployments paused"
        } else {
            "the rendered objects applied, every pod Ready"
        },
        started.elapsed().as_secs_f64()
    );
    let report = Report { title, figures };
    if opts.hold_seconds > 0 {
        eprintln!("{}", report.render());
        progress(
            started,
            &format!(
                "holding for {} s: KUBECONFIG={} (agent pid {}, log {}, grants file {})",
                opts.hold_seconds,
                cluster.kubeconfig.display(),
                agent.pid(),
                agent.log.display(),
                grants.display()
            ),
        );
        tokio::time::sleep(Duration::from_secs(opts.hold_seconds)).await;
    }
    drop(agent);
    report
}
