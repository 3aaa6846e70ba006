//! Table tests for identity and the grant decision.

use super::*;
use crate::testkit::worker::{binding, class, identity as ident};
use std::collections::BTreeMap;

use crate::api::Runtime;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::node::v1::{Overhead, Scheduling};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

fn run(
    bindings: &[GrantBinding],
    identity: &Identity,
    requested: Option<&str>,
    class: Option<&ObservedClass>,
    previous: Option<&ProfileStatus>,
) -> Decision {
    decide(DecideInput {
        bindings,
        identity: Ok(identity),
        requested,
        class,
        previous,
    })
}

#[test]
fn not_requested() {
    let d = run(&[binding()], &ident(), None, None, None);
    assert_eq!(d, Decision::NotRequested);
    assert_eq!(d.reason(), "NotRequested");
    assert!(d.profile_status().is_none());
    assert!(d.allows_changes());
    // An empty alias is the same as none.
    assert_eq!(
        run(&[], &ident(), Some(""), None, None),
        Decision::NotRequested
    );
    // Identity problems do not matter without a request.
    let err = IdentityError::MissingLabels {
        namespace: "x".into(),
        missing: vec![PROJECT_LABEL],
    };
    let d = decide(DecideInput {
        bindings: &[],
        identity: Err(&err),
        requested: None,
        class: None,
        previous: None,
    });
    assert_eq!(d, Decision::NotRequested);
}

#[test]
fn granted() {
    let d = run(
        &[binding()],
        &ident(),
        Some("bounded-worker"),
        Some(&class()),
        None,
    );
    assert!(d.is_granted());
    assert_eq!(d.state(), ProfileState::Granted);
    assert_eq!(d.reason(), "Granted");
    assert!(
        d.message()
            .contains("RuntimeClass bounded-worker (handler bounded-runc)")
    );
    let status = d.profile_status().expect("status");
    assert_eq!(status.class.as_deref(), Some("bounded-worker"));
    assert_eq!(status.handler.as_deref(), Some("bounded-runc"));
}

#[test]
fn not_granted() {
    let d = run(&[binding()], &ident(), Some("other"), Some(&class()), None);
    assert_eq!(d.state(), ProfileState::NotGranted);
    assert_eq!(d.reason(), "NotGranted");
    assert!(
        d.message().contains("no binding named other"),
        "{}",
        d.message()
    );
    assert!(!d.allows_changes());

    // Same alias, another service: exact match only.
    let mut other = ident();
    other.service = "api".into();
    let d = run(
        &[binding()],
        &other,
        Some("bounded-worker"),
        Some(&class()),
        None,
    );
    assert_eq!(d.state(), ProfileState::NotGranted);
    assert!(
        d.message().contains("exists but not for"),
        "{}",
        d.message()
    );

    let d = run(&[], &ident(), Some("bounded-worker"), Some(&class()), None);
    assert!(d.message().contains("no grants are loaded"));
}

#[test]
fn identity_incomplete() {
    let err = namespace_scope("team-a", &BTreeMap::new()).expect_err("no labels");
    assert_eq!(
        err.to_string(),
        "namespace team-a lacks label(s) berth.dev/project, berth.dev/environment"
    );
    let d = decide(DecideInput {
        bindings: &[binding()],
        identity: Err(&err),
        requested: Some("bounded-worker"),
        class: Some(&class()),
        previous: None,
    });
    assert_eq!(d.state(), ProfileState::NotGranted);
    assert_eq!(d.reason(), "IdentityIncomplete");
    assert!(d.message().contains("lacks label(s)"));
    // Previously granted, labels removed: revoked, not silently ungranted.
    let prev = run(
        &[binding()],
        &ident(),
        Some("bounded-worker"),
        Some(&class()),
        None,
    )
    .profile_status();
    let d = decide(DecideInput {
        bindings: &[binding()],
        identity: Err(&err),
        requested: Some("bounded-worker"),
        class: Some(&class()),
        previous: prev.as_ref(),
    });
    assert_eq!(d.state(), ProfileState::Revoked);
}

#[test]
fn revoked() {
    let prev = run(
        &[binding()],
        &ident(),
        Some("bounded-worker"),
        Some(&class()),
        None,
    )
    .profile_status();
    let d = run(
        &[],
        &ident(),
        Some("bounded-worker"),
        Some(&class()),
        prev.as_ref(),
    );
    assert_eq!(d.state(), ProfileState::Revoked);
    assert_eq!(d.reason(), "Revoked");
    assert!(d.message().contains("revoked"));
    assert_eq!(
        d.profile_status().and_then(|p| p.class).as_deref(),
        Some("bounded-worker")
    );
    // Stays revoked on the next reconcile (previous state Revoked).
    let prev = d.profile_status();
    let again = run(
        &[],
        &ident(),
        Some("bounded-worker"),
        Some(&class()),
        prev.as_ref(),
    );
    assert_eq!(again.state(), ProfileState::Revoked);
    // A previous grant of another alias does not make this one revoked.
    let d = run(&[], &ident(), Some("something-else"), None, prev.as_ref());
    assert_eq!(d.state(), ProfileState::NotGranted);
    // The grant returning makes it granted again.
    let d = run(
        &[binding()],
        &ident(),
        Some("bounded-worker"),
        Some(&class()),
        prev.as_ref(),
    );
    assert!(d.is_granted());
    // Previously NotGranted stays NotGranted.
    let prev = run(&[], &ident(), Some("bounded-worker"), None, None).profile_status();
    let d = run(&[], &ident(), Some("bounded-worker"), None, prev.as_ref());
    assert_eq!(d.state(), ProfileState::NotGranted);
}

#[test]
fn class_missing() {
    let d = run(&[binding()], &ident(), Some("bounded-worker"), None, None);
    assert_eq!(d.state(), ProfileState::ClassMissing);
    assert_eq!(d.reason(), "ClassMissing");
    assert!(d.message().contains("does not exist"));
    // A class of another name is not the binding's class.
    let wrong = ObservedClass {
        name: "other".into(),
        ..class()
    };
    let d = run(
        &[binding()],
        &ident(),
        Some("bounded-worker"),
        Some(&wrong),
        None,
    );
    assert_eq!(d.state(), ProfileState::ClassMissing);
}

#[test]
fn handler_mismatch() {
    let c = ObservedClass {
        handler: "runc".into(),
        ..class()
    };
    let d = run(
        &[binding()],
        &ident(),
        Some("bounded-worker"),
        Some(&c),
        None,
    );
    assert_eq!(d.state(), ProfileState::HandlerMismatch);
    assert_eq!(d.reason(), "HandlerMismatch");
    assert!(
        d.message()
            .contains("names handler runc, but the grant expects bounded-runc"),
        "{}",
        d.message()
    );
}

#[test]
fn class_unsupported() {
    for (overhead, scheduling, word) in [
        (true, false, "sets overhead,"),
        (false, true, "sets scheduling,"),
        (true, true, "overhead and scheduling"),
    ] {
        let c = ObservedClass {
            has_overhead: overhead,
            has_scheduling: scheduling,
            ..class()
        };
        let d = run(
            &[binding()],
            &ident(),
            Some("bounded-worker"),
            Some(&c),
            None,
        );
        assert_eq!(d.state(), ProfileState::ClassUnsupported);
        assert_eq!(d.reason(), "ClassUnsupported");
        assert!(d.message().contains(word), "{}", d.message());
    }
}

#[test]
fn class_deleting_wins_over_other_class_problems() {
    let c = ObservedClass {
        deleting: true,
        handler: "runc".into(),
        has_overhead: true,
        ..class()
    };
    let d = run(
        &[binding()],
        &ident(),
        Some("bounded-worker"),
        Some(&c),
        None,
    );
    assert_eq!(d.state(), ProfileState::ClassDeleting);
    assert_eq!(d.reason(), "ClassDeleting");
    assert!(d.message().contains("being deleted"));
}

#[test]
fn observed_class_from_api() {
    let mut rc = RuntimeClass {
        metadata: ObjectMeta {
            name: Some("bounded-worker".into()),
            ..Default::default()
        },
        handler: "bounded-runc".into(),
        ..Default::default()
    };
    assert_eq!(ObservedClass::from_runtime_class(&rc), class());
    rc.overhead = Some(Overhead {
        pod_fixed: Some(BTreeMap::from([("cpu".into(), Quantity("250m".into()))])),
    });
    rc.scheduling = Some(Scheduling {
        node_selector: Some(BTreeMap::from([("a".into(), "b".into())])),
        tolerations: None,
    });
    rc.metadata.deletion_timestamp = Some(Time(Default::default()));
    let o = ObservedClass::from_runtime_class(&rc);
    assert!(o.has_overhead && o.has_scheduling && o.deleting);
    // Empty overhead/scheduling blocks change nothing.
    rc.overhead = Some(Overhead { pod_fixed: None });
    rc.scheduling = Some(Scheduling::default());
    let o = ObservedClass::from_runtime_class(&rc);
    assert!(!o.has_overhead && !o.has_scheduling);
}

#[test]
fn namespace_labels() {
    let labels = BTreeMap::from([
        (PROJECT_LABEL.to_string(), "demo".to_string()),
        (ENVIRONMENT_LABEL.to_string(), "production".to_string()),
    ]);
    assert_eq!(
        namespace_scope("ns", &labels),
        Ok(("demo".into(), "production".into()))
    );
    let mut only_project = labels.clone();
    only_project.remove(ENVIRONMENT_LABEL);
    assert_eq!(
        namespace_scope("ns", &only_project),
        Err(IdentityError::MissingLabels {
            namespace: "ns".into(),
            missing: vec![ENVIRONMENT_LABEL]
        })
    );
    let mut empty_value = labels.clone();
    empty_value.insert(PROJECT_LABEL.into(), String::new());
    assert!(matches!(
        namespace_scope("ns", &empty_value),
        Err(IdentityError::MissingLabels { .. })
    ));
    let mut bad = labels.clone();
    bad.insert(PROJECT_LABEL.into(), "Demo".into());
    let err = namespace_scope("ns", &bad).expect_err("invalid");
    assert!(
        err.to_string().contains("berth.dev/project=\"Demo\""),
        "{err}"
    );

    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some("ns".into()),
            labels: Some(labels),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut rt = Runtime::new("worker", Default::default());
    rt.spec.application = "analytics".into();
    rt.spec.service = "worker".into();
    assert_eq!(
        identity(&ns, &rt),
        Ok(Identity {
            project: "demo".into(),
            environment: "production".into(),
            ..ident()
        })
    );
}

#[test]
fn scope_names() {
    for ok in ["a", "demo", "a1", "a-b", &format!("a{}", "b".repeat(39))] {
        assert!(is_scope_name(ok), "{ok}");
    }
    for bad in [
        "",
        "1a",
        "a-",
        "A",
        "a_b",
        &format!("a{}", "b".repeat(40)),
        "ä",
    ] {
        assert!(!is_scope_name(bad), "{bad}");
    }
}
