//! ProfileGranted: the requested profile is granted (or none is requested).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::Hold;
use crate::api::condition::build;
use crate::api::{condition_types as ct, reasons};
use crate::decide::Decision;

/// True when the decision allows changes — except for a copy of a Runtime
/// whose identity an older one holds: the grant is the holder's, so the
/// copy is told so instead of being shown as granted.
pub fn profile_granted(decision: &Decision, hold: &Hold) -> Condition {
    match hold {
        Hold::Blocked { reason, message }
            if reason == reasons::IDENTITY_TAKEN && decision.allows_changes() =>
        {
            build(
                ct::PROFILE_GRANTED,
                false,
                reasons::IDENTITY_TAKEN,
                message.clone(),
            )
        }
        _ => build(
            ct::PROFILE_GRANTED,
            decision.allows_changes(),
            decision.reason(),
            decision.message(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::status::*;

    #[test]
    fn table() {
        let taken = Hold::Blocked {
            reason: reasons::IDENTITY_TAKEN.into(),
            message: "Runtime a/web already holds it".into(),
        };
        let revoked_hold = Hold::Blocked {
            reason: reasons::REVOKED.into(),
            message: "gone".into(),
        };
        // (decision, hold, status, reason)
        let cases = [
            (
                Decision::NotRequested,
                Hold::None,
                "True",
                reasons::NOT_REQUESTED,
            ),
            (granted(), Hold::None, "True", reasons::GRANTED),
            (
                not_granted(),
                revoked_hold.clone(),
                "False",
                reasons::NOT_GRANTED,
            ),
            (revoked(), revoked_hold, "False", reasons::REVOKED),
            (class_missing(), Hold::None, "False", reasons::CLASS_MISSING),
            (
                handler_mismatch(),
                Hold::None,
                "False",
                reasons::HANDLER_MISMATCH,
            ),
            (
                class_unsupported(),
                Hold::None,
                "False",
                reasons::CLASS_UNSUPPORTED,
            ),
            (
                class_deleting(),
                Hold::None,
                "False",
                reasons::CLASS_DELETING,
            ),
            (granted(), taken.clone(), "False", reasons::IDENTITY_TAKEN),
            (
                Decision::NotRequested,
                taken.clone(),
                "False",
                reasons::IDENTITY_TAKEN,
            ),
            // A copy that would be refused anyway keeps saying why.
            (not_granted(), taken, "False", reasons::NOT_GRANTED),
        ];
        for (decision, hold, status, reason) in cases {
            let c = profile_granted(&decision, &hold);
            assert_eq!(c.type_, ct::PROFILE_GRANTED);
            assert_eq!(
                (c.status.as_str(), c.reason.as_str()),
                (status, reason),
                "{decision:?} {hold:?}"
            );
            assert!(!c.message.is_empty(), "{decision:?}");
        }
    }

    #[test]
    fn a_taken_identity_names_the_holder() {
        let hold = Hold::Blocked {
            reason: reasons::IDENTITY_TAKEN.into(),
            message: "Runtime a/web already holds it".into(),
        };
        assert_eq!(
            profile_granted(&granted(), &hold).message,
            "Runtime a/web already holds it"
        );
    }
}
