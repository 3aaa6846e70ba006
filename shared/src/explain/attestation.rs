//! The attestation step: what the class's canaries saw on the nodes the
//! pods may land on (a node's report says a handler is configured; its
//! canary says whether it really starts a sandbox of the claimed kind).

use k8s_openapi::jiff::Timestamp;

use crate::analysis::{NodeInfo, Placement, Presence};
use crate::api::{AttestationState, HandlerAttestation, NodeAttestation};

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
        let entry = a.node(&n.name);
        match entry.map(|e| &e.state) {
            Some(AttestationState::Verified) => verified += 1,
            Some(AttestationState::Failing) => failing += 1,
            Some(AttestationState::Unverified) | None => other += 1,
        }
        if details.len() < MAX_LISTED {
            details.push(node_line(&n.name, entry, now));
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

/// One eligible node's line: what its canary saw, and how long ago.
fn node_line(name: &str, entry: Option<&NodeAttestation>, now: Option<Timestamp>) -> String {
    let Some(e) = entry else {
        return format!("Node/{name}: not listed in the grant's status");
    };
    let age = match (e.at.as_ref(), now) {
        (Some(at), Some(now)) => format!(", {}s ago", (now.as_second() - at.0.as_second()).max(0)),
        _ => String::new(),
    };
    format!(
        "Node/{name}: {} ({}{age}) {}",
        e.state.word(),
        e.reason,
        e.message
    )
}
