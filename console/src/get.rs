//! `berth get runtimes|grants|handlers|retained|rollouts [-o table|json|yaml]`:
//! the rows of the views, for scripts. The formatting is pure (from a
//! [`Store`]); everything printed goes through the sanitizer once more.

use berth_shared::sanitize;
use clap::ValueEnum;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use crate::model::{ListView, Screen};
use crate::rows::merged::Part;
use crate::rows::{self, Merged, TableData};
use crate::store::{ClusterId, Kind, Store};

/// What to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum What {
    /// Runtimes with their grant state and rollout phase.
    #[value(alias = "runtime", alias = "rt")]
    Runtimes,
    /// RuntimeGrants with their checks and coverage.
    #[value(alias = "grant", alias = "rtg")]
    Grants,
    /// RuntimeClasses, their workloads and the removal verdict.
    #[value(alias = "handler", alias = "rc")]
    Handlers,
    /// Workloads still needing a handler no grant covers.
    Retained,
    /// Rollout progress of every Runtime.
    #[value(alias = "rollout")]
    Rollouts,
}

/// Output format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns.
    #[default]
    Table,
    /// A JSON document `{"kind": …, "items": […]}`.
    Json,
    /// The same as YAML.
    Yaml,
}

impl Format {
    /// `v` as a JSON or YAML document (a table has none: JSON then).
    pub fn document(self, v: &serde_json::Value) -> String {
        if self == Format::Yaml {
            yaml_serde::to_string(v).unwrap_or_else(|e| format!("error: {e}\n"))
        } else {
            let mut s = serde_json::to_string_pretty(v)
                .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
            s.push('\n');
            s
        }
    }
}

impl What {
    /// The kinds needed to compute the rows.
    pub fn kinds(self) -> Vec<Kind> {
        let screen = match self {
            What::Runtimes => Screen::List(ListView::Runtimes),
            What::Grants => Screen::List(ListView::Grants),
            What::Handlers => Screen::List(ListView::Handlers),
            What::Retained => Screen::List(ListView::Retained),
            What::Rollouts => Screen::Rollout(ClusterId::new(""), (String::new(), String::new())),
        };
        screen.kinds()
    }

    fn list_kind(self) -> &'static str {
        match self {
            What::Runtimes => "RuntimeList",
            What::Grants => "RuntimeGrantList",
            What::Handlers => "HandlerList",
            What::Retained => "RetainedList",
            What::Rollouts => "RolloutList",
        }
    }
}

#[derive(Serialize)]
struct Doc<T: Serialize> {
    kind: &'static str,
    items: Vec<T>,
}

/// The warning for a kind the apiserver refused to list (sanitized: the
/// message comes from the cluster).
pub fn refused_line(kind: Kind, error: &str) -> String {
    format!(
        "berth: warning: cannot list {}: {}; the rows that need it are missing",
        kind.label(),
        sanitize::short(error)
    )
}

/// Formats the rows of `what` from `store`.
pub fn format(what: What, store: &Store, now: Timestamp, fmt: Format) -> String {
    match fmt {
        Format::Table => table_text(&table(what, store, now)),
        Format::Json | Format::Yaml => {
            let v = match what {
                What::Runtimes => doc(what, rows::runtime_rows(store, now)),
                What::Grants => doc(what, rows::grant_rows(store, now)),
                What::Handlers => doc(what, rows::handler_rows(store)),
                What::Retained => doc(what, rows::retained_rows(store)),
                What::Rollouts => doc(what, rows::rollout_rows(store, now)),
            };
            fmt.document(&v)
        }
    }
}

fn doc<T: Serialize>(what: What, items: Vec<T>) -> serde_json::Value {
    let mut v = serde_json::to_value(Doc {
        kind: what.list_kind(),
        items,
    })
    .unwrap_or(serde_json::Value::Null);
    sanitize::json(&mut v, sanitize::MAX_VALUE_CHARS);
    v
}

pub use crate::rows::matrix::MATRIX_KINDS;

/// `berth get handlers --matrix`: the handler matrix as a table (classes
/// down, node groups across, the legend and each group's nodes) or as one
/// `{"kind": "HandlerMatrix", "classes": […], "groups": […]}` document
/// naming every node of every group.
pub fn format_matrix(store: &Store, fmt: Format) -> String {
    let m = crate::rows::matrix::matrix(store);
    match fmt {
        Format::Table => {
            crate::rows::matrix::matrix_text(&m, k8s_openapi::jiff::Timestamp::now().as_second())
        }
        Format::Json | Format::Yaml => {
            let mut v = serde_json::json!({"kind": "HandlerMatrix"});
            if let (Some(obj), Ok(serde_json::Value::Object(body))) =
                (v.as_object_mut(), serde_json::to_value(&m))
            {
                obj.extend(body);
            }
            sanitize::json(&mut v, sanitize::MAX_VALUE_CHARS);
            if fmt == Format::Json {
                let mut s = serde_json::to_string_pretty(&v)
                    .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
                s.push('\n');
                s
            } else {
                yaml_serde::to_string(&v).unwrap_or_else(|e| format!("error: {e}\n"))
            }
        }
    }
}

/// The table of `what`: the same rows and cells as the TUI's lists.
pub fn table(what: What, store: &Store, now: Timestamp) -> TableData {
    match what {
        What::Runtimes => TableData::of(&rows::runtime_rows(store, now)),
        What::Grants => TableData::of(&rows::grant_rows(store, now)),
        What::Handlers => TableData::of(&rows::handler_rows(store)),
        What::Retained => TableData::of(&rows::retained_rows(store)),
        What::Rollouts => TableData::of(&rows::rollout_rows(store, now)),
    }
}

/// Aligned columns, kubectl style (no trailing spaces).
pub fn table_text(t: &TableData) -> String {
    text_table(&t.headers, t.visible.iter().map(|&i| t.cells[i].clone()))
}

/// Aligned columns of `rows` under `headers`, every cell sanitized (an
/// empty one is `-`).
pub fn text_table(headers: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let cells: Vec<Vec<String>> = rows
        .map(|row| {
            row.iter()
                .map(|c| sanitize::value(if c.is_empty() { rows::NONE } else { c }))
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &cells {
        for (c, s) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(c) {
                *w = (*w).max(s.chars().count());
            }
        }
    }
    let mut out = String::new();
    let headers: Vec<String> = headers.iter().map(|h| (*h).to_string()).collect();
    for row in std::iter::once(&headers).chain(cells.iter()) {
        let mut line = String::new();
        for (c, s) in row.iter().enumerate() {
            let w = widths.get(c).copied().unwrap_or(0);
            line.push_str(s);
            if c + 1 < row.len() {
                line.push_str(&" ".repeat(w.saturating_sub(s.chars().count()) + 3));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The rows of `what` over several clusters: a table with a `CLUSTER`
/// column first, or one document whose every item carries `cluster`.
pub fn format_fleet(
    what: What,
    stores: &[(ClusterId, &Store)],
    now: Timestamp,
    fmt: Format,
) -> String {
    match fmt {
        Format::Table => {
            let parts: Vec<Part> = stores
                .iter()
                .map(|(c, store)| Part {
                    cluster: c.clone(),
                    table: table(what, store, now),
                })
                .collect();
            let family = parts
                .first()
                .map(|p| p.table.headers.clone())
                .unwrap_or_default();
            let m = Merged::of_parts(parts, &family);
            text_table(
                &m.headers(),
                (0..m.len()).map(|pos| (0..m.columns()).map(|c| m.cell(pos, c)).collect()),
            )
        }
        Format::Json | Format::Yaml => {
            let mut items = Vec::new();
            for (c, store) in stores {
                let v = match what {
                    What::Runtimes => doc(what, rows::runtime_rows(store, now)),
                    What::Grants => doc(what, rows::grant_rows(store, now)),
                    What::Handlers => doc(what, rows::handler_rows(store)),
                    What::Retained => doc(what, rows::retained_rows(store)),
                    What::Rollouts => doc(what, rows::rollout_rows(store, now)),
                };
                if let serde_json::Value::Array(rows) = v["items"].clone() {
                    items.extend(rows.into_iter().map(|mut item| {
                        if let Some(o) = item.as_object_mut() {
                            o.insert("cluster".into(), c.shown().into());
                        }
                        item
                    }));
                }
            }
            let mut v = serde_json::json!({"kind": what.list_kind(), "items": items});
            sanitize::json(&mut v, sanitize::MAX_VALUE_CHARS);
            fmt.document(&v)
        }
    }
}

/// `berth get handlers --matrix --context a,b`: each cluster's matrix
/// under its name, or one `HandlerMatrixList` whose items carry
/// `cluster`.
pub fn format_matrix_fleet(stores: &[(ClusterId, &Store)], fmt: Format) -> String {
    match fmt {
        Format::Table => stores
            .iter()
            .map(|(c, store)| format!("=== cluster {c} ===\n{}", format_matrix(store, fmt)))
            .collect::<Vec<_>>()
            .join("\n"),
        Format::Json | Format::Yaml => {
            let items: Vec<serde_json::Value> = stores
                .iter()
                .map(|(c, store)| {
                    let mut v = serde_json::to_value(crate::rows::matrix::matrix(store))
                        .unwrap_or(serde_json::Value::Null);
                    if let Some(o) = v.as_object_mut() {
                        o.insert("cluster".into(), c.shown().into());
                    }
                    v
                })
                .collect();
            let mut v = serde_json::json!({"kind": "HandlerMatrixList", "items": items});
            sanitize::json(&mut v, sanitize::MAX_VALUE_CHARS);
            fmt.document(&v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn runtimes_table() {
        let app = fixtures::app();
        let out = format(
            What::Runtimes,
            &app.clusters[0].data.store,
            fixtures::now(),
            Format::Table,
        );
        let mut lines = out.lines();
        assert!(
            lines
                .next()
                .is_some_and(|h| h.starts_with("NAMESPACE   NAME"))
        );
        assert!(out.contains("worker"), "{out}");
        assert!(out.contains("Revoked"), "{out}");
    }

    #[test]
    fn json_and_yaml_parse_back() {
        let app = fixtures::app();
        for what in [
            What::Runtimes,
            What::Grants,
            What::Handlers,
            What::Retained,
            What::Rollouts,
        ] {
            let j = format(
                what,
                &app.clusters[0].data.store,
                fixtures::now(),
                Format::Json,
            );
            let v: serde_json::Value = serde_json::from_str(&j).expect("json");
            assert!(v["items"].is_array(), "{what:?}");
            let y = format(
                what,
                &app.clusters[0].data.store,
                fixtures::now(),
                Format::Yaml,
            );
            let vy: serde_json::Value = yaml_serde::from_str(&y).expect("yaml");
            assert_eq!(v, vy);
        }
        let j = format(
            What::Handlers,
            &app.clusters[0].data.store,
            fixtures::now(),
            Format::Json,
        );
        let v: serde_json::Value = serde_json::from_str(&j).expect("json");
        let gvisor = v["items"]
            .as_array()
            .and_then(|a| a.iter().find(|h| h["class"] == "gvisor"))
            .expect("gvisor");
        assert_eq!(gvisor["safeToRemove"], true);
    }

    #[test]
    fn matrix_json_yaml_and_table() {
        let app = fixtures::app();
        let store = &app.clusters[0].data.store;
        let j = format_matrix(store, Format::Json);
        let v: serde_json::Value = serde_json::from_str(&j).expect("json");
        assert_eq!(v["kind"], "HandlerMatrix");
        assert_eq!(v["classes"].as_array().map(Vec::len), Some(2));
        // kwok-node-0 and -1 report the same set but run different pods
        // of bounded-runc: three groups for three nodes here.
        let groups = v["groups"].as_array().expect("groups");
        let node2 = groups
            .iter()
            .find(|g| g["nodes"] == serde_json::json!(["kwok-node-2"]))
            .expect("kwok-node-2 alone");
        assert_eq!(node2["cells"][0]["class"], "bounded-runc");
        assert_eq!(node2["cells"][0]["handler"]["state"], "absent");
        let y = format_matrix(store, Format::Yaml);
        let vy: serde_json::Value = yaml_serde::from_str(&y).expect("yaml");
        assert_eq!(v, vy);
        let t = format_matrix(store, Format::Table);
        assert!(t.starts_with("CLASS"), "{t}");
        assert!(t.contains("bounded-runc"), "{t}");
    }
}
