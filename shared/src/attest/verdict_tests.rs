//! Reading a canary Job back, the verdicts per node, the bounded status
//! and the plan.

use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::job::{Rule, rules};
use super::tests::{HOST, at, class, node, policy, record, rendered};
use super::*;
use crate::api::AttestationState;

fn job_with(reason: &str, message: &str) -> Job {
    let c = class("gvisor", "runsc");
    let mut job = rendered(&c, &node("n1", &["runsc"]));
    job.metadata.creation_timestamp = Some(Time(at(100)));
    job.status = Some(JobStatus {
        conditions: Some(vec![JobCondition {
            type_: "Failed".into(),
            status: "True".into(),
            reason: Some(reason.into()),
            message: Some(message.into()),
            last_transition_time: Some(Time(at(160))),
            ..Default::default()
        }]),
        ..Default::default()
    });
    job
}

#[test]
fn a_job_alone_says_which_check_failed() {
    let order = rules();
    let index_of = |r: Rule| order.iter().position(|x| *x == r).expect("rule");
    let k = index_of(Rule::Check(Failure::KernelIsHost));
    // The job controller's own wording (pkg/controller/job/pod_failure_policy.go).
    let msg = format!(
        "Container canary for pod berth-system/x-abcde failed with exit code 10 matching FailJob rule at index {k}"
    );
    let r = CanaryRecord::from_job(&job_with("PodFailurePolicy", &msg)).expect("canary");
    assert_eq!(
        r.outcome,
        Outcome::Failed {
            at: Some(at(160)),
            cause: Cause::Check(Failure::KernelIsHost)
        }
    );
    assert_eq!((r.class.as_str(), r.node.as_str()), ("gvisor", "n1"));
    // An exit code that is not the rule's: not trusted as that check.
    let wrong = format!(
        "Container canary for pod b/x failed with exit code 11 matching FailJob rule at index {k}"
    );
    assert!(matches!(
        CanaryRecord::from_job(&job_with("PodFailurePolicy", &wrong))
            .expect("canary")
            .outcome,
        Outcome::Failed {
            cause: Cause::Other(_),
            ..
        }
    ));
    let s = index_of(Rule::NoSandbox);
    let sandbox = format!(
        "Pod berth-system/x-abcde has condition PodReadyToStartContainers matching FailJob rule at index {s}"
    );
    assert!(matches!(
        CanaryRecord::from_job(&job_with("PodFailurePolicy", &sandbox))
            .expect("canary")
            .outcome,
        Outcome::Failed {
            cause: Cause::NoSandbox,
            ..
        }
    ));
    let o = index_of(Rule::OtherExit);
    let crash = format!(
        "Container canary for pod b/x failed with exit code 137 matching FailJob rule at index {o}"
    );
    assert!(matches!(
        CanaryRecord::from_job(&job_with("PodFailurePolicy", &crash))
            .expect("canary")
            .outcome,
        Outcome::Failed {
            cause: Cause::OtherExit(Some(137)),
            ..
        }
    ));
    assert!(matches!(
        CanaryRecord::from_job(&job_with(
            "DeadlineExceeded",
            "Job was active longer than specified deadline"
        ))
        .expect("canary")
        .outcome,
        Outcome::Failed {
            cause: Cause::NotStarted,
            ..
        }
    ));
    // Foreign text is cleaned and cut.
    let evil = format!("BackoffLimitExceeded\u{1b}[2J{}", "x".repeat(500));
    match CanaryRecord::from_job(&job_with(&evil, "\u{202e}evil"))
        .expect("canary")
        .outcome
    {
        Outcome::Failed {
            cause: Cause::Other(t),
            ..
        } => {
            assert!(!t.contains('\u{1b}') && !t.contains('\u{202e}'), "{t:?}");
            assert!(t.chars().count() <= 201, "{}", t.len());
        }
        other => panic!("{other:?}"),
    }
    // A Job without the canary annotations is not a canary.
    let mut plain = job_with("x", "y");
    plain.metadata.annotations = None;
    assert_eq!(CanaryRecord::from_job(&plain), None);
}

#[test]
fn verdicts_per_node() {
    let c = class("gvisor", "runsc");
    let mut kwok = node("kwok-0", &["runsc"]);
    kwok.simulated = true;
    let mut cordoned = node("cordoned", &["runsc"]);
    cordoned.info.unschedulable = true;
    let mut down = node("down", &["runsc"]);
    down.info.ready = false;
    let mut full = node("full", &["runsc"]);
    full.pressure = vec!["DiskPressure".into()];
    let good = node("good", &["runsc"]);
    let bad = node("bad", &["runsc"]);
    let fresh = node("fresh", &["runsc"]);
    let running = node("running", &["runsc"]);
    let moved = node("moved", &["runsc"]);
    let without = node("without", &["runc"]);
    let nodes = vec![
        kwok.clone(),
        cordoned.clone(),
        down,
        full,
        good.clone(),
        bad.clone(),
        fresh,
        running.clone(),
        moved.clone(),
        without,
    ];
    let mut stale = record(&c, &moved, 50, Outcome::Passed { at: Some(at(60)) });
    stale.subject = "from-another-kernel".into();
    let records = vec![
        // A simulated node "completes" its pods (kwok's pod-complete
        // stage): never evidence.
        record(&c, &kwok, 100, Outcome::Passed { at: Some(at(110)) }),
        record(
            &c,
            &cordoned,
            100,
            Outcome::Failed {
                at: Some(at(110)),
                cause: Cause::NoSandbox,
            },
        ),
        record(
            &c,
            &good,
            10,
            Outcome::Failed {
                at: Some(at(20)),
                cause: Cause::NoSandbox,
            },
        ),
        record(&c, &good, 100, Outcome::Passed { at: Some(at(110)) }),
        record(
            &c,
            &bad,
            100,
            Outcome::Failed {
                at: Some(at(130)),
                cause: Cause::Check(Failure::KernelIsHost),
            },
        ),
        record(&c, &running, 100, Outcome::Running),
        stale,
    ];
    let v = attest_class(&c, &nodes, &records, &policy());
    let state = |n: &str| v.of(n).map(|x| (x.state, x.reason.as_str()));
    assert_eq!(
        state("kwok-0"),
        Some((AttestationState::Unverified, reasons::SKIPPED))
    );
    assert!(v.of("kwok-0").expect("kwok").message.contains("simulated"));
    assert_eq!(
        state("cordoned"),
        Some((AttestationState::Unverified, reasons::SKIPPED))
    );
    assert_eq!(
        state("down"),
        Some((AttestationState::Unverified, reasons::SKIPPED))
    );
    assert_eq!(
        state("full"),
        Some((AttestationState::Unverified, reasons::SKIPPED))
    );
    assert_eq!(
        state("good"),
        Some((AttestationState::Verified, reasons::VERIFIED))
    );
    assert_eq!(v.of("good").expect("good").at, Some(at(110)));
    assert_eq!(
        state("bad"),
        Some((AttestationState::Failing, reasons::KERNEL_MISMATCH))
    );
    assert_eq!(
        v.of("bad").expect("bad").message,
        format!("expected gVisor, saw the host kernel ({HOST})")
    );
    assert_eq!(
        state("fresh"),
        Some((AttestationState::Unverified, reasons::NOT_RUN_YET))
    );
    assert_eq!(
        state("running"),
        Some((AttestationState::Unverified, reasons::NOT_RUN_YET))
    );
    assert_eq!(
        state("moved"),
        Some((AttestationState::Unverified, reasons::NOT_RUN_YET))
    );
    assert_eq!(
        state("without"),
        None,
        "a node without the handler is not judged"
    );
    assert_eq!(v.counts(), (1, 1, 7));

    let off = Policy {
        off: Some("--canaries=off".into()),
        ..policy()
    };
    let v = attest_class(&c, &nodes, &records, &off);
    assert!(v.nodes.is_empty(), "no verdict of its own per node");
    assert_eq!(v.off_nodes, 9, "every node that reports the handler");
    assert_eq!(v.counts(), (0, 0, 9));
    assert!(
        v.of("bad").is_none(),
        "a failing canary of before is not read"
    );
    let s = v.status(&off, &Cadence::default());
    assert!(!s.canaries);
    assert_eq!(s.off_reason.as_deref(), Some("--canaries=off"));
    // Every node counted, none listed: the off reason stands for them all.
    assert_eq!((s.verified, s.failing, s.unverified), (0, 0, 9));
    assert!(s.nodes.is_empty(), "{:?}", s.nodes);
    assert_eq!(s.unlisted, 9);
}

/// The agent caches its canary Jobs cut down: every kind of Job reads back
/// as the same record, and the cut one is a small part of the whole.
#[test]
fn a_cut_canary_job_reads_back_as_the_whole_one() {
    let k = rules()
        .iter()
        .position(|r| *r == Rule::Check(Failure::KernelIsHost))
        .expect("rule");
    let mut passed = job_with("unused", "unused");
    if let Some(c) = passed.status.as_mut().and_then(|s| s.conditions.as_mut()) {
        c[0].type_ = "Complete".into();
        c.push(JobCondition {
            type_: "SuccessCriteriaMet".into(),
            status: "True".into(),
            ..Default::default()
        });
    }
    let mut running = job_with("unused", "unused");
    running.status = Some(JobStatus {
        active: Some(1),
        ..Default::default()
    });
    let jobs = [
        job_with(
            "PodFailurePolicy",
            &format!(
                "Container canary for pod berth-system/x failed with exit code 10 matching FailJob rule at index {k}"
            ),
        ),
        job_with(
            "DeadlineExceeded",
            "Job was active longer than specified deadline",
        ),
        job_with(
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        ),
        passed,
        running,
    ];
    for whole in jobs {
        let mut cut = whole.clone();
        keep_what_the_record_reads(&mut cut);
        let record = CanaryRecord::from_job(&whole).expect("a canary");
        assert_eq!(CanaryRecord::from_job(&cut), Some(record));
        let size = |j: &Job| serde_json::to_vec(j).expect("json").len();
        println!(
            "canary Job as JSON: {} bytes whole, {} cut",
            size(&whole),
            size(&cut)
        );
        assert!(
            size(&cut) * 4 < size(&whole),
            "cut {} bytes of {}",
            size(&cut),
            size(&whole)
        );
    }
}

#[test]
fn status_is_bounded_and_lists_failing_nodes_first() {
    let c = class("gvisor", "runsc");
    let nodes: Vec<CanaryNode> = (0..120)
        .map(|i| node(&format!("n{i:03}"), &["runsc"]))
        .collect();
    let mut records: Vec<CanaryRecord> = nodes
        .iter()
        .map(|n| record(&c, n, 100, Outcome::Passed { at: Some(at(110)) }))
        .collect();
    records.push(record(
        &c,
        &nodes[119],
        200,
        Outcome::Failed {
            at: Some(at(210)),
            cause: Cause::NoSandbox,
        },
    ));
    let s = attest_class(&c, &nodes, &records, &policy()).status(&policy(), &Cadence::default());
    assert_eq!((s.verified, s.failing, s.unverified), (119, 1, 0));
    assert_eq!(s.nodes.len(), crate::api::MAX_ATTESTED_NODES);
    assert_eq!(s.unlisted, 70);
    assert_eq!(s.nodes[0].node, "n119");
    assert_eq!(s.nodes[0].state, AttestationState::Failing);
    assert_eq!(s.summary, "1 failing, 119 verified");
    let text = serde_json::to_string(&s).expect("json");
    assert!(text.len() < 16 * 1024, "{} bytes", text.len());
}

#[test]
fn the_plan_runs_each_pair_once_per_period_within_the_cap() {
    let c = class("gvisor", "runsc");
    let a = node("a", &["runsc"]);
    let b = node("b", &["runsc"]);
    let mut kwok = node("kwok", &["runsc"]);
    kwok.simulated = true;
    let nodes = vec![a.clone(), b.clone(), kwok];
    let p = policy();
    let names = |l: Vec<Launch>| l.into_iter().map(|l| l.node.info.name).collect::<Vec<_>>();
    let cs = [c.clone()];
    // Never run: both real nodes, never the simulated one.
    assert_eq!(names(due(&cs, &nodes, &[], &[], &p, at(1000))), ["a", "b"]);
    // One running on a: only b.
    let running = vec![record(&c, &a, 1000, Outcome::Running)];
    assert_eq!(names(due(&cs, &nodes, &running, &[], &p, at(1001))), ["b"]);
    // Both done: nothing within the period; both after it (and its spread).
    let done = vec![
        record(&c, &a, 1000, Outcome::Passed { at: Some(at(1010)) }),
        record(
            &c,
            &b,
            1000,
            Outcome::Failed {
                at: Some(at(1010)),
                cause: Cause::NoSandbox,
            },
        ),
    ];
    assert!(due(&cs, &nodes, &done, &[], &p, at(1500)).is_empty());
    assert_eq!(
        names(due(&cs, &nodes, &done, &[], &p, at(1000 + 600 + 60))),
        ["b", "a"],
        "failing first"
    );
    // The cap counts every unfinished canary.
    let capped = Policy {
        max_active: 1,
        ..p.clone()
    };
    assert!(due(&cs, &nodes, &running, &[], &capped, at(1001)).is_empty());
    // A changed subject (the node's kernel moved) is due at once.
    let mut upgraded = a.clone();
    upgraded.kernel = Some("6.12.0".into());
    assert_eq!(
        names(due(&cs, &[upgraded], &done, &[], &p, at(1500))),
        ["a"]
    );
    // Off: nothing.
    let off = Policy {
        off: Some("off".into()),
        ..p
    };
    assert!(due(&cs, &nodes, &[], &[], &off, at(1000)).is_empty());
}
