//! The rollout summary of a Runtime's Deployment and the image most of its
//! ready replicas run — the facts Progressing, Ready, Degraded and
//! Upgrading are computed from.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::api::meta::{self, template_image};
use crate::api::{RolloutPhase, RolloutStatus, Runtime};

/// [`rollout`]'s result.
#[derive(Clone, Debug, PartialEq)]
pub struct Rollout {
    /// `status.rollout`.
    pub status: Option<RolloutStatus>,
    /// The image most ready replicas run, if known.
    pub current_image: Option<String>,
}

/// A Deployment condition of `type_`.
pub fn deployment_condition<'a>(
    d: &'a Deployment,
    type_: &str,
) -> Option<&'a k8s_openapi::api::apps::v1::DeploymentCondition> {
    d.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == type_))
}

/// The revision number in an object's revision annotation.
fn revision_of(m: &ObjectMeta) -> Option<i64> {
    meta::revision(m).and_then(|r| r.parse().ok())
}

/// Rollout summary and the image most ready replicas run.
pub fn rollout(
    runtime: &Runtime,
    deployment: Option<&Deployment>,
    replica_sets: &[&ReplicaSet],
    blocked: bool,
) -> Rollout {
    let Some(d) = deployment else {
        let phase = if blocked {
            RolloutPhase::Blocked
        } else if runtime.spec.suspend {
            RolloutPhase::Suspended
        } else {
            RolloutPhase::Pending
        };
        return Rollout {
            status: Some(RolloutStatus {
                phase,
                ..Default::default()
            }),
            current_image: None,
        };
    };
    let desired = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let st = d.status.clone().unwrap_or_default();
    let updated = st.updated_replicas.unwrap_or(0);
    let ready = st.ready_replicas.unwrap_or(0);
    let available = st.available_replicas.unwrap_or(0);
    let total = st.replicas.unwrap_or(0);
    let observed = st.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0);
    let failed = deployment_condition(d, "Progressing")
        .is_some_and(|c| c.reason.as_deref() == Some("ProgressDeadlineExceeded"));
    let complete = observed
        && updated == desired
        && ready == desired
        && available == desired
        && total == desired;
    let phase = if blocked {
        RolloutPhase::Blocked
    } else if runtime.spec.suspend && complete {
        RolloutPhase::Suspended
    } else if failed {
        RolloutPhase::Failed
    } else if complete {
        RolloutPhase::Complete
    } else {
        RolloutPhase::Progressing
    };
    // The image most ready pods run: the ReplicaSet with most ready
    // replicas (the template's when nothing is ready yet and complete).
    let rs_ready = |rs: &ReplicaSet| {
        rs.status
            .as_ref()
            .and_then(|s| s.ready_replicas)
            .unwrap_or(0)
    };
    let current_image = replica_sets
        .iter()
        .filter(|rs| rs_ready(rs) > 0)
        // Ties go to the newest revision, then the name: never to the
        // store's (hash map) order.
        .max_by_key(|rs| {
            let revision = revision_of(&rs.metadata).and_then(|r| u64::try_from(r).ok());
            (
                rs_ready(rs),
                revision.unwrap_or(0),
                rs.metadata.name.clone().unwrap_or_default(),
            )
        })
        .and_then(|rs| template_image(rs.spec.as_ref().and_then(|s| s.template.as_ref())))
        .or_else(|| {
            complete
                .then(|| template_image(d.spec.as_ref().map(|s| &s.template)))
                .flatten()
        });
    Rollout {
        status: Some(RolloutStatus {
            revision: revision_of(&d.metadata),
            desired,
            updated,
            ready,
            available,
            unavailable: st.unavailable_replicas.unwrap_or(0),
            phase,
        }),
        current_image,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::status::*;
    use k8s_openapi::api::apps::v1::DeploymentStatus;

    #[test]
    fn phase_table() {
        let failed = {
            let mut s = progressing_status(2, 1);
            s.conditions = Some(vec![deadline_exceeded()]);
            s
        };
        // (deployment status, suspend, blocked, expected phase)
        let cases: Vec<(Option<DeploymentStatus>, bool, bool, RolloutPhase)> = vec![
            (None, false, false, RolloutPhase::Pending),
            (None, true, false, RolloutPhase::Suspended),
            (None, true, true, RolloutPhase::Blocked),
            (Some(complete(2)), false, false, RolloutPhase::Complete),
            (Some(complete(2)), false, true, RolloutPhase::Blocked),
            (
                Some(progressing_status(2, 1)),
                false,
                false,
                RolloutPhase::Progressing,
            ),
            (
                Some(progressing_status(2, 1)),
                true,
                false,
                RolloutPhase::Progressing,
            ),
            (Some(failed), false, false, RolloutPhase::Failed),
        ];
        for (status, suspend, blocked, want) in cases {
            let mut rt = runtime();
            rt.spec.suspend = suspend;
            let d = status.clone().map(|s| deployment(2, s, Some("3")));
            let got = rollout(&rt, d.as_ref(), &[], blocked);
            let phase = got.status.as_ref().map(|s| s.phase);
            assert_eq!(
                phase,
                Some(want),
                "{status:?} suspend={suspend} blocked={blocked}"
            );
        }
        // Suspended shows once the Deployment reached 0 of 0.
        let mut rt = runtime();
        rt.spec.suspend = true;
        let d = deployment(0, complete(0), None);
        assert_eq!(
            rollout(&rt, Some(&d), &[], false).status.map(|s| s.phase),
            Some(RolloutPhase::Suspended)
        );
    }

    #[test]
    fn an_unobserved_generation_is_not_complete() {
        let mut d = deployment(2, complete(2), Some("3"));
        d.metadata.generation = Some(5);
        let got = rollout(&runtime(), Some(&d), &[], false);
        assert_eq!(got.status.map(|s| s.phase), Some(RolloutPhase::Progressing));
    }

    #[test]
    fn counts_and_revision_come_from_the_deployment() {
        let d = deployment(3, progressing_status(3, 1), Some("4"));
        let s = rollout(&runtime(), Some(&d), &[], false)
            .status
            .expect("status");
        assert_eq!(
            (
                s.revision,
                s.desired,
                s.updated,
                s.ready,
                s.available,
                s.unavailable
            ),
            (Some(4), 3, 1, 1, 1, 2)
        );
    }

    #[test]
    fn current_image_is_the_one_most_ready_replicas_run() {
        let d = deployment_with_image(2, progressing_status(2, 1), "img:new");
        let old = replica_set("web-old", "1", "img:old", 2);
        let new = replica_set("web-new", "2", "img:new", 1);
        let none = replica_set("web-none", "3", "img:none", 0);
        let got = rollout(&runtime(), Some(&d), &[&new, &old, &none], false);
        assert_eq!(got.current_image.as_deref(), Some("img:old"));
        // A tie goes to the newer revision.
        let new2 = replica_set("web-new", "2", "img:new", 2);
        let got = rollout(&runtime(), Some(&d), &[&old, &new2], false);
        assert_eq!(got.current_image.as_deref(), Some("img:new"));
        // Nothing ready: unknown while rolling, the template's once complete.
        assert_eq!(
            rollout(&runtime(), Some(&d), &[&none], false).current_image,
            None
        );
        let done = deployment_with_image(0, complete(0), "img:zero");
        assert_eq!(
            rollout(&runtime(), Some(&done), &[], false)
                .current_image
                .as_deref(),
            Some("img:zero")
        );
    }
}
