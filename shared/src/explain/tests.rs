//! Explain agrees with the agent: every case is decided twice from the
//! same inputs — once as the agent's reconcile does (`decide::identity`,
//! `binding_for`, the class it names, `decide`), once by
//! [`explain_runtime`] — and the two must say the same thing.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, NodeSelectorRequirement};
use k8s_openapi::api::node::v1::{Overhead, RuntimeClass};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::analysis::{NodeInfo, Owner, Workload, WorkloadKind};
use crate::api::{ProfileState, Runtime, SchedulingSpec};
use crate::decide::{self, DecideInput, Decision, GrantBinding, ObservedClass};
use crate::testkit::shop::{binding, runtime};

fn class(handler: &str) -> RuntimeClass {
    RuntimeClass {
        metadata: ObjectMeta {
            name: Some("gvisor".into()),
            ..Default::default()
        },
        handler: handler.into(),
        ..Default::default()
    }
}

fn node(name: &str, handlers: &[&str], zone: &str) -> NodeInfo {
    NodeInfo {
        labels: BTreeMap::from([("zone".to_string(), zone.to_string())]),
        ..crate::testkit::node(name, handlers)
    }
}

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        (decide::PROJECT_LABEL.to_string(), "shop".to_string()),
        (decide::ENVIRONMENT_LABEL.to_string(), "prod".to_string()),
    ])
}

/// The agent's read-and-decide step (agent/src/controller/reconcile/read.rs), on
/// the same inputs.
fn agent_decision(
    rt: &Runtime,
    ns_labels: Option<&BTreeMap<String, String>>,
    bindings: &[GrantBinding],
    classes: &[RuntimeClass],
) -> Decision {
    let identity = match ns_labels {
        Some(l) => decide::identity(
            &Namespace {
                metadata: ObjectMeta {
                    name: Some("shop".into()),
                    labels: Some(l.clone()),
                    ..Default::default()
                },
                ..Default::default()
            },
            rt,
        ),
        None => Err(decide::IdentityError::MissingLabels {
            namespace: "shop".into(),
            missing: vec![decide::PROJECT_LABEL, decide::ENVIRONMENT_LABEL],
        }),
    };
    let requested = rt.spec.runtime_profile.as_deref();
    let binding = match (&identity, requested) {
        (Ok(id), Some(alias)) => decide::binding_for(bindings, id, alias).cloned(),
        _ => None,
    };
    let class = binding.as_ref().and_then(|b| {
        classes
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(b.runtime_class.as_str()))
            .map(ObservedClass::from_runtime_class)
    });
    decide::decide(DecideInput {
        bindings,
        identity: identity.as_ref(),
        requested,
        class: class.as_ref(),
        previous: rt.status.as_ref().and_then(|s| s.profile.as_ref()),
    })
}

struct Case {
    name: &'static str,
    rt: Runtime,
    ns: Option<BTreeMap<String, String>>,
    bindings: Vec<GrantBinding>,
    classes: Vec<RuntimeClass>,
    /// The first failing step explain must name (None: none fails).
    first_fail: Option<StepKind>,
}

fn cases() -> Vec<Case> {
    let overhead = RuntimeClass {
        overhead: Some(Overhead {
            pod_fixed: Some(BTreeMap::from([("cpu".into(), Quantity("250m".into()))])),
        }),
        ..class("runsc")
    };
    vec![
        Case {
            name: "granted",
            rt: runtime("api", Some("sandboxed"), None),
            ns: Some(labels()),
            bindings: vec![binding("sandboxed", "api")],
            classes: vec![class("runsc")],
            first_fail: None,
        },
        Case {
            name: "not requested",
            rt: runtime("api", None, None),
            ns: Some(labels()),
            bindings: vec![binding("sandboxed", "api")],
            classes: vec![],
            first_fail: None,
        },
        Case {
            name: "another service's binding",
            rt: runtime("web", Some("sandboxed"), None),
            ns: Some(labels()),
            bindings: vec![binding("sandboxed", "api")],
            classes: vec![class("runsc")],
            first_fail: Some(StepKind::Binding),
        },
        Case {
            name: "revoked",
            rt: runtime("api", Some("sandboxed"), Some(ProfileState::Granted)),
            ns: Some(labels()),
            bindings: vec![binding("other", "web")],
            classes: vec![class("runsc")],
            first_fail: Some(StepKind::Binding),
        },
        Case {
            name: "namespace without labels",
            rt: runtime("api", Some("sandboxed"), None),
            ns: Some(BTreeMap::new()),
            bindings: vec![binding("sandboxed", "api")],
            classes: vec![class("runsc")],
            first_fail: Some(StepKind::Identity),
        },
        Case {
            name: "namespace unknown",
            rt: runtime("api", Some("sandboxed"), None),
            ns: None,
            bindings: vec![binding("sandboxed", "api")],
            classes: vec![class("runsc")],
            first_fail: Some(StepKind::Identity),
        },
        Case {
            name: "class missing",
            rt: runtime("api", Some("sandboxed"), None),
            ns: Some(labels()),
            bindings: vec![binding("sandboxed", "api")],
            classes: vec![],
            first_fail: Some(StepKind::RuntimeClass),
        },
        Case {
            name: "handler mismatch",
            rt: runtime("api", Some("sandboxed"), None),
            ns: Some(labels()),
            bindings: vec![binding("sandboxed", "api")],
            classes: vec![class("kata")],
            first_fail: Some(StepKind::RuntimeClass),
        },
        Case {
            name: "class with overhead",
            rt: runtime("api", Some("sandboxed"), None),
            ns: Some(labels()),
            bindings: vec![binding("sandboxed", "api")],
            classes: vec![overhead],
            first_fail: Some(StepKind::RuntimeClass),
        },
        Case {
            name: "no grants at all",
            rt: runtime("api", Some("sandboxed"), None),
            ns: Some(labels()),
            bindings: vec![],
            classes: vec![class("runsc")],
            first_fail: Some(StepKind::Binding),
        },
    ]
}

#[test]
fn explain_and_the_agent_decide_the_same() {
    let nodes = vec![node("a", &["runsc"], "1"), node("b", &["runsc"], "2")];
    for c in cases() {
        let agent = agent_decision(&c.rt, c.ns.as_ref(), &c.bindings, &c.classes);
        let facts = RuntimeFacts {
            runtime: &c.rt,
            namespace_labels: c.ns.as_ref(),
            bindings: &c.bindings,
            binding_source: "RuntimeGrant",
            classes: &c.classes,
            nodes: &nodes,
            admission: None,
            attestation: None,
            now: None,
        };
        let e = explain_runtime(&facts);
        assert_eq!(e.decision, agent.reason(), "{}", c.name);
        assert_eq!(e.message, agent.message(), "{}", c.name);
        assert_eq!(
            e.first_failure().map(|s| s.step),
            c.first_fail
                .or((!agent.allows_changes()).then_some(StepKind::Conditions)),
            "{}: {:#?}",
            c.name,
            e.steps
        );
        // Every step, in order, always.
        let kinds: Vec<StepKind> = e.steps.iter().map(|s| s.step).collect();
        assert_eq!(kinds, StepKind::ALL, "{}", c.name);
        // A blocked decision always fails the conditions step.
        let cond = e.step(StepKind::Conditions).expect("conditions");
        assert_eq!(
            cond.verdict == Verdict::Fail,
            !agent.allows_changes(),
            "{}",
            c.name
        );
    }
}

#[test]
fn the_closest_binding_names_each_differing_field() {
    let rt = runtime("web", Some("sandboxed"), None);
    let bindings = vec![binding("sandboxed", "api"), {
        let mut b = binding("other", "api");
        b.identity.project = "else".into();
        b
    }];
    let ns = labels();
    let e = explain_runtime(&RuntimeFacts {
        runtime: &rt,
        namespace_labels: Some(&ns),
        bindings: &bindings,
        binding_source: "RuntimeGrant",
        classes: &[class("runsc")],
        nodes: &[],
        admission: None,
        attestation: None,
        now: None,
    });
    let step = e.step(StepKind::Binding).expect("binding");
    assert_eq!(step.verdict, Verdict::Fail);
    assert_eq!(step.object, "RuntimeGrant/sandboxed");
    assert_eq!(
        step.details,
        vec![r#"service: binding says "api", this has "web""#.to_string()]
    );
}

#[test]
fn handler_presence_is_per_node_and_matches_handler_ready() {
    let rt = {
        let mut rt = runtime("api", Some("sandboxed"), None);
        rt.spec.scheduling = Some(SchedulingSpec {
            node_selector: BTreeMap::from([("zone".into(), "1".into())]),
            ..Default::default()
        });
        rt
    };
    let mut unknown = node("c", &[], "1");
    unknown.reports_handlers = false;
    let nodes = vec![
        node("a", &["runsc"], "1"),
        node("b", &["runc"], "1"),
        unknown,
        node("elsewhere", &[], "2"),
    ];
    let ns = labels();
    let bindings = vec![binding("sandboxed", "api")];
    let classes = vec![class("runsc")];
    let e = explain_runtime(&RuntimeFacts {
        runtime: &rt,
        namespace_labels: Some(&ns),
        bindings: &bindings,
        binding_source: "RuntimeGrant",
        classes: &classes,
        nodes: &nodes,
        admission: None,
        attestation: None,
        now: None,
    });
    let h = e.step(StepKind::Handlers).expect("handlers");
    assert_eq!(h.verdict, Verdict::Fail);
    assert_eq!(
        h.details,
        vec![
            "Node/a: present",
            "Node/b: missing",
            "Node/c: unknown (reports no handler list)"
        ]
    );
    let p = e.step(StepKind::Placement).expect("placement");
    assert_eq!(p.verdict, Verdict::Pass);
    // The agent's HandlerReady says the same.
    let agent = agent_decision(&rt, Some(&ns), &bindings, &classes);
    let cond = crate::status::handler_ready(&rt, &agent, &nodes, None);
    assert_eq!(cond.reason, crate::api::reasons::PLACEMENT_INCOMPLETE);
    let c = e.step(StepKind::Conditions).expect("conditions");
    assert!(c.reason.contains("PlacementIncomplete"), "{}", c.reason);
    assert_eq!(c.verdict, Verdict::Fail);
    // No node in the placement: placement fails.
    let rt2 = {
        let mut rt = rt.clone();
        rt.spec.scheduling = Some(SchedulingSpec {
            node_selector: BTreeMap::from([("zone".into(), "9".into())]),
            ..Default::default()
        });
        rt
    };
    let e = explain_runtime(&RuntimeFacts {
        runtime: &rt2,
        namespace_labels: Some(&ns),
        bindings: &bindings,
        binding_source: "RuntimeGrant",
        classes: &classes,
        nodes: &nodes,
        admission: None,
        attestation: None,
        now: None,
    });
    assert_eq!(
        e.step(StepKind::Placement).map(|s| s.verdict),
        Some(Verdict::Fail)
    );
}

#[test]
fn admission_is_reported_as_given() {
    let rt = runtime("web", Some("sandboxed"), None);
    let ns = labels();
    let denied = Admission::Denied {
        tried: "dry-run create of a copy".into(),
        message: "NotGranted: profile sandboxed is not granted".into(),
    };
    let e = explain_runtime(&RuntimeFacts {
        runtime: &rt,
        namespace_labels: Some(&ns),
        bindings: &[],
        binding_source: "RuntimeGrant",
        classes: &[],
        nodes: &[],
        admission: Some(&denied),
        attestation: None,
        now: None,
    });
    let a = e.step(StepKind::Admission).expect("admission");
    assert_eq!(a.verdict, Verdict::Fail);
    assert!(a.reason.contains("NotGranted"));
    assert!(e.lines().iter().any(|l| l.contains("admission")));
}

fn workload(managed: bool, profile: Option<&str>, class: Option<&str>) -> Workload {
    let mut labels = BTreeMap::new();
    if managed {
        for (k, v) in [
            (decide::PROJECT_LABEL, "shop"),
            (decide::ENVIRONMENT_LABEL, "prod"),
            (crate::render::labels::APPLICATION_LABEL, "store"),
            (crate::render::labels::SERVICE_LABEL, "api"),
        ] {
            labels.insert(k.to_string(), v.to_string());
        }
    }
    Workload {
        kind: WorkloadKind::Deployment,
        namespace: "shop".into(),
        name: "legacy".into(),
        runtime_class: class.map(str::to_string),
        replicas: 1,
        ready: 1,
        managed_by_berth: managed,
        // berth's workloads have a controller (the Runtime).
        owner: managed.then(|| Owner {
            kind: "Runtime".into(),
            name: "legacy".into(),
        }),
        is_rollback_revision: false,
        suspended: false,
        runtime_profile: profile.map(str::to_string),
        labels: labels.into(),
    }
}

#[test]
fn a_workload_agrees_with_the_retained_analysis() {
    let bindings = vec![binding("sandboxed", "api")];
    let classes = vec![class("runsc")];
    let nodes = vec![node("a", &["runsc"], "1")];
    let ns = labels();
    for (w, decision, fail) in [
        (
            workload(true, Some("sandboxed"), Some("gvisor")),
            workload::decisions::COVERED,
            None,
        ),
        (
            workload(false, None, Some("gvisor")),
            workload::decisions::RETAINED,
            Some(StepKind::Binding),
        ),
        (
            workload(true, Some("gone"), Some("gvisor")),
            workload::decisions::RETAINED,
            Some(StepKind::Binding),
        ),
        (
            workload(false, None, None),
            workload::decisions::NO_CLASS,
            None,
        ),
        // Covered by its labels, but its controller is gone: an orphan.
        (
            Workload {
                owner: None,
                ..workload(true, Some("sandboxed"), Some("gvisor"))
            },
            workload::decisions::RETAINED,
            Some(StepKind::Binding),
        ),
    ] {
        let e = explain_workload(&WorkloadFacts {
            workload: &w,
            placement: Default::default(),
            node_name: None,
            namespace_labels: Some(&ns),
            bindings: &bindings,
            binding_source: "RuntimeGrant",
            classes: &classes,
            nodes: &nodes,
            admission: None,
        });
        assert_eq!(e.decision, decision, "{w:?}");
        assert_eq!(
            e.first_failure().map(|s| s.step),
            fail,
            "{w:?}: {:#?}",
            e.steps
        );
        let retained = crate::analysis::retained(std::slice::from_ref(&w), &bindings, None);
        assert_eq!(
            retained.is_empty(),
            decision != workload::decisions::RETAINED,
            "{w:?}"
        );
    }
    // Outside berth on a granted class: the binding step says so.
    let w = workload(false, None, Some("gvisor"));
    let e = explain_workload(&WorkloadFacts {
        workload: &w,
        placement: Default::default(),
        node_name: None,
        namespace_labels: Some(&ns),
        bindings: &bindings,
        binding_source: "RuntimeGrant",
        classes: &classes,
        nodes: &nodes,
        admission: None,
    });
    assert!(e.message.contains("outside berth"), "{}", e.message);
}

#[test]
fn a_scheduled_pod_counts_only_its_node() {
    let mut w = workload(true, Some("sandboxed"), Some("gvisor"));
    w.kind = WorkloadKind::Pod;
    let nodes = vec![node("a", &["runsc"], "1"), node("b", &[], "1")];
    let ns = labels();
    let bindings = vec![binding("sandboxed", "api")];
    let classes = vec![class("runsc")];
    let e = explain_workload(&WorkloadFacts {
        workload: &w,
        placement: Default::default(),
        node_name: Some("b"),
        namespace_labels: Some(&ns),
        bindings: &bindings,
        binding_source: "RuntimeGrant",
        classes: &classes,
        nodes: &nodes,
        admission: None,
    });
    let h = e.step(StepKind::Handlers).expect("handlers");
    assert_eq!(h.verdict, Verdict::Fail);
    assert_eq!(h.details, vec!["Node/b: missing"]);
    let _ = NodeSelectorRequirement::default();
}
