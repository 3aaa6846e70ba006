//! Blocked: the agent does not carry out this Runtime's spec changes; only
//! the protection runs (missing dependencies recreated, forbidden drift
//! removed).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::Hold;
use crate::api::condition::build;
use crate::api::{condition_types as ct, reasons};

/// True, with the hold's reason and message, while the Runtime is held.
pub fn blocked(hold: &Hold) -> Condition {
    match hold {
        Hold::Blocked { reason, message } => build(ct::BLOCKED, true, reason, message.clone()),
        Hold::None => build(
            ct::BLOCKED,
            false,
            reasons::AS_EXPECTED,
            "managed objects are kept as rendered",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let held = |reason: &str| Hold::Blocked {
            reason: reason.into(),
            message: "why".into(),
        };
        let cases = [
            (
                Hold::None,
                "False",
                reasons::AS_EXPECTED,
                "managed objects are kept as rendered",
            ),
            (held(reasons::REVOKED), "True", reasons::REVOKED, "why"),
            (
                held(reasons::IDENTITY_INCOMPLETE),
                "True",
                reasons::IDENTITY_INCOMPLETE,
                "why",
            ),
            (
                held(reasons::IDENTITY_TAKEN),
                "True",
                reasons::IDENTITY_TAKEN,
                "why",
            ),
        ];
        for (hold, status, reason, message) in cases {
            let c = blocked(&hold);
            assert_eq!(c.type_, ct::BLOCKED);
            assert_eq!(
                (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
                (status, reason, message)
            );
        }
    }
}
