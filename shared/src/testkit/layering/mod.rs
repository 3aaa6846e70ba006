//! The import circles of a crate, for every crate's layering test.
//!
//! At every level of the module tree, the modules of one folder form a
//! graph: the folder's own file (`mod.rs`, `lib.rs`: "the parent") and
//! each child (a file, or a folder with everything below it). A module
//! imports another when its non-test code names it or an item of it:
//! `crate::a::b`, `super::b`, `self::b` and bare `b::` for a child `b`
//! of a module's own file, `use` groups included. An item the parent
//! re-exports from a child (`pub use b::Thing`) counts as the child's. A
//! circle — two modules that import each other, directly or round a
//! longer path — means neither can be read, tested or moved without the
//! other; every circle is reported with one path round it.
//!
//! Deliberately a scan, not a parser: it reads paths the way they are
//! written in this repository (rustfmt's layout), and what it cannot
//! resolve (a path through an external crate, a local variable) it leaves
//! out.

mod cycles;
mod graph;
mod read;
#[cfg(test)]
mod tests;
mod text;

use std::path::Path;

pub use cycles::{cycle_through, report, tangles};
pub use graph::{Graph, Graphs, ModulePath, Node, Source, graphs};
pub use read::{read_sources, strip_test_items};
pub use text::paths_after;

/// The circles of the crate whose sources are under `src` (its `lib.rs`
/// or `main.rs` at the top), one line each, naming the modules and one
/// path round them; empty when there are none.
pub fn circles(src: &Path) -> Vec<String> {
    report(&graphs(&read_sources(src)))
}

/// Fails, naming every circle, when the crate under `src` has one that
/// `waiting` does not list. `waiting` holds circles left for their owner to
/// break, each as the start of its report line with why it may stand for
/// now; one that is gone fails too, so that its entry goes.
pub fn assert_no_circles(crate_name: &str, src: &Path, waiting: &[(&str, &str)]) {
    let found = circles(src);
    let unexpected: Vec<&str> = found
        .iter()
        .map(String::as_str)
        .filter(|c| !waiting.iter().any(|(w, _)| c.starts_with(w)))
        .collect();
    assert!(
        unexpected.is_empty(),
        "import circles in {crate_name}:\n{}",
        unexpected.join("\n")
    );
    for (circle, why) in waiting {
        assert!(
            found.iter().any(|c| c.starts_with(circle)),
            "{crate_name}: {circle} is gone ({why}): remove it from the waiting list"
        );
    }
}
