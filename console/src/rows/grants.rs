//! Grants: every RuntimeGrant with its class/handler check, node coverage,
//! runtimes using it, retained workloads, file digest and load time, and
//! "restart required" when the agent's file changed on disk — and a warning
//! when more than one namespace carries the grant's project/environment
//! labels (copies there would claim the same identity: only the oldest
//! Runtime holds it, see `berth_shared::claims`).

use std::collections::BTreeMap;

use berth_shared::api::{RuntimeGrant, condition, grant_condition_types};
use berth_shared::{claims, decide};
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::table::{Cell, Row, RowRef, RowTone};
use super::{NONE, age, epoch};
use crate::store::Store;

/// One RuntimeGrant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantRow {
    pub name: String,
    pub project: String,
    pub environment: String,
    pub application: String,
    pub service: String,
    pub class: String,
    pub handler: String,
    /// `ok`, or what is wrong with the class.
    pub check: String,
    /// Nodes reporting the handler, `n/m`.
    pub nodes: String,
    pub runtimes: usize,
    pub retained: usize,
    /// First 12 hex digits of the grants file's sha256.
    pub digest: String,
    pub loaded: String,
    /// When the file was loaded, seconds since the epoch (the LOADED age
    /// shown is computed from it when drawn).
    #[serde(skip)]
    pub loaded_at: Option<i64>,
    /// The object's uid (the selection follows it).
    #[serde(skip)]
    pub uid: String,
    /// The grants file changed on disk: the agent must be restarted.
    pub restart_required: bool,
    /// The namespaces carrying this grant's project/environment labels,
    /// when there is more than one (empty otherwise): each of them can
    /// claim the grant's identity.
    pub shared_by: Vec<String>,
    /// Something is wrong (highlighted).
    pub problem: bool,
}

/// Rows of the Grants view.
pub fn grant_rows(store: &Store, now: Timestamp) -> Vec<GrantRow> {
    let shared = shared_scopes(store);
    store
        .grants
        .values()
        .map(|g| {
            let mut row = grant_row(g, now);
            if let Some(names) = shared.get(&(row.project.clone(), row.environment.clone())) {
                row.shared_by.clone_from(names);
                row.problem = true;
            }
            row
        })
        .collect()
}

/// The sha256 of the grants file(s) the agent whose Lease is named
/// `publisher` loaded, as its published grants say; grants it retired
/// (removed from the file, kept while workloads still need their class)
/// are left out: they keep the digest of the file they came from. One
/// digest while the agent runs one file; none without grants; more while
/// it republishes after a restart.
pub fn grants_file_digests(store: &Store, publisher: &str) -> std::collections::BTreeSet<String> {
    published_by(store, publisher)
        .filter(|g| !super::handlers::is_retired(g))
        .filter_map(|g| g.status.as_ref()?.source.as_ref()?.sha256.clone())
        .collect()
}

/// The RuntimeGrants the agent whose Lease is named `publisher`
/// published (another agent's, in a cluster that runs several, are not
/// its file's).
pub fn published_by<'a>(
    store: &'a Store,
    publisher: &'a str,
) -> impl Iterator<Item = &'a RuntimeGrant> + 'a {
    store.grants.values().map(|g| g.as_ref()).filter(move |g| {
        g.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(berth_shared::api::meta::PUBLISHED_BY_LABEL))
            .is_some_and(|p| p == publisher)
    })
}

/// Project/environment pairs that several namespaces carry.
fn shared_scopes(store: &Store) -> BTreeMap<(String, String), Vec<String>> {
    let scopes: Vec<(String, (String, String))> = store
        .namespaces
        .values()
        .filter_map(|ns| {
            let name = ns.metadata.name.clone().unwrap_or_default();
            let labels = ns.metadata.labels.clone().unwrap_or_default();
            let scope = decide::namespace_scope(&name, &labels).ok()?;
            Some((name, scope))
        })
        .collect();
    claims::shared_scopes(
        scopes
            .iter()
            .map(|(name, (p, e))| (name.as_str(), (p.as_str(), e.as_str()))),
    )
}

fn grant_row(g: &RuntimeGrant, now: Timestamp) -> GrantRow {
    let status = g.status.clone();
    let check = match &status {
        None => "unknown".to_string(),
        // The binding left the grants file; kept while workloads need it.
        Some(_) if super::handlers::is_retired(g) => "retired (binding removed)".into(),
        Some(s) if !s.class_present => "class missing".into(),
        Some(s) if s.class_deleting => "class deleting".into(),
        Some(s) if !s.handler_matches => format!(
            "handler mismatch ({})",
            s.class_handler.clone().unwrap_or_else(|| NONE.into())
        ),
        Some(s) if s.class_has_overhead || s.class_has_scheduling => {
            "unsupported (overhead/scheduling)".into()
        }
        Some(_) => "ok".into(),
    };
    let restart_required = status.as_ref().is_some_and(|s| {
        condition::is_true(&s.conditions, grant_condition_types::RESTART_REQUIRED)
    });
    let nodes_incomplete = status
        .as_ref()
        .and_then(|s| s.nodes.as_ref())
        // Unknown nodes (no handler list) are not a problem by themselves.
        .is_some_and(|n| n.with_handler + n.unknown < n.total || n.total == 0);
    let source = status.as_ref().and_then(|s| s.source.clone());
    GrantRow {
        name: g.metadata.name.clone().unwrap_or_default(),
        project: g.spec.identity.project.clone(),
        environment: g.spec.identity.environment.clone(),
        application: g.spec.identity.application.clone(),
        service: g.spec.identity.service.clone(),
        class: g.spec.runtime_class.clone(),
        handler: g.spec.handler.clone(),
        problem: check != "ok" || restart_required || nodes_incomplete,
        check,
        nodes: status
            .as_ref()
            .and_then(|s| s.nodes.as_ref())
            .map(|n| n.summary.clone())
            .unwrap_or_else(|| NONE.into()),
        runtimes: status.as_ref().map(|s| s.runtimes.len()).unwrap_or(0),
        retained: status.as_ref().map(|s| s.retained.len()).unwrap_or(0),
        digest: source
            .as_ref()
            .and_then(|s| s.sha256.as_ref())
            .map(|d| d.chars().take(12).collect())
            .unwrap_or_else(|| NONE.into()),
        loaded: age(source.as_ref().and_then(|s| s.loaded_at.as_ref()), now),
        loaded_at: epoch(source.as_ref().and_then(|s| s.loaded_at.as_ref())),
        uid: g.metadata.uid.clone().unwrap_or_default(),
        restart_required,
        shared_by: Vec::new(),
    }
}

/// Column headers.
pub const HEADERS: &[&str] = &[
    "NAME",
    "PROJECT/ENV",
    "APPLICATION/SERVICE",
    "CLASS",
    "HANDLER",
    "CHECK",
    "NODES",
    "RUNTIMES",
    "RETAINED",
    "FILE",
    "LOADED",
];

impl GrantRow {
    /// The PROJECT/ENV cell, with `×N` when N namespaces carry the pair
    /// (short: the column is squeezed first on narrow terminals; the names
    /// are in `sharedBy` of `berth get grants -o json`).
    pub fn scope_text(&self) -> String {
        let pair = format!("{}/{}", self.project, self.environment);
        match self.shared_by.len() {
            0 | 1 => pair,
            n => format!("{pair} ×{n}"),
        }
    }
}

impl Row for GrantRow {
    fn headers() -> &'static [&'static str] {
        HEADERS
    }

    fn cells(&self) -> Vec<Cell> {
        let file = if self.restart_required {
            format!("{} restart required", self.digest)
        } else {
            self.digest.clone()
        };
        vec![
            Cell::text(&self.name),
            Cell::text(self.scope_text()),
            Cell::text(format!("{}/{}", self.application, self.service)),
            Cell::text(&self.class),
            Cell::text(&self.handler),
            Cell::text(&self.check),
            Cell::ratio_text(&self.nodes),
            Cell::count(i64::try_from(self.runtimes).unwrap_or(i64::MAX)),
            Cell::count(i64::try_from(self.retained).unwrap_or(i64::MAX)),
            Cell::text(file),
            Cell::age(self.loaded.clone(), self.loaded_at),
        ]
    }

    fn tone(&self) -> RowTone {
        if self.check != "ok" {
            RowTone::Problem
        } else if self.problem || !self.shared_by.is_empty() {
            RowTone::Warn
        } else {
            RowTone::Normal
        }
    }

    fn target(&self) -> RowRef {
        RowRef::Grant(self.name.clone())
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
    fn checks_and_restart_required_show_in_cells_and_tone() {
        let app = fixtures::app();
        let rows = grant_rows(&app.clusters[0].data.store, fixtures::now());
        assert!(!rows.is_empty());
        for r in &rows {
            let cells = r.cells();
            assert_eq!(cells.len(), HEADERS.len());
            assert_eq!(r.tone() == RowTone::Problem, r.check != "ok", "{}", r.name);
            assert_eq!(
                cells[9].text.contains("restart required"),
                r.restart_required
            );
            assert!(r.shared_by.is_empty(), "{}", r.name);
        }
    }

    #[test]
    fn two_namespaces_with_one_project_environment_pair_are_a_warning() {
        let mut objs = fixtures::objects();
        objs.extend(fixtures::namespaces_sharing_demo_production());
        let app = fixtures::app_with(objs);
        let rows = grant_rows(&app.clusters[0].data.store, fixtures::now());
        let ok = rows
            .iter()
            .find(|r| r.check == "ok" && r.project == "demo")
            .expect("an ok demo/production grant");
        assert_eq!(ok.shared_by, vec!["team-a", "team-b"]);
        assert_eq!(ok.cells()[1].text, "demo/production ×2");
        assert!(ok.problem);
        // The shared pair alone makes an otherwise healthy grant warn.
        let mut healthy = ok.clone();
        healthy.problem = false;
        assert_eq!(healthy.tone(), RowTone::Warn);
        healthy.shared_by.clear();
        assert_eq!(healthy.tone(), RowTone::Normal);
        assert_eq!(healthy.cells()[1].text, "demo/production");
    }
}
