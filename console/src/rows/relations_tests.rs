use super::*;
use crate::fixtures;

fn names(lines: &[Related], relation: &str) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.relation == relation && l.target.is_some())
        .map(Related::name)
        .collect()
}

#[test]
fn a_grant_leads_to_its_class_runtimes_workloads_pods_and_nodes() {
    let app = fixtures::app();
    let store = &app.clusters[0].data.store;
    let anchor = Anchor::grant(store, "bounded-web").expect("grant");
    let Anchor::Grant {
        ref class,
        ref selector,
        ..
    } = anchor
    else {
        panic!("grant anchor")
    };
    assert_eq!(class, "bounded-runc");
    assert_eq!(
        selector,
        "berth.dev/project=demo,berth.dev/environment=production,\
         berth.dev/application=shop,berth.dev/service=web"
    );
    let lines = relations(store, &anchor);
    assert_eq!(lines[0].relation, "grant");
    assert_eq!(names(&lines, "class"), ["bounded-runc"]);
    // worker names another alias; api none: only web holds it.
    assert_eq!(names(&lines, "runtime"), ["demo/web"]);
    assert_eq!(names(&lines, "workload"), ["demo/web"]);
    assert_eq!(names(&lines, "pod"), ["demo/web-rev2-0", "demo/web-rev2-1"]);
    assert_eq!(names(&lines, "node"), ["kwok-node-0", "kwok-node-1"]);
}

#[test]
fn a_grant_without_runtimes_or_class_says_so() {
    let app = fixtures::app();
    let store = &app.clusters[0].data.store;
    let lines = relations(store, &Anchor::grant(store, "gvisor-api").expect("grant"));
    let class = lines.iter().find(|l| l.relation == "class").expect("class");
    assert_eq!(
        (class.state.as_str(), class.tone),
        ("missing", RowTone::Problem)
    );
    assert!(
        lines
            .iter()
            .any(|l| l.relation == "runtime" && l.target.is_none()),
        "{lines:#?}"
    );
}

#[test]
fn a_pod_leads_back_to_its_grant_or_says_why_none_covers_it() {
    let app = fixtures::app();
    let store = &app.clusters[0].data.store;
    let covered = relations(store, &Anchor::Pod(("demo".into(), "web-rev2-0".into())));
    let grant = covered
        .iter()
        .find(|l| l.relation == "grant")
        .expect("grant");
    assert_eq!(
        grant.target,
        Some((Kind::RuntimeGrant, (String::new(), "bounded-web".into())))
    );
    assert_eq!(names(&covered, "node"), ["kwok-node-0"]);
    assert_eq!(names(&covered, "runtime"), ["demo/web"]);
    // worker's grant is revoked (not in the fixture's grants).
    let revoked = relations(store, &Anchor::Pod(("demo".into(), "worker-rev2-0".into())));
    let none = revoked
        .iter()
        .find(|l| l.relation == "grant")
        .expect("line");
    assert!(none.target.is_none());
    assert!(
        none.state.contains("grant bounded-worker is gone"),
        "{none:?}"
    );
    assert_eq!(none.tone, RowTone::Problem);
    // A bare pod of a class nobody granted.
    let bare = relations(
        store,
        &Anchor::Pod(("legacy".into(), "legacy-batch".into())),
    );
    let none = bare.iter().find(|l| l.relation == "grant").expect("line");
    assert!(none.state.contains("outside berth"), "{none:?}");
}
