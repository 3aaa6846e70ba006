//! Retained: workloads that still reference a class no current grant covers
//! for them (grant gone, or never granted), from the shared analysis.

use berth_shared::analysis::{self, RetainReason};
use serde::Serialize;

use berth_shared::analysis::Workload;

use super::handlers::{WorkloadEntry, bindings, classed_workloads};
use super::store_kind;
use super::table::{Cell, Row, RowRef, RowTone};
use crate::store::{Kind, Store};

/// One retained workload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetainedRow {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub class: String,
    /// The class's handler, if the class exists.
    pub handler: String,
    /// `grant gone (alias)`, `never granted`, `orphan on granted class (A)`
    /// (berth's labels, no controller), or, for a workload berth does
    /// not manage, `outside berth` (`outside berth, bypasses grant A` when
    /// a grant names its class: the workload RuntimeClass policy would
    /// refuse it today, so it predates the policy or is exempt).
    pub reason: String,
    pub ready: i32,
    pub replicas: i32,
    pub managed_by_berth: bool,
    pub note: String,
}

/// Rows of the Retained view.
pub fn retained_rows(store: &Store) -> Vec<RetainedRow> {
    retained_rows_of(store, &classed_workloads(store))
}

/// [`retained_rows`] from the given workloads: any superset of those that
/// reference a class gives the same rows.
pub(crate) fn retained_rows_of(store: &Store, all: &[Workload]) -> Vec<RetainedRow> {
    let grants = bindings(store);
    analysis::retained(all, &grants, None)
        .into_iter()
        .map(|r| {
            let entry = WorkloadEntry::from_workload(&r.workload);
            RetainedRow {
                kind: entry.kind,
                namespace: entry.namespace,
                name: entry.name,
                handler: store
                    .classes
                    .get(&(String::new(), r.class.clone()))
                    .map(|c| c.handler.clone())
                    .unwrap_or_else(|| "(class missing)".into()),
                class: r.class,
                reason: match r.reason {
                    RetainReason::GrantGone { alias } => format!("grant gone ({alias})"),
                    RetainReason::NotGranted => "never granted".into(),
                    RetainReason::Orphaned { granted_as } => {
                        format!("orphan on granted class ({})", granted_as.join(", "))
                    }
                    RetainReason::OutsideBerth { granted_as } if granted_as.is_empty() => {
                        "outside berth".into()
                    }
                    RetainReason::OutsideBerth { granted_as } => {
                        format!("outside berth, bypasses grant {}", granted_as.join(", "))
                    }
                },
                ready: entry.ready,
                replicas: entry.replicas,
                managed_by_berth: entry.managed_by_berth,
                note: entry.note,
            }
        })
        .collect()
}

/// Column headers.
pub const HEADERS: &[&str] = &[
    "KIND",
    "NAMESPACE",
    "NAME",
    "CLASS",
    "HANDLER",
    "REASON",
    "READY",
    "BERTH",
    "NOTE",
];

impl Row for RetainedRow {
    fn headers() -> &'static [&'static str] {
        HEADERS
    }

    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::text(&self.kind),
            Cell::text(&self.namespace),
            Cell::text(&self.name),
            Cell::text(&self.class),
            Cell::text(&self.handler),
            Cell::text(&self.reason),
            Cell::ratio(self.ready.into(), self.replicas.into()),
            // "out" (of berth), not "no": berth's grants do not govern it.
            // Short enough to stay whole at 80 columns.
            Cell::text(if self.managed_by_berth { "yes" } else { "out" }),
            Cell::text(&self.note),
        ]
    }

    fn tone(&self) -> RowTone {
        if self.reason.starts_with("grant gone")
            || self.reason.starts_with("orphan")
            || self.reason.contains("bypasses grant")
            || self.handler == "(class missing)"
        {
            RowTone::Problem
        } else {
            RowTone::Warn
        }
    }

    fn target(&self) -> RowRef {
        RowRef::Workload(
            store_kind(&self.kind).unwrap_or(Kind::Pod),
            (self.namespace.clone(), self.name.clone()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn grant_gone_is_a_problem_never_granted_a_warning() {
        let app = fixtures::app();
        let rows = retained_rows(&app.clusters[0].data.store);
        assert!(!rows.is_empty());
        for r in &rows {
            let expected = if r.reason.starts_with("grant gone")
                || r.reason.starts_with("orphan")
                || r.reason.contains("bypasses grant")
                || r.handler == "(class missing)"
            {
                RowTone::Problem
            } else {
                RowTone::Warn
            };
            assert_eq!(r.tone(), expected);
            assert!(matches!(r.target(), RowRef::Workload(..)));
        }
    }
}
