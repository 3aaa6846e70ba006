//! The agent's part of a run: convergence (every Runtime observed, then
//! every Runtime Ready) against the floor's two figures, the CPU of each
//! phase, an idle window with no writes, its memory, and a RuntimeClass
//! deletion reaching the Runtimes' status.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::node::v1::RuntimeClass;
use kube::Api;
use kube::api::DeleteParams;

use super::agent_world::AgentWorld;
use super::figures::{agent_rss_figure, cpu_figures, growth_figures};
use super::floor::Floor;
use super::table::{Figure, Target, Unit};
use super::wait::{Reached, has_condition, observed, until_runtimes, until_runtimes_or_count};
use super::world;
use super::{apiserver_profile, canary_cost, cpu, process, progress, requests};
use berth_test_support::harness;

/// The agent's figures, and the (restarted) agent still running, with
/// its grants file (for `--hold-seconds`).
pub struct AgentOutcome {
    pub figures: Vec<Figure>,
    pub agent: process::AgentProcess,
    pub grants: PathBuf,
}

pub async fn agent_figures(w: &AgentWorld<'_>, floor: &Floor) -> AgentOutcome {
    let (started, opts, client) = (w.started, w.opts, w.client);
    // The agent, cluster-wide as in production.
    harness::TestNamespace::create(client.clone(), "berth-system".into(), &[]).await;
    let grants = world::write_grants(&w.work.join("grants"), w.plan).expect("grants file");
    let mut agent = process::AgentProcess::start(process::AgentRun {
        binary: w.agent_bin,
        kubeconfig: w.kubeconfig,
        grants: &grants,
        log: w.work.join("agent.log"),
        resync_seconds: opts.resync_seconds,
        concurrency: opts.concurrency,
        profile_dir: opts.profile.then(|| w.work.to_path_buf()),
        canary_period: opts.canaries.then_some(opts.canary_period_seconds),
        canary_budget: None,
        canaries_on_simulated_nodes: false,
    });
    let agent_started = Instant::now();
    let agent_cpu0 = cpu::sample(w.cluster_dir, Some(agent.pid()));
    let requests0 = requests::sample(client).await;
    let profiling = (opts.profile_apiserver && floor.ready.is_some())
        .then(|| apiserver_profile::start(client, w.cluster_dir, "agent"));
    progress(
        started,
        "agent started; waiting until every Runtime is observed",
    );
    let converge = until_runtimes(
        client,
        "Runtimes observed",
        agent_started,
        Duration::from_secs(3600),
        &[],
        observed,
    )
    .await;
    let cpu_observed = cpu::usage(&agent_cpu0, &cpu::sample(w.cluster_dir, Some(agent.pid())));
    // How much work convergence took (the agent's own count: a diagnostic,
    // not evidence of writes).
    let converge_reconciles = process::reconciles(&agent.metrics().await);
    if opts.profile {
        process::profile_report(&agent, w.work).await;
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
    let answer = until_runtimes_or_count(
        client,
        agent_started,
        Duration::from_secs(opts.ready_timeout_seconds),
        &[],
        |r| has_condition(r, "Ready", "True"),
    )
    .await;
    let cpu_ready = cpu::usage(&agent_cpu0, &cpu::sample(w.cluster_dir, Some(agent.pid())));
    let requests_ready = requests::delta(&requests0, &requests::sample(client).await);
    let profile_ready = match profiling {
        Some(p) => p.finish(w.cluster_dir).await,
        None => None,
    };
    let ready = Reached::from(agent_started, answer);
    if let Some((done, total)) = ready.short_of {
        progress(
            started,
            &format!("only {done} of {total} Runtimes Ready; going on"),
        );
    }
    let agent_rss = process::rss(agent.pid()).unwrap_or_default();
    let agent_metrics = agent.metrics().await;
    // The allocator hands freed pages back over about ten seconds
    // (jemalloc's dirty decay, run by its background thread): what the
    // converged agent still holds once that has run, before it is stopped.
    let settle_seconds = opts.idle_seconds.min(30);
    tokio::time::sleep(Duration::from_secs(settle_seconds)).await;
    let agent_rss_settled = process::rss(agent.pid()).unwrap_or_default();
    let agent_metrics_settled = agent.metrics().await;

    // The idle window needs resyncs, so many that at scale they would crowd
    // out convergence: a second agent, with the resync forced short, is
    // started on the converged world. Its first pass over every Runtime
    // (a restart) must write nothing either, and so must its resyncs.
    drop(agent);
    let mut agent = process::AgentProcess::start(process::AgentRun {
        binary: w.agent_bin,
        kubeconfig: w.kubeconfig,
        grants: &grants,
        log: w.work.join("agent-idle.log"),
        resync_seconds: opts.idle_resync_seconds,
        concurrency: opts.concurrency,
        profile_dir: None,
        canary_period: opts.canaries.then_some(opts.canary_period_seconds),
        canary_budget: None,
        canaries_on_simulated_nodes: false,
    });
    progress(
        started,
        &format!(
            "agent restarted with resync {} s; waiting for its first pass",
            opts.idle_resync_seconds
        ),
    );
    agent
        .await_first_pass(w.size.runtimes, false, "the restarted agent")
        .await;
    progress(started, "idle window");
    tokio::time::sleep(Duration::from_secs(opts.idle_resync_seconds)).await;
    let m0 = agent.metrics().await;
    let s0 = harness::apiserver_requests(client, harness::agent_kind_write).await;
    tokio::time::sleep(Duration::from_secs(opts.idle_seconds)).await;
    let m1 = agent.metrics().await;
    let s1 = harness::apiserver_requests(client, harness::agent_kind_write).await;
    let idle_reconciles = process::reconciles(&m1) - process::reconciles(&m0);
    let idle_agent_writes = process::writes(&m1) - process::writes(&m0);
    let idle_server_writes = s1 - s0;
    let agent_rss_idle = process::rss(agent.pid()).unwrap_or_default();

    let class_deletion = class_deletion(w).await;

    let pods = w.size.runtimes * w.size.replicas;
    let mut figures = vec![
        Figure::time(
            &format!(
                "agent: every Runtime observed, from agent start ({converge_reconciles} reconciles{})",
                if floor.paused {
                    "; the floor's Deployments paused: no pods"
                } else {
                    ""
                }
            ),
            converge,
            Some(floor.applied),
            Target::RatioAtMost(1.3),
        ),
        // Runtime Ready=True needs its Deployment's rollout complete
        // (every replica updated, Ready and available, the generation
        // observed) and Available; the floor waits for exactly that on
        // its Deployments (`wait::rolled_out`, the same shared functions),
        // so both rows end when the same pods are running.
        Figure::time(
            &ready_label(&ready, floor.ready.as_ref()),
            ready.took,
            floor.ready.map(|r| r.took),
            Target::RatioAtMost(1.1),
        ),
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
        agent_rss_figure(
            "agent: RSS after convergence, the moment every Runtime is Ready",
            agent_rss,
            &agent_metrics,
        ),
        agent_rss_figure(
            &format!("agent: RSS after convergence, {settle_seconds} s later"),
            agent_rss_settled,
            &agent_metrics_settled,
        ),
        agent_rss_figure(
            "agent: RSS after the idle window, restarted agent",
            agent_rss_idle,
            &m1,
        ),
    ];
    figures.extend(growth_figures(
        "agent",
        "after convergence",
        agent_rss,
        w.size.runtimes,
        pods,
    ));
    figures.extend(cpu_figures(
        "agent start → every Runtime observed (floor: start → everything applied)",
        &cpu_observed,
        Some(&floor.cpu_applied),
    ));
    figures.extend(cpu_figures(
        "agent start → every Runtime Ready (floor: start → every pod Ready)",
        &cpu_ready,
        floor.cpu_ready.as_ref(),
    ));
    figures.extend(requests::request_figures(
        "agent start → every Runtime Ready (floor: start → every pod Ready)",
        &requests_ready,
        floor.requests_ready.as_ref(),
    ));
    if let Some(profile) = &profile_ready {
        figures.extend(apiserver_profile::figures(
            "agent start → every Runtime Ready (floor: start → every pod Ready)",
            profile,
            floor.profile_ready.as_ref(),
        ));
    }
    figures.extend(class_deletion);
    if opts.canaries {
        figures.extend(canary_figures(
            opts.canary_period_seconds,
            &agent_metrics_settled,
            &m1,
        ));
        let (cost, last) = canary_cost::figures(w, &grants, agent).await;
        figures.extend(cost);
        agent = last;
    }
    AgentOutcome {
        figures,
        agent,
        grants,
    }
}

/// With `--canaries`: the canary Jobs both agents created (the one that
/// converged, counted when it stopped, and the restarted one, at the idle
/// window's end), and the Jobs per hour the period gives for the pairs
/// that can run one (verified or failing: a skipped pair, such as every
/// kwok node, is unverified and runs none).
fn canary_figures(period: u64, converged: &str, restarted: &str) -> Vec<Figure> {
    let started = process::canaries_started(converged) + process::canaries_started(restarted);
    let [verified, failing, unverified] =
        ["verified", "failing", "unverified"].map(|s| process::handler_nodes(restarted, s));
    vec![
        Figure::of(
            &format!(
                "agent: canary Jobs created, both agents (their own count; (class, node) pairs at the end: {verified} verified, {failing} failing, {unverified} unverified)"
            ),
            Unit::Count,
            started,
            Target::None,
        ),
        Figure::of(
            &format!(
                "agent: canary Jobs per hour at period {period} s ((verified + failing) pairs × 3600 / period)"
            ),
            Unit::Count,
            (verified + failing) * 3600.0 / period.max(1) as f64,
            Target::None,
        ),
    ]
}

/// The Ready row's name: what it measures, and whether the agent's or the
/// floor's wait timed out (its time is then the timeout's: a lower bound).
fn ready_label(agent: &Reached, floor: Option<&Reached>) -> String {
    let mut label = match agent.short_of {
        None => "agent: every Runtime Ready (pods running), from agent start".to_string(),
        Some((done, total)) => format!(
            "agent: NOT every Runtime Ready: {done} of {total} (pods running) at the timeout, from agent start"
        ),
    };
    match floor {
        None => label.push_str("; no floor (--floor-paused)"),
        Some(Reached {
            short_of: Some((done, total)),
            ..
        }) => label.push_str(&format!(
            "; floor NOT every pod Ready: {done} of {total} Deployments at the timeout"
        )),
        Some(_) => {}
    }
    label
}

/// Deletes a RuntimeClass some Runtimes are granted and times until
/// every one of them says so in its status.
async fn class_deletion(w: &AgentWorld<'_>) -> Option<Figure> {
    progress(w.started, "deleting a RuntimeClass");
    let class = world::class_name(0);
    let affected: Vec<(String, String)> = w
        .plan
        .iter()
        .filter(|p| p.grant.as_ref().is_some_and(|g| g.1 == class))
        .map(|p| (p.namespace.clone(), p.name.clone()))
        .collect();
    if affected.is_empty() {
        return None;
    }
    Api::<RuntimeClass>::all(w.client.clone())
        .delete(&class, &DeleteParams::default())
        .await
        .expect("delete a RuntimeClass");
    let t = Instant::now();
    let took = until_runtimes(
        w.client,
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
    .await;
    Some(Figure::time(
        &format!(
            "agent: class deletion reaches all {} affected Runtimes' status",
            affected.len()
        ),
        took,
        None,
        Target::None,
    ))
}
