//! The condition toolkit both status writers use (the Runtime controller
//! and the RuntimeGrant publisher): build a condition, find one, carry
//! `lastTransitionTime` over while a condition's status does not change, and
//! the server-side-apply body of a status patch. One copy, so the two
//! writers cannot drift apart in how a transition is stamped.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use serde::Serialize;

/// `status: "True"`.
pub const TRUE: &str = "True";
/// `status: "False"`.
pub const FALSE: &str = "False";
/// `status: "Unknown"`.
pub const UNKNOWN: &str = "Unknown";

/// A condition that is True (`ok`) or False. Its transition time is a
/// placeholder until [`merge_transition_times`] sets it, so that building
/// a status stays pure.
pub fn build(type_: &str, ok: bool, reason: &str, message: impl Into<String>) -> Condition {
    with_status(type_, if ok { TRUE } else { FALSE }, reason, message)
}

/// A condition whose status is Unknown.
pub fn unknown(type_: &str, reason: &str, message: impl Into<String>) -> Condition {
    with_status(type_, UNKNOWN, reason, message)
}

fn with_status(type_: &str, status: &str, reason: &str, message: impl Into<String>) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message: message.into(),
        observed_generation: None,
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
    }
}

/// The condition of `type_`, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of `type_` is present and True.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == TRUE)
}

/// Copies `lastTransitionTime` from `old` for every condition whose status
/// did not change, and stamps `now` on the others (new, or changed status).
/// A changed reason or message alone is not a transition.
pub fn merge_transition_times(new: &mut [Condition], old: &[Condition], now: &Time) {
    for c in new {
        c.last_transition_time = match find(old, &c.type_) {
            Some(p) if p.status == c.status => p.last_transition_time.clone(),
            _ => now.clone(),
        };
    }
}

/// The current time to the second, as conditions carry it (the apiserver
/// stores RFC 3339 seconds; sub-second stamps would differ from what is
/// read back and cause a write at every pass).
pub fn now() -> Time {
    let secs = Timestamp::now().as_second();
    Time(Timestamp::from_second(secs).unwrap_or(Timestamp::UNIX_EPOCH))
}

/// The server-side-apply body that sets the status of a `K`: its
/// apiVersion, kind and the status, nothing else.
pub fn status_patch<K, S>(status: &S) -> serde_json::Value
where
    K: Resource<DynamicType = ()>,
    S: Serialize,
{
    serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Runtime, RuntimeGrant, RuntimeStatus};

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).expect("time"))
    }

    fn stamped(type_: &str, status: &str, secs: i64) -> Condition {
        Condition {
            last_transition_time: at(secs),
            ..with_status(type_, status, "R", "m")
        }
    }

    #[test]
    fn build_sets_polarity_and_leaves_the_time_to_the_merge() {
        let cases = [
            (build("A", true, "Why", "msg"), TRUE),
            (build("A", false, "Why", "msg"), FALSE),
            (unknown("A", "Why", "msg"), UNKNOWN),
        ];
        for (c, status) in cases {
            assert_eq!(c.status, status);
            assert_eq!((c.type_.as_str(), c.reason.as_str()), ("A", "Why"));
            assert_eq!(c.message, "msg");
            assert_eq!(c.last_transition_time, Time(Timestamp::UNIX_EPOCH));
        }
    }

    #[test]
    fn transition_time_moves_only_when_the_status_changes() {
        let now = at(1000);
        // (old status or none, new status, expected transition time)
        let cases: [(Option<&str>, &str, i64); 6] = [
            (None, TRUE, 1000),
            (Some(TRUE), TRUE, 10),
            (Some(FALSE), FALSE, 10),
            (Some(TRUE), FALSE, 1000),
            (Some(FALSE), UNKNOWN, 1000),
            (Some(UNKNOWN), UNKNOWN, 10),
        ];
        for (old, new, want) in cases {
            let old: Vec<Condition> = old.map(|s| stamped("A", s, 10)).into_iter().collect();
            // A different reason and message alone are not a transition.
            let mut new = vec![Condition {
                reason: "Other".into(),
                message: "other".into(),
                ..with_status("A", new, "R", "m")
            }];
            merge_transition_times(&mut new, &old, &now);
            assert_eq!(new[0].last_transition_time, at(want), "{old:?} -> {new:?}");
        }
    }

    #[test]
    fn find_and_is_true_match_the_type_exactly() {
        let cs = [stamped("Ready", TRUE, 1), stamped("Blocked", FALSE, 1)];
        assert!(is_true(&cs, "Ready"));
        assert!(!is_true(&cs, "Blocked"));
        assert!(!is_true(&cs, "Read"));
        assert!(find(&cs, "Missing").is_none());
    }

    #[test]
    fn status_patch_names_the_kind_and_holds_only_status() {
        let body = status_patch::<Runtime, _>(&RuntimeStatus::default());
        assert_eq!(body["apiVersion"], "berth.dev/v1alpha1");
        assert_eq!(body["kind"], "Runtime");
        assert_eq!(body.as_object().map(|o| o.len()), Some(3));
        let body = status_patch::<RuntimeGrant, _>(&serde_json::json!({"x": 1}));
        assert_eq!(body["kind"], "RuntimeGrant");
        assert_eq!(body["status"]["x"], 1);
    }

    #[test]
    fn now_has_whole_seconds() {
        assert_eq!(now().0.subsec_nanosecond(), 0);
    }
}
