//! The layers of `lib.rs` hold: store ← rows ← model ← watch / views ←
//! run. Each layer's non-test code names only the layers below it, so the
//! model and the rows cannot grow a dependency on drawing again. And
//! nowhere in the crate do two modules of a folder import each other,
//! directly or round a longer circle (as the model's `keys` and `keymap`
//! once did through `COMMANDS`), nor a folder's own file a child that
//! reaches back into it (the test kit's scan,
//! `berth_shared::testkit::layering`).

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

#[test]
fn no_modules_import_each_other_in_a_circle() {
    berth_shared::testkit::layering::assert_no_circles("the console", &src(), &[]);
}

#[test]
fn the_circle_check_sees_the_models_old_circle() {
    // The shape the model had: keys → keymap (the key table), keymap →
    // keys (COMMANDS, for the README).
    use berth_shared::testkit::layering::{Source, graphs, report};
    let source = |module: &[&str], code: &str| Source {
        module: module.iter().map(|m| m.to_string()).collect(),
        folder: module.len() < 2,
        code: code.into(),
    };
    let found = report(&graphs(&[
        source(&["model"], "pub mod keys; pub mod keymap;"),
        source(&["model", "keys"], "use super::keymap::KEYS;"),
        source(&["model", "keymap"], "use super::keys::COMMANDS;"),
    ]));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("modules {model::keymap, model::keys} form a circle"),
        "{found:?}"
    );
}
