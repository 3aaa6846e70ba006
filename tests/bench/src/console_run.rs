//! The console's part of a run: `berth get` and the TUI's first frames
//! against their LIST floors, its memory and CPU (idle and under churn),
//! and the model's key press → frame.

use std::path::Path;
use std::time::{Duration, Instant};

use berth_console::get::What;
use berth_console::model::{ListView, Screen};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::PostParams;
use kube::{Api, Client};

use super::figures::{CONSOLE_RSS_TARGET, growth_figures, rss_figure};
use super::table::{Figure, Target, Unit};
use super::{Options, console, plain, process, progress};
use berth_test_support::harness;

pub async fn console_figures(
    started: Instant,
    opts: &Options,
    client: &Client,
    kubeconfig: &Path,
    berth_bin: &Path,
    work: &Path,
) -> Vec<Figure> {
    let mut figures = Vec::new();
    // Each `berth get` and each first frame is the median of `--samples`,
    // every sample right after a floor of its own: a single sample of a
    // few-second figure swings across its target between runs of the same
    // binary, and floor and figure taken in turn share the machine's drift.
    let n = opts.samples.max(1);
    // `berth get` against the parallel LIST of what it shows.
    for (what, kinds) in [
        ("runtimes", What::Runtimes),
        ("handlers", What::Handlers),
        ("retained", What::Retained),
        ("rollouts", What::Rollouts),
    ] {
        let (mut floors, mut took) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut warm = Vec::with_capacity(n);
        for _ in 0..n {
            warm.push(console::get_floor(client, kinds).await);
            floors.push(console::connecting_floor(kubeconfig, kinds.kinds()).await);
            let (b, k) = (berth_bin.to_path_buf(), kubeconfig.to_path_buf());
            let w = what.to_string();
            took.push(
                tokio::task::spawn_blocking(move || console::berth_get(&b, &k, &w))
                    .await
                    .expect("berth get"),
            );
        }
        figures.push(Figure::time(
            &format!(
                "console: `berth get {what} -A`{} (floor connects; {})",
                of_samples(n),
                warm_floor(warm)
            ),
            console::median(took),
            Some(console::median(floors)),
            Target::RatioAtMost(1.5),
        ));
    }

    // The TUI: first complete frame of each view, against its LIST floor.
    for (key, view) in console::TABS {
        let (mut floors, mut took) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut warm = Vec::with_capacity(n);
        let connects = view == ListView::Runtimes;
        for _ in 0..n {
            // The Runtimes frame is a new console's first: its floor
            // connects as that console does. The others follow a key
            // press in a console already connected.
            warm.push(console::list_floor(client, view).await);
            if connects {
                let kinds = Screen::List(view).kinds();
                floors.push(console::connecting_floor(kubeconfig, kinds).await);
            }
            let (b, k, w) = (
                berth_bin.to_path_buf(),
                kubeconfig.to_path_buf(),
                work.to_path_buf(),
            );
            took.push(
                tokio::task::spawn_blocking(move || console::first_frame(&b, &k, &w, key, view))
                    .await
                    .expect("console thread"),
            );
        }
        let (floor, name) = if connects {
            let n = format!(" (floor connects; {})", warm_floor(warm));
            (console::median(floors), n)
        } else {
            (console::median(warm), String::new())
        };
        figures.push(Figure::time(
            &format!(
                "console: first complete {} frame{}{name}",
                view.title(),
                of_samples(n)
            ),
            console::median(took),
            Some(floor),
            Target::RatioAtMost(1.2),
        ));
    }
    let (b, k, w) = (
        berth_bin.to_path_buf(),
        kubeconfig.to_path_buf(),
        work.to_path_buf(),
    );
    let tui = tokio::task::spawn_blocking(move || console::visit_all(&b, &k, &w))
        .await
        .expect("console thread");
    let rss = process::rss(tui.pid).unwrap_or_default();
    figures.push(rss_figure(
        "console: RSS with every view visited",
        rss,
        CONSOLE_RSS_TARGET,
    ));
    figures.extend(growth_figures(
        "console",
        "every view visited",
        rss,
        opts.runtimes,
        opts.runtimes * opts.replicas,
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
        let dep = plain::deployment("churn", opts.churn_pods);
        let cpu0 = process::cpu_time(tui.pid).unwrap_or_default();
        let t = Instant::now();
        deps.create(&PostParams::default(), &dep)
            .await
            .expect("create churn");
        // Measured until every churn pod is Ready, or for at most 900 s.
        plain::until_ready(
            &deps,
            "churn",
            opts.churn_pods,
            Duration::from_millis(500),
            Duration::from_secs(900),
        )
        .await;
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
    let mut app = console::model_app(&conn).await;
    // Its own line, so that a profiler can be attached to this phase alone.
    progress(
        started,
        &format!(
            "console model: timing {} key presses and watch events",
            opts.presses
        ),
    );
    let times = console::model_times(&mut app, opts.presses);
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
    for (view, took) in &times.event_to_frame_by_view {
        figures.push(Figure::millis(
            &format!("console model: watch event → rebuilt {view} frame (median)"),
            *took,
            Some(times.redraw_floor),
            Target::AtMost(50.0),
        ));
    }
    figures
}

/// How a median row says how many samples it took (nothing for one).
fn of_samples(n: usize) -> String {
    if n > 1 {
        format!(" (median of {n})")
    } else {
        String::new()
    }
}

/// The older floor of a row whose floor now connects, for comparison with
/// earlier runs: the median of a LIST on the bench's connected client.
fn warm_floor(warm: Vec<Duration>) -> String {
    format!(
        "on a connected client {:.2} s",
        console::median(warm).as_secs_f64()
    )
}
