//! The handler matrix (issue 31) from the store: every RuntimeClass as a
//! row, nodes grouped by answer as columns (the pure
//! [`berth_shared::matrix`]), and its text for `berth get handlers
//! --matrix`. Pods are found through the store's classed index, so only
//! pods that name a class are looked at.

use berth_shared::matrix::{
    Matrix, MatrixCell, MatrixClass, MatrixNode, NodeState, PodPlace, handler_matrix,
};
use berth_shared::sanitize;

use crate::store::{Kind, Store};

/// The kinds the matrix reads: classes, nodes, and pods (where each
/// class's pods run).
pub const MATRIX_KINDS: &[Kind] = &[
    Kind::RuntimeClass,
    Kind::Node,
    Kind::Pod,
    // What the agent's canaries saw (`status.attestation`).
    Kind::RuntimeGrant,
];

/// The matrix of everything in the store.
pub fn matrix(store: &Store) -> Matrix {
    let attested = super::handlers::attestations(store);
    let classes: Vec<MatrixClass> = store
        .classes
        .values()
        .map(|c| {
            let mut class = MatrixClass::from_runtime_class(c);
            class.attestation = attested.get(&class.name).cloned();
            class
        })
        .collect();
    let nodes: Vec<MatrixNode> = store
        .nodes
        .values()
        .map(|n| MatrixNode::from_node(n))
        .collect();
    let pods: Vec<PodPlace<'_>> = store
        .classed
        .keys(Kind::Pod)
        .filter_map(|k| store.pods.get(k))
        // Finished pods run nothing; pending ones have no node yet.
        .filter(|p| !matches!(p.phase(), Some("Succeeded" | "Failed")))
        .filter_map(|p| {
            Some(PodPlace {
                class: p.runtime_class_name()?,
                node: p.node_name()?,
            })
        })
        .collect();
    handler_matrix(&classes, &nodes, &pods)
}

/// How a node group's state is written.
pub fn state_word(s: NodeState) -> &'static str {
    match s {
        NodeState::Ready => "ready",
        NodeState::Cordoned => "cordoned",
        NodeState::NotReady => "not ready",
    }
}

/// The legend of [`MatrixCell::short`].
pub const LEGEND: &str = "✓ scheduling allows  · nodeSelector excludes  T taint not tolerated │ \
H handler (r recursiveReadOnlyMounts, u userNamespaces)  - missing  ? not reported │ \
canary ✔ verified  ✘ failing  ~ unverified, with the evidence's age │ ▶N pods running";

/// A group's column heading: its label and how many nodes.
pub fn group_heading(label: &str, nodes: usize, state: NodeState) -> String {
    let mut s = if nodes > 1 {
        format!("{label} ({nodes})")
    } else {
        label.to_string()
    };
    if state != NodeState::Ready {
        s.push_str(&format!(" [{}]", state_word(state)));
    }
    s
}

/// The cell's text for a table, its evidence's age at `now` (seconds
/// since the epoch).
pub fn cell_text(c: &MatrixCell, now: i64) -> String {
    c.short_at(Some(now))
}

/// `berth get handlers --matrix` as a table: classes down, node groups
/// across, then the legend and each group's nodes (at most 10 named).
pub fn matrix_text(m: &Matrix, now: i64) -> String {
    let clean = |s: &str| sanitize::value(s);
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut head = vec!["CLASS".to_string(), "HANDLER".to_string()];
    head.extend(
        m.groups
            .iter()
            .map(|g| clean(&group_heading(&g.label, g.nodes.len(), g.state))),
    );
    rows.push(head);
    for (i, c) in m.classes.iter().enumerate() {
        let mut r = vec![clean(&c.class), clean(&c.handler)];
        r.extend(m.groups.iter().map(|g| {
            g.cells
                .get(i)
                .map(|c| cell_text(c, now))
                .unwrap_or_default()
        }));
        rows.push(r);
    }
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (c, s) in r.iter().enumerate() {
            line.push_str(s);
            if c + 1 < r.len() {
                line.push_str(&" ".repeat(widths[c].saturating_sub(s.chars().count()) + 3));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push('\n');
    out.push_str(LEGEND);
    out.push('\n');
    for g in &m.groups {
        let shown: Vec<String> = g.nodes.iter().take(10).map(|n| clean(n)).collect();
        let more = g.nodes.len().saturating_sub(shown.len());
        out.push_str(&format!(
            "{}: {}{}\n",
            clean(&group_heading(&g.label, g.nodes.len(), g.state)),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    out
}

/// Each cluster's matrix, in the fleet's order (node groups never span
/// clusters).
pub fn matrices<'a>(
    stores: impl IntoIterator<Item = (&'a crate::store::ClusterId, &'a Store)>,
) -> Vec<(crate::store::ClusterId, Matrix)> {
    stores
        .into_iter()
        .map(|(id, store)| (id.clone(), matrix(store)))
        .collect()
}

/// The matrix's class rows are numbered across the clusters, one after
/// the other: row `r` is (cluster index, its class row), or `None` past
/// the last.
pub fn locate(ms: &[(crate::store::ClusterId, Matrix)], r: usize) -> Option<(usize, usize)> {
    let mut r = r;
    for (k, (_, m)) in ms.iter().enumerate() {
        if r < m.classes.len() {
            return Some((k, r));
        }
        r -= m.classes.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn fixture_matrix_has_every_class_and_groups_every_node() {
        let app = fixtures::app();
        let store = &app.clusters[0].data.store;
        let m = matrix(store);
        assert_eq!(m.classes.len(), store.classes.len());
        let grouped: usize = m.groups.iter().map(|g| g.nodes.len()).sum();
        assert_eq!(grouped, store.nodes.len());
        let text = matrix_text(&m, 0);
        assert!(text.starts_with("CLASS"), "{text}");
        assert!(text.contains(LEGEND), "{text}");
    }
}
