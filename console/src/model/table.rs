//! Table data for the list views: every row's cells computed once when the
//! store changes, and the filtered + sorted order as indices. Drawing only
//! touches the visible slice of `visible`.

use std::cmp::Ordering;

use super::store::{Kind, ObjKey};

/// How a row is highlighted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowTone {
    /// Nothing special.
    Normal,
    /// Blocked, missing, unsafe…: drawn in red.
    Problem,
    /// Explicitly fine (e.g. safe to remove): drawn in green.
    Good,
    /// Degraded or in progress: drawn in yellow.
    Warn,
}

/// What a row points at, for drill-down and details.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowRef {
    /// A Runtime.
    Runtime(ObjKey),
    /// A RuntimeGrant by name.
    Grant(String),
    /// A RuntimeClass by name (it may not exist).
    Class(String),
    /// A workload of some kind.
    Workload(Kind, ObjKey),
}

impl RowRef {
    /// The store kind and key, when the row is an object of the store.
    pub fn object(&self) -> (Kind, ObjKey) {
        match self {
            RowRef::Runtime(k) => (Kind::Runtime, k.clone()),
            RowRef::Grant(n) => (Kind::RuntimeGrant, (String::new(), n.clone())),
            RowRef::Class(n) => (Kind::RuntimeClass, (String::new(), n.clone())),
            RowRef::Workload(kind, k) => (*kind, k.clone()),
        }
    }
}

/// One list view's rows.
#[derive(Clone, Debug, Default)]
pub struct TableData {
    /// Column headers.
    pub headers: Vec<&'static str>,
    /// Cells of every row (all rows, unfiltered).
    pub cells: Vec<Vec<String>>,
    /// Highlight of every row.
    pub tones: Vec<RowTone>,
    /// What every row points at.
    pub refs: Vec<RowRef>,
    /// Indices into the rows, filtered and sorted: what the table shows.
    pub visible: Vec<usize>,
}

impl TableData {
    /// An empty table with headers.
    pub fn new(headers: Vec<&'static str>) -> Self {
        Self {
            headers,
            ..Default::default()
        }
    }

    /// Adds one row.
    pub fn push(&mut self, cells: Vec<String>, tone: RowTone, r: RowRef) {
        self.cells.push(cells);
        self.tones.push(tone);
        self.refs.push(r);
    }

    /// Recomputes `visible` for a filter (case-insensitive substring of any
    /// cell) and an optional sort `(column, descending)`.
    pub fn apply(&mut self, filter: &str, sort: Option<(usize, bool)>) {
        let needle = filter.to_lowercase();
        self.visible = (0..self.cells.len())
            .filter(|&i| {
                needle.is_empty()
                    || self.cells[i]
                        .iter()
                        .any(|c| c.to_lowercase().contains(&needle))
            })
            .collect();
        if let Some((col, desc)) = sort {
            let cells = &self.cells;
            self.visible.sort_by(|&a, &b| {
                let o = natural_cmp(
                    cells[a].get(col).map(String::as_str).unwrap_or_default(),
                    cells[b].get(col).map(String::as_str).unwrap_or_default(),
                );
                if desc { o.reverse() } else { o }
            });
        }
    }
}

/// Compares numbers numerically (leading integer, e.g. `3/5`, `12s`), the
/// rest as text.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    fn lead(s: &str) -> Option<u64> {
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    }
    match (lead(a), lead(b)) {
        (Some(x), Some(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
        _ => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_and_sort() {
        let mut t = TableData::new(vec!["A", "B"]);
        for (a, b) in [("x", "10"), ("y", "9"), ("zx", "100")] {
            t.push(
                vec![a.into(), b.into()],
                RowTone::Normal,
                RowRef::Grant(a.into()),
            );
        }
        t.apply("", Some((1, false)));
        assert_eq!(t.visible, vec![1, 0, 2]);
        t.apply("X", Some((1, true)));
        assert_eq!(t.visible, vec![2, 0]);
    }
}
