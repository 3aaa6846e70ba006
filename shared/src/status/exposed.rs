//! Exposed: something that is not the Runtime's own reaches or runs as its
//! pods (issue 52; `crate::exposure`). A condition of its own, not a
//! `Degraded` reason: Degraded says the first trouble of the reconcile, so
//! an exposure would hide behind a rollout past its deadline or hide it;
//! an exposure is a fact about the cluster around the Runtime, true while
//! everything berth governs is in order, and alerts match on it alone.
//! True is the bad state (as for Degraded and Blocked).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::api::condition::build;
use crate::api::{ExposureRef, MAX_EXPOSURE_REFS, condition_types as ct, reasons};
use crate::exposure::{Exposure, ExposureKind};

/// Most objects the message names.
const MAX_NAMED: usize = 5;

/// True naming every object found (the most urgent kind's reason), False
/// otherwise.
pub fn exposed(e: &Exposure) -> Condition {
    let Some(first) = e.found.first() else {
        return build(
            ct::EXPOSED,
            false,
            reasons::AS_EXPECTED,
            if e.policies_checked {
                "nothing that is not the Runtime's own selects, lists or runs as its pods"
            } else {
                "nothing that is not the Runtime's own selects, lists or runs as its pods; its NetworkPolicy is off, so nothing isolates the pods and other policies are not judged"
            },
        );
    };
    let mut message = e
        .found
        .iter()
        .take(MAX_NAMED)
        .map(|x| format!("{} {}", x.key(), x.why))
        .collect::<Vec<_>>()
        .join("; ");
    if e.found.len() > MAX_NAMED {
        message.push_str(&format!(" (and {} more)", e.found.len() - MAX_NAMED));
    }
    let mut kinds: Vec<ExposureKind> = e.found.iter().map(|x| x.kind).collect();
    kinds.dedup();
    let fixes: Vec<&str> = kinds.iter().map(|k| k.fix()).collect();
    message.push_str(&format!(". Fix: {}", fixes.join("; ")));
    build(ct::EXPOSED, true, first.kind.reason(), message)
}

/// `status.exposure`: the first [`MAX_EXPOSURE_REFS`] objects found.
pub fn exposure_refs(e: &Exposure) -> Vec<ExposureRef> {
    e.found
        .iter()
        .take(MAX_EXPOSURE_REFS)
        .map(|x| x.reference())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposure::Exposing;
    use crate::exposure::network_policy::Beyond;

    #[test]
    fn table() {
        let quiet = exposed(&Exposure::new(vec![], true));
        assert_eq!(
            (quiet.status.as_str(), quiet.reason.as_str()),
            ("False", reasons::AS_EXPECTED)
        );
        let off = exposed(&Exposure::new(vec![], false));
        assert!(
            off.message.contains("NetworkPolicy is off"),
            "{}",
            off.message
        );

        let policy = Exposing::policy("team", "allow-all", &Beyond::EverySource(1));
        let service = Exposing::service("team", "web-public");
        let slice = Exposing::slice("team", "manual-1", Some("legacy"));
        let orphan = Exposing::orphan("ReplicaSet", "team", "web-6d4", "gvisor");
        // (found, reason): the most urgent kind gives the reason.
        let cases = [
            (vec![slice.clone()], reasons::FOREIGN_ENDPOINT_SLICE),
            (
                vec![slice.clone(), service.clone()],
                reasons::FOREIGN_SERVICE,
            ),
            (
                vec![service.clone(), policy.clone(), slice.clone()],
                reasons::FOREIGN_NETWORK_POLICY,
            ),
            (vec![policy.clone(), orphan.clone()], reasons::ORPHANED),
        ];
        for (found, reason) in cases {
            let c = exposed(&Exposure::new(found.clone(), true));
            assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", reason));
            for x in &found {
                assert!(c.message.contains(&x.key()), "{}", c.message);
                assert!(c.message.contains(x.kind.fix()), "{}", c.message);
            }
        }
        let c = exposed(&Exposure::new(vec![policy], true));
        assert_eq!(
            c.message,
            format!(
                "NetworkPolicy/team/allow-all selects the pods and ingress rule 1 admits every source. Fix: {}",
                ExposureKind::NetworkPolicy.fix()
            )
        );
        for reason in reasons::EXPOSURES {
            assert!(ExposureKind::of_reason(reason).is_some(), "{reason}");
        }
    }

    #[test]
    fn many_objects_are_counted_and_the_status_list_is_bounded() {
        let found: Vec<Exposing> = (0..40)
            .map(|i| Exposing::service("team", &format!("s{i:02}")))
            .collect();
        let e = Exposure::new(found, true);
        let c = exposed(&e);
        assert!(c.message.contains("(and 35 more)"), "{}", c.message);
        let refs = exposure_refs(&e);
        assert_eq!(refs.len(), MAX_EXPOSURE_REFS);
        assert_eq!(refs[0].reason, reasons::FOREIGN_SERVICE);
        assert_eq!(refs[0].kind, "Service");
    }
}
