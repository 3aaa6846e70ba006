//! `berth-bench`: builds a world of Runtimes and pods on a private local
//! control plane and measures the agent and the console against floors
//! measured in the same run (never against fixed times: these machines
//! are noisy). See docs/benchmark.md.

mod agent_run;
mod agent_world;
mod apiserver_profile;
mod canary_cost;
pub mod console;
mod console_run;
pub mod cpu;
mod figures;
pub mod fleet;
pub mod floor;
mod options;
pub mod peers;
mod plain;
pub mod process;
mod progress;
mod requests;
pub mod table;
mod wait;
pub mod world;

use std::time::{Duration, Instant};

use agent_run::{AgentOutcome, agent_figures};
use agent_world::AgentWorld;
use berth_test_support::harness;
use console_run::console_figures;
use table::Figure;

pub use options::Options;
use progress::progress;

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

#[cfg(test)]
mod layering_tests;
