//! Attestation's pure parts: the checks, the claims and the Job (reading a
//! Job back, the verdicts and the plan: `verdict_tests.rs`), and the
//! builders both share.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::jiff::Timestamp;

use super::job::{Rule, job_name, rules, subject};
use super::*;

pub(super) const HOST: &str = "6.1.0-41-amd64";

pub(super) fn host_facts() -> Facts {
    Facts {
        uid: 10001,
        root_write_error: Some("read-only file system".into()),
        root_mount_options: Some("ro,relatime".into()),
        cap_eff: Some(0),
        no_new_privs: Some(true),
        token_present: false,
        kernel_release: HOST.into(),
        proc_version: format!("Linux version {HOST} (debian-kernel@lists.debian.org) #1 SMP"),
        nofile_soft: Some(1_048_576),
    }
}

pub(super) fn gvisor_facts() -> Facts {
    Facts {
        root_write_error: Some("permission denied".into()),
        kernel_release: "4.4.0".into(),
        proc_version: format!("Linux version 4.4.0 {}", checks::GVISOR_PROC_VERSION),
        ..host_facts()
    }
}

pub(super) fn class(name: &str, handler: &str) -> CanaryClass {
    CanaryClass::from_parts(name, handler, &BTreeMap::new())
}

pub(super) fn node(name: &str, handlers: &[&str]) -> CanaryNode {
    CanaryNode {
        info: crate::testkit::node(name, handlers),
        kernel: Some(HOST.into()),
        ..Default::default()
    }
}

pub(super) fn policy() -> Policy {
    Policy {
        off: None,
        image: "localhost/berth-agent@sha256:ab".into(),
        period_seconds: 600,
        max_active: 4,
        deadline_seconds: 40,
        budget_per_hour: None,
    }
}

pub(super) fn at(second: i64) -> Timestamp {
    Timestamp::from_second(second).expect("time")
}

pub(super) fn record(
    c: &CanaryClass,
    n: &CanaryNode,
    created: i64,
    outcome: Outcome,
) -> CanaryRecord {
    CanaryRecord {
        job: job_name(&c.name, n.name(), created),
        class: c.name.clone(),
        node: n.name().into(),
        subject: subject(c, n, &policy().image),
        created: Some(at(created)),
        outcome,
    }
}

#[test]
fn checks_tell_each_sandbox_from_the_others() {
    let gvisor = SandboxKind::Gvisor;
    let host = SandboxKind::Host;
    // (claimed, facts, node kernel known, result)
    let cases: Vec<(SandboxKind, Facts, bool, Result<(), Failure>)> = vec![
        (host, host_facts(), true, Ok(())),
        (gvisor, gvisor_facts(), true, Ok(())),
        // runsc pointed at plain runc: passes every presence check.
        (gvisor, host_facts(), true, Err(Failure::KernelIsHost)),
        (gvisor, host_facts(), false, Err(Failure::KernelIsHost)),
        (host, gvisor_facts(), true, Err(Failure::KernelNotHost)),
        (host, gvisor_facts(), false, Err(Failure::KernelNotHost)),
        (
            SandboxKind::Vm,
            host_facts(),
            true,
            Err(Failure::KernelIsHost),
        ),
        (
            SandboxKind::Vm,
            gvisor_facts(),
            true,
            Err(Failure::KernelNotVm),
        ),
        (
            SandboxKind::Vm,
            Facts {
                kernel_release: "6.6.0-kata".into(),
                proc_version: "Linux version 6.6.0-kata".into(),
                ..host_facts()
            },
            true,
            Ok(()),
        ),
        (
            gvisor,
            Facts {
                kernel_release: "6.6.0-kata".into(),
                proc_version: "Linux version 6.6.0-kata".into(),
                ..host_facts()
            },
            true,
            Err(Failure::KernelNotGvisor),
        ),
        (
            host,
            Facts {
                uid: 0,
                ..host_facts()
            },
            true,
            Err(Failure::Uid),
        ),
        (
            host,
            Facts {
                root_write_error: None,
                ..host_facts()
            },
            true,
            Err(Failure::RootWritable),
        ),
        // The write failed for want of permission, but the root is rw.
        (
            host,
            Facts {
                root_mount_options: Some("rw,relatime".into()),
                ..host_facts()
            },
            true,
            Err(Failure::RootWritable),
        ),
        (
            host,
            Facts {
                cap_eff: Some(0x2000_0000),
                ..host_facts()
            },
            true,
            Err(Failure::Capabilities),
        ),
        (
            host,
            Facts {
                cap_eff: None,
                ..host_facts()
            },
            true,
            Err(Failure::Capabilities),
        ),
        (
            host,
            Facts {
                no_new_privs: Some(false),
                ..host_facts()
            },
            true,
            Err(Failure::NewPrivileges),
        ),
        (
            host,
            Facts {
                token_present: true,
                ..host_facts()
            },
            true,
            Err(Failure::TokenMounted),
        ),
    ];
    for (i, (sandbox, facts, known, want)) in cases.into_iter().enumerate() {
        let kernel = known.then_some(HOST);
        let got = run_checks(sandbox, None, kernel, &facts).map(|_| ());
        assert_eq!(got, want, "case {i}: {sandbox} {facts:?}");
    }
    // A declared open-files limit is checked last.
    let bounded = Facts {
        nofile_soft: Some(256),
        ..host_facts()
    };
    assert!(run_checks(SandboxKind::Host, Some(256), Some(HOST), &bounded).is_ok());
    assert_eq!(
        run_checks(SandboxKind::Host, Some(256), Some(HOST), &host_facts()),
        Err(Failure::OpenFiles)
    );
}

#[test]
fn the_kernel_mismatch_message_is_what_an_operator_reads() {
    let c = class("gvisor", "runsc");
    assert_eq!(
        Failure::KernelIsHost.message(&c, Some(HOST)),
        format!("expected gVisor, saw the host kernel ({HOST})")
    );
}

#[test]
fn exit_codes_are_distinct_and_none_is_a_shell_or_signal_code() {
    let mut seen = std::collections::BTreeSet::new();
    for f in Failure::ALL {
        let code = f.exit_code();
        assert!((2..126).contains(&code), "{f:?} exits {code}");
        assert!(seen.insert(code), "{f:?} reuses exit code {code}");
        assert_eq!(Failure::from_exit_code(code), Some(*f));
    }
    assert_eq!(Failure::from_exit_code(0), None);
    assert_eq!(Failure::from_exit_code(137), None);
}

#[test]
fn claims_follow_the_handler_unless_the_class_declares_them() {
    assert_eq!(class("g", "runsc").sandbox, SandboxKind::Gvisor);
    assert_eq!(class("k", "kata-qemu").sandbox, SandboxKind::Vm);
    assert_eq!(class("b", "bounded-runc").sandbox, SandboxKind::Host);
    let declared = CanaryClass::from_parts(
        "odd",
        "mine",
        &BTreeMap::from([
            (SANDBOX_ANNOTATION.to_string(), "gvisor".to_string()),
            (NOFILE_ANNOTATION.to_string(), "256".to_string()),
        ]),
    );
    assert_eq!(declared.sandbox, SandboxKind::Gvisor);
    assert_eq!(declared.nofile, Some(256));
    assert!(
        declared
            .checks()
            .contains(&"open-files limit 256".to_string())
    );
    // Bad input names the rule broken and is not checked as something else.
    let bad = CanaryClass::from_parts(
        "bad",
        "runc",
        &BTreeMap::from([
            (SANDBOX_ANNOTATION.to_string(), "firecracker".to_string()),
            (NOFILE_ANNOTATION.to_string(), "-1".to_string()),
        ]),
    );
    let why = bad.invalid.expect("invalid");
    assert!(
        why.contains("berth.dev/sandbox=\"firecracker\" is not one of host, gvisor, vm"),
        "{why}"
    );
    assert!(
        why.contains("berth.dev/nofile=\"-1\" is not a positive whole number"),
        "{why}"
    );
}

pub(super) fn rendered(c: &CanaryClass, n: &CanaryNode) -> Job {
    render(&CanaryJob {
        name: &job_name(&c.name, n.name(), 1_800_000_000),
        namespace: "berth-system",
        class: c,
        node: n,
        image: &policy().image,
        subject: &subject(c, n, &policy().image),
        ttl_seconds: 1800,
        deadline_seconds: 40,
    })
}

#[test]
fn the_job_maps_every_exit_code_to_a_rule_of_its_own() {
    let job = rendered(&class("gvisor", "runsc"), &node("n1", &["runsc"]));
    let spec = job.spec.as_ref().expect("spec");
    let policy = spec.pod_failure_policy.as_ref().expect("policy");
    let order = rules();
    assert_eq!(policy.rules.len(), order.len());
    for (i, (rule, want)) in policy.rules.iter().zip(&order).enumerate() {
        match want {
            Rule::Check(f) => {
                let codes = rule.on_exit_codes.as_ref().expect("exit codes");
                assert_eq!(
                    (codes.operator.as_str(), codes.values.as_slice()),
                    ("In", &[f.exit_code()][..]),
                    "rule {i}"
                );
                assert_eq!(rule.action, "FailJob");
            }
            Rule::NoSandbox => {
                let c = &rule.on_pod_conditions.as_ref().expect("conditions")[0];
                assert_eq!(
                    (c.type_.as_str(), c.status.as_str()),
                    ("PodReadyToStartContainers", "False")
                );
                // After every exit code: a container that ran and failed
                // loses its sandbox afterwards, and its code must win.
                assert!(
                    policy.rules[..i]
                        .iter()
                        .filter(|r| r.on_exit_codes.is_some())
                        .count()
                        == Failure::ALL.len()
                );
            }
            Rule::OtherExit => assert_eq!(
                rule.on_exit_codes.as_ref().expect("codes").operator,
                "NotIn"
            ),
            Rule::Disrupted => assert_eq!(rule.action, "Ignore"),
        }
    }
    assert_eq!(spec.backoff_limit, Some(0));
    assert!(spec.ttl_seconds_after_finished.is_some());
    let pod = spec.template.spec.as_ref().expect("pod");
    assert_eq!(pod.automount_service_account_token, Some(false));
    assert_eq!(pod.runtime_class_name.as_deref(), Some("gvisor"));
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    assert!(pod.active_deadline_seconds < spec.active_deadline_seconds);
    let c = &pod.containers[0];
    assert_eq!(c.name, CONTAINER);
    let args = c.args.clone().unwrap_or_default();
    assert_eq!(
        &args[..5],
        ["canary", "--class", "gvisor", "--sandbox", "gvisor"]
    );
    assert!(args.contains(&HOST.to_string()), "{args:?}");
    let sc = c.security_context.as_ref().expect("security context");
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.run_as_user, Some(10001));
    let limits = c
        .resources
        .as_ref()
        .and_then(|r| r.limits.as_ref())
        .expect("limits");
    assert!(limits.contains_key("memory") && limits.contains_key("ephemeral-storage"));
}

#[test]
fn the_job_is_pinned_to_its_node_and_tolerates_its_taints() {
    let mut n = node("berth-real-0", &["runc"]);
    n.info.taints = vec![Taint {
        key: "berth.dev/real-node".into(),
        value: Some("true".into()),
        effect: "NoSchedule".into(),
        ..Default::default()
    }];
    let job = rendered(&class("plain", "runc"), &n);
    let pod = job.spec.and_then(|s| s.template.spec).expect("pod");
    let terms = pod
        .affinity
        .and_then(|a| a.node_affinity)
        .and_then(|na| na.required_during_scheduling_ignored_during_execution)
        .expect("required affinity")
        .node_selector_terms;
    let field = &terms[0].match_fields.as_ref().expect("fields")[0];
    assert_eq!(
        (field.key.as_str(), field.values.as_deref()),
        ("metadata.name", Some(&["berth-real-0".to_string()][..]))
    );
    let tol = pod.tolerations.expect("tolerations");
    assert_eq!(tol[0].key.as_deref(), Some("berth.dev/real-node"));
}

#[test]
fn names_fit_a_label_and_differ_per_pair_and_second() {
    let a = job_name("gvisor", "node-a", 1_800_000_000);
    assert!(
        a.len() <= 63 && crate::render::names::is_dns1035_label(&a),
        "{a}"
    );
    assert_ne!(a, job_name("gvisor", "node-b", 1_800_000_000));
    assert_ne!(a, job_name("gvisor", "node-a", 1_800_000_001));
    let long = "x".repeat(253);
    assert!(job_name(&long, &long, i64::MAX).len() <= 63);
}

#[test]
fn the_canary_job_golden_file() {
    let c = CanaryClass::from_parts(
        "bounded",
        "bounded-runc",
        &BTreeMap::from([(NOFILE_ANNOTATION.to_string(), "256".to_string())]),
    );
    let mut n = node("berth-real-0", &["bounded-runc"]);
    n.info.taints = vec![Taint {
        key: "berth.dev/real-node".into(),
        value: Some("true".into()),
        effect: "NoSchedule".into(),
        ..Default::default()
    }];
    let mut yaml = String::new();
    for doc in [
        serde_json::to_value(rendered(&c, &n)).expect("job"),
        serde_json::to_value(job::network_policy("berth-system")).expect("policy"),
    ] {
        let mut v = doc;
        if let Some(o) = v.as_object_mut() {
            let (api, kind) =
                if o.contains_key("spec") && o["spec"].get("podFailurePolicy").is_some() {
                    ("batch/v1", "Job")
                } else {
                    ("networking.k8s.io/v1", "NetworkPolicy")
                };
            o.insert("apiVersion".into(), api.into());
            o.insert("kind".into(), kind.into());
        }
        yaml.push_str("---\n");
        yaml.push_str(&yaml_serde::to_string(&v).expect("yaml"));
    }
    crate::api::tests::check_golden("shared/src/render/golden/canary.yaml", &yaml);
}

/// The NetworkPolicy shipped beside the agent (`assets/deploy`) is this
/// render (the chart's template gives the same objects: tests/it/chart.rs).
#[test]
fn the_shipped_canary_network_policy() {
    let mut v = serde_json::to_value(job::network_policy("berth-system")).expect("policy");
    if let Some(o) = v.as_object_mut() {
        o.insert("apiVersion".into(), "networking.k8s.io/v1".into());
        o.insert("kind".into(), "NetworkPolicy".into());
    }
    let yaml = format!(
        "# The agent's canary Jobs (docs/attestation.md) need no network: nothing\n\
         # in, nothing out, for every canary pod of the namespace. Generated from\n\
         # berth_shared::attest::job::network_policy (BERTH_UPDATE_GOLDEN=1).\n{}",
        yaml_serde::to_string(&v).expect("yaml")
    );
    crate::api::tests::check_golden("assets/deploy/canary-network-policy.yaml", &yaml);
}
