//! The benchmark's report: each figure, its floor measured in the same
//! run, the ratio, the target, and whether it holds.

use std::fmt::Write as _;
use std::time::Duration;

/// What a figure is measured in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unit {
    Seconds,
    Millis,
    Bytes,
    /// Share of one core, 0–1.
    Cpu,
    Count,
}

/// What must hold for a figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// measured ≤ factor × floor.
    RatioAtMost(f64),
    /// measured ≤ value (in the figure's unit).
    AtMost(f64),
    /// Reported only.
    None,
}

#[derive(Clone, Debug)]
pub struct Figure {
    pub name: String,
    pub unit: Unit,
    pub measured: f64,
    pub floor: Option<f64>,
    pub target: Target,
}

impl Figure {
    pub fn time(name: &str, measured: Duration, floor: Option<Duration>, target: Target) -> Self {
        Figure {
            name: name.into(),
            unit: Unit::Seconds,
            measured: measured.as_secs_f64(),
            floor: floor.map(|f| f.as_secs_f64()),
            target,
        }
    }

    pub fn millis(name: &str, measured: Duration, floor: Option<Duration>, target: Target) -> Self {
        Figure {
            name: name.into(),
            unit: Unit::Millis,
            measured: measured.as_secs_f64() * 1000.0,
            floor: floor.map(|f| f.as_secs_f64() * 1000.0),
            target,
        }
    }

    pub fn of(name: &str, unit: Unit, measured: f64, target: Target) -> Self {
        Figure {
            name: name.into(),
            unit,
            measured,
            floor: None,
            target,
        }
    }

    /// A figure reported beside its floor, with no target.
    pub fn compared(name: &str, unit: Unit, measured: f64, floor: Option<f64>) -> Self {
        Figure {
            floor,
            ..Figure::of(name, unit, measured, Target::None)
        }
    }

    pub fn ratio(&self) -> Option<f64> {
        self.floor.filter(|f| *f > 0.0).map(|f| self.measured / f)
    }

    /// Whether the target holds (`None` when there is none, or a ratio
    /// target without a floor).
    pub fn holds(&self) -> Option<bool> {
        match self.target {
            Target::RatioAtMost(r) => self.ratio().map(|x| x <= r),
            Target::AtMost(v) => Some(self.measured <= v),
            Target::None => None,
        }
    }
}

fn value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Seconds => format!("{v:.2} s"),
        Unit::Millis => format!("{v:.2} ms"),
        // Below 10 MB (the per-size figures) one decimal, or the growth
        // rows would round away their difference between two sizes.
        Unit::Bytes if v < 10_000_000.0 => format!("{:.1} MB", v / 1_000_000.0),
        Unit::Bytes => format!("{:.0} MB", v / 1_000_000.0),
        Unit::Cpu => format!("{:.1} %", v * 100.0),
        Unit::Count => format!("{v:.0}"),
    }
}

fn target(f: &Figure) -> String {
    match f.target {
        Target::RatioAtMost(r) => format!("≤ {r}× floor"),
        Target::AtMost(v) => format!("≤ {}", value(f.unit, v)),
        Target::None => "-".into(),
    }
}

/// A Markdown table (pastes into an issue note as is).
pub fn render(title: &str, figures: &[Figure]) -> String {
    let mut out = format!(
        "{title}\n\n| figure | measured | floor | ratio | target | holds |\n|---|---|---|---|---|---|\n"
    );
    for f in figures {
        let floor = f.floor.map(|v| value(f.unit, v)).unwrap_or("-".into());
        let ratio = f.ratio().map(|r| format!("{r:.2}×")).unwrap_or("-".into());
        let holds = match f.holds() {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {floor} | {ratio} | {} | {holds} |",
            f.name,
            value(f.unit, f.measured),
            target(f)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_and_targets() {
        let f = Figure::time(
            "conv",
            Duration::from_secs(13),
            Some(Duration::from_secs(10)),
            Target::RatioAtMost(1.3),
        );
        assert!((f.ratio().expect("ratio") - 1.3).abs() < 1e-9);
        assert_eq!(f.holds(), Some(true));
        let slow = Figure::time(
            "conv",
            Duration::from_secs(14),
            Some(Duration::from_secs(10)),
            Target::RatioAtMost(1.3),
        );
        assert_eq!(slow.holds(), Some(false));
        let no_floor = Figure::time("x", Duration::from_secs(1), None, Target::RatioAtMost(2.0));
        assert_eq!(no_floor.holds(), None);
        let rss = Figure::of("rss", Unit::Bytes, 90e6, Target::AtMost(80e6));
        assert_eq!(rss.holds(), Some(false));
        assert_eq!(
            Figure::of("w", Unit::Count, 0.0, Target::AtMost(0.0)).holds(),
            Some(true)
        );
    }

    #[test]
    fn renders_a_markdown_table() {
        let t = render(
            "scale",
            &[
                Figure::of("agent RSS", Unit::Bytes, 75e6, Target::AtMost(80e6)),
                Figure::of("idle CPU", Unit::Cpu, 0.02, Target::AtMost(0.01)),
                Figure::of("per pod", Unit::Bytes, 6.34e6, Target::None),
            ],
        );
        assert!(
            t.contains("| agent RSS | 75 MB | - | - | ≤ 80 MB | yes |"),
            "{t}"
        );
        assert!(
            t.contains("| idle CPU | 2.0 % | - | - | ≤ 1.0 % | NO |"),
            "{t}"
        );
        assert!(t.contains("| per pod | 6.3 MB | - | - | - | - |"), "{t}");
    }
}
