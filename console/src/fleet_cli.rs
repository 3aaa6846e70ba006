//! `berth get|check|plan-grants --context a,b` (issue 56): the reads of
//! one cluster, once per cluster, all at once; every item printed carries
//! its cluster. A cluster that cannot be read is reported on its own (a
//! warning on stderr, a `cluster-unreachable` finding, a failed plan) and
//! fails the command only when every cluster fails.

use std::path::Path;

use berth_shared::findings::{Finding, Severity, worst};
use berth_shared::plan::Plan;
use berth_shared::sanitize;
use color_eyre::eyre::{Result, WrapErr as _, eyre};
use futures::future::join_all;
use k8s_openapi::jiff::Timestamp;

use crate::check::FailOn;
use crate::get::{self, Format, What};
use crate::model::Scope;
use crate::rows::findings::{ClusterInputs, FindingRow, fleet_findings, kinds};
use crate::store::{ClusterId, ObjKey};
use crate::watch::{ConnectOptions, Connection, Loaded, connect, load_available};

/// The contexts a command reads and the groups of them declared to run
/// one grants file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fleet {
    /// In the order given, each once (empty: the current context).
    pub contexts: Vec<String>,
    pub same_grants: Vec<Vec<String>>,
}

impl Fleet {
    /// `a,b=prod,c=prod`: the contexts, and the contexts of one label as
    /// a group.
    pub fn parse(list: &str) -> Result<Fleet> {
        let mut contexts: Vec<String> = Vec::new();
        let mut labels: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for item in crate::model::session::context_list(list) {
            let (context, label) = match item.split_once('=') {
                Some((c, l)) => (c.trim().to_string(), Some(l.trim().to_string())),
                None => (item, None),
            };
            if context.is_empty() {
                return Err(eyre!("--context: an empty context name in {list:?}"));
            }
            if contexts.contains(&context) {
                return Err(eyre!("--context names {context} twice"));
            }
            if let Some(l) = label.filter(|l| !l.is_empty()) {
                labels.entry(l).or_default().push(context.clone());
            }
            contexts.push(context);
        }
        Ok(Fleet {
            contexts,
            same_grants: labels.into_values().filter(|g| g.len() > 1).collect(),
        })
    }
}

/// One cluster's read: what it gave, or why it failed (sanitized).
pub type Read<T> = (ClusterId, std::result::Result<T, String>);

/// Runs `read` on a connection to each of `contexts`, all at once; the
/// results in the order of `contexts`.
pub async fn each<T, F, Fut>(base: &ConnectOptions, contexts: &[String], read: F) -> Vec<Read<T>>
where
    F: Fn(Connection) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let read = &read;
    join_all(contexts.iter().map(|c| {
        let opts = base.for_context(c);
        async move {
            let r = match connect(&opts).await {
                Ok(conn) => read(conn).await,
                Err(e) => Err(e).wrap_err("connecting"),
            };
            (
                ClusterId::new(c),
                r.map_err(|e| sanitize::line(&format!("{e:#}"), 2048)),
            )
        }
    }))
    .await
}

/// The scope of a read in one cluster: the one given, else the context's
/// own namespace (as `berth get` with one context).
fn scope_in(scope: &Option<Scope>, conn: &Connection) -> Scope {
    scope
        .clone()
        .unwrap_or_else(|| Scope::Namespace(conn.default_namespace.clone()))
}

/// The failures as warning lines, and an error if nothing was read.
fn failures<T>(reads: &[Read<T>]) -> Result<Vec<String>> {
    let failed: Vec<String> = reads
        .iter()
        .filter_map(|(c, r)| r.as_ref().err().map(|e| format!("{c}: {e}")))
        .collect();
    if !reads.is_empty() && failed.len() == reads.len() {
        return Err(eyre!("no cluster could be read: {}", failed.join("; ")));
    }
    Ok(failed
        .into_iter()
        .map(|f| format!("berth: warning: cluster {f}; its rows are missing"))
        .collect())
}

/// `berth get WHAT --context a,b`: the rows of every cluster that could
/// be read, and the warnings for stderr (clusters and kinds not read).
pub async fn get(
    base: &ConnectOptions,
    contexts: &[String],
    scope: Option<Scope>,
    lease: &ObjKey,
    what: Option<What>,
    fmt: Format,
) -> Result<(String, Vec<String>)> {
    let kinds = what.map_or_else(|| get::MATRIX_KINDS.to_vec(), What::kinds);
    let reads = each(base, contexts, |conn| {
        let (scope, kinds) = (scope_in(&scope, &conn), kinds.clone());
        async move {
            load_available(&conn, &scope, lease, &kinds)
                .await
                .wrap_err("reading")
        }
    })
    .await;
    let mut warnings = failures(&reads)?;
    let loaded: Vec<(ClusterId, Loaded)> = reads
        .into_iter()
        .filter_map(|(c, r)| r.ok().map(|l| (c, l)))
        .collect();
    for (c, l) in &loaded {
        warnings.extend(
            l.refused
                .iter()
                .map(|(kind, e)| format!("cluster {c}: {}", get::refused_line(*kind, e))),
        );
    }
    let stores: Vec<(ClusterId, &crate::store::Store)> =
        loaded.iter().map(|(c, l)| (c.clone(), &l.store)).collect();
    let out = match what {
        Some(what) => get::format_fleet(what, &stores, Timestamp::now(), fmt),
        None => get::format_matrix_fleet(&stores, fmt),
    };
    Ok((out, warnings))
}

/// `berth check --context a,b`: every cluster's findings, the findings
/// across them, and a `cluster-unreachable` finding for each cluster that
/// could not be read; fails only when none could.
pub async fn check(
    base: &ConnectOptions,
    contexts: &[String],
    scope: Option<Scope>,
    lease: &ObjKey,
    same_grants: &[Vec<String>],
) -> Result<Vec<(Vec<ClusterId>, Finding)>> {
    let reads = each(base, contexts, |conn| {
        let scope = scope.clone().unwrap_or(Scope::All);
        async move {
            load_available(&conn, &scope, lease, &kinds())
                .await
                .wrap_err("reading")
        }
    })
    .await;
    failures(&reads)?;
    let refused: Vec<Vec<(crate::store::Kind, String)>> = reads
        .iter()
        .map(|(_, r)| r.as_ref().map(|l| l.refused.clone()).unwrap_or_default())
        .collect();
    let inputs: Vec<ClusterInputs> = reads
        .iter()
        .zip(&refused)
        .filter_map(|((c, r), refused)| {
            r.as_ref().ok().map(|l| ClusterInputs {
                cluster: c.clone(),
                store: &l.store,
                refused,
            })
        })
        .collect();
    let unread: Vec<(ClusterId, String)> = reads
        .iter()
        .filter_map(|(c, r)| r.as_ref().err().map(|e| (c.clone(), e.clone())))
        .collect();
    let groups: Vec<Vec<ClusterId>> = same_grants
        .iter()
        .map(|g| g.iter().map(ClusterId::new).collect())
        .collect();
    Ok(fleet_findings(
        &inputs,
        &unread,
        lease,
        Timestamp::now(),
        &groups,
    ))
}

/// The exit code of `berth check` over the union of every cluster's
/// findings (see [`crate::check::exit_code`]).
pub fn check_exit_code(findings: &[(Vec<ClusterId>, Finding)], fail_on: FailOn) -> i32 {
    let all: Vec<Finding> = findings.iter().map(|(_, f)| f.clone()).collect();
    crate::check::exit_code(&all, fail_on)
}

/// A finding's row with its clusters: `cluster` is their names joined
/// with commas (one name for a cluster's own finding), `clusters` the
/// list.
#[derive(serde::Serialize)]
struct ClusterFindingRow {
    cluster: String,
    clusters: Vec<String>,
    #[serde(flatten)]
    row: FindingRow,
}

/// The findings of a fleet in `fmt`, sanitized, with their clusters.
pub fn render_check(findings: &[(Vec<ClusterId>, Finding)], fmt: Format) -> String {
    let rows: Vec<ClusterFindingRow> = findings
        .iter()
        .map(|(cs, f)| {
            let clusters: Vec<String> = cs.iter().map(ClusterId::shown).collect();
            ClusterFindingRow {
                cluster: clusters.join(","),
                clusters,
                row: FindingRow::of(f),
            }
        })
        .collect();
    match fmt {
        Format::Table => {
            if rows.is_empty() {
                return "no findings\n".into();
            }
            let mut headers = vec!["CLUSTER"];
            headers.extend_from_slice(crate::rows::findings::HEADERS);
            get::text_table(
                &headers,
                rows.iter().map(|r| {
                    let mut cells = vec![r.cluster.clone()];
                    cells.extend(
                        <FindingRow as crate::rows::Row>::cells(&r.row)
                            .into_iter()
                            .map(|c| c.text),
                    );
                    cells
                }),
            )
        }
        Format::Json | Format::Yaml => {
            let all: Vec<Finding> = findings.iter().map(|(_, f)| f.clone()).collect();
            let mut v = serde_json::json!({
                "kind": "FindingList",
                "worst": worst(&all).map(Severity::word),
                "items": rows,
            });
            sanitize::json(&mut v, sanitize::MAX_VALUE_CHARS);
            fmt.document(&v)
        }
    }
}

/// `berth plan-grants FILE --context a,b`: the plan of FILE (or each
/// agent's pending file) in each cluster, or why that cluster could not
/// be planned.
pub async fn plan(
    base: &ConnectOptions,
    contexts: &[String],
    scope: Option<Scope>,
    lease: &ObjKey,
    path: Option<&Path>,
) -> Vec<Read<Plan>> {
    let plans = join_all(contexts.iter().map(|c| {
        let (opts, scope) = (base.for_context(c), scope.clone());
        async move {
            let r = crate::plan_grants::plan_file(&opts, scope, lease, path).await;
            (
                ClusterId::new(c),
                r.map_err(|e| sanitize::line(&format!("{e:#}"), 2048)),
            )
        }
    }));
    plans.await
}

/// The exit code of a plan over several clusters: 3 if a change is
/// disruptive in any cluster, else 1 if the file is invalid or a cluster
/// could not be planned (its effect is unknown), else 2 if any cluster
/// changes safely, else 0.
pub fn plan_exit_code(plans: &[Read<Plan>]) -> i32 {
    let codes: Vec<i32> = plans
        .iter()
        .map(|(_, r)| r.as_ref().map_or(1, |p| p.exit_code))
        .collect();
    if codes.contains(&3) {
        3
    } else if codes.contains(&1) {
        1
    } else if codes.contains(&2) {
        2
    } else {
        0
    }
}

/// The plans in `fmt`: a section per cluster naming it (a table), or one
/// `PlanList` document whose items carry `cluster` (and `error` for a
/// cluster not planned).
pub fn render_plans(plans: &[Read<Plan>], fmt: Format) -> String {
    match fmt {
        Format::Table => {
            let mut out = String::new();
            for (c, r) in plans {
                out.push_str(&format!("=== cluster {c} ===\n"));
                match r {
                    Ok(p) => out.push_str(&crate::plan_grants::render(p, fmt)),
                    Err(e) => out.push_str(&format!("cannot plan: {e}\n")),
                }
                out.push('\n');
            }
            out
        }
        Format::Json | Format::Yaml => {
            let items: Vec<serde_json::Value> = plans
                .iter()
                .map(|(c, r)| {
                    let mut v = match r {
                        Ok(p) => serde_json::to_value(p).unwrap_or(serde_json::Value::Null),
                        Err(e) => serde_json::json!({"error": e, "exitCode": 1}),
                    };
                    if let Some(o) = v.as_object_mut() {
                        o.insert("cluster".into(), c.shown().into());
                    }
                    v
                })
                .collect();
            let mut v = serde_json::json!({
                "kind": "PlanList",
                "exitCode": plan_exit_code(plans),
                "items": items,
            });
            sanitize::json(&mut v, sanitize::MAX_VALUE_CHARS);
            fmt.document(&v)
        }
    }
}
