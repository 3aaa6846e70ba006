//! HandlerReady: the granted handler is present on every Ready node the
//! Runtime's pods may be scheduled onto (nodeSelector, affinity,
//! tolerations vs taints), and its canary does not fail on any of them
//! (`crate::attest`: reported is not the same as working). Tri-state:
//! nodes that report no handler list make presence unknown, not absent
//! (docs/architecture.md §5).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::analysis::{NodeInfo, Placement, PlacementCoverage, Presence, placement_coverage};
use crate::api::condition::{build, unknown};
use crate::api::{AttestationState, Runtime, condition_types as ct, reasons};
use crate::attest::ClassVerdicts;
use crate::decide::Decision;

/// Most node names a PlacementIncomplete message lists.
const MAX_NAMED: usize = 10;

/// HandlerReady from the decision, the nodes and what the class's canaries
/// saw on them (`None`: no attestation, as with canaries never run).
pub fn handler_ready(
    runtime: &Runtime,
    decision: &Decision,
    nodes: &[NodeInfo],
    attested: Option<&ClassVerdicts>,
) -> Condition {
    let handler = match decision {
        Decision::NotRequested => {
            return build(
                ct::HANDLER_READY,
                true,
                reasons::NO_HANDLER_NEEDED,
                "no runtimeProfile requested",
            );
        }
        Decision::Granted { handler, .. } => handler,
        other => return build(ct::HANDLER_READY, false, other.reason(), other.message()),
    };
    let sched = runtime.spec.scheduling.as_ref();
    let placement = Placement {
        node_selector: sched.map(|s| &s.node_selector),
        affinity: sched.and_then(|s| s.affinity.as_ref()),
        tolerations: sched.map_or(&[], |s| s.tolerations.as_slice()),
    };
    let cov = placement_coverage(nodes, &placement, handler);
    let failing = failing_canaries(nodes, &placement, handler, attested);
    let unknown_note = if cov.unknown > 0 {
        format!(
            "; {} report no handler list (presence unknown)",
            cov.unknown
        )
    } else {
        String::new()
    };
    if cov.eligible > 0 && cov.unknown == cov.eligible {
        // No node in the placement says which handlers it has (older
        // kubelets/runtimes): unknown, not absent. Ready then follows the
        // rollout alone.
        unknown(
            ct::HANDLER_READY,
            reasons::HANDLER_UNKNOWN,
            format!(
                "none of the {} Ready nodes the pods may be scheduled onto reports a handler list (status.runtimeHandlers); whether they have handler {handler} is unknown",
                cov.eligible
            ),
        )
    } else if cov.with_handler == 0 && cov.unknown == 0 {
        build(
            ct::HANDLER_READY,
            false,
            reasons::HANDLER_ABSENT,
            format!(
                "no Ready node the pods may be scheduled onto reports handler {handler} ({} eligible)",
                cov.eligible
            ),
        )
    } else if !failing.is_empty() {
        canary_failing(handler, &cov, &failing)
    } else if !cov.missing.is_empty() {
        // Sorted: the store's order is a hash map's, and status must not
        // change when nothing changed.
        let mut names = cov.missing.clone();
        names.sort();
        names.truncate(MAX_NAMED);
        build(
            ct::HANDLER_READY,
            false,
            reasons::PLACEMENT_INCOMPLETE,
            format!(
                "{} of {} Ready nodes the pods may be scheduled onto do not report handler {handler}; pods landing there would fail to start: {}{unknown_note}",
                cov.missing.len(),
                cov.eligible,
                names.join(", ")
            ),
        )
    } else if cov.unknown == 0 {
        build(
            ct::HANDLER_READY,
            true,
            reasons::HANDLER_PRESENT,
            format!(
                "all {} Ready nodes the pods may be scheduled onto report handler {handler}",
                cov.eligible
            ),
        )
    } else {
        build(
            ct::HANDLER_READY,
            true,
            reasons::HANDLER_PRESENT,
            format!(
                "{} of {} Ready nodes the pods may be scheduled onto report handler {handler}{unknown_note}",
                cov.with_handler, cov.eligible
            ),
        )
    }
}

/// Eligible nodes that report the handler and whose canary fails there,
/// sorted by name (the store's order is a hash map's).
fn failing_canaries<'a>(
    nodes: &'a [NodeInfo],
    placement: &Placement<'_>,
    handler: &str,
    attested: Option<&'a ClassVerdicts>,
) -> Vec<(&'a str, &'a str)> {
    let mut failing: Vec<(&str, &str)> = attested
        .map(|v| {
            nodes
                .iter()
                .filter(|n| n.ready && !n.unschedulable && placement.allows(n))
                .filter(|n| n.presence(handler) == Presence::Present)
                .filter_map(|n| {
                    v.of(&n.name)
                        .filter(|x| x.state == AttestationState::Failing)
                        .map(|x| (n.name.as_str(), x.message.as_str()))
                })
                .collect()
        })
        .unwrap_or_default();
    failing.sort();
    failing
}

/// Not ready: the handler is reported, but its canary fails on some of
/// the nodes (the first `MAX_NAMED` named, with why).
fn canary_failing(handler: &str, cov: &PlacementCoverage, failing: &[(&str, &str)]) -> Condition {
    let named: Vec<String> = failing
        .iter()
        .take(MAX_NAMED)
        .map(|(node, why)| format!("{node} ({why})"))
        .collect();
    let more = failing.len().saturating_sub(named.len());
    let missing = if cov.missing.is_empty() {
        String::new()
    } else {
        format!("; {} more do not report it", cov.missing.len())
    };
    build(
        ct::HANDLER_READY,
        false,
        reasons::HANDLER_FAILING,
        format!(
            "handler {handler} is reported but its canary fails on {} of {} Ready nodes the pods may be scheduled onto: {}{}{missing}",
            failing.len(),
            cov.eligible,
            named.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::SchedulingSpec;
    use crate::testkit::status::*;

    #[test]
    fn table() {
        // Nodes: `h` reports the handler, `o` reports another one, `u`
        // reports no list; `x` is NotReady with the handler.
        let cases: Vec<(Decision, Vec<NodeInfo>, &str, &str)> = vec![
            (
                Decision::NotRequested,
                vec![],
                "True",
                reasons::NO_HANDLER_NEEDED,
            ),
            (
                not_granted(),
                vec![node("h", true, Some("runsc"))],
                "False",
                reasons::NOT_GRANTED,
            ),
            (revoked(), vec![], "False", reasons::REVOKED),
            (class_missing(), vec![], "False", reasons::CLASS_MISSING),
            (
                handler_mismatch(),
                vec![],
                "False",
                reasons::HANDLER_MISMATCH,
            ),
            (
                class_unsupported(),
                vec![],
                "False",
                reasons::CLASS_UNSUPPORTED,
            ),
            (class_deleting(), vec![], "False", reasons::CLASS_DELETING),
            (
                granted(),
                vec![node("h", true, Some("runsc"))],
                "True",
                reasons::HANDLER_PRESENT,
            ),
            (
                granted(),
                vec![node("h", true, Some("runsc")), node("u", true, None)],
                "True",
                reasons::HANDLER_PRESENT,
            ),
            (granted(), vec![], "False", reasons::HANDLER_ABSENT),
            (
                granted(),
                vec![node("o", true, Some("runc"))],
                "False",
                reasons::HANDLER_ABSENT,
            ),
            (
                granted(),
                vec![node("x", false, Some("runsc"))],
                "False",
                reasons::HANDLER_ABSENT,
            ),
            (
                granted(),
                vec![
                    node("h", true, Some("runsc")),
                    node("o", true, Some("runc")),
                ],
                "False",
                reasons::PLACEMENT_INCOMPLETE,
            ),
            (
                granted(),
                vec![node("u", true, None)],
                "Unknown",
                reasons::HANDLER_UNKNOWN,
            ),
            (
                granted(),
                vec![node("u", true, None), node("o", true, Some("runc"))],
                "False",
                reasons::PLACEMENT_INCOMPLETE,
            ),
        ];
        for (decision, nodes, status, reason) in cases {
            let c = handler_ready(&runtime(), &decision, &nodes, None);
            assert_eq!(c.type_, ct::HANDLER_READY);
            let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
            assert_eq!(
                (c.status.as_str(), c.reason.as_str()),
                (status, reason),
                "{decision:?} {names:?}"
            );
        }
    }

    #[test]
    fn only_nodes_the_placement_allows_count() {
        let mut rt = runtime();
        rt.spec.scheduling = Some(SchedulingSpec {
            node_selector: [("pool".to_string(), "sandbox".to_string())].into(),
            ..Default::default()
        });
        let mut inside = node("h", true, Some("runsc"));
        inside.labels.insert("pool".into(), "sandbox".into());
        let outside = node("o", true, Some("runc"));
        let c = handler_ready(&rt, &granted(), &[inside, outside], None);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", reasons::HANDLER_PRESENT)
        );
        assert_eq!(
            c.message,
            "all 1 Ready nodes the pods may be scheduled onto report handler runsc"
        );
    }

    #[test]
    fn placement_incomplete_names_missing_nodes_sorted_and_bounded() {
        let mut nodes = vec![node("h", true, Some("runsc"))];
        nodes.extend(
            (0..12)
                .rev()
                .map(|i| node(&format!("n{i:02}"), true, Some("runc"))),
        );
        let c = handler_ready(&runtime(), &granted(), &nodes, None);
        assert_eq!(
            c.message,
            "12 of 13 Ready nodes the pods may be scheduled onto do not report handler runsc; pods landing there would fail to start: n00, n01, n02, n03, n04, n05, n06, n07, n08, n09"
        );
    }

    #[test]
    fn a_failing_canary_on_an_eligible_node_is_handler_failing() {
        use crate::attest::{ClassVerdicts, NodeVerdict, reasons as ar};
        let verdict = |state, message: &str| NodeVerdict {
            state,
            reason: ar::KERNEL_MISMATCH.into(),
            message: message.into(),
            at: None,
            job: None,
        };
        let mut v = ClassVerdicts::default();
        v.nodes.insert(
            "b".into(),
            verdict(
                AttestationState::Failing,
                "expected gVisor, saw the host kernel",
            ),
        );
        v.nodes
            .insert("a".into(), verdict(AttestationState::Verified, "ok"));
        let nodes = vec![
            node("a", true, Some("runsc")),
            node("b", true, Some("runsc")),
        ];
        let c = handler_ready(&runtime(), &granted(), &nodes, Some(&v));
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", reasons::HANDLER_FAILING)
        );
        assert_eq!(
            c.message,
            "handler runsc is reported but its canary fails on 1 of 2 Ready nodes the pods may be scheduled onto: b (expected gVisor, saw the host kernel)"
        );
        // Unverified is not failing; a failing node the pods cannot land on
        // does not count; reported nowhere stays HandlerAbsent.
        v.nodes.insert(
            "b".into(),
            verdict(AttestationState::Unverified, "not run yet"),
        );
        let c = handler_ready(&runtime(), &granted(), &nodes, Some(&v));
        assert_eq!(c.reason, reasons::HANDLER_PRESENT);
        v.nodes.insert(
            "b".into(),
            verdict(AttestationState::Failing, "sandbox not created"),
        );
        let cordoned = vec![node("a", true, Some("runsc")), {
            let mut b = node("b", true, Some("runsc"));
            b.unschedulable = true;
            b
        }];
        let c = handler_ready(&runtime(), &granted(), &cordoned, Some(&v));
        assert_eq!(c.reason, reasons::HANDLER_PRESENT);
        let c = handler_ready(
            &runtime(),
            &granted(),
            &[node("o", true, Some("runc"))],
            Some(&v),
        );
        assert_eq!(c.reason, reasons::HANDLER_ABSENT);
    }
}
