//! Step 5 of the reconcile (docs/architecture.md §5, §6): a Runtime's status
//! from one snapshot of what the reconcile read, decided and applied. Pure:
//! the agent hands in what it read from its caches and writes the result.
//!
//! Each condition is its own function in its own file, next to its test
//! table (every reason, every polarity); [`compute`] only derives the
//! shared facts (the hold, the rollout) and assembles the status.
//! `lastTransitionTime` is merged afterwards by
//! [`crate::api::condition::merge_transition_times`].

mod applied;
mod available;
mod blocked;
mod degraded;
mod exposed;
mod grant;
mod handler_ready;
mod hold;
mod pacing;
mod profile_granted;
mod progressing;
mod ready;
mod rollout;
mod upgrading;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use crate::analysis::NodeInfo;
use crate::api::{
    IdentityStatus, RolloutPhase, RolloutStatus, Runtime, RuntimeStatus, UpgradeStatus,
};
use crate::decide::{Decision, Identity};
use crate::exposure::Exposure;

pub use applied::{Applied, ApplyFailure};
pub use available::available;
pub use blocked::blocked;
pub use degraded::degraded;
pub use exposed::{exposed, exposure_refs};
pub use grant::{
    BARE_PODS_NOT_CHECKED, FileState, GrantSnapshot, GrantUser, MAX_RETAINED, bare_pods_condition,
    grant, retired, retired_message,
};
pub use handler_ready::handler_ready;
pub use hold::{COLLECTOR_FINALIZERS, Deletion, Hold, deletion, hold};
pub use pacing::{Change, awaiting_first_pass, changes, progress_only, rollout_only};
pub use profile_granted::profile_granted;
pub use progressing::progressing;
pub use ready::{ReadyFacts, ready};
pub use rollout::{Rollout, rollout};
pub use upgrading::upgrading;

/// Everything the status is computed from: one snapshot of a reconcile.
#[derive(Clone, Copy, Debug)]
pub struct Observed<'a> {
    /// The Runtime as read (its stored status included).
    pub runtime: &'a Runtime,
    /// Its identity, when complete.
    pub identity: Option<&'a Identity>,
    /// The grant decision.
    pub decision: &'a Decision,
    /// Whether the agent held back, and why.
    pub hold: &'a Hold,
    /// What apply did (None when held, or rendering failed).
    pub applied: Option<Applied<'a>>,
    /// Why rendering failed, when it did.
    pub render_error: Option<&'a str>,
    /// The Runtime's own Deployment, if it exists.
    pub deployment: Option<&'a Deployment>,
    /// The ReplicaSets that Deployment controls.
    pub replica_sets: &'a [&'a ReplicaSet],
    /// Every node, reduced to what placement reads.
    pub nodes: &'a [NodeInfo],
    /// What reaches or runs as the pods and is not the Runtime's own.
    pub exposure: &'a Exposure,
    /// What the granted class's canaries saw on each node (`None`: no
    /// attestation for it).
    pub attestation: Option<&'a crate::attest::ClassVerdicts>,
}

/// What `Degraded` says of podMetadata annotations the allowlist refuses
/// (`crate::api::pod_annotations`): a Runtime stored before the rule is
/// rendered without them, and told which.
fn refused_annotations(rt: &Runtime) -> Option<String> {
    let refused = crate::api::pod_annotations::refused(&rt.spec.pod_metadata.as_ref()?.annotations);
    (!refused.is_empty()).then(|| {
        format!(
            "podMetadata.annotations {} not put on the pods: {}; remove {} from the spec",
            refused.join(", "),
            crate::api::pod_annotations::WHY,
            if refused.len() == 1 { "it" } else { "them" }
        )
    })
}

/// Degraded, or when it is not: True for pod annotations the spec asks
/// for that berth refuses to put on the pods.
fn degraded_or_refused(
    o: &Observed<'_>,
    phase: RolloutPhase,
    handler: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    match refused_annotations(o.runtime) {
        Some(message) if o.render_error.is_none() => {
            let first = degraded(None, o.applied.as_ref(), phase, handler);
            if first.status == "True" {
                first
            } else {
                crate::api::condition::build(
                    crate::api::condition_types::DEGRADED,
                    true,
                    crate::api::reasons::POD_ANNOTATION_REFUSED,
                    message,
                )
            }
        }
        _ => degraded(o.render_error, o.applied.as_ref(), phase, handler),
    }
}

/// The status to write (lastTransitionTimes not yet merged).
pub fn compute(o: &Observed<'_>) -> RuntimeStatus {
    let rt = o.runtime;
    let is_blocked = o.hold.is_blocked();
    let Rollout {
        status: rollout_status,
        current_image,
    } = rollout(rt, o.deployment, o.replica_sets, is_blocked);
    let phase = rollout_status
        .as_ref()
        .map_or(RolloutPhase::Pending, |r| r.phase);
    let desired_image = rt.spec.image.reference();

    let handler = handler_ready(rt, o.decision, o.nodes, o.attestation);
    let available = available(rt, o.deployment);
    let degraded = degraded_or_refused(o, phase, &handler);
    let ready = ready(&ReadyFacts {
        runtime: rt,
        decision: o.decision,
        hold: o.hold,
        degraded: &degraded,
        handler_ready: &handler,
        available: &available,
        phase,
        available_replicas: o
            .deployment
            .and_then(|d| d.status.as_ref())
            .and_then(|s| s.available_replicas)
            .unwrap_or(0),
    });
    // The phase column and the console never say Complete for a Runtime
    // that is not Ready (issue 27): the rollout finished, something else
    // is wrong, and Ready says what.
    let shown_phase = shown_phase(phase, &ready);
    let mut conditions = vec![
        profile_granted(o.decision, o.hold),
        handler,
        progressing(phase, o.hold, o.decision),
        available,
        degraded,
        blocked(o.hold),
        upgrading(phase, current_image.as_deref(), &desired_image, is_blocked),
        exposed(o.exposure),
        ready,
    ];
    let generation = rt.metadata.generation;
    for c in &mut conditions {
        c.observed_generation = generation;
    }
    let previous = rt.status.as_ref();
    let last_successful = if phase == RolloutPhase::Complete
        && current_image.as_deref() == Some(desired_image.as_str())
    {
        Some(desired_image.clone())
    } else {
        previous
            .and_then(|s| s.upgrade.as_ref())
            .and_then(|u| u.last_successful_image.clone())
    };
    RuntimeStatus {
        observed_generation: generation,
        identity: o.identity.map(IdentityStatus::from),
        profile: o.decision.profile_status(),
        rollout: rollout_status.map(|r| RolloutStatus {
            phase: shown_phase,
            ..r
        }),
        upgrade: Some(UpgradeStatus {
            desired_image: Some(desired_image),
            current_image,
            last_successful_image: last_successful,
        }),
        conditions,
        // What apply recorded; unchanged while nothing was applied or the
        // Runtime is held (no Job is run then).
        jobs: match o.applied {
            Some(a) if !is_blocked => a.jobs.to_vec(),
            _ => previous.map(|s| s.jobs.clone()).unwrap_or_default(),
        },
        exposure: exposure_refs(o.exposure),
        // What a hold keeps the workloads at: replaced only by a rendering
        // that went out whole, never while held.
        last_applied: match o.applied.and_then(|a| a.last_applied) {
            Some(applied) if !is_blocked => Some(applied.clone()),
            _ => previous.and_then(|s| s.last_applied.clone()),
        },
    }
}

/// The phase shown (`status.rollout.phase`): a Complete rollout of a
/// Runtime that is not Ready shows as Degraded.
pub fn shown_phase(
    phase: RolloutPhase,
    ready: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition,
) -> RolloutPhase {
    if phase == RolloutPhase::Complete && ready.status != crate::api::condition::TRUE {
        RolloutPhase::Degraded
    } else {
        phase
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::JobRunStatus;
    use crate::api::condition_types as ct;
    use crate::testkit::status::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

    #[test]
    fn every_condition_once_in_display_order_with_the_generation() {
        let mut rt = runtime();
        rt.metadata.generation = Some(7);
        let d = deployment(2, complete(2), Some("1"));
        let status = compute(&Observed {
            runtime: &rt,
            identity: None,
            decision: &Decision::NotRequested,
            hold: &Hold::None,
            applied: None,
            render_error: None,
            deployment: Some(&d),
            replica_sets: &[],
            nodes: &[],
            exposure: &Exposure::default(),
            attestation: None,
        });
        let types: Vec<&str> = status.conditions.iter().map(|c| c.type_.as_str()).collect();
        let mut want = ct::ALL.to_vec();
        want.sort();
        let mut got = types.clone();
        got.sort();
        assert_eq!(got, want);
        assert!(
            status
                .conditions
                .iter()
                .all(|c| c.observed_generation == Some(7))
        );
        assert_eq!(status.observed_generation, Some(7));
    }

    /// A Runtime stored before the podMetadata allowlist: Degraded
    /// PodAnnotationRefused names the keys left off the pods, unless
    /// something more urgent is the reason.
    #[test]
    fn refused_pod_annotations_are_named_on_degraded() {
        let mut rt = runtime();
        rt.spec.pod_metadata = Some(crate::api::PodMetadataSpec {
            annotations: [
                (
                    "io.katacontainers.config.hypervisor.kernel_params".to_string(),
                    "x".to_string(),
                ),
                ("example.com/owner".to_string(), "data".to_string()),
            ]
            .into(),
            ..Default::default()
        });
        let d = deployment(2, complete(2), Some("1"));
        let exposure = Exposure::default();
        let observed = |render_error| Observed {
            runtime: &rt,
            identity: None,
            decision: &Decision::NotRequested,
            hold: &Hold::None,
            applied: None,
            render_error,
            deployment: Some(&d),
            replica_sets: &[],
            nodes: &[],
            exposure: &exposure,
            attestation: None,
        };
        let status = compute(&observed(None));
        let degraded = status
            .conditions
            .iter()
            .find(|c| c.type_ == ct::DEGRADED)
            .expect("Degraded");
        assert_eq!(degraded.status, "True");
        assert_eq!(degraded.reason, crate::api::reasons::POD_ANNOTATION_REFUSED);
        assert!(
            degraded
                .message
                .contains("io.katacontainers.config.hypervisor.kernel_params")
                && !degraded.message.contains("example.com/owner"),
            "{}",
            degraded.message
        );
        let status = compute(&observed(Some("broken")));
        let degraded = status
            .conditions
            .iter()
            .find(|c| c.type_ == ct::DEGRADED)
            .expect("Degraded");
        assert_eq!(degraded.reason, crate::api::reasons::RENDER_FAILED);
    }

    #[test]
    fn a_complete_rollout_that_is_not_ready_shows_as_degraded() {
        let mut rt = runtime();
        rt.spec.replicas = Some(2);
        let d = deployment(2, complete(2), Some("1"));
        let in_the_way = ["ConfigMap/web-config".to_string()];
        let phase = |applied: Option<Applied<'_>>| {
            compute(&Observed {
                runtime: &rt,
                identity: None,
                decision: &Decision::NotRequested,
                hold: &Hold::None,
                applied,
                render_error: None,
                deployment: Some(&d),
                replica_sets: &[],
                nodes: &[],
                exposure: &Exposure::default(),
                attestation: None,
            })
            .rollout
            .map(|r| r.phase)
        };
        assert_eq!(
            phase(Some(Applied::default())),
            Some(RolloutPhase::Complete)
        );
        assert_eq!(
            phase(Some(Applied {
                conflicts: &in_the_way,
                dependencies: &in_the_way,
                ..Applied::default()
            })),
            Some(RolloutPhase::Degraded)
        );
        // Any Ready=False over a finished rollout, e.g. a plain conflict.
        assert_eq!(
            phase(Some(Applied {
                conflicts: &in_the_way,
                ..Applied::default()
            })),
            Some(RolloutPhase::Degraded)
        );
        let ready = |s: &str| Condition {
            status: s.into(),
            ..crate::api::condition::build(ct::READY, false, "", "")
        };
        for p in [
            RolloutPhase::Pending,
            RolloutPhase::Progressing,
            RolloutPhase::Failed,
            RolloutPhase::Suspended,
            RolloutPhase::Blocked,
        ] {
            assert_eq!(shown_phase(p, &ready("False")), p);
        }
        assert_eq!(
            shown_phase(RolloutPhase::Complete, &ready("Unknown")),
            RolloutPhase::Degraded
        );
        assert_eq!(
            shown_phase(RolloutPhase::Complete, &ready("True")),
            RolloutPhase::Complete
        );
    }

    #[test]
    fn held_keeps_the_job_records() {
        let mut rt = runtime();
        rt.status = Some(RuntimeStatus {
            jobs: vec![JobRunStatus {
                name: "migrate".into(),
                job: "web-job-migrate".into(),
                template_hash: "h".into(),
                uid: None,
            }],
            ..Default::default()
        });
        let hold = Hold::Blocked {
            reason: "Revoked".into(),
            message: "gone".into(),
        };
        let s = compute(&Observed {
            runtime: &rt,
            identity: None,
            decision: &Decision::NotRequested,
            hold: &hold,
            applied: Some(Applied::default()),
            render_error: None,
            deployment: None,
            replica_sets: &[],
            nodes: &[],
            exposure: &Exposure::default(),
            attestation: None,
        });
        assert_eq!(
            s.jobs.len(),
            1,
            "a held reconcile runs no Job and forgets none"
        );
    }

    #[test]
    fn upgrade_remembers_the_last_image_that_completed() {
        let mut rt = runtime();
        rt.status = Some(RuntimeStatus {
            upgrade: Some(UpgradeStatus {
                last_successful_image: Some("old".into()),
                ..Default::default()
            }),
            jobs: vec![JobRunStatus {
                name: "migrate".into(),
                job: "web-job-migrate".into(),
                template_hash: "h".into(),
                uid: None,
            }],
            ..Default::default()
        });
        let observe = |d: Option<&Deployment>, hold: &Hold| {
            compute(&Observed {
                runtime: &rt,
                identity: None,
                decision: &Decision::NotRequested,
                hold,
                applied: None,
                render_error: None,
                deployment: d,
                replica_sets: &[],
                nodes: &[],
                exposure: &Exposure::default(),
                attestation: None,
            })
        };
        // Complete on the desired image: it becomes the last successful.
        let done = deployment_with_image(1, complete(1), &rt.spec.image.reference());
        let s = observe(Some(&done), &Hold::None);
        let upgrade = s.upgrade.expect("upgrade");
        assert_eq!(
            upgrade.last_successful_image,
            Some(rt.spec.image.reference())
        );
        // Nothing rolled out: the stored one stays, and so do the jobs.
        let s = observe(None, &Hold::None);
        let upgrade = s.upgrade.expect("upgrade");
        assert_eq!(upgrade.last_successful_image.as_deref(), Some("old"));
        assert_eq!(s.jobs.len(), 1);
    }
}
