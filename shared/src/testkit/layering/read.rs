//! Reading a crate's sources: every non-test file under `src`, with its
//! module path, without the items marked `#[cfg(test)]`.

use std::path::Path;

use super::graph::Source;

/// Every non-test `.rs` file under `src`, with its module path: test
/// files (`tests.rs`, `*_tests.rs`, modules declared `#[cfg(test)]`) are
/// left out, and so are items marked `#[cfg(test)]`.
pub fn read_sources(src: &Path) -> Vec<Source> {
    let mut out = Vec::new();
    walk(src, &[], &mut out);
    out
}

pub(crate) fn walk(dir: &Path, module: &[String], out: &mut Vec<Source>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    let mut test_modules = Vec::new();
    for path in &files {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let own = matches!(stem, "mod" | "lib" | "main");
        if own && path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(path).expect("read source");
            let (code, tests) = strip_test_items(&text);
            test_modules.extend(tests);
            out.push(Source {
                module: module.to_vec(),
                folder: true,
                code,
            });
        }
    }
    for path in &files {
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if matches!(stem, "mod" | "lib" | "main" | "tests")
            || stem.ends_with("_tests")
            || test_modules.iter().any(|t| t == stem)
        {
            continue;
        }
        let mut child = module.to_vec();
        child.push(stem.to_string());
        if path.is_dir() {
            if path.join("mod.rs").is_file() || !path.with_extension("rs").is_file() {
                walk(path, &child, out);
            } else {
                // `a.rs` beside `a/`: the folder holds a.rs's children.
                walk_children_of(path, &child, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(path).expect("read source");
            let (code, tests) = strip_test_items(&text);
            out.push(Source {
                module: child.clone(),
                folder: path.with_extension("").is_dir(),
                code,
            });
            let _ = tests;
        }
    }
}

pub(crate) fn walk_children_of(dir: &Path, module: &[String], out: &mut Vec<Source>) {
    let mut inner = Vec::new();
    walk(dir, module, &mut inner);
    // No own file in the folder: `a.rs` beside it is the folder's file.
    inner.retain(|s| !(s.folder && s.module == module));
    out.extend(inner);
}

/// `text` without the items marked `#[cfg(test)]`, and the names of the
/// test-only module files it declares (`#[cfg(test)] mod tests;`).
pub fn strip_test_items(text: &str) -> (String, Vec<String>) {
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
        if decl.ends_with(';') && !decl.contains('{') && decl.contains("mod ") {
            let name = decl
                .trim_end_matches(';')
                .split_whitespace()
                .last()
                .unwrap_or_default();
            test_files.push(name.to_string());
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    (out, test_files)
}
