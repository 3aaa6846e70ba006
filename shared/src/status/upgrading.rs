//! Upgrading: the image most ready replicas run is not the desired one.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::api::condition::build;
use crate::api::{RolloutPhase, condition_types as ct, reasons};

/// Upgrading from the current and desired image; a blocked Runtime is not
/// upgrading (nothing is changed for it).
pub fn upgrading(
    phase: RolloutPhase,
    current_image: Option<&str>,
    desired_image: &str,
    blocked: bool,
) -> Condition {
    let changing = current_image.is_some_and(|c| c != desired_image) && !blocked;
    if changing && phase == RolloutPhase::Failed {
        build(
            ct::UPGRADING,
            false,
            reasons::PROGRESS_DEADLINE_EXCEEDED,
            format!(
                "upgrade to {desired_image} failed: progress deadline exceeded; no automatic rollback"
            ),
        )
    } else if changing {
        build(
            ct::UPGRADING,
            true,
            reasons::IMAGE_CHANGING,
            format!(
                "rolling from {} to {desired_image}",
                current_image.unwrap_or("?")
            ),
        )
    } else {
        build(
            ct::UPGRADING,
            false,
            reasons::IMAGE_CURRENT,
            "the image is the one rolled out",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        // (phase, current, blocked, status, reason)
        let cases = [
            (
                RolloutPhase::Progressing,
                Some("img:1"),
                false,
                "True",
                reasons::IMAGE_CHANGING,
            ),
            (
                RolloutPhase::Failed,
                Some("img:1"),
                false,
                "False",
                reasons::PROGRESS_DEADLINE_EXCEEDED,
            ),
            (
                RolloutPhase::Progressing,
                Some("img:2"),
                false,
                "False",
                reasons::IMAGE_CURRENT,
            ),
            (
                RolloutPhase::Complete,
                Some("img:2"),
                false,
                "False",
                reasons::IMAGE_CURRENT,
            ),
            (
                RolloutPhase::Progressing,
                None,
                false,
                "False",
                reasons::IMAGE_CURRENT,
            ),
            (
                RolloutPhase::Blocked,
                Some("img:1"),
                true,
                "False",
                reasons::IMAGE_CURRENT,
            ),
            (
                RolloutPhase::Failed,
                Some("img:2"),
                false,
                "False",
                reasons::IMAGE_CURRENT,
            ),
        ];
        for (phase, current, blocked, status, reason) in cases {
            let c = upgrading(phase, current, "img:2", blocked);
            assert_eq!(c.type_, ct::UPGRADING);
            assert_eq!(
                (c.status.as_str(), c.reason.as_str()),
                (status, reason),
                "{phase:?} {current:?} {blocked}"
            );
        }
        assert_eq!(
            upgrading(RolloutPhase::Progressing, Some("img:1"), "img:2", false).message,
            "rolling from img:1 to img:2"
        );
    }
}
