//! Namespaces: the picker `:ns` opens, from a Namespace list (not only the
//! namespaces that happen to hold objects the console has seen).

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::table::{Cell, Row, RowRef, RowTone};
use super::{NONE, age, epoch};
use crate::store::Store;

/// One Namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceRow {
    pub name: String,
    /// `Active` or `Terminating`.
    pub status: String,
    /// `berth.dev/project` label.
    pub project: String,
    /// `berth.dev/environment` label.
    pub environment: String,
    pub age: String,
    /// Creation time, seconds since the epoch (the AGE shown is computed
    /// from it when drawn).
    #[serde(skip)]
    pub created: Option<i64>,
    #[serde(skip)]
    pub uid: String,
}

/// Rows of the namespace picker.
pub fn namespace_rows(store: &Store, now: Timestamp) -> Vec<NamespaceRow> {
    store
        .namespaces
        .values()
        .map(|n| {
            let label = |k: &str| {
                n.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(k).cloned())
                    .unwrap_or_else(|| NONE.into())
            };
            NamespaceRow {
                name: n.metadata.name.clone().unwrap_or_default(),
                status: n
                    .status
                    .as_ref()
                    .and_then(|s| s.phase.clone())
                    .unwrap_or_else(|| NONE.into()),
                project: label("berth.dev/project"),
                environment: label("berth.dev/environment"),
                age: age(n.metadata.creation_timestamp.as_ref(), now),
                created: epoch(n.metadata.creation_timestamp.as_ref()),
                uid: n.metadata.uid.clone().unwrap_or_default(),
            }
        })
        .collect()
}

/// Column headers.
pub const HEADERS: &[&str] = &["NAME", "STATUS", "PROJECT", "ENVIRONMENT", "AGE"];

impl Row for NamespaceRow {
    fn headers() -> &'static [&'static str] {
        HEADERS
    }

    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::text(&self.name),
            Cell::text(&self.status),
            Cell::text(&self.project),
            Cell::text(&self.environment),
            Cell::age(self.age.clone(), self.created),
        ]
    }

    fn tone(&self) -> RowTone {
        if self.status == "Terminating" {
            RowTone::Warn
        } else {
            RowTone::Normal
        }
    }

    fn target(&self) -> RowRef {
        RowRef::Namespace(self.name.clone())
    }

    fn uid(&self) -> &str {
        &self.uid
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn every_namespace_of_the_list_is_a_row() {
        let app = fixtures::app();
        let rows = namespace_rows(&app.clusters[0].data.store, fixtures::now());
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        // `empty` holds nothing the console watches: only the list knows it.
        assert_eq!(names, ["default", "demo", "empty", "legacy"]);
        let demo = &rows[1];
        assert_eq!(demo.project, "shop");
        assert_eq!(demo.cells().len(), HEADERS.len());
    }
}
