//! What the canaries showed (`crate::attest`, a grant's
//! `status.attestation`): a granted handler that nodes report but whose
//! canary fails there (error), and nodes without evidence (info).

use std::collections::BTreeMap;

use crate::api::{AttestationState, NodeAttestation};

use super::inputs::Inputs;
use super::{Finding, FindingKind, named};

/// One `handler-failing` per class whose canary fails somewhere, one
/// `handler-unverified` per class with nodes lacking evidence.
pub(super) fn attested(i: &Inputs<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (class, a) in i.attestations {
        let handler = i
            .classes
            .iter()
            .find(|c| c.name == *class)
            .map_or("?", |c| c.handler.as_str());
        let listed = |state| -> Vec<&NodeAttestation> {
            a.nodes.iter().filter(|n| n.state == state).collect()
        };
        let failing = listed(AttestationState::Failing);
        if a.failing > 0 {
            let mut objects = vec![format!("RuntimeClass/{class}")];
            objects.extend(failing.iter().map(|n| format!("Node/{}", n.node)));
            let lines: Vec<String> = failing
                .iter()
                .map(|n| format!("{} ({})", n.node, n.message))
                .collect();
            let more = usize::try_from(a.failing)
                .unwrap_or(0)
                .saturating_sub(lines.len());
            out.push(Finding::new(
                FindingKind::HandlerFailing,
                objects,
                format!(
                    "handler {handler} of RuntimeClass {class} is reported, but its canary fails on {} node(s): {}{}",
                    a.failing,
                    named(&lines),
                    if more > 0 {
                        format!(" and {more} not listed")
                    } else {
                        String::new()
                    }
                ),
            ));
        }
        if a.unverified > 0 {
            // Why, grouped: "2 skipped: simulated node (kwok)…; 1 no canary has run yet".
            let mut why: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
            for n in listed(AttestationState::Unverified) {
                let e = why.entry(n.reason.as_str()).or_insert((0, &n.message));
                e.0 += 1;
            }
            let mut reasons: Vec<String> = why
                .iter()
                .map(|(reason, (n, message))| format!("{n} {reason} ({message})"))
                .collect();
            // Canaries off, no node is listed: the one reason is the status's.
            if !a.canaries {
                reasons.push(format!(
                    "canaries are off: {}",
                    a.off_reason.as_deref().unwrap_or("no reason given")
                ));
            }
            out.push(Finding::new(
                FindingKind::HandlerUnverified,
                vec![format!("RuntimeClass/{class}")],
                format!(
                    "{} node(s) reporting handler {handler} of RuntimeClass {class} have no canary evidence: {}",
                    a.unverified,
                    reasons.join("; ")
                ),
            ));
        }
    }
    out
}
