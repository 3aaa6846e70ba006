//! The layers of `lib.rs` hold: store ← rows ← model ← watch / views ←
//! run. Each layer's non-test code names only the layers below it, so the
//! model and the rows cannot grow a dependency on drawing again. Within
//! the model, no two of its modules import each other, directly or round
//! a longer cycle (as `keys` and `keymap` once did through `COMMANDS`).

use std::path::{Path, PathBuf};

/// Non-test source of every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs")
            && path
                .file_name()
                .and_then(|n| n.to_str())
                .is_none_or(|n| n != "tests.rs" && !n.ends_with("_tests.rs"))
        {
            let text = std::fs::read_to_string(&path).expect("read source");
            // Unit tests may use fixtures and test helpers from anywhere.
            let code = match text.find("#[cfg(test)]\nmod tests") {
                Some(i) => text[..i].to_string(),
                None => text,
            };
            out.push((path, code));
        }
    }
    out
}

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `crate::LAYER` a layer's code names that it must not.
fn violations(layer: &str, forbidden: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, code) in sources(&src().join(layer)) {
        for f in forbidden {
            for pat in [format!("crate::{f}"), format!("super::super::{f}")] {
                if code.contains(&pat) {
                    found.push(format!("{} names {pat}", path.display()));
                }
            }
        }
    }
    found
}

#[test]
fn each_layer_imports_only_downward() {
    let above_store = [
        "rows",
        "model",
        "watch",
        "views",
        "run",
        "cli",
        "get",
        "retire",
        "fleet_cli",
    ];
    let above_rows = [
        "model",
        "watch",
        "views",
        "run",
        "cli",
        "get",
        "retire",
        "fleet_cli",
    ];
    let above_model = ["watch", "views", "run", "tui", "cli", "get", "fleet_cli"];
    let above_watch = ["views", "run", "tui", "cli", "get", "retire", "fleet_cli"];
    let above_views = ["run", "tui", "cli", "get", "fleet_cli"];
    let mut all = Vec::new();
    all.extend(violations("store", &above_store));
    all.extend(violations("rows", &above_rows));
    all.extend(violations("model", &above_model));
    all.extend(violations("watch", &above_watch));
    all.extend(violations("views", &above_views));
    assert!(all.is_empty(), "layering broken:\n{}", all.join("\n"));
}

#[test]
fn the_check_sees_a_violation() {
    // The scan is not vacuous: drawing code does name the model.
    assert!(!violations("views", &["model"]).is_empty());
    assert!(sources(&src().join("rows")).len() >= 7);
}

/// The modules of the model (files and folders of `model/`).
fn model_modules() -> Vec<String> {
    let mut out = Vec::new();
    let dir = src().join("model");
    for entry in std::fs::read_dir(&dir).expect("model/").flatten() {
        let path = entry.path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if stem == "mod" || stem == "tests" || stem.ends_with("_tests") {
            continue;
        }
        if path.is_dir() || path.extension().is_some_and(|e| e == "rs") {
            out.push(stem.to_string());
        }
    }
    out.sort();
    out
}

/// The first segment of every path after `prefix` in `code`, reading
/// `prefix{a, b::{c, d}}` groups as `a` and `b`.
fn names_after(code: &str, prefix: &str) -> Vec<String> {
    let word = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        rest = &rest[i + prefix.len()..];
        let Some(group) = rest.strip_prefix('{') else {
            out.push(word(rest));
            continue;
        };
        // Split the group at its own commas, not those of nested groups.
        let (mut depth, mut start) = (0usize, 0usize);
        for (j, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    out.push(word(&group[start..j]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(word(&group[start..j]));
                    start = j + 1;
                }
                _ => {}
            }
        }
    }
    out.retain(|w| !w.is_empty());
    out
}

/// Which model modules each model module's non-test code names: by
/// `crate::model::X`, or `super::X` from its own file (`super::super::X`
/// from a file in its folder).
fn model_imports() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let modules = model_modules();
    let mut graph = std::collections::BTreeMap::new();
    for m in &modules {
        let dir = src().join("model").join(m);
        let files: Vec<(String, String)> = if dir.is_dir() {
            sources(&dir)
                .into_iter()
                .map(|(_, code)| (code, "super::super::".to_string()))
                .collect()
        } else {
            let path = src().join("model").join(format!("{m}.rs"));
            sources(path.parent().expect("model/"))
                .into_iter()
                .filter(|(p, _)| *p == path)
                .map(|(_, code)| (code, "super::".to_string()))
                .collect()
        };
        let mut names = std::collections::BTreeSet::new();
        for (code, up) in files {
            // Comments link to other modules; only code imports.
            let code: String = code
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            for prefix in ["crate::model::", up.as_str()] {
                names.extend(
                    names_after(&code, prefix)
                        .into_iter()
                        .filter(|n| n != m && modules.contains(n)),
                );
            }
        }
        graph.insert(m.clone(), names);
    }
    graph
}

/// A cycle in `graph`, if there is one, as the path round it.
fn find_cycle(
    graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == node) {
            let mut cycle = path[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_two_model_modules_import_each_other() {
    let graph = model_imports();
    assert!(
        graph.contains_key("keys") && graph.contains_key("keymap"),
        "{graph:?}"
    );
    // The scan sees real edges: the keys use the key table and the
    // command list.
    assert!(graph["keys"].contains("keymap"), "{graph:?}");
    assert!(graph["keys"].contains("commands"), "{graph:?}");
    assert!(!graph["keymap"].contains("keys"), "{graph:?}");
    assert_eq!(find_cycle(&graph), None, "{graph:?}");
}

#[test]
fn the_cycle_check_sees_a_cycle() {
    // The shape the model had: keys → keymap (the key table), keymap →
    // keys (COMMANDS, for the README).
    let mut graph = model_imports();
    graph
        .entry("keymap".to_string())
        .or_default()
        .insert("keys".to_string());
    let cycle = find_cycle(&graph).expect("a cycle");
    assert!(cycle.contains(&"keys".to_string()) && cycle.contains(&"keymap".to_string()));
    assert_eq!(
        names_after("use super::{keymap::{self, Action}, App};", "super::"),
        ["keymap", "App"]
    );
}
