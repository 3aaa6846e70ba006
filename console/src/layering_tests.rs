//! The layers of `lib.rs` hold: store ← rows ← model ← watch / views. Each
//! layer's non-test code names only the layers below it, so the model and
//! the rows cannot grow a dependency on drawing again.

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
            && path.file_name().is_none_or(|n| n != "tests.rs")
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
        "rows", "model", "watch", "views", "run", "cli", "get", "retire",
    ];
    let above_rows = ["model", "watch", "views", "run", "cli", "get", "retire"];
    let above_model = ["watch", "views", "run", "cli", "get"];
    let above_watch = ["views", "run", "cli", "get", "retire"];
    let mut all = Vec::new();
    all.extend(violations("store", &above_store));
    all.extend(violations("rows", &above_rows));
    all.extend(violations("model", &above_model));
    all.extend(violations("watch", &above_watch));
    assert!(all.is_empty(), "layering broken:\n{}", all.join("\n"));
}

#[test]
fn the_check_sees_a_violation() {
    // The scan is not vacuous: drawing code does name the model.
    assert!(!violations("views", &["model"]).is_empty());
    assert!(sources(&src().join("rows")).len() >= 7);
}
