//! One list view over every cluster of the fleet (issue 56): each
//! cluster's own [`TableData`] is a part, rebuilt only when that cluster's
//! data changed, and the filtered, sorted order runs across the parts. With
//! more than one cluster a `CLUSTER` column comes first, sortable and
//! filterable like the others (`/cluster=prod-eu`); with one, the table is
//! that cluster's as it always was.
//!
//! What a row points at is a [`Located`]: the cluster of the part it came
//! from and the object within it, so that nothing downstream (drill-down,
//! details, explain, a retirement) has to find the cluster again.

use std::borrow::Cow;

use k8s_openapi::jiff::Timestamp;

use super::table::{RowRef, RowTone, SortKey, TableData, natural_cmp};
use crate::store::ClusterId;

/// The header of the cluster column.
pub const CLUSTER: &str = "CLUSTER";

/// A row's object and the cluster it is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    pub cluster: ClusterId,
    pub row: RowRef,
}

/// A row's identity across rebuilds: its cluster and its identity there
/// (two clusters may hold objects of one name, even of one uid after a
/// restore from a backup).
pub type RowId = (ClusterId, String);

/// Where a shown row is: which part, which row of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At {
    pub part: u32,
    pub row: u32,
}

/// One cluster's rows.
#[derive(Clone, Debug)]
pub struct Part {
    pub cluster: ClusterId,
    pub table: TableData,
}

/// One list view's rows over the clusters.
#[derive(Clone, Debug, Default)]
pub struct Merged {
    /// More than one cluster: the `CLUSTER` column is shown.
    pub fleet: bool,
    /// The family's headers (without `CLUSTER`).
    family: Vec<&'static str>,
    pub parts: Vec<Part>,
    /// Filtered and sorted: what the table shows.
    pub visible: Vec<At>,
}

/// A filter as typed: leading `COLUMN=VALUE` terms (a column of the
/// table, or `cluster` even where the column is not shown) keep rows whose
/// cell is VALUE (case-insensitive); the rest of the text is a
/// case-insensitive substring of any cell, as before.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowFilter {
    /// `(column in the merged headers, value lowercased)`; a column of
    /// `None` is the cluster.
    pub columns: Vec<(Option<usize>, String)>,
    /// The substring, lowercased.
    pub needle: String,
}

impl Merged {
    /// Empty parts for `clusters`, with a family's headers.
    pub fn new(clusters: &[ClusterId], family: &[&'static str]) -> Self {
        Merged {
            fleet: clusters.len() > 1,
            family: family.to_vec(),
            parts: clusters
                .iter()
                .map(|c| Part {
                    cluster: c.clone(),
                    table: TableData::new(family.to_vec()),
                })
                .collect(),
            visible: Vec::new(),
        }
    }

    /// The table of one cluster alone (`berth get` on one context, tests).
    pub fn single(cluster: ClusterId, table: TableData) -> Self {
        let mut m = Merged::new(std::slice::from_ref(&cluster), &table.headers.clone());
        m.set_part(0, table);
        m.apply("", None);
        m
    }

    /// Every part as given, nothing filtered out (`berth get` over
    /// several contexts).
    pub fn of_parts(parts: Vec<Part>, family: &[&'static str]) -> Self {
        let mut m = Merged {
            fleet: parts.len() > 1,
            family: family.to_vec(),
            parts,
            visible: Vec::new(),
        };
        m.apply("", None);
        m
    }

    /// Replaces part `i` (one cluster rebuilt its rows): its rows leave
    /// `visible` until [`Merged::apply`] runs again (take the selection's
    /// identity before).
    pub fn set_part(&mut self, i: usize, table: TableData) {
        if self.family.is_empty() {
            self.family.clone_from(&table.headers);
        }
        if let Some(p) = self.parts.get_mut(i) {
            p.table = table;
            self.visible.retain(|at| at.part as usize != i);
        }
    }

    /// Column headers as shown.
    pub fn headers(&self) -> Vec<&'static str> {
        let mut h = Vec::with_capacity(self.family.len() + 1);
        if self.fleet {
            h.push(CLUSTER);
        }
        h.extend_from_slice(&self.family);
        h
    }

    /// Number of columns shown.
    pub fn columns(&self) -> usize {
        self.family.len() + usize::from(self.fleet)
    }

    /// Rows in every part (unfiltered).
    pub fn total(&self) -> usize {
        self.parts.iter().map(|p| p.table.cells.len()).sum()
    }

    /// Rows shown.
    pub fn len(&self) -> usize {
        self.visible.len()
    }

    /// Whether no row is shown.
    pub fn is_empty(&self) -> bool {
        self.visible.is_empty()
    }

    fn part(&self, at: At) -> &Part {
        &self.parts[at.part as usize]
    }

    /// The family column of shown column `c` (`None`: the cluster).
    fn family_column(&self, c: usize) -> Option<usize> {
        if self.fleet {
            c.checked_sub(1)
        } else {
            Some(c)
        }
    }

    /// The text of shown column `c` of a row at `now` (ages computed here).
    pub fn text(&self, at: At, c: usize, now: Timestamp) -> Cow<'_, str> {
        let p = self.part(at);
        match self.family_column(c) {
            None => Cow::Owned(p.cluster.shown()),
            Some(c) => p.table.text(at.row as usize, c, now),
        }
    }

    /// The cluster of a row.
    pub fn cluster(&self, at: At) -> &ClusterId {
        &self.part(at).cluster
    }

    /// A row's highlight.
    pub fn tone(&self, at: At) -> RowTone {
        self.part(at).table.tones[at.row as usize]
    }

    /// What a row points at, in its cluster.
    pub fn located(&self, at: At) -> Located {
        let p = self.part(at);
        Located {
            cluster: p.cluster.clone(),
            row: p.table.refs[at.row as usize].clone(),
        }
    }

    /// A row's identity.
    pub fn id(&self, at: At) -> RowId {
        let p = self.part(at);
        (p.cluster.clone(), p.table.ids[at.row as usize].clone())
    }

    /// The row shown at position `pos`.
    pub fn at(&self, pos: usize) -> Option<At> {
        self.visible.get(pos).copied()
    }

    /// What the row at position `pos` points at.
    pub fn located_at(&self, pos: usize) -> Option<Located> {
        self.at(pos).map(|at| self.located(at))
    }

    /// The identity of the row at position `pos`.
    pub fn id_at(&self, pos: usize) -> Option<RowId> {
        self.at(pos).map(|at| self.id(at))
    }

    /// The position of the row with this identity.
    pub fn position(&self, id: &RowId) -> Option<usize> {
        let part = self.parts.iter().position(|p| p.cluster == id.0)?;
        let ids = &self.parts[part].table.ids;
        self.visible
            .iter()
            .position(|at| at.part as usize == part && ids[at.row as usize] == id.1)
    }

    /// Parses a typed filter against these headers.
    pub fn filter_of(&self, text: &str) -> RowFilter {
        let headers = self.headers();
        let mut columns = Vec::new();
        let mut rest = text.trim_start();
        while let Some((term, after)) = split_term(rest) {
            let Some((name, value)) = term.split_once('=') else {
                break;
            };
            let column = if name.eq_ignore_ascii_case(CLUSTER) {
                None
            } else {
                match headers.iter().position(|h| h.eq_ignore_ascii_case(name)) {
                    Some(c) => Some(c),
                    None => break,
                }
            };
            columns.push((column, value.to_lowercase()));
            rest = after.trim_start();
        }
        RowFilter {
            columns,
            needle: rest.to_lowercase(),
        }
    }

    /// Whether a row passes a filter.
    fn passes(&self, at: At, f: &RowFilter) -> bool {
        let p = self.part(at);
        let cells = &p.table.cells[at.row as usize];
        let cluster = p.cluster.shown().to_lowercase();
        let columns = f.columns.iter().all(|(c, value)| {
            match c.map(|c| self.family_column(c)) {
                // The cluster: by its column or by name.
                None | Some(None) => cluster == *value,
                Some(Some(c)) => cells.get(c).is_some_and(|s| s.to_lowercase() == *value),
            }
        });
        columns
            && (f.needle.is_empty()
                || (self.fleet && cluster.contains(&f.needle))
                || cells.iter().any(|c| c.to_lowercase().contains(&f.needle)))
    }

    /// Recomputes `visible` for a filter and an optional sort `(shown
    /// column, descending)` on the typed keys (the cluster column by
    /// name); ties keep the parts' order and each part's own.
    pub fn apply(&mut self, filter: &str, sort: Option<(usize, bool)>) {
        let f = self.filter_of(filter);
        let mut visible = std::mem::take(&mut self.visible);
        visible.clear();
        for (pi, p) in self.parts.iter().enumerate() {
            visible.extend((0..p.table.cells.len()).map(|r| At {
                part: pi as u32,
                row: r as u32,
            }));
        }
        if !f.columns.is_empty() || !f.needle.is_empty() {
            visible.retain(|at| self.passes(*at, &f));
        }
        self.visible = visible;
        if let Some((col, desc)) = sort {
            let column = self.family_column(col);
            let missing = SortKey::Missing;
            let parts = &self.parts;
            self.visible.sort_by(|a, b| {
                let o = match column {
                    None => natural_cmp(
                        parts[a.part as usize].cluster.context(),
                        parts[b.part as usize].cluster.context(),
                    ),
                    Some(c) => {
                        let key = |at: &At| {
                            parts[at.part as usize].table.keys[at.row as usize]
                                .get(c)
                                .unwrap_or(&missing)
                        };
                        key(a).compare(key(b))
                    }
                };
                if desc { o.reverse() } else { o }
            });
        }
    }

    /// The text of shown column `c` of the row at position `pos` as it
    /// was built (an age as of the rebuild; the cluster's shown name).
    pub fn cell(&self, pos: usize, c: usize) -> String {
        let Some(at) = self.at(pos) else {
            return String::new();
        };
        let p = self.part(at);
        match self.family_column(c) {
            None => p.cluster.shown(),
            Some(c) => p.table.cells[at.row as usize]
                .get(c)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// The shown rows' texts (what `berth get` prints), ages at `now`.
    pub fn texts(&self, now: Timestamp) -> Vec<Vec<String>> {
        self.visible
            .iter()
            .map(|at| {
                (0..self.columns())
                    .map(|c| self.text(*at, c, now).into_owned())
                    .collect()
            })
            .collect()
    }
}

/// The first whitespace-separated term of `s` and what follows it.
fn split_term(s: &str) -> Option<(&str, &str)> {
    if s.is_empty() {
        return None;
    }
    Some(match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::table::{Cell, Row};

    struct R(&'static str, i64);

    impl Row for R {
        fn headers() -> &'static [&'static str] {
            &["NAME", "COUNT"]
        }
        fn cells(&self) -> Vec<Cell> {
            vec![Cell::text(self.0), Cell::count(self.1)]
        }
        fn tone(&self) -> RowTone {
            RowTone::Normal
        }
        fn target(&self) -> RowRef {
            RowRef::Grant(self.0.into())
        }
    }

    fn fleet() -> Merged {
        let (a, b) = (ClusterId::new("prod-eu"), ClusterId::new("prod-us"));
        let mut m = Merged::new(&[a, b], R::headers());
        m.set_part(0, TableData::of(&[R("web", 3), R("api", 1)]));
        m.set_part(1, TableData::of(&[R("web", 2)]));
        m.apply("", None);
        m
    }

    fn shown(m: &Merged) -> Vec<String> {
        let now = Timestamp::UNIX_EPOCH;
        m.texts(now).into_iter().map(|r| r.join(" ")).collect()
    }

    #[test]
    fn the_cluster_column_comes_first_and_rows_keep_their_cluster() {
        let m = fleet();
        assert_eq!(m.headers(), ["CLUSTER", "NAME", "COUNT"]);
        assert_eq!(
            shown(&m),
            ["prod-eu web 3", "prod-eu api 1", "prod-us web 2"]
        );
        // Same name in both clusters: two rows, two identities, two targets.
        let (a, b) = (m.located_at(0), m.located_at(2));
        assert_eq!(a.as_ref().map(|l| &l.row), b.as_ref().map(|l| &l.row));
        assert_ne!(a, b);
        assert_eq!(b.map(|l| l.cluster), Some(ClusterId::new("prod-us")));
        assert_ne!(m.id_at(0), m.id_at(2));
        assert_eq!(
            m.position(&(ClusterId::new("prod-us"), "RuntimeGrant//web".into())),
            Some(2)
        );
    }

    #[test]
    fn one_cluster_is_the_table_as_it_was() {
        let m = Merged::single(
            ClusterId::new("kind"),
            TableData::of(&[R("web", 3), R("api", 1)]),
        );
        assert_eq!(m.headers(), ["NAME", "COUNT"]);
        assert_eq!(shown(&m), ["web 3", "api 1"]);
    }

    #[test]
    fn filter_by_cluster_by_column_and_by_substring() {
        let mut m = fleet();
        m.apply("cluster=prod-us", None);
        assert_eq!(shown(&m), ["prod-us web 2"]);
        m.apply("CLUSTER=PROD-EU", None);
        assert_eq!(shown(&m), ["prod-eu web 3", "prod-eu api 1"]);
        // Exact, not a prefix.
        m.apply("cluster=prod", None);
        assert!(shown(&m).is_empty());
        m.apply("name=web", None);
        assert_eq!(shown(&m), ["prod-eu web 3", "prod-us web 2"]);
        m.apply("cluster=prod-eu web", None);
        assert_eq!(shown(&m), ["prod-eu web 3"]);
        // A substring matches the cluster column too.
        m.apply("-us", None);
        assert_eq!(shown(&m), ["prod-us web 2"]);
        // Not a column: the whole text is a substring, as before.
        m.apply("nope=web", None);
        assert!(shown(&m).is_empty());
        // With one cluster the column is not shown but still filters.
        let mut one = Merged::single(ClusterId::new("kind"), TableData::of(&[R("web", 3)]));
        one.apply("cluster=kind", None);
        assert_eq!(shown(&one), ["web 3"]);
        one.apply("cluster=other", None);
        assert!(shown(&one).is_empty());
    }

    #[test]
    fn sort_by_cluster_and_by_a_family_column_across_parts() {
        let mut m = fleet();
        m.apply("", Some((2, false)));
        assert_eq!(
            shown(&m),
            ["prod-eu api 1", "prod-us web 2", "prod-eu web 3"]
        );
        m.apply("", Some((0, true)));
        assert_eq!(
            shown(&m),
            ["prod-us web 2", "prod-eu web 3", "prod-eu api 1"]
        );
    }
}
