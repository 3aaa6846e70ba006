//! `shared`'s top-level modules form layers: no two of them import each
//! other, directly or round a longer cycle (as `api` → `analysis` →
//! `decide` → `api` once did through `coverage_summary`, and `grants` ↔
//! `decide` through the identity). A cycle means neither side can be read,
//! tested or moved without the other. `binding` and `patterns` sit at the
//! bottom: the vocabulary every other module shares names nothing above it.
//!
//! The scan reads the non-test source of every module for the paths that
//! reach another top-level module: `crate::X` (also inside `crate::{X, Y}`
//! groups) and `super::…::X` climbing to the crate root.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `text` without the items marked `#[cfg(test)]` (inline test modules,
/// test-only imports and functions), and the names of the test-only module
/// files it declares (`#[cfg(test)] mod tests;`).
fn strip_test_items(text: &str) -> (String, Vec<String>) {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(text.len());
    let mut test_files = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(MARK) {
        out.push_str(&rest[..i]);
        let item = &rest[i + MARK.len()..];
        // The item ends at its first `;` outside braces, or at the brace
        // closing its body.
        let mut depth = 0usize;
        let mut end = item.len();
        for (j, c) in item.char_indices() {
            match c {
                ';' if depth == 0 => {
                    end = j + 1;
                    break;
                }
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let decl = item[..end].trim();
        if decl.ends_with(';') && !decl.contains('{') {
            let name = decl
                .trim_end_matches(';')
                .split_whitespace()
                .last()
                .unwrap_or_default();
            if decl.contains("mod ") {
                test_files.push(name.to_string());
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    (out, test_files)
}

/// Non-test code of every `.rs` file under `dir` (recursively), with the
/// module path of each file relative to the crate root, e.g. `["api",
/// "grant"]` for `api/grant.rs` and `["api"]` for `api/mod.rs`.
fn sources(dir: &Path, module: &[String]) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut test_files = Vec::new();
    let mut files = Vec::new();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.flatten() {
        files.push(entry.path());
    }
    files.sort();
    // The parent declares which children are test-only: read it first.
    for path in &files {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if path.extension().is_some_and(|e| e == "rs") && (stem == "mod" || stem == "lib") {
            let text = std::fs::read_to_string(path).expect("read source");
            let (code, tests) = strip_test_items(&text);
            test_files.extend(tests);
            out.push((module.to_vec(), code));
        }
    }
    for path in &files {
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if stem == "mod"
            || stem == "lib"
            || stem == "tests"
            || stem.ends_with("_tests")
            || test_files.iter().any(|t| t == stem)
        {
            continue;
        }
        let mut child = module.to_vec();
        child.push(stem.to_string());
        if path.is_dir() {
            out.extend(sources(path, &child));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(path).expect("read source");
            let (code, _) = strip_test_items(&text);
            out.push((child, code));
        }
    }
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
        // `super::super::x` also contains `super::x`: only whole paths
        // count, so the prefix must not continue a longer path.
        let whole = code.len() - rest.len() + i;
        let before = code[..whole].chars().next_back();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c == ':' || c.is_alphanumeric() || c == '_') {
            continue;
        }
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

/// The top-level modules of the crate (files and folders of `src/`).
fn top_modules() -> BTreeSet<String> {
    sources(&src(), &[])
        .into_iter()
        .filter_map(|(module, _)| module.first().cloned())
        .collect()
}

/// Which top-level modules each top-level module's non-test code names.
fn imports() -> Graph {
    let modules = top_modules();
    let mut graph: Graph = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for (module, code) in sources(&src(), &[]) {
        let Some(top) = module.first() else {
            continue; // lib.rs declares the modules; it imports none.
        };
        // Comments link to other modules; only code imports.
        let code: String = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let to_root = "super::".repeat(module.len());
        let names = graph.get_mut(top).expect("a module");
        for prefix in ["crate::", to_root.as_str()] {
            names.extend(
                names_after(&code, prefix)
                    .into_iter()
                    .filter(|n| n != top && modules.contains(n)),
            );
        }
    }
    graph
}

/// The strongly connected components of `graph` with more than one
/// module (Tarjan), each sorted.
fn tangles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, node: &'g str) {
        let i = s.index.len();
        s.index.insert(node, i);
        s.low.insert(node, i);
        s.stack.push(node);
        s.on_stack.insert(node);
        for next in s.graph.get(node).into_iter().flatten() {
            let next = next.as_str();
            if !s.index.contains_key(next) {
                visit(s, next);
                let low = s.low[node].min(s.low[next]);
                s.low.insert(node, low);
            } else if s.on_stack.contains(next) {
                let low = s.low[node].min(s.index[next]);
                s.low.insert(node, low);
            }
        }
        if s.low[node] == s.index[node] {
            let mut component = Vec::new();
            while let Some(top) = s.stack.pop() {
                s.on_stack.remove(top);
                component.push(top.to_string());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for node in graph.keys() {
        if !s.index.contains_key(node.as_str()) {
            visit(&mut s, node);
        }
    }
    s.out.sort();
    s.out
}

/// One cycle through `start` inside `members` (breadth-first, so the
/// shortest), as the path round it.
fn cycle_through(graph: &Graph, members: &[String], start: &str) -> Vec<String> {
    let mut came_from: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.to_string()]);
    while let Some(node) = queue.pop_front() {
        for next in graph.get(&node).into_iter().flatten() {
            if !members.contains(next) {
                continue;
            }
            if next == start {
                // Walk back from `node` to `start`, then turn it round.
                let mut path = vec![start.to_string()];
                let mut at = node.clone();
                while at != start {
                    path.push(at.clone());
                    at = came_from[&at].clone();
                }
                path.push(start.to_string());
                path.reverse();
                return path;
            }
            if !came_from.contains_key(next) && next != start {
                came_from.insert(next.clone(), node.clone());
                queue.push_back(next.clone());
            }
        }
    }
    Vec::new()
}

/// Every tangle of `graph`, each with one cycle round it, one per line.
fn report(graph: &Graph) -> Vec<String> {
    tangles(graph)
        .iter()
        .map(|members| {
            let cycle = cycle_through(graph, members, &members[0]);
            format!(
                "modules {{{}}} form a cycle, e.g. {}",
                members.join(", "),
                cycle.join(" → ")
            )
        })
        .collect()
}

#[test]
fn no_two_top_level_modules_import_each_other() {
    let graph = imports();
    // The scan sees real edges: the renderer reads the API types, the plan
    // the grant decision.
    assert!(graph["render"].contains("api"), "{graph:#?}");
    assert!(graph["plan"].contains("decide"), "{graph:#?}");
    let cycles = report(&graph);
    // Shown with `--nocapture`: the layers as they are.
    println!("{graph:#?}");
    assert!(
        cycles.is_empty(),
        "import cycles between shared's modules:\n{}\n\nimports: {graph:#?}",
        cycles.join("\n")
    );
}

#[test]
fn binding_and_patterns_are_the_bottom() {
    let graph = imports();
    for (bottom, allowed) in [("binding", &["patterns"][..]), ("patterns", &[][..])] {
        let names: Vec<&String> = graph
            .get(bottom)
            .unwrap_or_else(|| panic!("no module {bottom}: {graph:#?}"))
            .iter()
            .filter(|n| !allowed.contains(&n.as_str()))
            .collect();
        assert!(names.is_empty(), "{bottom} names {names:?}");
    }
}

#[test]
fn the_cycle_check_sees_a_cycle() {
    // The shapes shared had: api → analysis → decide → api, and grants ↔
    // decide.
    let mut graph = Graph::new();
    for (from, to) in [
        ("api", "analysis"),
        ("analysis", "decide"),
        ("decide", "api"),
        ("decide", "grants"),
        ("grants", "decide"),
        ("render", "api"),
    ] {
        graph
            .entry(from.to_string())
            .or_default()
            .insert(to.to_string());
    }
    let found = report(&graph);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("modules {analysis, api, decide, grants} form a cycle"),
        "{found:?}"
    );
    assert_eq!(
        cycle_through(&graph, &tangles(&graph)[0], "api"),
        ["api", "analysis", "decide", "api"]
    );
    assert_eq!(
        names_after("use crate::{api::{self, Runtime}, decide};", "crate::"),
        ["api", "decide"]
    );
    // A path is read from its start: `super::super::x` in a file two
    // levels down reaches the root, `self::super::super::x` does not.
    assert_eq!(
        names_after("use super::super::api; use super::x;", "super::super::"),
        ["api"]
    );
    assert_eq!(
        names_after("self::super::super::api", "super::super::"),
        Vec::<String>::new()
    );
    let (code, tests) = strip_test_items(
        "use a;\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod t { use b; }\nfn c() {}",
    );
    assert_eq!(tests, ["tests"]);
    assert!(!code.contains("use b") && code.contains("fn c"), "{code}");
}
