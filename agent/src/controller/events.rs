//! Transition-only Events: one Event per condition whose status or reason
//! changed since the stored status, never on a steady reconcile.

use berth_shared::api::{Runtime, RuntimeStatus, condition_types as ct};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Resource;
use kube::runtime::events::{Event, EventType};

use super::context::Context;

/// Conditions that are reported as Events, and whether `True` is the bad
/// state for them.
const REPORTED: [(&str, bool); 6] = [
    (ct::PROFILE_GRANTED, false),
    (ct::HANDLER_READY, false),
    (ct::READY, false),
    (ct::DEGRADED, true),
    (ct::BLOCKED, true),
    (ct::UPGRADING, false),
];

/// The transitions between `old` and `new`: `(type, condition, warning)`.
pub fn transitions<'a>(
    old: Option<&RuntimeStatus>,
    new: &'a RuntimeStatus,
) -> Vec<(&'static str, &'a Condition, bool)> {
    let mut out = Vec::new();
    for (type_, true_is_bad) in REPORTED {
        let Some(c) = new.conditions.iter().find(|c| c.type_ == type_) else {
            continue;
        };
        let before = old.and_then(|o| o.conditions.iter().find(|p| p.type_ == type_));
        let changed = before.is_none_or(|p| p.status != c.status || p.reason != c.reason);
        // The first status of a healthy Runtime is not news.
        let first_and_fine = before.is_none() && ((c.status == "True") != true_is_bad);
        if changed && !first_and_fine {
            let warning = (c.status == "True") == true_is_bad;
            out.push((type_, c, warning));
        }
    }
    out
}

/// Publishes the transitions; failures are logged, never retried.
pub async fn publish(
    ctx: &Context,
    runtime: &Runtime,
    old: Option<&RuntimeStatus>,
    new: &RuntimeStatus,
) {
    let reference = runtime.object_ref(&());
    for (type_, c, warning) in transitions(old, new) {
        let mut note = format!("{type_}={}: {}", c.status, c.message);
        note.truncate(1000);
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: c.reason.clone(),
            note: Some(note),
            action: "Reconcile".to_string(),
            secondary: None,
        };
        match ctx.recorder.publish(&event, &reference).await {
            Ok(()) => ctx.metrics.write("Event", "create"),
            Err(e) => tracing::warn!(error = %e, "publishing event failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    fn c(t: &str, s: &str, r: &str) -> Condition {
        Condition {
            type_: t.into(),
            status: s.into(),
            reason: r.into(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
        }
    }

    #[test]
    fn only_transitions_are_reported() {
        let healthy = RuntimeStatus {
            conditions: vec![
                c(ct::READY, "True", "AsExpected"),
                c(ct::BLOCKED, "False", "AsExpected"),
            ],
            ..Default::default()
        };
        assert!(
            transitions(None, &healthy).is_empty(),
            "a healthy first status is not news"
        );
        assert!(transitions(Some(&healthy), &healthy).is_empty());
        let blocked = RuntimeStatus {
            conditions: vec![
                c(ct::READY, "False", "Revoked"),
                c(ct::BLOCKED, "True", "Revoked"),
            ],
            ..Default::default()
        };
        let t = transitions(Some(&healthy), &blocked);
        assert_eq!(t.len(), 2);
        assert!(t.iter().all(|(_, _, warning)| *warning));
        let t = transitions(Some(&blocked), &healthy);
        assert_eq!(t.len(), 2);
        assert!(t.iter().all(|(_, _, warning)| !*warning));
    }
}
