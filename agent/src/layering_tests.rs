//! Nowhere in the agent do two modules of a folder import each other,
//! directly or round a longer circle, nor does a folder's own file
//! (`mod.rs`) use a child that reaches back into it (the test kit's scan,
//! `berth_shared::testkit::layering`, which names each circle and the
//! imports round it).

use std::path::PathBuf;

/// The controller's own circle, left by its regrouping into stages
/// (issue 54, item 1): the groups share `context`, which names the types
/// of each.
const CONTROLLER: &str = "agent/src/controller, after its regrouping (issue 54, item 1)";

#[test]
fn no_modules_import_each_other_in_a_circle() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    berth_shared::testkit::layering::assert_no_circles(
        "the agent",
        &src,
        &[(
            "modules {controller::cache, controller::context, controller::pacing, controller::reconcile, controller::wake} form a circle",
            CONTROLLER,
        )],
    );
}
