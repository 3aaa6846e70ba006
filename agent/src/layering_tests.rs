//! Nowhere in the agent do two modules of a folder import each other,
//! directly or round a longer circle, nor does a folder's own file
//! (`mod.rs`) use a child that reaches back into it (the test kit's scan,
//! `berth_shared::testkit::layering`, which names each circle and the
//! imports round it).

use std::path::PathBuf;

#[test]
fn no_modules_import_each_other_in_a_circle() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    berth_shared::testkit::layering::assert_no_circles("the agent", &src, &[]);
}
