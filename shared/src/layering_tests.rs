//! `shared`'s modules form layers: no two modules of a folder import each
//! other, directly or round a longer circle (as `api` → `analysis` →
//! `decide` → `api` once did through `coverage_summary`, and `grants` ↔
//! `decide` through the identity), and a folder's own file (`mod.rs`) does
//! not use a child that reaches back into it. A circle means neither side
//! can be read, tested or moved without the other. `binding` and
//! `patterns` sit at the bottom: the vocabulary every other module shares
//! names nothing above it. The scan is the test kit's
//! ([`crate::testkit::layering`]), shared by every crate's layering test.

use std::path::PathBuf;

use crate::testkit::layering::{Node, assert_no_circles, graphs, read_sources};

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_modules_import_each_other_in_a_circle() {
    assert_no_circles("shared", &src(), &[]);
}

#[test]
fn binding_and_patterns_are_the_bottom() {
    let graphs = graphs(&read_sources(&src()));
    let top = &graphs[&Vec::<String>::new()];
    // The scan sees real edges: the renderer reads the API types, the plan
    // the grant decision.
    let child = |n: &str| Node::Child(n.to_string());
    assert!(
        top[&child("render")].contains_key(&child("api")),
        "{top:#?}"
    );
    assert!(
        top[&child("plan")].contains_key(&child("decide")),
        "{top:#?}"
    );
    for (bottom, allowed) in [("binding", &["patterns"][..]), ("patterns", &[][..])] {
        let names: Vec<&Node> = top
            .get(&child(bottom))
            .into_iter()
            .flat_map(|edges| edges.keys())
            .filter(|n| !allowed.iter().any(|a| **n == child(a)))
            .collect();
        assert!(names.is_empty(), "{bottom} names {names:?}");
    }
}
