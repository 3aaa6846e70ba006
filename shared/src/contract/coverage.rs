//! What the contract table says about a field path of the schema (issue
//! 52, the schema-driven adversary): every path of a governed kind is
//! either inside a governed part (compared exactly, the tolerated fields
//! aside) or named by a row of what is deliberately left alone. A path
//! that is neither is a gap in the table; `field_paths.txt` (every field
//! path of the governed kinds in the apiserver's OpenAPI, generated) holds
//! the table to that, and to naming only paths that exist
//! (`coverage_tests.rs`).
//!
//! A schema path is a JSON pointer in which `*` stands for any list
//! position or map key (`/spec/template/spec/containers/*/image`); a row's
//! concrete key (`kubectl.kubernetes.io~1restartedAt`) matches a schema
//! `*`. Pure.

use serde_json::Value;

use super::allowlist::{TOLERATED, UNGOVERNED};
use super::exact::{Seg, pattern};
use super::table::{GOVERNED, Governed, Kind, Tolerated, Ungoverned};
use super::{View, absolute, exact};

/// Where a schema path stands in the contract table.
#[derive(Clone, Copy, Debug)]
pub enum Coverage {
    /// Inside a governed part: the deepest governed row above it (its rule
    /// is that of a difference there).
    Governed(&'static Governed),
    /// Left alone, on purpose: the row that says why.
    Ungoverned(&'static Ungoverned),
    /// An object no row names whose every field is covered by the rows
    /// below it (`/metadata`: its fields are governed or left alone one
    /// by one, so a new one is a gap of its own).
    Parent,
    /// Neither: a gap in the table.
    Uncovered,
}

/// The segments of a schema path.
fn segments(path: &str) -> Vec<String> {
    path.split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// Whether the row pattern lies at or above the schema path (`exact`:
/// is exactly it).
fn covers(row: &[Seg], path: &[String], exact: bool) -> bool {
    if row.len() > path.len() || (exact && row.len() != path.len()) {
        return false;
    }
    row.iter().zip(path).all(|(seg, key)| match seg {
        Seg::Any => true,
        Seg::OneOf(keys) => key == "*" || keys.iter().any(|k| k == key),
    })
}

/// The deepest of `rows` (absolute patterns) at or above `path`.
fn deepest<'a, T>(rows: &[(Vec<Seg>, &'a T)], path: &[String]) -> Option<&'a T> {
    rows.iter()
        .filter(|(p, _)| covers(p, path, false))
        .max_by_key(|(p, _)| p.len())
        .map(|(_, row)| *row)
}

fn governed_rows(kind: Kind) -> Vec<(Vec<Seg>, &'static Governed)> {
    GOVERNED
        .iter()
        .filter_map(|row| Some((pattern(&absolute(row.scope, row.path, kind)?), row)))
        .collect()
}

fn ungoverned_rows(kind: Kind) -> Vec<(Vec<Seg>, &'static Ungoverned)> {
    UNGOVERNED
        .iter()
        .filter_map(|row| Some((pattern(&absolute(row.scope, row.path, kind)?), row)))
        .collect()
}

/// How deep the deepest of `rows` at or above `path` is.
fn depth<T>(rows: &[(Vec<Seg>, T)], path: &[String]) -> Option<usize> {
    rows.iter()
        .filter(|(p, _)| covers(p, path, false))
        .map(|(p, _)| p.len())
        .max()
}

/// Where the schema path `path` of `kind` stands in the table.
pub fn coverage(kind: Kind, path: &str) -> Coverage {
    let keys = segments(path);
    let governed = governed_rows(kind);
    let ungoverned = ungoverned_rows(kind);
    // A part left alone inside a governed one (a Job's immutable pod
    // template inside its governed spec) is left alone.
    if depth(&ungoverned, &keys) > depth(&governed, &keys) {
        return deepest(&ungoverned, &keys).map_or(Coverage::Uncovered, Coverage::Ungoverned);
    }
    if let Some(row) = deepest(&governed, &keys) {
        return Coverage::Governed(row);
    }
    match deepest(&ungoverned, &keys) {
        Some(row) => Coverage::Ungoverned(row),
        None => Coverage::Uncovered,
    }
}

/// Where each of `paths` (every field path of `kind`, as the schema
/// has them) stands: as [`coverage`], and [`Coverage::Parent`] for a path
/// no row names whose fields all stand somewhere.
pub fn classify(kind: Kind, paths: &[&str]) -> Vec<Coverage> {
    let mut out: Vec<Coverage> = paths.iter().map(|p| coverage(kind, p)).collect();
    // Deepest first, so that a parent of parents is judged on them.
    let mut order: Vec<usize> = (0..paths.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(paths[i].matches('/').count()));
    for i in order {
        if !matches!(out[i], Coverage::Uncovered) {
            continue;
        }
        let below = format!("{}/", paths[i]);
        let mut children = paths
            .iter()
            .zip(&out)
            .filter(|(p, _)| p.starts_with(&below))
            .peekable();
        if children.peek().is_some() && children.all(|(_, c)| !matches!(c, Coverage::Uncovered)) {
            out[i] = Coverage::Parent;
        }
    }
    out
}

/// The tolerated row at or above the schema path, if any: the allowlist
/// names it (with any value, or only the apiserver's default).
pub fn tolerance(kind: Kind, path: &str) -> Option<&'static Tolerated> {
    let keys = segments(path);
    let rows: Vec<(Vec<Seg>, &'static Tolerated)> = TOLERATED
        .iter()
        .filter_map(|row| Some((pattern(&absolute(row.scope, row.path, kind)?), row)))
        .collect();
    deepest(&rows, &keys)
}

/// Whether the contract tolerates `value` at the concrete pointer
/// `pointer` of `kind` where berth renders nothing (`parent`: the object
/// holding it, for rows that look at a sibling).
pub fn tolerates(kind: Kind, pointer: &str, value: &Value, parent: Option<&Value>) -> bool {
    exact(View::governing(kind)).tolerated(&segments(pointer), value, parent)
}

/// Every concrete alternative of a row pattern: `/a/{b,c}/*` gives
/// `/a/b/*` and `/a/c/*` (for checking that each names a schema path).
pub fn alternatives(path: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    for segment in path.split('/').skip(1) {
        let options: Vec<&str> = match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(inner) => inner.split(',').collect(),
            None => vec![segment],
        };
        out = out
            .iter()
            .flat_map(|prefix| options.iter().map(move |o| format!("{prefix}/{o}")))
            .collect();
    }
    out
}

/// Whether the schema path `schema` is the (concrete) row path `row`:
/// equal segment by segment, a schema `*` matching any key.
pub fn names(row: &str, schema: &str) -> bool {
    covers(&pattern(row), &segments(schema), true)
}
