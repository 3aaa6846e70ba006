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

/// How resident memory grows with the world: `rss` (of `who`, measured
/// `when`) per 1,000 Runtimes and per 1,000 pods. Plain divisions: the
/// fixed base (code, runtime) is included, so a small world overstates
/// the slope; the README projects from two sizes.
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
        let mut f = Figure::of(
            &format!("cpu, {phase}: {name}"),
            Unit::Cpu,
            *share,
            Target::None,
        );
        f.floor = floor.and_then(|u| u.cores.get(name).copied());
        out.push(f);
    }
    if let Some(busy) = agent.machine_busy {
        let mut f = Figure::of(
            &format!(
                "cpu, {phase}: the whole machine busy (share of all cores; others' work included)"
            ),
            Unit::Cpu,
            busy,
            Target::None,
        );
        f.floor = floor.and_then(|u| u.machine_busy);
        out.push(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
