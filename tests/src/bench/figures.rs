//! Figures made from process measurements: resident memory against its
//! target, and where the CPU went against the floor's run.

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

/// Where the CPU went while the agent converged, each against the same
/// component while the floor ran: which process held the cores.
pub fn cpu_figures(agent: &cpu::Usage, floor: &cpu::Usage) -> Vec<Figure> {
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
