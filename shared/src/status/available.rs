//! Available: enough replicas are available (the Deployment's own
//! Available condition), and the Runtime is not suspended.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::rollout::deployment_condition;
use crate::api::condition::build;
use crate::api::{Runtime, condition_types as ct, reasons};

/// Available from the Deployment's Available condition.
pub fn available(runtime: &Runtime, deployment: Option<&Deployment>) -> Condition {
    if runtime.spec.suspend {
        return build(
            ct::AVAILABLE,
            false,
            reasons::SUSPENDED,
            "the Runtime is suspended",
        );
    }
    let ok = deployment
        .is_some_and(|d| deployment_condition(d, "Available").is_some_and(|c| c.status == "True"));
    if ok {
        build(
            ct::AVAILABLE,
            true,
            reasons::MINIMUM_REPLICAS_AVAILABLE,
            "enough replicas are available",
        )
    } else {
        build(
            ct::AVAILABLE,
            false,
            reasons::MINIMUM_REPLICAS_UNAVAILABLE,
            "too few replicas are available",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::status::*;

    #[test]
    fn table() {
        // (deployment Available condition, suspend, status, reason)
        let cases = [
            (None, false, "False", reasons::MINIMUM_REPLICAS_UNAVAILABLE),
            (
                Some("True"),
                false,
                "True",
                reasons::MINIMUM_REPLICAS_AVAILABLE,
            ),
            (
                Some("False"),
                false,
                "False",
                reasons::MINIMUM_REPLICAS_UNAVAILABLE,
            ),
            (
                Some("Unknown"),
                false,
                "False",
                reasons::MINIMUM_REPLICAS_UNAVAILABLE,
            ),
            (Some("True"), true, "False", reasons::SUSPENDED),
            (None, true, "False", reasons::SUSPENDED),
        ];
        for (dep_available, suspend, status, reason) in cases {
            let mut rt = runtime();
            rt.spec.suspend = suspend;
            let d = dep_available.map(|s| {
                let mut st = complete(1);
                st.conditions = Some(vec![deployment_cond(
                    "Available",
                    s,
                    "MinimumReplicasAvailable",
                )]);
                deployment(1, st, None)
            });
            let c = available(&rt, d.as_ref());
            assert_eq!(c.type_, ct::AVAILABLE);
            assert_eq!(
                (c.status.as_str(), c.reason.as_str()),
                (status, reason),
                "{dep_available:?} suspend={suspend}"
            );
        }
    }
}
