//! The benchmark at a small size, as a smoke test: every figure is
//! measured and printed; no time is asserted (these machines are noisy),
//! only what is a contract at any size — no writes at rest.

use berth_tests::bench::{self, Options};

#[tokio::test]
async fn bench_smoke_measures_every_figure_at_a_small_size() {
    let opts = Options {
        runtimes: 12,
        replicas: 1,
        nodes: 3,
        granted: 4,
        classes: 2,
        concurrency: 4,
        resync_seconds: 300,
        idle_resync_seconds: 4,
        ready_timeout_seconds: 600,
        idle_seconds: 10,
        console_idle_seconds: 3,
        churn_pods: 20,
        presses: 5,
        // The median path runs too.
        samples: 2,
        no_console: false,
        floor_paused: false,
        profile: false,
        // The hold path runs too (it prints the table and waits).
        hold_seconds: 1,
        // The peers are built only by hand (docs/benchmark.md, "The peers").
        peers: false,
        // A profile window (30 s) outlasts the smoke's phases: by hand only.
        profile_apiserver: false,
        fleet: 0,
        // The canary scheduler runs on the world's kwok nodes (it skips
        // each as simulated), with its shortest period, inside the idle
        // window: writes at rest stay 0 with canaries on (issue 53).
        canaries: true,
        canary_period_seconds: 10,
        // The canary-cost phase: windows off, on with a budget, on
        // without, the canaries running on the kwok nodes (their pods
        // completed by kwok's pod-complete Stage).
        canary_budget_per_hour: "3600".into(),
        canary_window_seconds: 20,
    };
    let report = bench::run(&opts).await;
    println!("{}", report.render());
    for name in [
        "agent: every Runtime observed",
        "agent: every Runtime Ready",
        "agent: writes in 10 s idle",
        "agent: writes in the idle window",
        "agent: RSS after convergence",
        "agent: RSS per 1,000 Runtimes",
        "agent: RSS per 1,000 pods",
        "agent: class deletion reaches",
        "console: `berth get runtimes -A`",
        "console: `berth get rollouts -A`",
        "console: first complete Runtimes frame",
        "console: first complete Retained frame",
        "console: RSS with every view visited",
        "console: RSS per 1,000 Runtimes",
        "console: RSS per 1,000 pods",
        "console: CPU while idle",
        "console: CPU while 20 other pods",
        "console model: key press",
        "console model: watch event",
        "agent: canary Jobs created",
        "agent: canary Jobs per hour",
        "canary cost: canaries off: agent CPU s",
        "canary cost: canaries on, budget 3600/h: canary Jobs created",
        "canary cost: canaries on, budget 3600/h: apiserver writes per canary",
        "canary cost: canaries on, no budget: canary Jobs an hour",
        "canary cost: canaries on, no budget: agent CPU s",
    ] {
        let f = figure(&report, name);
        assert!(f.measured.is_finite() && f.measured >= 0.0, "{name}: {f:?}");
    }
    // Both convergence figures against a floor that did the same work
    // (its pods made, then Ready), measured in the same run.
    for ratio in [
        "agent: every Runtime observed",
        "agent: every Runtime Ready",
        "console: first complete",
    ] {
        let r = report.figure(ratio).and_then(|f| f.ratio());
        assert!(
            r.is_some_and(f64::is_finite),
            "{ratio} has a floor measured in the same run: {r:?}\n{}",
            report.render()
        );
    }
    assert!(
        report
            .figure("agent: RSS after convergence")
            .is_some_and(|f| f.measured > 1e6),
        "the agent's RSS was read from /proc"
    );
    // Each agent RSS figure carries jemalloc's split of it, scraped from
    // the agent's own /metrics at the same moment.
    for name in [
        "agent: RSS after convergence, the moment",
        "agent: RSS after convergence, 10 s later",
        "agent: RSS after the idle window",
    ] {
        let f = figure(&report, name);
        assert!(
            f.name.contains("jemalloc: live ") && f.measured > 1e6,
            "{f:?}"
        );
    }
    // Where the CPU went in each phase: the control plane's processes
    // were found by their command lines, each with its share in the
    // floor's same phase.
    for phase in ["every Runtime observed", "every Runtime Ready"] {
        for component in ["kube-apiserver", "etcd", "berth-agent"] {
            let name = format!("cpu, agent start → {phase} (floor: ");
            let f = report
                .figures
                .iter()
                .find(|f| f.name.starts_with(&name) && f.name.ends_with(&format!(": {component}")))
                .unwrap_or_else(|| {
                    panic!("no figure {name:?}…{component} in\n{}", report.render())
                });
            assert!(f.measured > 0.0, "{}: {f:?}", f.name);
            if component != "berth-agent" {
                assert!(f.floor.is_some_and(|v| v > 0.0), "{}: {f:?}", f.name);
            }
        }
    }
    // Canaries ran on the kwok nodes, and Jobs completed (else the pair
    // would stay running and none would follow within the window).
    for run in ["budget 3600/h", "no budget"] {
        let f = figure(
            &report,
            &format!("canary cost: canaries on, {run}: canary Jobs created"),
        );
        assert!(f.measured >= 1.0, "{f:?}\n{}", report.render());
        // Besides the canaries' own writes, the agent wrote nothing.
        let f = figure(
            &report,
            &format!("canary cost: canaries on, {run}: agent writes besides the canaries'"),
        );
        assert_eq!(f.measured, 0.0, "{}", report.render());
    }
    // A contract at every size, counted by the apiserver.
    assert_eq!(
        report
            .figure("agent: writes in 10 s idle")
            .map(|f| f.measured),
        Some(0.0),
        "{}",
        report.render()
    );
}

/// `berth-bench --fleet` at a small size: two clusters, every figure
/// measured against its floor (one cluster's, or the slowest cluster's
/// LIST), one cluster's apiserver stopped and started again on the way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_bench_smoke_measures_every_figure_at_a_small_size() {
    let opts = Options {
        runtimes: 6,
        replicas: 1,
        nodes: 2,
        granted: 2,
        classes: 1,
        concurrency: 4,
        resync_seconds: 300,
        idle_resync_seconds: 4,
        ready_timeout_seconds: 600,
        idle_seconds: 10,
        console_idle_seconds: 3,
        churn_pods: 6,
        presses: 4,
        samples: 1,
        no_console: false,
        floor_paused: false,
        profile: false,
        hold_seconds: 0,
        peers: false,
        profile_apiserver: false,
        fleet: 2,
        // No agent runs in the fleet's clusters.
        canaries: false,
        canary_period_seconds: 600,
        canary_budget_per_hour: "360".into(),
        canary_window_seconds: 300,
    };
    let report = bench::fleet::run(&opts).await;
    println!("{}", report.render());
    for name in [
        "fleet: first complete Runtimes frame, 2 clusters",
        "fleet: first complete Runtimes frame, one cluster",
        "fleet: console RSS with every view visited, 2 clusters",
        "fleet: console CPU while each cluster makes 6 pods",
        "fleet: the same, against the one-cluster console while only its cluster churns",
        "fleet model: key press",
        "fleet model: of which a view switch",
        "fleet model: of which a selection move",
        "fleet model: watch event",
        "fleet: key press → frame on the terminal, one of 2",
    ] {
        let f = figure(&report, name);
        assert!(
            f.measured.is_finite() && f.measured > 0.0 && f.ratio().is_some_and(f64::is_finite),
            "{name}: {f:?}\n{}",
            report.render()
        );
    }
}

/// The figure whose name starts with `name`; fails the test, with the
/// whole table, when there is none.
fn figure<'a>(report: &'a bench::Report, name: &str) -> &'a bench::table::Figure {
    report
        .figure(name)
        .unwrap_or_else(|| panic!("no figure {name:?} in\n{}", report.render()))
}
