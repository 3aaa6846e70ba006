//! The grant status table: every ClassReady reason, who counts as a user,
//! the retained bound, RestartRequired and BarePodsChecked.

use super::*;
use crate::testkit::{self, node};

fn binding() -> GrantBinding {
    testkit::binding(
        "sandboxed",
        testkit::identity("demo", "prod", "shop", "web"),
        "gvisor",
        "runsc",
    )
}

fn class(handler: &str) -> ObservedClass {
    testkit::class("gvisor", handler)
}

fn user(ns: &str, name: &str, profile: Option<&str>, project: Option<&str>) -> GrantUser {
    GrantUser {
        at: ObjectRef {
            namespace: ns.into(),
            name: name.into(),
        },
        profile: profile.map(String::from),
        identity: project.map(|p| Identity {
            project: p.into(),
            environment: "prod".into(),
            application: "shop".into(),
            service: "web".into(),
        }),
    }
}

fn snapshot<'a>(
    b: &'a GrantBinding,
    class: Option<&'a ObservedClass>,
    nodes: &'a [NodeInfo],
    file: &'a FileState,
) -> GrantSnapshot<'a> {
    GrantSnapshot {
        binding: b,
        generation: Some(2),
        class,
        nodes,
        users: &[],
        retained: &[],
        source: None,
        file,
        pods_watched: false,
        attestation: None,
    }
}

fn condition<'a>(s: &'a RuntimeGrantStatus, type_: &str) -> &'a Condition {
    s.conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_} in {:?}", s.conditions))
}

#[test]
fn class_ready_names_every_reason() {
    let b = binding();
    let nodes = [node("a", &["runsc"]), node("b", &[])];
    let file = FileState::Current;
    let ready = class("runsc");
    let wrong = class("kata");
    let deleting = ObservedClass {
        deleting: true,
        ..class("runsc")
    };
    let overhead = ObservedClass {
        has_overhead: true,
        ..class("runsc")
    };
    let cases: [(Option<&ObservedClass>, bool, &str); 5] = [
        (None, false, reasons::CLASS_MISSING),
        (Some(&deleting), false, reasons::CLASS_DELETING),
        (Some(&wrong), false, reasons::HANDLER_MISMATCH),
        (Some(&overhead), false, reasons::CLASS_UNSUPPORTED),
        (Some(&ready), true, reasons::CLASS_READY),
    ];
    for (c, ok, reason) in cases {
        let s = grant(&snapshot(&b, c, &nodes, &file));
        let cr = condition(&s, gct::CLASS_READY);
        assert_eq!(cr.status, if ok { "True" } else { "False" }, "{reason}");
        assert_eq!(cr.reason, reason);
        assert_eq!(cr.observed_generation, Some(2));
        assert_eq!(s.class_present, c.is_some());
        assert_eq!(s.handler_matches, c.is_some_and(|c| c.handler == "runsc"));
    }
    let s = grant(&snapshot(&b, Some(&ready), &nodes, &file));
    assert_eq!(s.nodes, Some(NodeCoverage::new(1, 2, 0)));
    assert!(
        condition(&s, gct::CLASS_READY)
            .message
            .contains("names handler runsc"),
        "{:?}",
        s.conditions
    );
}

#[test]
fn runtimes_are_those_asking_for_the_profile_with_the_bound_identity() {
    let b = binding();
    let file = FileState::None;
    let users = [
        user("shop", "z-web", Some("sandboxed"), Some("demo")),
        user("shop", "a-web", Some("sandboxed"), Some("demo")),
        // Another profile, no profile, another project, no identity.
        user("shop", "other", Some("fast"), Some("demo")),
        user("shop", "none", None, Some("demo")),
        user("elsewhere", "web", Some("sandboxed"), Some("rival")),
        user("unlabelled", "web", Some("sandboxed"), None),
    ];
    let s = grant(&GrantSnapshot {
        users: &users,
        ..snapshot(&b, None, &[], &file)
    });
    let names: Vec<&str> = s.runtimes.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["a-web", "z-web"]);
}

#[test]
fn retained_is_bounded_and_the_source_copied() {
    let b = binding();
    let file = FileState::None;
    let retained: Vec<WorkloadRef> = (0..MAX_RETAINED + 5)
        .map(|i| WorkloadRef {
            kind: "Deployment".into(),
            namespace: "ns".into(),
            name: format!("w{i:04}"),
        })
        .collect();
    let source = GrantSource {
        sha256: Some("ab".repeat(32)),
        loaded_at: None,
    };
    let s = grant(&GrantSnapshot {
        retained: &retained,
        source: Some(&source),
        ..snapshot(&b, None, &[], &file)
    });
    assert_eq!(s.retained.len(), MAX_RETAINED);
    assert_eq!(s.retained[0].name, "w0000");
    assert_eq!(s.source, Some(source));
}

#[test]
fn restart_required_follows_the_file_on_disk() {
    let b = binding();
    for (file, stale) in [
        (FileState::None, false),
        (FileState::Current, false),
        (FileState::Stale("content differs".into()), true),
    ] {
        let s = grant(&snapshot(&b, None, &[], &file));
        let rr = condition(&s, gct::RESTART_REQUIRED);
        assert_eq!(rr.status == "True", stale, "{file:?}");
        if stale {
            assert_eq!(rr.reason, reasons::FILE_CHANGED);
            assert!(rr.message.contains("(content differs)"), "{}", rr.message);
        } else {
            assert_eq!(rr.reason, reasons::FILE_CURRENT);
        }
    }
}

#[test]
fn the_same_snapshot_gives_the_same_status() {
    // What keeps the publisher quiet at rest: nothing in the status
    // depends on anything but the snapshot.
    let b = binding();
    let nodes = [node("a", &["runsc"])];
    let file = FileState::Current;
    let c = class("runsc");
    let one = grant(&snapshot(&b, Some(&c), &nodes, &file));
    let two = grant(&snapshot(&b, Some(&c), &nodes, &file));
    assert_eq!(one, two);
}

#[test]
fn without_pod_access_the_status_says_bare_pods_were_not_checked() {
    let c = bare_pods_condition(false, Some(3));
    assert_eq!(c.type_, "BarePodsChecked");
    assert_eq!(c.status, "False");
    assert_eq!(c.reason, "NoPodAccess");
    assert!(
        c.message
            .starts_with("bare pods not checked (agent has no Pod access)")
    );
    assert_eq!(c.observed_generation, Some(3));

    let c = bare_pods_condition(true, None);
    assert_eq!(c.status, "True");
    assert_eq!(c.reason, "PodsWatched");
}

#[test]
fn a_retired_grant_never_claims_nothing_needs_it_from_missing_data() {
    let m = retired_message(0, "runsc", "gvisor", false);
    assert!(m.contains("bare pods were not checked"), "{m}");
    assert!(
        m.contains("delete this RuntimeGrant once no bare pod uses RuntimeClass gvisor"),
        "{m}"
    );
    let m = retired_message(2, "runsc", "gvisor", false);
    assert!(m.contains("2 workload(s) still need handler runsc"), "{m}");
    assert!(m.contains("bare pods not checked"), "{m}");
    let m = retired_message(2, "runsc", "gvisor", true);
    assert!(!m.contains("not checked"), "{m}");
}

#[test]
fn retiring_keeps_other_conditions_and_replaces_its_own() {
    let b = binding();
    let file = FileState::Current;
    let c = class("runsc");
    let stored = grant(&snapshot(&b, Some(&c), &[], &file));
    let retained = [WorkloadRef {
        kind: "Deployment".into(),
        namespace: "ns".into(),
        name: "old".into(),
    }];
    let once = retired(Some(&stored), Some(3), "runsc", "gvisor", &retained, false);
    let twice = retired(Some(&once), Some(3), "runsc", "gvisor", &retained, false);
    assert_eq!(once, twice);
    assert!(once.runtimes.is_empty());
    assert_eq!(once.retained, retained);
    assert_eq!(
        condition(&once, gct::RETIRED).reason,
        reasons::BINDING_REMOVED
    );
    assert_eq!(
        condition(&once, gct::CLASS_READY).reason,
        reasons::CLASS_READY
    );
    let bare: Vec<_> = once
        .conditions
        .iter()
        .filter(|c| c.type_ == gct::BARE_PODS_CHECKED)
        .collect();
    assert_eq!(bare.len(), 1);
}
