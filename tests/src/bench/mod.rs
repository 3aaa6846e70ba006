//! `berth-bench`: builds a world of Runtimes and pods on a private local
//! control plane and measures the agent and the console against floors
//! measured in the same run (never against fixed times: these machines
//! are noisy). See the README's "Benchmark" section.

pub mod console;
pub mod cpu;
pub mod floor;
pub mod process;
pub mod table;
pub mod world;

use std::time::{Duration, Instant};

use berth_console::get::What;
use berth_console::model::ListView;
use berth_shared::api::Runtime;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

use crate::harness;
use table::{Figure, Target, Unit};

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
}

/// The RSS targets at scale S, in bytes.
const AGENT_RSS_TARGET: f64 = 80e6;
const CONSOLE_RSS_TARGET: f64 = 150e6;

/// A resident-memory figure: the total against `target`, its parts in the
/// name (how much of it is data, how much the binary's code).
fn rss_figure(name: &str, rss: process::Rss, target: f64) -> Figure {
    Figure::of(
        &format!("{name} ({})", rss.parts()),
        Unit::Bytes,
        rss.total as f64,
        Target::AtMost(target),
    )
}

fn progress(started: Instant, what: &str) {
    eprintln!("[{:>7.1}s] {what}", started.elapsed().as_secs_f64());
}

fn observed(r: &Runtime) -> bool {
    let generation = r.metadata.generation.unwrap_or(0);
    r.status
        .as_ref()
        .and_then(|s| s.observed_generation)
        .is_some_and(|g| g >= generation)
}

fn has_condition(r: &Runtime, type_: &str, status: &str) -> bool {
    r.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == type_ && c.status == status)
    })
}

/// Polls the Runtimes until `pred` holds for all of `names` (or all when
/// empty); the time since `since`. Panics naming `what` after `timeout`.
async fn until_runtimes(
    client: &Client,
    what: &str,
    since: Instant,
    timeout: Duration,
    names: &[(String, String)],
    pred: impl Fn(&Runtime) -> bool,
) -> Duration {
    match until_runtimes_or_count(client, since, timeout, names, pred).await {
        Ok(d) => d,
        Err((done, total)) => panic!("{what}: only {done} of {total} within {timeout:?}"),
    }
}

/// [`until_runtimes`], but a timeout is an answer: how many of how many.
async fn until_runtimes_or_count(
    client: &Client,
    since: Instant,
    timeout: Duration,
    names: &[(String, String)],
    pred: impl Fn(&Runtime) -> bool,
) -> Result<Duration, (usize, usize)> {
    let api: Api<Runtime> = Api::all(client.clone());
    loop {
        if let Ok(list) = api.list(&ListParams::default()).await {
            let relevant: Vec<&Runtime> = list
                .items
                .iter()
                .filter(|r| {
                    names.is_empty()
                        || names.iter().any(|(ns, n)| {
                            r.namespace().as_deref() == Some(ns.as_str()) && &r.name_any() == n
                        })
                })
                .collect();
            let done = relevant.iter().filter(|r| pred(r)).count();
            if !relevant.is_empty() && done == relevant.len() {
                return Ok(since.elapsed());
            }
            if since.elapsed() > timeout {
                return Err((done, relevant.len()));
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
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
        profile_report(&agent, &work).await;
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

/// Asks the agent for its profile of the convergence (SIGUSR1) and prints
/// the top of it.
async fn profile_report(agent: &process::AgentProcess, work: &std::path::Path) {
    let top = work.join("agent.top.txt");
    let _ = std::fs::remove_file(&top);
    let sent = std::process::Command::new("kill")
        .args(["-USR1", &agent.pid().to_string()])
        .status();
    if !sent.is_ok_and(|s| s.success()) {
        eprintln!("profile: could not signal the agent");
        return;
    }
    for _ in 0..100 {
        if let Ok(text) = std::fs::read_to_string(&top) {
            let head: Vec<&str> = text.lines().take(40).collect();
            eprintln!(
                "profile of the agent while it converged ({}):\n{}",
                work.join("agent.folded").display(),
                head.join("\n")
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!("profile: none written; was the agent built with --features profile?");
}

/// Where the CPU went while the agent converged, each against the same
/// component while the floor ran: which process held the cores.
fn cpu_figures(agent: &cpu::Usage, floor: &cpu::Usage) -> Vec<Figure> {
    let mut out = Vec::new();
    for (name, share) in &agent.cores {
        let mut f = Figure::of(
            &format!("cpu while the agent converged (floor: while the floor ran): {name}"),
            Unit::Cpu,
            *share,
            Target::None,
        );
        f.floor = floor.cores.get(name).copied();
        out.push(f);
    }
    if let Some(busy) = agent.machine_busy {
        let mut f = Figure::of(
            "cpu: the whole machine busy (share of all cores; others' work included)",
            Unit::Cpu,
            busy,
            Target::None,
        );
        f.floor = floor.machine_busy;
        out.push(f);
    }
    out
}

async fn console_figures(
    started: Instant,
    opts: &Options,
    client: &Client,
    kubeconfig: &std::path::Path,
    berth_bin: &std::path::Path,
    work: &std::path::Path,
) -> Vec<Figure> {
    let mut figures = Vec::new();
    // `berth get` against the parallel LIST of what it shows.
    for (what, kinds) in [
        ("runtimes", What::Runtimes),
        ("handlers", What::Handlers),
        ("retained", What::Retained),
        ("rollouts", What::Rollouts),
    ] {
        let floor = console::get_floor(client, kinds).await;
        let (b, k) = (berth_bin.to_path_buf(), kubeconfig.to_path_buf());
        let w = what.to_string();
        let took = tokio::task::spawn_blocking(move || console::berth_get(&b, &k, &w))
            .await
            .expect("berth get");
        figures.push(Figure::time(
            &format!("console: `berth get {what} -A`"),
            took,
            Some(floor),
            Target::RatioAtMost(1.5),
        ));
    }

    // The TUI: first complete frame of each view, against its LIST floor.
    let floors = [
        (
            ListView::Runtimes,
            console::list_floor(client, ListView::Runtimes).await,
        ),
        (
            ListView::Grants,
            console::list_floor(client, ListView::Grants).await,
        ),
        (
            ListView::Handlers,
            console::list_floor(client, ListView::Handlers).await,
        ),
        (
            ListView::Retained,
            console::list_floor(client, ListView::Retained).await,
        ),
    ];
    let (b, k, w) = (
        berth_bin.to_path_buf(),
        kubeconfig.to_path_buf(),
        work.to_path_buf(),
    );
    let (frames, tui) = tokio::task::spawn_blocking(move || {
        let frames = console::first_frames(&b, &k, &w);
        (frames, console::visit_all(&b, &k, &w))
    })
    .await
    .expect("console thread");
    for ((view, floor), took) in floors.iter().zip(frames) {
        figures.push(Figure::time(
            &format!("console: first complete {} frame", view.title()),
            took,
            Some(*floor),
            Target::RatioAtMost(1.2),
        ));
    }
    figures.push(rss_figure(
        "console: RSS with every view visited",
        process::rss(tui.pid).unwrap_or_default(),
        CONSOLE_RSS_TARGET,
    ));
    let cpu0 = process::cpu_time(tui.pid).unwrap_or_default();
    tokio::time::sleep(Duration::from_secs(opts.console_idle_seconds)).await;
    let cpu1 = process::cpu_time(tui.pid).unwrap_or_default();
    figures.push(Figure::of(
        "console: CPU while idle (share of a core)",
        Unit::Cpu,
        (cpu1 - cpu0).as_secs_f64() / opts.console_idle_seconds as f64,
        Target::AtMost(0.01),
    ));

    if opts.churn_pods > 0 {
        harness::TestNamespace::create(client.clone(), "churn".into(), &[]).await;
        let deps: Api<Deployment> = Api::namespaced(client.clone(), "churn");
        let dep: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "churn"},
            "spec": {
                "replicas": opts.churn_pods,
                "selector": {"matchLabels": {"app": "churn"}},
                "template": {
                    "metadata": {"labels": {"app": "churn"}},
                    "spec": {"containers": [{"name": "c", "image": "registry.invalid/churn:1"}]},
                },
            },
        }))
        .expect("churn Deployment");
        let cpu0 = process::cpu_time(tui.pid).unwrap_or_default();
        let t = Instant::now();
        deps.create(&PostParams::default(), &dep)
            .await
            .expect("create churn");
        loop {
            let d = deps.get("churn").await.ok();
            let ready = d
                .and_then(|d| d.status)
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0);
            if usize::try_from(ready).unwrap_or(0) >= opts.churn_pods
                || t.elapsed() > Duration::from_secs(900)
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let took = t.elapsed();
        let cpu1 = process::cpu_time(tui.pid).unwrap_or_default();
        figures.push(Figure::of(
            &format!(
                "console: CPU while {} other pods are created ({:.0} s)",
                opts.churn_pods,
                took.as_secs_f64()
            ),
            Unit::Cpu,
            (cpu1 - cpu0).as_secs_f64() / took.as_secs_f64().max(0.001),
            Target::AtMost(0.10),
        ));
        figures.push(rss_figure(
            "console: RSS after the churn",
            process::rss(tui.pid).unwrap_or_default(),
            CONSOLE_RSS_TARGET,
        ));
    }
    drop(tui);

    let conn = berth_console::watch::connect(&berth_console::watch::ConnectOptions {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        context: None,
    })
    .await
    .expect("connect the model");
    progress(started, "console model: loading the store");
    let app = console::model_app(&conn).await;
    // Its own line, so that a profiler can be attached to this phase alone.
    progress(
        started,
        &format!(
            "console model: timing {} key presses and watch events",
            opts.presses
        ),
    );
    let times = console::model_times(app, opts.presses);
    progress(started, "console model: timed");
    figures.push(Figure::millis(
        "console model: key press → redrawn frame (median)",
        times.key_to_frame,
        Some(times.redraw_floor),
        Target::AtMost(50.0),
    ));
    figures.push(Figure::millis(
        "console model: watch event → rebuilt, redrawn frame (median)",
        times.event_to_frame,
        Some(times.redraw_floor),
        Target::AtMost(50.0),
    ));
    figures
}
