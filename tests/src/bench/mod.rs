//! `berth-bench`: builds a world of Runtimes and pods on a private local
//! control plane and measures the agent and the console against floors
//! measured in the same run (never against fixed times: these machines
//! are noisy). See the README's "Benchmark" section.

pub mod console;
mod console_run;
pub mod cpu;
mod figures;
pub mod floor;
pub mod peers;
pub mod process;
pub mod table;
mod wait;
pub mod world;

use std::time::{Duration, Instant};

use k8s_openapi::api::node::v1::RuntimeClass;
use kube::Api;
use kube::api::DeleteParams;

use crate::harness;
use console_run::console_figures;
use figures::{AGENT_RSS_TARGET, cpu_figures, rss_figure};
use table::{Figure, Target, Unit};
use wait::{has_condition, observed, until_runtimes, until_runtimes_or_count};

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
    /// running) before the run goes on without.
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
    /// Key presses (and watch events) timed on the model.
    #[arg(long, default_value_t = 30)]
    pub presses: usize,
    /// Skip the console figures.
    #[arg(long)]
    pub no_console: bool,
    /// Do not pause the floor's Deployments: the control plane then makes
    /// their pods while the floor applies, as it does while the agent
    /// converges, and the floor waits until they are gone again before the
    /// agent starts (a second set of pods: for small sizes).
    #[arg(long)]
    pub floor_pods: bool,
    /// Profile the agent while it converges: needs an agent built with
    /// `--features profile` (BERTH_AGENT_BIN); writes `agent.folded` and
    /// `agent.top.txt` into the run's directory and prints the top.
    #[arg(long)]
    pub profile: bool,
    /// After the figures, print the table and keep the control plane and
    /// the (restarted) agent up for this long, for profiling the agent and
    /// the console at this size by hand (README "Where the memory goes").
    #[arg(long, default_value_t = 0)]
    pub hold_seconds: u64,
    /// Also measure the peer consoles (k9s) on the same cluster, after
    /// berth's console: built by `tests/k8s/build.sh --peers` (README
    /// "Benchmark").
    #[arg(long)]
    pub peers: bool,
}

/// A line on standard error: how far the run is.
fn progress(started: Instant, what: &str) {
    eprintln!("[{:>7.1}s] {what}", started.elapsed().as_secs_f64());
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
    let cluster = tokio::task::spawn_blocking(move || {
        harness::private_cluster_with("bench", &["--nodes", &nodes])
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

    progress(started, "floor: server-side apply of the rendered objects");
    let floor_cpu0 = cpu::sample(&cluster.dir, None);
    let (floor_time, floor_objects) =
        floor::measure(&client, &stored, &plan, opts.concurrency, opts.floor_pods).await;
    let floor_cpu = cpu::usage(&floor_cpu0, &cpu::sample(&cluster.dir, None));
    progress(
        started,
        &format!("floor: {floor_objects} objects in {floor_time:.2?}; clearing them"),
    );
    floor::clear(&client, &size.namespaces(), opts.floor_pods).await;

    // The agent, cluster-wide as in production.
    harness::TestNamespace::create(client.clone(), "berth-system".into(), &[]).await;
    let grants = world::write_grants(&work.join("grants"), &plan).expect("grants file");
    let mut agent = process::AgentProcess::start(process::AgentRun {
        binary: &agent_bin,
        kubeconfig: &cluster.kubeconfig,
        grants: &grants,
        log: work.join("agent.log"),
        resync_seconds: opts.resync_seconds,
        concurrency: opts.concurrency,
        profile_dir: opts.profile.then(|| work.clone()),
    });
    let agent_started = Instant::now();
    let agent_cpu0 = cpu::sample(&cluster.dir, Some(agent.pid()));
    progress(
        started,
        "agent started; waiting until every Runtime is observed",
    );
    let converge = until_runtimes(
        &client,
        "Runtimes observed",
        agent_started,
        Duration::from_secs(3600),
        &[],
        observed,
    )
    .await;
    let agent_cpu = cpu::usage(&agent_cpu0, &cpu::sample(&cluster.dir, Some(agent.pid())));
    // How much work convergence took (the agent's own count: a diagnostic,
    // not evidence of writes).
    let converge_reconciles = process::reconciles(&agent.metrics().await);
    if opts.profile {
        process::profile_report(&agent, &work).await;
    }
    assert!(
        !agent.exited(),
        "the agent exited; see {}",
        agent.log.display()
    );
    progress(
        started,
        &format!("all observed after {converge:.2?}; waiting for Ready"),
    );
    // Pods becoming ready is the control plane's work (controllers,
    // scheduler, kwok), not the agent's: a world too large for the machine
    // is reported, and the run goes on.
    let ready = until_runtimes_or_count(
        &client,
        agent_started,
        Duration::from_secs(opts.ready_timeout_seconds),
        &[],
        |r| has_condition(r, "Ready", "True"),
    )
    .await;
    let (ready, ready_label) = match ready {
        Ok(d) => (
            d,
            "agent: every Runtime Ready (pods running), from agent start".to_string(),
        ),
        Err((done, total)) => {
            progress(
                started,
                &format!("only {done} of {total} Runtimes Ready; going on"),
            );
            (
                agent_started.elapsed(),
                format!(
                    "agent: NOT every Runtime Ready: {done} of {total} (pods running) at the timeout, from agent start"
                ),
            )
        }
    };
    let agent_rss = process::rss(agent.pid()).unwrap_or_default();

    // The idle window needs resyncs, so many that at scale they would crowd
    // out convergence: a second agent, with the resync forced short, is
    // started on the converged world. Its first pass over every Runtime
    // (a restart) must write nothing either, and so must its resyncs.
    drop(agent);
    let mut agent = process::AgentProcess::start(process::AgentRun {
        binary: &agent_bin,
        kubeconfig: &cluster.kubeconfig,
        grants: &grants,
        log: work.join("agent-idle.log"),
        resync_seconds: opts.idle_resync_seconds,
        concurrency: opts.concurrency,
        profile_dir: None,
    });
    progress(
        started,
        &format!(
            "agent restarted with resync {} s; waiting for its first pass",
            opts.idle_resync_seconds
        ),
    );
    let first_pass = Instant::now();
    loop {
        let m = agent.metrics().await;
        if process::reconciles(&m) >= size.runtimes as f64 {
            break;
        }
        assert!(
            !agent.exited(),
            "the agent exited; see {}",
            agent.log.display()
        );
        assert!(
            first_pass.elapsed() < Duration::from_secs(1800),
            "the restarted agent did not reconcile every Runtime in 30 min"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    progress(started, "idle window");
    tokio::time::sleep(Duration::from_secs(opts.idle_resync_seconds)).await;
    let m0 = agent.metrics().await;
    let s0 = harness::apiserver_requests(&client, harness::agent_kind_write).await;
    tokio::time::sleep(Duration::from_secs(opts.idle_seconds)).await;
    let m1 = agent.metrics().await;
    let s1 = harness::apiserver_requests(&client, harness::agent_kind_write).await;
    let idle_reconciles = process::reconciles(&m1) - process::reconciles(&m0);
    let idle_agent_writes = process::writes(&m1) - process::writes(&m0);
    let idle_server_writes = s1 - s0;
    let agent_rss_idle = process::rss(agent.pid()).unwrap_or_default();

    progress(started, "deleting a RuntimeClass");
    let class = world::class_name(0);
    let affected: Vec<(String, String)> = plan
        .iter()
        .filter(|p| p.grant.as_ref().is_some_and(|g| g.1 == class))
        .map(|p| (p.namespace.clone(), p.name.clone()))
        .collect();
    let class_deletion = if affected.is_empty() {
        None
    } else {
        Api::<RuntimeClass>::all(client.clone())
            .delete(&class, &DeleteParams::default())
            .await
            .expect("delete a RuntimeClass");
        let t = Instant::now();
        Some(
            until_runtimes(
                &client,
                "class deletion reaches status",
                t,
                Duration::from_secs(600),
                &affected,
                |r| {
                    r.status
                        .as_ref()
                        .is_some_and(|s| s.conditions.iter().any(|c| c.reason == "ClassMissing"))
                },
            )
            .await,
        )
    };

    let mut figures = vec![
        Figure::time(
            &format!(
                "agent: every Runtime observed, from agent start ({converge_reconciles} reconciles{})",
                if opts.floor_pods {
                    "; the floor's Deployments made pods"
                } else {
                    ""
                }
            ),
            converge,
            Some(floor_time),
            Target::RatioAtMost(1.3),
        ),
        Figure::time(&ready_label, ready, None, Target::None),
        Figure::of(
            &format!(
                "agent: writes in {} s idle ({} reconciles), apiserver_request_total",
                opts.idle_seconds, idle_reconciles
            ),
            Unit::Count,
            idle_server_writes,
            Target::AtMost(0.0),
        ),
        Figure::of(
            "agent: writes in the idle window, agent's own metric",
            Unit::Count,
            idle_agent_writes,
            Target::AtMost(0.0),
        ),
        rss_figure("agent: RSS after convergence", agent_rss, AGENT_RSS_TARGET),
        rss_figure(
            "agent: RSS after the idle window, restarted agent",
            agent_rss_idle,
            AGENT_RSS_TARGET,
        ),
    ];
    figures.extend(cpu_figures(&agent_cpu, &floor_cpu));
    if let Some(d) = class_deletion {
        figures.push(Figure::time(
            &format!(
                "agent: class deletion reaches all {} affected Runtimes' status",
                affected.len()
            ),
            d,
            None,
            Target::None,
        ));
    }

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
         concurrency {}, resync {} s (idle window: {} s); total {:.0} s",
        size.runtimes,
        size.granted,
        size.classes,
        size.replicas,
        size.runtimes * size.replicas,
        opts.nodes,
        opts.concurrency,
        opts.resync_seconds,
        opts.idle_resync_seconds,
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
