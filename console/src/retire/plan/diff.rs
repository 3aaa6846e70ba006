//! The spec diff a review shows: lines, and the context kept around
//! each change.

/// One line of a diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiffLine {
    /// Unchanged (context).
    Same(String),
    /// Removed.
    Removed(String),
    /// Added.
    Added(String),
    /// Unchanged lines left out.
    Skipped(usize),
}

impl DiffLine {
    /// The line as text with its `' '`, `-`, `+` marker.
    pub fn text(&self) -> String {
        match self {
            DiffLine::Same(s) => format!("  {s}"),
            DiffLine::Removed(s) => format!("- {s}"),
            DiffLine::Added(s) => format!("+ {s}"),
            DiffLine::Skipped(n) => format!("  … {n} unchanged line(s)"),
        }
    }
}

/// A line diff, by `similar`'s Myers: linear memory, and its heuristics
/// bound the work on large, very different inputs (the hand-written LCS
/// table it replaces reached 64 MB at its 4000-line cap).
pub fn diff_lines(a: &[String], b: &[String]) -> Vec<DiffLine> {
    use similar::{Algorithm, ChangeTag, capture_diff_slices};
    capture_diff_slices(Algorithm::Myers, a, b)
        .iter()
        .flat_map(|op| op.iter_changes(a, b))
        .map(|c| match c.tag() {
            ChangeTag::Equal => DiffLine::Same(c.value()),
            ChangeTag::Delete => DiffLine::Removed(c.value()),
            ChangeTag::Insert => DiffLine::Added(c.value()),
        })
        .collect()
}

/// Keeps `context` unchanged lines around each change; longer unchanged
/// runs become [`DiffLine::Skipped`].
pub fn context_diff(lines: &[DiffLine], context: usize) -> Vec<DiffLine> {
    let changed: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !matches!(l, DiffLine::Same(_)))
        .map(|(i, _)| i)
        .collect();
    let near = |i: usize| {
        changed
            .iter()
            .any(|&c| i + context >= c && i <= c + context)
    };
    let mut out = Vec::new();
    let mut skipped = 0;
    for (i, l) in lines.iter().enumerate() {
        if matches!(l, DiffLine::Same(_)) && !near(i) {
            skipped += 1;
            continue;
        }
        if skipped > 0 {
            out.push(DiffLine::Skipped(skipped));
            skipped = 0;
        }
        out.push(l.clone());
    }
    if skipped > 0 {
        out.push(DiffLine::Skipped(skipped));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{DiffLine, diff_lines};

    /// Past the old 4000-line cap the diff is still minimal (the LCS
    /// table's fallback listed every line as removed and added).
    #[test]
    fn a_long_spec_diffs_minimally() {
        let a: Vec<String> = (0..5000).map(|i| format!("line {i}")).collect();
        let mut b = a.clone();
        b[2500] = "changed".into();
        let diff = diff_lines(&a, &b);
        let changed: Vec<&DiffLine> = diff
            .iter()
            .filter(|l| !matches!(l, DiffLine::Same(_)))
            .collect();
        assert_eq!(
            changed,
            [
                &DiffLine::Removed("line 2500".into()),
                &DiffLine::Added("changed".into())
            ]
        );
    }
}
