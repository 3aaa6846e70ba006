//! `berth-bench --fleet N` (issue 56): N private control planes, each
//! holding the same world (the Runtimes, and the objects the agent would
//! render for them applied as the floor applies them, their pods Ready;
//! no agent runs), and the console on one of them against the console on
//! all N:
//!
//! - its RSS with every view visited, and its CPU while each cluster makes
//!   the same churn of pods: at most 3.2× the one cluster's for three
//!   (linear in the clusters' sizes: `1.07 × N` in general);
//! - its first complete Runtimes frame against the slowest cluster's own
//!   LIST floor (each cluster listed alone, as a new process connects;
//!   the same lists of every cluster at once are printed beside it);
//! - key press → frame: on the model (every cluster's store loaded) and on
//!   the terminal, with every cluster up and with one cluster's apiserver
//!   stopped.
//!
//! Any size runs: `--fleet 3 --runtimes 500 --replicas 10 --nodes 50` is
//! three times S/4; `--fleet 3 --runtimes 100 --replicas 4 --nodes 10`
//! fits a busy two-core machine.

use std::path::Path;
use std::time::{Duration, Instant};

use futures::future::join_all;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};

use super::console::{self, Console};
use super::table::{Figure, Target, Unit};
use super::world::{self, Size};
use super::{Options, Report, floor, plain, process, progress, wait};
use berth_console::model::{ListView, Screen};
use berth_console::watch::{ConnectOptions, connect};
use berth_test_support::harness::{self, SharedCluster};

/// How long the world's pods may take to be Ready in each cluster.
const READY: Duration = Duration::from_secs(3600);

/// The console's RSS and churn CPU over N clusters may be this many times
/// one cluster's per cluster (3.2× for three).
fn linear_target(n: usize) -> f64 {
    (3.2 / 3.0 * n as f64 * 100.0).round() / 100.0
}

/// One cluster of the bench's fleet.
struct Member {
    name: String,
    cluster: SharedCluster,
    client: Client,
}

/// Starts cluster `i` and builds the world in it.
async fn member(i: usize, opts: &Options, size: &Size, started: Instant) -> Member {
    let name = format!("fleet-{i}");
    progress(
        started,
        &format!("starting {name} with {} nodes", opts.nodes),
    );
    let (nodes, n) = (opts.nodes.to_string(), name.clone());
    let cluster = tokio::task::spawn_blocking(move || {
        harness::private_cluster_with(&n, &["--nodes", &nodes, "--name", &n])
    })
    .await
    .expect("cluster thread");
    let client = cluster.admin_client().await;
    let plan = size.plan();
    progress(
        started,
        &format!("{name}: creating {} Runtimes and their objects", plan.len()),
    );
    world::create(&client, size, &plan).await;
    let stored = world::stored(&client, &plan).await;
    let expected = floor::apply_all(&client, &stored, &plan, opts.concurrency, true).await;
    let t0 = Instant::now();
    match wait::until_rolled_out(&client, floor::MANAGED, t0, READY, &expected).await {
        Ok(took) => progress(
            started,
            &format!("{name}: every pod Ready after {:.0} s", took.as_secs_f64()),
        ),
        Err((done, of)) => progress(
            started,
            &format!("{name}: {done} of {of} Deployments rolled out; going on"),
        ),
    }
    Member {
        name,
        cluster,
        client,
    }
}

/// The kinds of the first Runtimes frame.
fn runtimes_kinds() -> Vec<berth_console::store::Kind> {
    Screen::List(ListView::Runtimes).kinds()
}

/// `--context a,b,…` for these members.
fn contexts(members: &[&Member]) -> String {
    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    format!("--context {}", names.join(","))
}

/// Runs the fleet benchmark.
pub async fn run(opts: &Options) -> Report {
    let started = Instant::now();
    let n = opts.fleet.max(2);
    let size = Size {
        runtimes: opts.runtimes,
        replicas: opts.replicas,
        granted: opts.granted.min(opts.runtimes),
        classes: opts.classes.max(1),
        nodes: opts.nodes,
    };
    let berth_bin = tokio::task::spawn_blocking(|| {
        harness::workspace_binary("berth-console", "berth", "BERTH_BIN")
    })
    .await
    .expect("build berth");
    let mut members = Vec::with_capacity(n);
    for i in 0..n {
        members.push(member(i, opts, &size, started).await);
    }
    let work = members[0].cluster.dir.join("fleet-bench");
    std::fs::create_dir_all(&work).expect("bench directory");
    let kubeconfig = work.join("kubeconfig");
    let parts: Vec<(&str, &Path)> = members
        .iter()
        .map(|m| (m.name.as_str(), m.cluster.kubeconfig.as_path()))
        .collect();
    harness::merge_kubeconfigs(&kubeconfig, &parts).expect("the fleet's kubeconfig");
    let all: Vec<&Member> = members.iter().collect();
    let one = &members[0..1].iter().collect::<Vec<_>>();
    let mut figures = Vec::new();

    progress(started, "first complete Runtimes frames");
    figures.extend(first_frames(opts, &berth_bin, &kubeconfig, &work, &all).await);

    progress(started, "memory and CPU, one cluster then all");
    let (one_rss, one_alone_cpu) =
        memory_and_churn(opts, &berth_bin, &kubeconfig, &work, one, one, started).await;
    // The floor of the CPU target: the one-cluster console while every
    // cluster makes its pods, as during the fleet's churn. The clusters
    // share this machine's cores, so N of them churning at once take about
    // N times as long as one alone, and a console draws frames for as long
    // as its cluster changes (the frame limiter spaces them in time):
    // against one cluster churning alone, the fleet's ratio would count
    // the machine's contention as the console's cost (stop 65: 67 s of
    // churn alone, 242 s for three at once).
    let (_, one_cpu) =
        memory_and_churn(opts, &berth_bin, &kubeconfig, &work, one, &all, started).await;
    let (all_rss, all_cpu) =
        memory_and_churn(opts, &berth_bin, &kubeconfig, &work, &all, &all, started).await;
    let target = linear_target(n);
    figures.push(Figure {
        floor: Some(one_rss.total as f64),
        ..Figure::of(
            &format!(
                "fleet: console RSS with every view visited, {n} clusters (floor: one cluster's; {})",
                all_rss.parts()
            ),
            Unit::Bytes,
            all_rss.total as f64,
            Target::RatioAtMost(target),
        )
    });
    figures.push(Figure {
        floor: Some(one_cpu.as_secs_f64()),
        ..Figure::of(
            &format!(
                "fleet: console CPU while each cluster makes {} pods, {n} clusters (floor: one cluster's console, every cluster churning)",
                opts.churn_pods
            ),
            Unit::Seconds,
            all_cpu.as_secs_f64(),
            Target::RatioAtMost(target),
        )
    });
    figures.push(Figure::compared(
        &format!(
            "fleet: the same, against the one-cluster console while only its cluster churns ({} pods; a shorter churn on a machine the other clusters leave idle)",
            opts.churn_pods
        ),
        Unit::Seconds,
        all_cpu.as_secs_f64(),
        Some(one_alone_cpu.as_secs_f64()),
    ));

    progress(started, "key press → frame, on the model");
    figures.extend(model_keys(opts, &kubeconfig, &members).await);
    progress(
        started,
        "key press → frame, on the terminal, one cluster stopped",
    );
    figures.extend(terminal_keys(opts, &berth_bin, &kubeconfig, &work, &all).await);

    let title = format!(
        "berth-bench --fleet {n}: {n} clusters × ({} Runtimes × {} replicas = {} pods, {} nodes); no agent (the floor's objects applied, pods Ready); total {:.0} s",
        size.runtimes,
        size.replicas,
        size.runtimes * size.replicas,
        opts.nodes,
        started.elapsed().as_secs_f64()
    );
    Report { title, figures }
}

/// The first complete Runtimes frame of a console on one cluster and on
/// all, each against its floor: each cluster's LIST alone (the slowest),
/// and every cluster's at once.
async fn first_frames(
    opts: &Options,
    berth: &Path,
    kubeconfig: &Path,
    work: &Path,
    all: &[&Member],
) -> Vec<Figure> {
    let samples = opts.samples.max(1);
    let (mut alone, mut at_once, mut one, mut fleet) = (vec![], vec![], vec![], vec![]);
    for _ in 0..samples {
        let mut slowest = Duration::ZERO;
        for m in all {
            let t = console::connecting_floor(&m.cluster.kubeconfig, runtimes_kinds()).await;
            slowest = slowest.max(t);
        }
        alone.push(slowest);
        let t = Instant::now();
        join_all(
            all.iter()
                .map(|m| console::connecting_floor(&m.cluster.kubeconfig, runtimes_kinds())),
        )
        .await;
        at_once.push(t.elapsed());
        for (args, into) in [(contexts(&all[..1]), &mut one), (contexts(all), &mut fleet)] {
            let (b, k, w) = (
                berth.to_path_buf(),
                kubeconfig.to_path_buf(),
                work.to_path_buf(),
            );
            into.push(
                tokio::task::spawn_blocking(move || {
                    console::first_runtimes_frame(&b, &k, &w, &args)
                })
                .await
                .expect("console thread"),
            );
        }
    }
    let n = all.len();
    let (alone, at_once) = (console::median(alone), console::median(at_once));
    vec![
        Figure::time(
            &format!(
                "fleet: first complete Runtimes frame, {n} clusters (floor: the slowest cluster's LIST alone; every cluster's at once {:.2} s; median of {samples})",
                at_once.as_secs_f64()
            ),
            console::median(fleet),
            Some(alone),
            Target::RatioAtMost(1.2),
        ),
        Figure::compared(
            "fleet: first complete Runtimes frame, one cluster (floor: the same slowest LIST alone)",
            Unit::Seconds,
            console::median(one).as_secs_f64(),
            Some(alone.as_secs_f64()),
        ),
    ]
}

/// A console on `members` with every view visited: its RSS, then the CPU
/// it spends while each of `churned` makes `churn_pods` pods (at once).
async fn memory_and_churn(
    opts: &Options,
    berth: &Path,
    kubeconfig: &Path,
    work: &Path,
    members: &[&Member],
    churned: &[&Member],
    started: Instant,
) -> (process::Rss, Duration) {
    let (b, k, w, args) = (
        berth.to_path_buf(),
        kubeconfig.to_path_buf(),
        work.to_path_buf(),
        contexts(members),
    );
    let tui = tokio::task::spawn_blocking(move || console::visit_all_with(&b, &k, &w, &args))
        .await
        .expect("console thread");
    let rss = process::rss(tui.pid).unwrap_or_default();
    if opts.churn_pods == 0 {
        return (rss, Duration::ZERO);
    }
    let cpu0 = process::cpu_time(tui.pid).unwrap_or_default();
    let churn = |m: &&Member| {
        let client = m.client.clone();
        let pods = opts.churn_pods;
        async move {
            let deps: Api<Deployment> = Api::namespaced(client.clone(), "default");
            deps.create(
                &PostParams::default(),
                &plain::deployment("fleet-churn", pods),
            )
            .await
            .expect("create churn");
            plain::until_ready(
                &deps,
                "fleet-churn",
                pods,
                Duration::from_millis(500),
                Duration::from_secs(900),
            )
            .await;
        }
    };
    let t = Instant::now();
    join_all(churned.iter().map(churn)).await;
    // The last events reach the console a moment after the last pod is
    // Ready: a settle of one frame interval's worth, alike for both.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let cpu = process::cpu_time(tui.pid)
        .unwrap_or_default()
        .saturating_sub(cpu0);
    progress(
        started,
        &format!(
            "console on {}: {:.2} s of CPU while {} churned ({:.0} s)",
            contexts(members),
            cpu.as_secs_f64(),
            contexts(churned),
            t.elapsed().as_secs_f64()
        ),
    );
    drop(tui);
    for m in churned {
        let deps: Api<Deployment> = Api::namespaced(m.client.clone(), "default");
        let _ = deps
            .delete("fleet-churn", &DeleteParams::foreground())
            .await;
    }
    // Gone before the next console counts its events.
    for m in churned {
        let deps: Api<Deployment> = Api::namespaced(m.client.clone(), "default");
        let t = Instant::now();
        while deps.get_opt("fleet-churn").await.ok().flatten().is_some()
            && t.elapsed() < Duration::from_secs(600)
        {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    (rss, cpu)
}

/// Key press → redrawn frame on the model, one cluster's store against
/// every cluster's merged.
async fn model_keys(opts: &Options, kubeconfig: &Path, members: &[Member]) -> Vec<Figure> {
    let base = ConnectOptions {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        context: None,
    };
    let mut conns = Vec::new();
    for m in members {
        conns.push(
            connect(&base.for_context(&m.name))
                .await
                .expect("connect the model"),
        );
    }
    let one = console::model_times(&mut console::model_app(&conns[0]).await, opts.presses);
    let fleet = console::model_times(&mut console::fleet_model_app(&conns).await, opts.presses);
    let n = members.len();
    vec![
        Figure::millis(
            &format!(
                "fleet model: key press → redrawn frame, {n} clusters merged (floor: one cluster's)"
            ),
            fleet.key_to_frame,
            Some(one.key_to_frame),
            Target::RatioAtMost(1.5),
        ),
        Figure::millis(
            &format!(
                "fleet model: of which a view switch (the view's stale parts rebuilt, each cluster's on a thread), {n} clusters (floor: one cluster's)"
            ),
            fleet.switch_to_frame,
            Some(one.switch_to_frame),
            Target::None,
        ),
        Figure::millis(
            &format!(
                "fleet model: of which a selection move (a redraw), {n} clusters (floor: one cluster's)"
            ),
            fleet.move_to_frame,
            Some(one.move_to_frame),
            Target::None,
        ),
        Figure::millis(
            &format!(
                "fleet model: watch event → rebuilt, redrawn frame, {n} clusters (floor: one cluster's)"
            ),
            fleet.event_to_frame,
            Some(one.event_to_frame),
            Target::None,
        ),
    ]
}

/// Key press → frame on the terminal, in a console on every cluster: with
/// every cluster up, then with the last one's apiserver stopped (started
/// again after).
async fn terminal_keys(
    opts: &Options,
    berth: &Path,
    kubeconfig: &Path,
    work: &Path,
    all: &[&Member],
) -> Vec<Figure> {
    let (b, k, w, args) = (
        berth.to_path_buf(),
        kubeconfig.to_path_buf(),
        work.to_path_buf(),
        contexts(all),
    );
    let presses = opts.presses.max(2);
    let tui: Console =
        tokio::task::spawn_blocking(move || console::visit_all_with(&b, &k, &w, &args))
            .await
            .expect("console thread");
    let (tui, up) = tokio::task::spawn_blocking(move || {
        let t = tui.key_to_frame(presses);
        (tui, t)
    })
    .await
    .expect("console thread");
    let stopped = &all[all.len() - 1];
    let control = |start: bool| {
        let c = &stopped.cluster;
        let done = tokio::task::block_in_place(|| {
            if start {
                c.start("kube-apiserver", Duration::from_secs(300))
            } else {
                c.stop("kube-apiserver", Duration::from_secs(120))
            }
        });
        if let Err(e) = done {
            panic!("the apiserver of {}: {e}", stopped.name);
        }
    };
    control(false);
    // Once the console says so (its rows dimmed, the others live).
    let (tui, down) = tokio::task::spawn_blocking(move || {
        tui.until_unreachable();
        let t = tui.key_to_frame(presses);
        (tui, t)
    })
    .await
    .expect("console thread");
    control(true);
    drop(tui);
    vec![Figure::millis(
        &format!(
            "fleet: key press → frame on the terminal, one of {} clusters' apiserver stopped (floor: all up; median of {presses})",
            all.len()
        ),
        down,
        Some(up),
        Target::RatioAtMost(1.5),
    )]
}
