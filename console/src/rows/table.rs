//! One generic table for every list view and `berth get`: the cells of
//! every row computed once when the store changes (display text plus a
//! typed sort key), and the filtered + sorted order as indices. Drawing
//! only touches the visible slice of `visible`.

use std::borrow::Cow;
use std::cmp::Ordering;

use k8s_openapi::jiff::Timestamp;

use crate::store::{Kind, ObjKey};

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
    /// A Namespace by name.
    Namespace(String),
}

impl RowRef {
    /// The store kind and key, when the row is an object of the store.
    pub fn object(&self) -> (Kind, ObjKey) {
        match self {
            RowRef::Runtime(k) => (Kind::Runtime, k.clone()),
            RowRef::Grant(n) => (Kind::RuntimeGrant, (String::new(), n.clone())),
            RowRef::Class(n) => (Kind::RuntimeClass, (String::new(), n.clone())),
            RowRef::Workload(kind, k) => (*kind, k.clone()),
            RowRef::Namespace(n) => (Kind::Namespace, (String::new(), n.clone())),
        }
    }

    /// `Kind/namespace/name`: an identity for rows without a uid.
    pub fn identity(&self) -> String {
        let (kind, (ns, name)) = self.object();
        format!("{}/{ns}/{name}", kind.label())
    }
}

/// The typed value a column sorts by, so that `2d` sorts after `5m`, `10`
/// after `9` and `3/5` after `1/5`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// No value (`-`): sorts first.
    Missing,
    /// A count, a duration in seconds, a quantity in its base unit.
    Num(i64),
    /// A point in time (seconds since the epoch) shown as its age: sorts
    /// by age, youngest first, and its text is computed when drawn.
    Since(i64),
    /// `n/m` (ready/desired, nodes with the handler/all): by n, then m.
    Ratio(i64, i64),
    /// Anything else, compared naturally (`web-2` before `web-10`).
    Text(String),
}

impl SortKey {
    fn rank(&self) -> u8 {
        match self {
            SortKey::Missing => 0,
            SortKey::Num(_) | SortKey::Since(_) => 1,
            SortKey::Ratio(..) => 2,
            SortKey::Text(_) => 3,
        }
    }

    /// The order of two keys of one column.
    pub fn compare(&self, other: &SortKey) -> Ordering {
        match (self, other) {
            (SortKey::Num(a), SortKey::Num(b)) => a.cmp(b),
            // Later = younger = smaller age.
            (SortKey::Since(a), SortKey::Since(b)) => b.cmp(a),
            (SortKey::Ratio(a, b), SortKey::Ratio(c, d)) => (a, b).cmp(&(c, d)),
            (SortKey::Text(a), SortKey::Text(b)) => natural_cmp(a, b),
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }
}

/// One cell: what is shown and what it sorts by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    pub text: String,
    pub key: SortKey,
}

impl Cell {
    /// Text (`-` counts as missing).
    pub fn text(s: impl Into<String>) -> Cell {
        let text = s.into();
        let key = if text == super::NONE || text.is_empty() {
            SortKey::Missing
        } else {
            SortKey::Text(text.clone())
        };
        Cell { text, key }
    }

    /// A count.
    pub fn count(n: i64) -> Cell {
        Cell {
            text: n.to_string(),
            key: SortKey::Num(n),
        }
    }

    /// `n/m`.
    pub fn ratio(n: i64, m: i64) -> Cell {
        Cell {
            text: format!("{n}/{m}"),
            key: SortKey::Ratio(n, m),
        }
    }

    /// An `n/m` summary computed elsewhere (e.g. node coverage); sorts as a
    /// ratio when it parses as one.
    pub fn ratio_text(s: &str) -> Cell {
        let parsed = s
            .split_once('/')
            .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
        match parsed {
            Some((n, m)) => Cell {
                text: s.to_string(),
                key: SortKey::Ratio(n, m),
            },
            None => Cell::text(s),
        }
    }

    /// An age shown kubectl-style, sorted by age. `text` is the age when
    /// the row was built (what filters and `berth get` see); `since` is the
    /// time itself (seconds since the epoch), from which the drawing
    /// computes the age shown, so that time passing rebuilds no row.
    pub fn age(text: String, since: Option<i64>) -> Cell {
        Cell {
            text,
            key: since.map_or(SortKey::Missing, SortKey::Since),
        }
    }
}

/// A row of a table: its cells, highlight, what it points at and an
/// identity that survives updates (the uid where there is one), so that the
/// selection can follow the object.
pub trait Row {
    /// The column headers of the family.
    fn headers() -> &'static [&'static str]
    where
        Self: Sized;
    /// One cell per header.
    fn cells(&self) -> Vec<Cell>;
    /// The highlight.
    fn tone(&self) -> RowTone;
    /// What the row points at.
    fn target(&self) -> RowRef;
    /// The object's uid, if the row has one (empty otherwise).
    fn uid(&self) -> &str {
        ""
    }
    /// Stable identity: the object's uid, else its kind, namespace and name.
    fn id(&self) -> String {
        match self.uid() {
            "" => self.target().identity(),
            uid => uid.to_string(),
        }
    }
}

/// One list's rows.
#[derive(Clone, Debug, Default)]
pub struct TableData {
    /// Column headers.
    pub headers: Vec<&'static str>,
    /// Display text of every cell (all rows, unfiltered).
    pub cells: Vec<Vec<String>>,
    /// Sort key of every cell.
    pub keys: Vec<Vec<SortKey>>,
    /// Highlight of every row.
    pub tones: Vec<RowTone>,
    /// What every row points at.
    pub refs: Vec<RowRef>,
    /// Identity of every row (see [`Row::id`]).
    pub ids: Vec<String>,
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

    /// The table of some rows (nothing filtered out, unsorted).
    pub fn of<R: Row>(rows: &[R]) -> Self {
        // Sized once: grown by doubling, each column was reallocated a
        // dozen times per rebuild at scale S, and a large realloc on a
        // fragmented heap is what a watch event's frame spent its time in
        // (issue 32, `perf` of berth-bench's model phase).
        let n = rows.len();
        let mut t = TableData {
            headers: R::headers().to_vec(),
            cells: Vec::with_capacity(n),
            keys: Vec::with_capacity(n),
            tones: Vec::with_capacity(n),
            refs: Vec::with_capacity(n),
            ids: Vec::with_capacity(n),
            visible: Vec::new(),
        };
        for r in rows {
            t.push(r.cells(), r.tone(), r.target(), r.id());
        }
        t.visible = (0..t.cells.len()).collect();
        t
    }

    /// Adds one row.
    pub fn push(&mut self, cells: Vec<Cell>, tone: RowTone, r: RowRef, id: String) {
        let (text, keys) = cells.into_iter().map(|c| (c.text, c.key)).unzip();
        self.cells.push(text);
        self.keys.push(keys);
        self.tones.push(tone);
        self.refs.push(r);
        self.ids.push(id);
    }

    /// The text of cell `c` of row `i` at `now`: ages are computed here,
    /// at draw time; everything else is the text built with the row.
    pub fn text(&self, i: usize, c: usize, now: Timestamp) -> Cow<'_, str> {
        match self.keys.get(i).and_then(|k| k.get(c)) {
            Some(SortKey::Since(t)) => Cow::Owned(super::human_duration(now.as_second() - t)),
            _ => Cow::Borrowed(
                self.cells
                    .get(i)
                    .and_then(|r| r.get(c))
                    .map_or("", String::as_str),
            ),
        }
    }

    /// The position in `visible` of the row with this identity.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.visible.iter().position(|&i| self.ids[i] == id)
    }

    /// The identity of the row at a position of `visible`.
    pub fn id_at(&self, pos: usize) -> Option<&str> {
        let i = *self.visible.get(pos)?;
        self.ids.get(i).map(String::as_str)
    }

    /// Recomputes `visible` for a filter (case-insensitive substring of any
    /// cell) and an optional sort `(column, descending)` on the typed keys;
    /// ties keep the rows' own order.
    pub fn apply(&mut self, filter: &str, sort: Option<(usize, bool)>) {
        let needle = filter.to_lowercase();
        // Refilled in place: its capacity already fits every row.
        let mut visible = std::mem::take(&mut self.visible);
        visible.clear();
        visible.extend((0..self.cells.len()).filter(|&i| {
            needle.is_empty()
                || self.cells[i]
                    .iter()
                    .any(|c| c.to_lowercase().contains(&needle))
        }));
        self.visible = visible;
        if let Some((col, desc)) = sort {
            let keys = &self.keys;
            let missing = SortKey::Missing;
            self.visible.sort_by(|&a, &b| {
                let ka = keys[a].get(col).unwrap_or(&missing);
                let kb = keys[b].get(col).unwrap_or(&missing);
                let o = ka.compare(kb);
                if desc { o.reverse() } else { o }
            });
        }
    }
}

/// Compares numbers numerically (leading integer, e.g. `web-2`, `12s`), the
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

    struct R(&'static str, i64, Option<i64>, (i64, i64));

    /// Seconds since the epoch the test rows' ages are measured at.
    const NOW: i64 = 1_800_000_000;

    impl Row for R {
        fn headers() -> &'static [&'static str] {
            &["NAME", "COUNT", "AGE", "READY"]
        }
        fn cells(&self) -> Vec<Cell> {
            // The third field is an age in seconds at NOW.
            let age = self.2.map_or("-".to_string(), super::super::human_duration);
            vec![
                Cell::text(self.0),
                Cell::count(self.1),
                Cell::age(age, self.2.map(|a| NOW - a)),
                Cell::ratio(self.3.0, self.3.1),
            ]
        }
        fn tone(&self) -> RowTone {
            RowTone::Normal
        }
        fn target(&self) -> RowRef {
            RowRef::Grant(self.0.into())
        }
    }

    fn table() -> TableData {
        TableData::of(&[
            R("x", 10, Some(5 * 60), (1, 3)),
            R("y", 9, Some(2 * 86400), (10, 10)),
            R("zx", 100, None, (2, 3)),
            R("w", 9, Some(59), (1, 2)),
        ])
    }

    fn names(t: &TableData) -> Vec<&str> {
        t.visible.iter().map(|&i| t.cells[i][0].as_str()).collect()
    }

    #[test]
    fn filter_and_sort_counts_numerically() {
        let mut t = table();
        t.apply("", Some((1, false)));
        assert_eq!(names(&t), ["y", "w", "x", "zx"]);
        t.apply("X", Some((1, true)));
        assert_eq!(names(&t), ["zx", "x"]);
    }

    #[test]
    fn ages_sort_by_duration_not_text() {
        let mut t = table();
        // As text "2d" < "59s" < "5m"; as durations 59s < 5m < 2d.
        t.apply("", Some((2, false)));
        assert_eq!(names(&t), ["zx", "w", "x", "y"]);
        assert_eq!(t.cells[1][2], "2d");
        t.apply("", Some((2, true)));
        assert_eq!(names(&t), ["y", "x", "w", "zx"]);
    }

    #[test]
    fn ages_are_computed_when_drawn() {
        let t = table();
        let at = |secs: i64| Timestamp::from_second(secs).expect("time");
        // Built with 5m; drawn an hour later it says 65m, no rebuild.
        assert_eq!(t.text(0, 2, at(NOW)), "5m");
        assert_eq!(t.text(0, 2, at(NOW + 3600)), "65m");
        assert_eq!(t.text(3, 2, at(NOW + 1)), "60s");
        // Other cells and missing ages are the built text.
        assert_eq!(t.text(2, 2, at(NOW + 3600)), "-");
        assert_eq!(t.text(0, 0, at(NOW)), "x");
        assert_eq!(t.text(9, 0, at(NOW)), "");
    }

    #[test]
    fn ratios_sort_by_numerator_then_denominator() {
        let mut t = table();
        // As text "10/10" < "1/2" < "1/3" < "2/3".
        t.apply("", Some((3, false)));
        assert_eq!(names(&t), ["w", "x", "zx", "y"]);
        assert_eq!(
            Cell::ratio_text("3/12")
                .key
                .compare(&Cell::ratio_text("12/12").key),
            Ordering::Less
        );
        assert_eq!(Cell::ratio_text("-").key, SortKey::Missing);
    }

    #[test]
    fn positions_follow_identities() {
        let mut t = table();
        t.apply("", Some((1, false)));
        assert_eq!(t.position("RuntimeGrant//x"), Some(2));
        assert_eq!(t.id_at(0), Some("RuntimeGrant//y"));
        t.apply("zx", None);
        assert_eq!(t.position("RuntimeGrant//y"), None);
    }
}
