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
        no_console: false,
        floor_pods: true,
        profile: false,
        // The hold path runs too (it prints the table and waits).
        hold_seconds: 1,
        // The peers are built only by hand (README "Benchmark").
        peers: false,
    };
    let report = bench::run(&opts).await;
    println!("{}", report.render());
    for name in [
        "agent: every Runtime observed",
        "agent: every Runtime Ready",
        "agent: writes in 10 s idle",
        "agent: writes in the idle window",
        "agent: RSS after convergence",
        "agent: class deletion reaches",
        "console: `berth get runtimes -A`",
        "console: `berth get rollouts -A`",
        "console: first complete Runtimes frame",
        "console: first complete Retained frame",
        "console: RSS with every view visited",
        "console: CPU while idle",
        "console: CPU while 20 other pods",
        "console model: key press",
        "console model: watch event",
    ] {
        let f = report
            .figure(name)
            .unwrap_or_else(|| panic!("no figure {name:?} in\n{}", report.render()));
        assert!(f.measured.is_finite() && f.measured >= 0.0, "{name}: {f:?}");
    }
    for ratio in ["agent: every Runtime observed", "console: first complete"] {
        assert!(
            report.figure(ratio).and_then(|f| f.ratio()).is_some(),
            "{ratio} has a floor measured in the same run"
        );
    }
    assert!(
        report
            .figure("agent: RSS after convergence")
            .is_some_and(|f| f.measured > 1e6),
        "the agent's RSS was read from /proc"
    );
    // Where the CPU went: the control plane's processes were found by
    // their command lines, each with a floor-window share.
    for component in ["kube-apiserver", "etcd", "berth-agent"] {
        let name =
            format!("cpu while the agent converged (floor: while the floor ran): {component}");
        let f = report
            .figure(&name)
            .unwrap_or_else(|| panic!("no figure {name:?} in\n{}", report.render()));
        assert!(f.measured > 0.0, "{name}: {f:?}");
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
