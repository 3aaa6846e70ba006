//! Figures made from process measurements: resident memory against its
//! target and per size of the world, and where the CPU went against the
//! floor's run.

use super::table::{Figure, Target, Unit};
use super::{cpu, process};

/// The agent's resident-memory target.
pub const AGENT_RSS_TARGET: f64 = 80e6;
/// The console's resident-memory target.
pub const CONSOLE_RSS_TARGET: f64 = 150e6;

/// A resident-memory figure: the total against `target`, its parts in the
/// name (how much of it is data, how much the binary's code).
pub fn rss_figure(name: &str, rss: process::Rss, target: f64) -> Figure {
    Figure::of(
        &format!("{name} ({})", rss.parts()),
        Unit::Bytes,
        rss.total as f64,
        Target::AtMost(target),
    )
}

/// The agent's resident memory with jemalloc's account of it, read from
/// the agent's `/metrics` (`berth_agent_allocator_bytes`) at the same
/// moment: which part of a miss is live data and which the allocator's.
pub fn agent_rss_figure(name: &str, rss: process::Rss, metrics: &str) -> Figure {
    match allocator_parts(metrics) {
        Some(parts) => rss_figure(&format!("{name}; {parts}"), rss, AGENT_RSS_TARGET),
        None => rss_figure(name, rss, AGENT_RSS_TARGET),
    }
}

/// "jemalloc: live A + fragmentation F + not yet returned R + metadata M
/// MB", from the agent's allocator gauges; `None` when it exports none
/// (an agent built with glibc's malloc).
pub fn allocator_parts(metrics: &str) -> Option<String> {
    let bytes = |state: &str| {
        let label = format!("state=\"{state}\"");
        metrics
            .contains(&format!("berth_agent_allocator_bytes{{{label}}}"))
            .then(|| {
                process::metric_sum(metrics, "berth_agent_allocator_bytes", |l| l == label) as u64
            })
    };
    let allocated = bytes("allocated")?;
    let active = bytes("active")?;
    let resident = bytes("resident")?;
    let metadata = bytes("metadata")?;
    let mb = |b: u64| b / 1_000_000;
    Some(format!(
        "jemalloc: live {} + fragmentation {} + not yet returned {} + metadata {} MB",
        mb(allocated),
        mb(active.saturating_sub(allocated)),
        mb(resident.saturating_sub(active + metadata)),
        mb(metadata)
    ))
}

/// How resident memory grows with the world: `rss` (of `who`, measured
/// `when`) per 1,000 Runtimes and per 1,000 pods. Plain divisions: the
/// fixed base (code, runtime) is included, so a small world overstates
/// the slope; docs/bench-runs.md projects from two sizes.
pub fn growth_figures(
    who: &str,
    when: &str,
    rss: process::Rss,
    runtimes: usize,
    pods: usize,
) -> Vec<Figure> {
    [("Runtimes", runtimes), ("pods", pods)]
        .into_iter()
        .map(|(what, n)| {
            Figure::of(
                &format!("{who}: RSS per 1,000 {what} ({when}; ÷ {n} {what}, base included)"),
                Unit::Bytes,
                rss.total as f64 * 1000.0 / n.max(1) as f64,
                Target::None,
            )
        })
        .collect()
}

/// Where the CPU went during one phase (`phase` names the agent's window
/// and the floor's), each process against the same process in the
/// floor's window: which process held the cores.
pub fn cpu_figures(phase: &str, agent: &cpu::Usage, floor: Option<&cpu::Usage>) -> Vec<Figure> {
    let mut out = Vec::new();
    for (name, share) in &agent.cores {
        out.push(Figure::compared(
            &format!("cpu, {phase}: {name}"),
            Unit::Cpu,
            *share,
            floor.and_then(|u| u.cores.get(name).copied()),
        ));
    }
    if let Some(busy) = agent.machine_busy {
        out.push(Figure::compared(
            &format!(
                "cpu, {phase}: the whole machine busy (share of all cores; others' work included)"
            ),
            Unit::Cpu,
            busy,
            floor.and_then(|u| u.machine_busy),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocator_parts_split_resident_memory() {
        let metrics = "# TYPE berth_agent_allocator_bytes gauge\n\
            berth_agent_allocator_bytes{state=\"allocated\"} 40000000\n\
            berth_agent_allocator_bytes{state=\"active\"} 46000000\n\
            berth_agent_allocator_bytes{state=\"resident\"} 55000000\n\
            berth_agent_allocator_bytes{state=\"metadata\"} 3000000\n\
            berth_agent_allocator_bytes{state=\"mapped\"} 50000000\n\
            berth_agent_reconciles_total{result=\"ok\"} 4\n";
        assert_eq!(
            allocator_parts(metrics).as_deref(),
            Some("jemalloc: live 40 + fragmentation 6 + not yet returned 6 + metadata 3 MB")
        );
        // An agent without the gauges (glibc's malloc): the plain figure.
        assert_eq!(allocator_parts("berth_agent_reconciles_total 4\n"), None);
        let f = agent_rss_figure("agent: RSS", process::Rss::default(), "");
        assert_eq!(f.name, "agent: RSS (anon 0 MB + file 0 MB)");
    }

    #[test]
    fn growth_is_rss_per_thousand() {
        let rss = process::Rss {
            total: 120_000_000,
            ..Default::default()
        };
        let f = growth_figures("agent", "converged", rss, 2000, 20_000);
        assert_eq!(f.len(), 2);
        assert!(
            f[0].name.starts_with("agent: RSS per 1,000 Runtimes"),
            "{f:?}"
        );
        assert!((f[0].measured - 60e6).abs() < 1.0);
        assert!(f[1].name.starts_with("agent: RSS per 1,000 pods"), "{f:?}");
        assert!((f[1].measured - 6e6).abs() < 1.0);
    }
}
