//! With `--canaries`: what canaries cost at this size (issue 53). One real
//! node cannot carry S, and kwok's nodes are skipped as simulated, so the
//! agents of this phase run canaries on them too
//! (`--canary-attest-simulated-nodes-for-benchmark`; kwok's own
//! `pod-complete` Stage ends a Job's pods Succeeded a few seconds after
//! they are Ready, so each canary Job completes as on a real node, minus
//! the container's own run).
//!
//! Three windows of the same length on the converged world, each with an
//! agent of its own started after a warm-up: canaries off (the floor of
//! this phase: what the idle world costs), on with the budget, and on
//! without one. For each: the canary Jobs created (the agent's count and
//! the apiserver's `POST jobs`), extrapolated to an hour against what the
//! budget predicts, the apiserver's writes (`apiserver_request_total`,
//! Lease renewals left out) and the agent's CPU; the writes each canary
//! costs are the window's writes less the off window's, per Job. And the
//! agent's writes at rest besides the canaries': none.

use std::path::Path;
use std::time::Duration;

use super::agent_world::AgentWorld;
use super::table::{Figure, Target, Unit};
use super::{cpu, process, progress, requests};

/// What one window measured.
struct Window {
    /// The agent's own count of canary Jobs it created.
    jobs: f64,
    /// The apiserver's requests.
    requests: requests::Sample,
    /// The agent's CPU seconds.
    cpu_seconds: f64,
    /// The window's length.
    wall: Duration,
    /// The effective period and the pairs, as the agent's metrics say.
    pace: (f64, f64),
}

/// How the agent of a window runs canaries.
#[derive(Clone, Copy)]
enum Canaries<'a> {
    Off,
    On { budget: &'a str },
}

impl Canaries<'_> {
    fn label(&self) -> String {
        match self {
            Canaries::Off => "canaries off".into(),
            Canaries::On { budget } if *budget == "unlimited" => "canaries on, no budget".into(),
            Canaries::On { budget } => format!("canaries on, budget {budget}/h"),
        }
    }
}

/// Starts an agent as `canaries` says, waits until it leads and has
/// reconciled every Runtime once, lets it warm up (half a window, at most a
/// minute), then measures a window.
/// Returns the window and the agent, still running.
async fn window(
    w: &AgentWorld<'_>,
    grants: &Path,
    canaries: Canaries<'_>,
    name: &str,
) -> (Window, process::AgentProcess) {
    let opts = w.opts;
    let mut agent = process::AgentProcess::start(process::AgentRun {
        binary: w.agent_bin,
        kubeconfig: w.kubeconfig,
        grants,
        log: w.work.join(format!("agent-canaries-{name}.log")),
        resync_seconds: opts.resync_seconds,
        concurrency: opts.concurrency,
        profile_dir: None,
        canary_period: matches!(canaries, Canaries::On { .. })
            .then_some(opts.canary_period_seconds),
        canary_budget: match canaries {
            Canaries::On { budget } => Some(budget.to_string()),
            Canaries::Off => None,
        },
        canaries_on_simulated_nodes: matches!(canaries, Canaries::On { .. }),
    });
    agent
        .await_first_pass(
            w.size.runtimes,
            true,
            &format!("the agent ({})", canaries.label()),
        )
        .await;
    // The canaries' first burst and the first pass's tail.
    tokio::time::sleep(Duration::from_secs(
        (opts.canary_window_seconds / 2).min(60),
    ))
    .await;
    progress(
        w.started,
        &format!(
            "canary cost: {} for {} s",
            canaries.label(),
            opts.canary_window_seconds
        ),
    );
    let m0 = agent.metrics().await;
    let c0 = cpu::sample(w.cluster_dir, Some(agent.pid()));
    let r0 = requests::sample(w.client).await;
    tokio::time::sleep(Duration::from_secs(opts.canary_window_seconds)).await;
    let m1 = agent.metrics().await;
    let c1 = cpu::sample(w.cluster_dir, Some(agent.pid()));
    let r1 = requests::sample(w.client).await;
    let usage = cpu::usage(&c0, &c1);
    let cores = usage.cores.get("berth-agent").copied().unwrap_or_default();
    let window = Window {
        jobs: process::canaries_started(&m1) - process::canaries_started(&m0),
        requests: requests::delta(&r0, &r1),
        cpu_seconds: cores * usage.wall.as_secs_f64(),
        wall: usage.wall,
        pace: process::canary_pace(&m1),
    };
    (window, agent)
}

/// Writes the apiserver was sent, Lease renewals (every node's heartbeat,
/// the agents' leader election) left out.
fn writes(s: &requests::Sample) -> f64 {
    s.writes_where(|key| !key.ends_with(" leases"))
}

/// Of the writes, those of the kinds the agent writes
/// (`harness::agent_kind_write`'s kinds) that are not a canary's: every
/// write to Runtimes and their workloads (Events left out: the scheduler
/// and the job controller write them about canary pods too), less the canary Jobs
/// creation and the RuntimeGrants' status that publishes their verdicts.
fn agent_writes_besides_canaries(s: &requests::Sample) -> f64 {
    s.writes_where(|key| {
        let (verb, resource) = key.split_once(' ').unwrap_or(("", key));
        let agent_kind = [
            "runtimes",
            "runtimes/status",
            "runtimegrants",
            "runtimegrants/status",
            "configmaps",
            "serviceaccounts",
            "services",
            "deployments",
            "poddisruptionbudgets",
            "networkpolicies",
            "horizontalpodautoscalers",
            "jobs",
            "cronjobs",
        ]
        .contains(&resource);
        let canary = (verb == "POST" && resource == "jobs") || resource == "runtimegrants/status";
        agent_kind && !canary
    })
}

fn per_hour(n: f64, wall: Duration) -> f64 {
    n * 3600.0 / wall.as_secs_f64().max(1.0)
}

/// Runs the three windows (the agent `previous` is stopped first); returns
/// the figures and the last window's agent, still running.
pub async fn figures(
    w: &AgentWorld<'_>,
    grants: &Path,
    previous: process::AgentProcess,
) -> (Vec<Figure>, process::AgentProcess) {
    drop(previous);
    let opts = w.opts;
    let budget = opts.canary_budget_per_hour.as_str();
    let (off, agent) = window(w, grants, Canaries::Off, "off").await;
    drop(agent);
    let mut runs = vec![(Canaries::On { budget }, "budget")];
    if budget != "unlimited" {
        runs.push((
            Canaries::On {
                budget: "unlimited",
            },
            "unlimited",
        ));
    }
    let mut figures = vec![
        Figure::of(
            &format!(
                "canary cost: {}: agent CPU s in {} s",
                Canaries::Off.label(),
                off.wall.as_secs()
            ),
            Unit::Count,
            off.cpu_seconds,
            Target::None,
        ),
        Figure::of(
            &format!(
                "canary cost: {}: apiserver writes an hour (Leases left out)",
                Canaries::Off.label()
            ),
            Unit::Count,
            per_hour(writes(&off.requests), off.wall),
            Target::None,
        ),
    ];
    let mut last = None;
    for (canaries, name) in runs {
        drop(last.take());
        let (on, agent) = window(w, grants, canaries, name).await;
        last = Some(agent);
        figures.extend(window_figures(
            &canaries,
            &on,
            &off,
            opts.canary_period_seconds,
        ));
    }
    (figures, last.expect("an agent with canaries"))
}

/// One canaries-on window's rows, against the off window.
fn window_figures(canaries: &Canaries<'_>, on: &Window, off: &Window, period: u64) -> Vec<Figure> {
    let label = canaries.label();
    let (effective, pairs) = on.pace;
    let server_jobs = on.requests.get("POST jobs");
    let extra_writes = (writes(&on.requests)
        - writes(&off.requests) * on.wall.as_secs_f64() / off.wall.as_secs_f64().max(1.0))
    .max(0.0);
    let predicted = match canaries {
        Canaries::On { budget } => match budget.parse::<f64>() {
            Ok(b) => format!(
                "the budget allows {b:.0}; the period alone wants {:.0}",
                pairs * 3600.0 / period.max(1) as f64
            ),
            Err(_) => format!(
                "no budget: the period wants {:.0} (pairs × 3600 / {period} s), --canary-max-active bounds it",
                pairs * 3600.0 / period.max(1) as f64
            ),
        },
        Canaries::Off => String::new(),
    };
    vec![
        Figure::of(
            &format!(
                "canary cost: {label}: canary Jobs created in {} s (agent's count; apiserver POST jobs {server_jobs:.0}; {pairs:.0} pairs, effective period {effective:.0} s)",
                on.wall.as_secs()
            ),
            Unit::Count,
            on.jobs,
            Target::None,
        ),
        Figure::of(
            &format!("canary cost: {label}: canary Jobs an hour, extrapolated ({predicted})"),
            Unit::Count,
            per_hour(on.jobs, on.wall),
            Target::None,
        ),
        Figure::of(
            &format!(
                "canary cost: {label}: apiserver writes per canary (the window's writes less the off window's, per Job)"
            ),
            Unit::Count,
            extra_writes / on.jobs.max(1.0),
            Target::None,
        ),
        Figure::of(
            &format!("canary cost: {label}: apiserver writes an hour for canaries"),
            Unit::Count,
            per_hour(extra_writes, on.wall),
            Target::None,
        ),
        Figure::compared(
            &format!("canary cost: {label}: agent CPU s in the window (floor: canaries off)"),
            Unit::Count,
            on.cpu_seconds,
            Some(off.cpu_seconds),
        ),
        Figure::of(
            &format!(
                "canary cost: {label}: agent writes besides the canaries' (Jobs created, grant status), apiserver_request_total"
            ),
            Unit::Count,
            agent_writes_besides_canaries(&on.requests),
            Target::AtMost(0.0),
        ),
    ]
}
