//! The attestation step: what the class's canaries saw on the nodes the
//! pods may land on (a node's report says a handler is configured; its
//! canary says whether it really starts a sandbox of the claimed kind).

use k8s_openapi::jiff::Timestamp;

use crate::analysis::{NodeInfo, Placement, Presence};
use crate::api::{AttestationState, HandlerAttestation};

use super::{Step, StepKind, Verdict};

/// Most nodes listed one by one.
const MAX_LISTED: usize = 20;

/// The step for a granted class: `attestation` is the class's grant's
/// published status (`None`: none published yet).
pub(super) fn attestation_step(
    nodes: &[NodeInfo],
    placement: &Placement<'_>,
    handler: &str,
    class: &str,
    attestation: Option<&HandlerAttestation>,
    now: Option<Timestamp>,
) -> Step {
    let object = format!("RuntimeClass/{class}");
    let Some(a) = attestation else {
        return Step::new(
            StepKind::Attestation,
            Verdict::Unknown,
            "no attestation published for this class yet (the agent's grant status has none)",
            object,
        );
    };
    if !a.canaries {
        return Step::new(
            StepKind::Attestation,
            Verdict::Unknown,
            format!(
                "canaries are off: {}",
                a.off_reason.as_deref().unwrap_or("no reason given")
            ),
            object,
        );
    }
    let eligible: Vec<&NodeInfo> = nodes
        .iter()
        .filter(|n| n.ready && !n.unschedulable && placement.allows(n))
        .filter(|n| n.presence(handler) == Presence::Present)
        .collect();
    if eligible.is_empty() {
        return Step::new(
            StepKind::Attestation,
            Verdict::Skipped,
            "no eligible node reports the handler: nothing to attest",
            object,
        );
    }
    let (mut verified, mut failing, mut other) = (0, 0, 0);
    let mut details = Vec::new();
    for n in &eligible {
        let line = match a.node(&n.name) {
            Some(e) => {
                match e.state {
                    AttestationState::Verified => verified += 1,
                    AttestationState::Failing => failing += 1,
                    AttestationState::Unverified => other += 1,
                }
                let age = match (e.at.as_ref(), now) {
                    (Some(at), Some(now)) => {
                        format!(", {}s ago", (now.as_second() - at.0.as_second()).max(0))
                    }
                    _ => String::new(),
                };
                format!(
                    "Node/{}: {} ({}{age}) {}",
                    n.name,
                    e.state.word(),
                    e.reason,
                    e.message
                )
            }
            None => {
                other += 1;
                format!("Node/{}: not listed in the grant's status", n.name)
            }
        };
        if details.len() < MAX_LISTED {
            details.push(line);
        }
    }
    if eligible.len() > MAX_LISTED {
        details.push(format!(
            "… and {} more node(s)",
            eligible.len() - MAX_LISTED
        ));
    }
    let (verdict, reason) = if failing > 0 {
        (
            Verdict::Fail,
            format!(
                "the canary of {class} fails on {failing} of {} eligible node(s) reporting handler {handler}",
                eligible.len()
            ),
        )
    } else if other > 0 {
        (
            Verdict::Unknown,
            format!(
                "{verified} of {} eligible node(s) verified; {other} unverified",
                eligible.len()
            ),
        )
    } else {
        (
            Verdict::Pass,
            format!("handler {handler} verified by a canary on all {verified} eligible node(s)"),
        )
    };
    Step::new(StepKind::Attestation, verdict, reason, object).with_details(details)
}
