//! Each finding across clusters fires on a fleet built for it, names the
//! clusters, and is absent on a consistent fleet.

use std::collections::BTreeMap;

use super::*;
use crate::api::{NodeCoverage, RuntimeGrantStatus};
use crate::binding::{Binding, Identity};
use crate::testkit;

fn identity(service: &str) -> Identity {
    testkit::identity("shop", "prod", "store", service)
}

fn grant(name: &str, service: &str, class: &str, handler: &str) -> Binding {
    testkit::binding(name, identity(service), class, handler)
}

fn reported(n: i32, of: i32) -> HandlerEvidence {
    HandlerEvidence::Reported { nodes: n, of }
}

/// A cluster running the grant `api` (gvisor/runsc for shop/prod/store/api)
/// with the handler on 3/3 nodes, file digest `d`, and Runtime shop/api
/// granted.
fn cluster(name: &str) -> ClusterFacts {
    ClusterFacts {
        cluster: name.into(),
        read: true,
        grants: vec![grant("api", "api", "gvisor", "runsc")],
        grants_digest: Some("d".repeat(64)),
        handlers: BTreeMap::from([("api".to_string(), reported(3, 3))]),
        runtimes: vec![RuntimeGrantState {
            object: "Runtime/shop/api".into(),
            identity: identity("api"),
            granted: true,
            blocked: false,
        }],
    }
}

fn kinds(f: &[FleetFinding]) -> Vec<FindingKind> {
    f.iter().map(|(_, f)| f.kind).collect()
}

fn same(groups: &[&[&str]]) -> Vec<Vec<String>> {
    groups
        .iter()
        .map(|g| g.iter().map(|c| c.to_string()).collect())
        .collect()
}

#[test]
fn a_consistent_fleet_has_no_finding() {
    let fleet = [cluster("a"), cluster("b"), cluster("c")];
    assert!(fleet_findings(&fleet, &same(&[&["a", "b", "c"]])).is_empty());
    // Clusters may hold different grants, and a grant may be new in one.
    let mut b = cluster("b");
    b.grants.push(grant("web", "web", "kata", "kata"));
    b.handlers
        .insert("web".into(), HandlerEvidence::Missing { of: 3 });
    assert!(fleet_findings(&[cluster("a"), b], &[]).is_empty());
}

#[test]
fn a_grant_bound_differently_is_a_warning_and_an_error_where_declared_the_same() {
    let mut b = cluster("b");
    b.grants = vec![grant("api", "api", "kata", "kata-qemu")];
    let fleet = [cluster("a"), b, cluster("c")];
    let f = fleet_findings(&fleet, &[]);
    assert_eq!(kinds(&f), [FindingKind::FleetGrantDiffers]);
    let (clusters, finding) = &f[0];
    assert_eq!(clusters, &["a", "b", "c"]);
    assert_eq!(finding.severity, Severity::Warning);
    assert_eq!(finding.objects, ["RuntimeGrant/api"]);
    assert_eq!(
        finding.message,
        "grant api binds differently across clusters: a, c: shop/prod/store/api on gvisor (runsc); b: shop/prod/store/api on kata (kata-qemu)"
    );
    // Another identity under the same name counts too.
    let mut b = cluster("b");
    b.grants = vec![grant("api", "payments", "gvisor", "runsc")];
    let f = fleet_findings(&[cluster("a"), b], &same(&[&["a", "b"]]));
    assert_eq!(kinds(&f), [FindingKind::FleetGrantDiffers]);
    assert_eq!(f[0].1.severity, Severity::Error);
}

#[test]
fn a_differing_digest_matters_only_where_declared_the_same() {
    let mut b = cluster("b");
    b.grants_digest = Some("e".repeat(64));
    let fleet = [cluster("a"), b, cluster("c")];
    assert!(fleet_findings(&fleet, &[]).is_empty());
    assert!(fleet_findings(&fleet, &same(&[&["a", "c"]])).is_empty());
    let f = fleet_findings(&fleet, &same(&[&["a", "b", "c"]]));
    assert_eq!(kinds(&f), [FindingKind::FleetGrantsFileDiffers]);
    assert_eq!(f[0].0, ["a", "b", "c"]);
    assert_eq!(f[0].1.severity, Severity::Error);
    assert_eq!(
        f[0].1.message,
        "clusters a, b, c are declared to run one grants file, but their agents loaded different ones (sha256 a, c: dddddddddddd; b: eeeeeeeeeeee)"
    );
    // A cluster without a loaded file differs too.
    let mut c = cluster("c");
    c.grants_digest = None;
    let f = fleet_findings(&[cluster("a"), c], &same(&[&["a", "c"]]));
    assert_eq!(kinds(&f), [FindingKind::FleetGrantsFileDiffers]);
}

#[test]
fn a_handler_missing_or_failing_in_some_clusters() {
    let mut b = cluster("b");
    b.handlers
        .insert("api".into(), HandlerEvidence::Missing { of: 4 });
    let mut c = cluster("c");
    c.handlers.insert(
        "api".into(),
        HandlerEvidence::Failing {
            nodes: 1,
            why: "expected gVisor, saw the host kernel".into(),
        },
    );
    let f = fleet_findings(&[cluster("a"), b, c], &[]);
    assert_eq!(kinds(&f), [FindingKind::FleetHandlerUneven]);
    assert_eq!(f[0].0, ["a", "b", "c"]);
    assert_eq!(
        f[0].1.message,
        "grant api's handler works in a (runsc reported on 3/3 nodes) but not in b (runsc reported on none of 4 nodes), c (runsc failing on 1 node(s): expected gVisor, saw the host kernel)"
    );
    // Unknown is neither: nothing to say yet.
    let mut b = cluster("b");
    b.handlers.insert("api".into(), HandlerEvidence::Unknown);
    assert!(fleet_findings(&[cluster("a"), b], &[]).is_empty());
}

#[test]
fn an_identity_granted_in_one_cluster_and_blocked_in_another() {
    let mut b = cluster("b");
    b.runtimes[0].granted = false;
    b.runtimes[0].blocked = true;
    let f = fleet_findings(&[cluster("a"), b, cluster("c")], &[]);
    assert_eq!(kinds(&f), [FindingKind::FleetIdentitySplit]);
    assert_eq!(f[0].0, ["a", "b", "c"]);
    assert_eq!(
        f[0].1.objects,
        [
            "a:Runtime/shop/api",
            "b:Runtime/shop/api",
            "c:Runtime/shop/api"
        ]
    );
    assert_eq!(
        f[0].1.message,
        "shop/prod/store/api is granted in a (Runtime/shop/api), c (Runtime/shop/api) and Blocked in b (Runtime/shop/api)"
    );
}

#[test]
fn an_unread_cluster_is_compared_with_nothing() {
    let mut b = cluster("b");
    b.read = false;
    b.grants_digest = None;
    b.grants = vec![grant("api", "x", "y", "z")];
    assert!(fleet_findings(&[cluster("a"), b], &same(&[&["a", "b"]])).is_empty());
}

#[test]
fn the_evidence_comes_from_the_grants_node_coverage() {
    let status = |n, total| RuntimeGrantStatus {
        nodes: Some(NodeCoverage::new(n, total, 0)),
        ..Default::default()
    };
    assert_eq!(handler_evidence(None), HandlerEvidence::Unknown);
    assert_eq!(
        handler_evidence(Some(&RuntimeGrantStatus::default())),
        HandlerEvidence::Unknown
    );
    assert_eq!(
        handler_evidence(Some(&status(0, 0))),
        HandlerEvidence::Unknown
    );
    assert_eq!(
        handler_evidence(Some(&status(0, 3))),
        HandlerEvidence::Missing { of: 3 }
    );
    assert_eq!(handler_evidence(Some(&status(2, 3))), reported(2, 3));
}
