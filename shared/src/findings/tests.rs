//! One test per finding kind, the ranking, and the docs table.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use super::*;
use crate::analysis::{NodeInfo, Owner, Workload, WorkloadKind};
use crate::api::{
    PendingGrantsFileSpec, PendingProblem, PendingVerdict, ProfileState, Runtime, SchedulingSpec,
};
use crate::decide::{ENVIRONMENT_LABEL, GrantBinding, ObservedClass, PROJECT_LABEL};
use crate::render::labels::{APPLICATION_LABEL, SERVICE_LABEL};
use crate::testkit::shop::{binding, class, runtime};

const NOW: i64 = 1_800_000_000;

fn now() -> Timestamp {
    Timestamp::from_second(NOW).expect("ts")
}

fn node(name: &str, handlers: &[&str]) -> NodeInfo {
    NodeInfo {
        labels: BTreeMap::from([("zone".into(), name.into())]),
        ..crate::testkit::node(name, handlers)
    }
}

fn workload(name: &str, managed: bool, profile: Option<&str>) -> Workload {
    let mut labels = BTreeMap::new();
    if managed {
        for (k, v) in [
            (PROJECT_LABEL, "shop"),
            (ENVIRONMENT_LABEL, "prod"),
            (APPLICATION_LABEL, "store"),
            (SERVICE_LABEL, "api"),
        ] {
            labels.insert(k.to_string(), v.to_string());
        }
    }
    Workload {
        kind: WorkloadKind::Deployment,
        namespace: "shop".into(),
        name: name.into(),
        runtime_class: Some("gvisor".into()),
        replicas: 1,
        ready: 1,
        managed_by_berth: managed,
        // berth's workloads have a controller (the Runtime).
        owner: managed.then(|| Owner {
            kind: "Runtime".into(),
            name: name.into(),
        }),
        is_rollback_revision: false,
        suspended: false,
        runtime_profile: profile.map(str::to_string),
        labels: labels.into(),
    }
}

struct World {
    runtimes: Vec<Runtime>,
    ns: BTreeMap<String, BTreeMap<String, String>>,
    bindings: Vec<GrantBinding>,
    classes: Vec<ObservedClass>,
    nodes: Vec<NodeInfo>,
    workloads: Vec<Workload>,
    pending: Option<PendingGrantsFileSpec>,
    leader: Leader,
    cert: CertExpiry,
    unreadable: Vec<(String, String)>,
    attestations: BTreeMap<String, crate::api::HandlerAttestation>,
}

/// A healthy cluster: one grant held by a granted Runtime whose workload
/// it covers, every node with the handler, a live leader, a fresh cert.
fn healthy() -> World {
    World {
        runtimes: vec![runtime(
            "api",
            Some("sandboxed"),
            Some(ProfileState::Granted),
        )],
        ns: BTreeMap::from([(
            "shop".to_string(),
            BTreeMap::from([
                (PROJECT_LABEL.to_string(), "shop".to_string()),
                (ENVIRONMENT_LABEL.to_string(), "prod".to_string()),
            ]),
        )]),
        bindings: vec![binding("sandboxed", "api")],
        classes: vec![class()],
        nodes: vec![node("a", &["runsc"]), node("b", &["runsc"])],
        workloads: vec![workload("api", true, Some("sandboxed"))],
        pending: None,
        leader: Leader::Live("agent-0".into()),
        cert: CertExpiry::NotAfter(Timestamp::from_second(NOW + 90 * 86400).expect("ts")),
        unreadable: Vec::new(),
        attestations: BTreeMap::new(),
    }
}

fn run(w: &World) -> Vec<Finding> {
    findings(&Inputs {
        now: now(),
        runtimes: &w.runtimes,
        namespace_labels: &w.ns,
        bindings: &w.bindings,
        classes: &w.classes,
        nodes: &w.nodes,
        workloads: &w.workloads,
        pending: w.pending.as_ref(),
        leader: &w.leader,
        cert: &w.cert,
        unreadable: &w.unreadable,
        attestations: &w.attestations,
        thresholds: Thresholds::default(),
    })
}

fn kinds(f: &[Finding]) -> Vec<FindingKind> {
    f.iter().map(|f| f.kind).collect()
}

#[test]
fn a_healthy_cluster_has_no_findings() {
    assert_eq!(run(&healthy()), Vec::new());
}

#[test]
fn retained_after_revocation() {
    let mut w = healthy();
    w.bindings.clear();
    w.runtimes = vec![runtime(
        "api",
        Some("sandboxed"),
        Some(ProfileState::Revoked),
    )];
    // A ReplicaSet of the Deployment is the same finding, not another.
    let mut rs = workload("api-1", true, Some("sandboxed"));
    rs.kind = WorkloadKind::ReplicaSet;
    rs.owner = Some(Owner {
        kind: "Deployment".into(),
        name: "api".into(),
    });
    w.workloads.push(rs);
    let f = run(&w);
    assert_eq!(kinds(&f), vec![FindingKind::RetainedAfterRevocation]);
    assert_eq!(f[0].severity, Severity::Error);
    assert_eq!(f[0].objects, vec!["Deployment/shop/api"]);
    assert!(
        f[0].message.contains("grant sandboxed is gone"),
        "{}",
        f[0].message
    );
}

#[test]
fn granted_class_outside_berth() {
    let mut w = healthy();
    w.workloads.push(workload("legacy", false, None));
    let f = run(&w);
    assert_eq!(kinds(&f), vec![FindingKind::GrantedClassOutsideBerth]);
    assert_eq!(
        f[0].objects,
        vec!["Deployment/shop/legacy", "RuntimeClass/gvisor"]
    );
}

/// A workload with berth's labels and no controller on a granted class is
/// an orphan, even though its labels and profile name a grant that would
/// cover it: nothing governs it any more.
#[test]
fn orphan_on_granted_class() {
    let mut w = healthy();
    let mut orphan = workload("api-6d4", true, Some("sandboxed"));
    orphan.kind = WorkloadKind::ReplicaSet;
    orphan.owner = None;
    w.workloads.push(orphan);
    let f = run(&w);
    assert_eq!(kinds(&f), vec![FindingKind::OrphanOnGrantedClass]);
    assert_eq!(
        f[0].objects,
        vec!["ReplicaSet/shop/api-6d4", "RuntimeClass/gvisor"]
    );
    assert!(f[0].message.contains("no controller"), "{}", f[0].message);
    // Without a grant naming its class it is not this finding.
    let mut w2 = w;
    w2.bindings.clear();
    assert!(!kinds(&run(&w2)).contains(&FindingKind::OrphanOnGrantedClass));
}

/// A Runtime whose `Exposed` condition is True: the objects the agent
/// named (`status.exposure`), orphans left to their own finding.
#[test]
fn runtime_exposed() {
    use crate::api::ExposureRef;
    let exposed = |reason: &str, refs: Vec<ExposureRef>| {
        let mut w = healthy();
        let status = w.runtimes[0].status.as_mut().expect("status");
        status.conditions = vec![Condition {
            type_: "Exposed".into(),
            reason: reason.into(),
            message: "NetworkPolicy/shop/allow-all selects the pods".into(),
            ..condition("Exposed", 60)
        }];
        status.exposure = refs;
        run(&w)
    };
    let r = |kind: &str, name: &str, reason: &str| ExposureRef {
        kind: kind.into(),
        namespace: "shop".into(),
        name: name.into(),
        reason: reason.into(),
    };
    let f = exposed(
        "ForeignNetworkPolicy",
        vec![
            r("NetworkPolicy", "allow-all", "ForeignNetworkPolicy"),
            r("Service", "public", "ForeignService"),
        ],
    );
    assert_eq!(kinds(&f), vec![FindingKind::RuntimeExposed]);
    assert_eq!(
        f[0].objects,
        vec![
            "Runtime/shop/api",
            "NetworkPolicy/shop/allow-all",
            "Service/shop/public"
        ]
    );
    assert!(f[0].message.contains("allow-all"), "{}", f[0].message);
    // Only orphans: the orphan finding (from the caller's own view of the
    // workloads) names them, not this one.
    let f = exposed("Orphaned", vec![r("ReplicaSet", "api-6d4", "Orphaned")]);
    assert!(f.is_empty(), "{f:?}");
}

#[test]
fn grant_unheld() {
    let mut w = healthy();
    w.bindings.push(binding("spare", "web"));
    let f = run(&w);
    assert_eq!(kinds(&f), vec![FindingKind::GrantUnheld]);
    assert_eq!(f[0].objects, vec!["RuntimeGrant/spare"]);
    assert_eq!(f[0].severity, Severity::Info);
}

#[test]
fn class_unrunnable() {
    let mut w = healthy();
    w.classes.push(crate::testkit::class("kata", "kata"));
    let f = run(&w);
    assert_eq!(kinds(&f), vec![FindingKind::ClassUnrunnable]);
    // Nobody grants it: only worth knowing.
    assert_eq!(f[0].severity, Severity::Info);
    // Granted and unrunnable: a warning. A node without a handler list
    // makes it unknown, not unrunnable.
    let mut w = healthy();
    w.nodes = vec![node("a", &["runc"])];
    let f = run(&w);
    assert!(kinds(&f).contains(&FindingKind::ClassUnrunnable));
    assert_eq!(
        f.iter()
            .find(|f| f.kind == FindingKind::ClassUnrunnable)
            .map(|f| f.severity),
        Some(Severity::Warning)
    );
    w.nodes[0].reports_handlers = false;
    assert!(!kinds(&run(&w)).contains(&FindingKind::ClassUnrunnable));
}

#[test]
fn handler_missing_in_placement() {
    let mut w = healthy();
    w.nodes.push(node("c", &["runc"]));
    let f = run(&w);
    assert_eq!(kinds(&f), vec![FindingKind::HandlerMissingInPlacement]);
    assert_eq!(f[0].objects, vec!["Runtime/shop/api", "Node/c"]);
    // Outside the Runtime's placement it does not matter.
    w.runtimes[0].spec.scheduling = Some(SchedulingSpec {
        node_selector: BTreeMap::from([("zone".into(), "a".into())]),
        ..Default::default()
    });
    assert_eq!(run(&w), Vec::new());
}

fn condition(type_: &str, age: i64) -> Condition {
    Condition {
        type_: type_.into(),
        status: "True".into(),
        reason: "Revoked".into(),
        message: "m".into(),
        last_transition_time: Time(Timestamp::from_second(NOW - age).expect("ts")),
        observed_generation: None,
    }
}

#[test]
fn runtime_stuck() {
    let mut w = healthy();
    let status = w.runtimes[0].status.as_mut().expect("status");
    status.conditions = vec![condition("Blocked", 60)];
    assert_eq!(run(&w), Vec::new(), "not for long yet");
    let status = w.runtimes[0].status.as_mut().expect("status");
    status.conditions = vec![condition("Degraded", 3600)];
    let f = run(&w);
    assert_eq!(kinds(&f), vec![FindingKind::RuntimeStuck]);
    assert!(f[0].message.contains("Degraded"), "{}", f[0].message);
}

#[test]
fn grants_file_invalid_and_pending() {
    let mut w = healthy();
    w.pending = Some(PendingGrantsFileSpec {
        verdict: PendingVerdict::Invalid,
        problems: vec![PendingProblem {
            rule: "schema-version".into(),
            line: Some(1),
            column: None,
            message: "unknown schema_version 2".into(),
        }],
        ..Default::default()
    });
    let f = run(&w);
    assert_eq!(kinds(&f), vec![FindingKind::GrantsFileInvalid]);
    assert!(f[0].message.contains("schema_version"), "{}", f[0].message);

    w.pending = Some(PendingGrantsFileSpec {
        verdict: PendingVerdict::Valid,
        observed_at: Some(Time(Timestamp::from_second(NOW - 600).expect("ts"))),
        ..Default::default()
    });
    assert_eq!(run(&w), Vec::new(), "pending, not for long");
    w.pending.as_mut().expect("p").observed_at =
        Some(Time(Timestamp::from_second(NOW - 7200).expect("ts")));
    assert_eq!(kinds(&run(&w)), vec![FindingKind::GrantsFilePending]);
}

#[test]
fn no_agent_leader() {
    let mut w = healthy();
    w.leader = Leader::Missing("Lease berth-system/berth-agent expired".into());
    let f = run(&w);
    assert_eq!(kinds(&f), vec![FindingKind::NoAgentLeader]);
    assert_eq!(f[0].severity, Severity::Error);
    w.leader = Leader::Unknown;
    assert_eq!(run(&w), Vec::new());
}

#[test]
fn webhook_cert_expiry() {
    let mut w = healthy();
    w.cert = CertExpiry::NotAfter(Timestamp::from_second(NOW + 3 * 86400).expect("ts"));
    let f = run(&w);
    assert_eq!(kinds(&f), vec![FindingKind::WebhookCertExpiry]);
    assert_eq!(f[0].severity, Severity::Warning);
    w.cert = CertExpiry::NotAfter(Timestamp::from_second(NOW - 1).expect("ts"));
    assert_eq!(run(&w)[0].severity, Severity::Error);
    w.cert = CertExpiry::NotRead("not readable by the console".into());
    let f = run(&w);
    assert_eq!(f[0].severity, Severity::Info);
    assert!(f[0].message.starts_with("not checked"));
}

#[test]
fn unreadable() {
    let mut w = healthy();
    w.unreadable = vec![("Pod".into(), "pods is forbidden".into())];
    let f = run(&w);
    assert_eq!(kinds(&f), vec![FindingKind::Unreadable]);
    assert_eq!(f[0].objects, vec!["Pod"]);
}

#[test]
fn worst_first() {
    let mut w = healthy();
    w.bindings.push(binding("spare", "web"));
    w.unreadable = vec![("Pod".into(), "forbidden".into())];
    w.leader = Leader::Missing("no Lease".into());
    let f = run(&w);
    assert_eq!(
        kinds(&f),
        vec![
            FindingKind::NoAgentLeader,
            FindingKind::Unreadable,
            FindingKind::GrantUnheld
        ]
    );
    assert_eq!(worst(&f), Some(Severity::Error));
    assert_eq!(worst(&[]), None);
}

const START: &str = "<!-- findings-table:start (generated from shared/src/findings/mod.rs) -->\n";
const END: &str = "<!-- findings-table:end -->";

#[test]
fn the_docs_page_lists_every_kind() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/findings.md");
    let page = std::fs::read_to_string(&path).expect("docs/findings.md");
    let (Some(a), Some(b)) = (page.find(START), page.find(END)) else {
        panic!("docs/findings.md lacks the findings table markers");
    };
    let current = &page[a + START.len()..b];
    let expected = markdown();
    if current != expected && std::env::var("BERTH_UPDATE_GOLDEN").as_deref() == Ok("1") {
        let updated = format!("{}{START}{expected}{}", &page[..a], &page[b..]);
        std::fs::write(&path, updated).expect("write docs/findings.md");
        return;
    }
    assert_eq!(
        current, expected,
        "docs/findings.md's table differs from shared/src/findings/mod.rs \
         (BERTH_UPDATE_GOLDEN=1 cargo test -p berth-shared regenerates it)"
    );
    for k in FindingKind::ALL {
        assert!(page.contains(&format!("`{}`", k.id())), "{k:?}");
    }
}

/// What the canaries saw: a failing node is an error naming the node and
/// the canary's reason; nodes without evidence an info finding saying why;
/// all verified, nothing.
#[test]
fn handler_failing_and_unverified() {
    use crate::api::{AttestationState, HandlerAttestation, NodeAttestation};
    let node = |name: &str, state, reason: &str, message: &str| NodeAttestation {
        node: name.into(),
        state,
        reason: reason.into(),
        message: message.into(),
        at: None,
        job: None,
    };
    let mut w = healthy();
    let class = w.classes[0].name.clone();
    let attested = |nodes: Vec<NodeAttestation>| {
        let n = |s| i32::try_from(nodes.iter().filter(|x| x.state == s).count()).expect("n");
        HandlerAttestation {
            canaries: true,
            verified: n(AttestationState::Verified),
            failing: n(AttestationState::Failing),
            unverified: n(AttestationState::Unverified),
            nodes,
            ..Default::default()
        }
    };
    w.attestations.insert(
        class.clone(),
        attested(vec![
            node("a", AttestationState::Verified, "Verified", "ok"),
            node("b", AttestationState::Verified, "Verified", "ok"),
        ]),
    );
    assert_eq!(run(&w), Vec::new(), "all verified: nothing");
    w.attestations.insert(
        class.clone(),
        attested(vec![
            node(
                "a",
                AttestationState::Failing,
                "SandboxNotCreated",
                "sandbox not created: …",
            ),
            node(
                "b",
                AttestationState::Unverified,
                "Skipped",
                "skipped: node cordoned",
            ),
        ]),
    );
    let f = run(&w);
    assert_eq!(
        kinds(&f),
        [FindingKind::HandlerFailing, FindingKind::HandlerUnverified]
    );
    assert_eq!(f[0].severity, Severity::Error);
    assert_eq!(
        f[0].objects,
        [format!("RuntimeClass/{class}"), "Node/a".to_string()]
    );
    assert!(
        f[0].message
            .contains("its canary fails on 1 node(s): a (sandbox not created: …)"),
        "{}",
        f[0].message
    );
    assert_eq!(f[1].severity, Severity::Info);
    assert!(
        f[1].message.contains("1 Skipped (skipped: node cordoned)"),
        "{}",
        f[1].message
    );
    // Canaries off: no node is listed; the finding gives the one reason.
    w.attestations.insert(
        class.clone(),
        HandlerAttestation {
            canaries: false,
            off_reason: Some("the agent runs with --canaries=off".into()),
            unverified: 3,
            unlisted: 3,
            ..Default::default()
        },
    );
    let f = run(&w);
    assert_eq!(kinds(&f), [FindingKind::HandlerUnverified]);
    assert!(
        f[0].message.starts_with("3 node(s)")
            && f[0].message.ends_with(
                "have no canary evidence: canaries are off: the agent runs with --canaries=off"
            ),
        "{}",
        f[0].message
    );
}
