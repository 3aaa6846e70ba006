//! Which status changes may wait. While pods come up one by one, every
//! ready pod changes the rollout counts (and the messages quoting them);
//! writing each of those at once costs one status write per pod and, at
//! scale, delays the first status of Runtimes not reconciled yet. A change
//! that only moves counts or messages may be held back briefly; a change of
//! any condition's status or reason, of the observed generation, the
//! identity, the profile, the upgrade or the job records is written at
//! once, except that a rollout's own transitions (Progressing, Available,
//! Ready) may also wait while other Runtimes still wait for their first
//! pass ([`rollout_only`]).

use crate::api::condition_types;
use crate::api::{Runtime, RuntimeStatus, UpgradeStatus};

/// One way two statuses differ beyond progress (counts and messages): the
/// one list both pacing rules ([`progress_only`], [`rollout_only`]) and the
/// agent's log ([`changes`]) read, so a field added to the status is
/// compared once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// `observedGeneration`.
    ObservedGeneration,
    /// `identity`.
    Identity,
    /// `profile`.
    Profile,
    /// `upgrade.desiredImage`: the image the spec asks for.
    DesiredImage,
    /// `upgrade.currentImage` or `upgrade.lastSuccessfulImage`: the images
    /// the pods run.
    RunningImages,
    /// `jobs`.
    Jobs,
    /// `exposure`: the objects the `Exposed` condition names.
    Exposure,
    /// `lastApplied`: what a hold keeps the workloads at.
    LastApplied,
    /// The list of condition types.
    ConditionTypes,
    /// A condition's `observedGeneration`.
    ConditionGeneration { type_: String },
    /// A condition's status or reason (the new ones).
    Condition {
        type_: String,
        status: String,
        reason: String,
    },
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::ObservedGeneration => f.write_str("observedGeneration"),
            Change::Identity => f.write_str("identity"),
            Change::Profile => f.write_str("profile"),
            Change::DesiredImage => f.write_str("upgrade.desiredImage"),
            Change::RunningImages => f.write_str("upgrade.images"),
            Change::Jobs => f.write_str("jobs"),
            Change::Exposure => f.write_str("exposure"),
            Change::LastApplied => f.write_str("lastApplied"),
            Change::ConditionTypes => f.write_str("conditions"),
            Change::ConditionGeneration { type_ } => write!(f, "{type_}.observedGeneration"),
            Change::Condition {
                type_,
                status,
                reason,
            } => write!(f, "{type_}={status}/{reason}"),
        }
    }
}

/// What differs from `old` to `new` beyond progress. Empty: only progress
/// (counts, messages).
pub fn changes(old: &RuntimeStatus, new: &RuntimeStatus) -> Vec<Change> {
    fn image(s: &RuntimeStatus, f: fn(&UpgradeStatus) -> &Option<String>) -> Option<&str> {
        s.upgrade.as_ref().and_then(|u| f(u).as_deref())
    }
    let differs = |f: fn(&UpgradeStatus) -> &Option<String>| image(old, f) != image(new, f);
    let desired = differs(|u| &u.desired_image);
    let running = differs(|u| &u.current_image) || differs(|u| &u.last_successful_image);
    let mut out: Vec<Change> = [
        (
            Change::ObservedGeneration,
            old.observed_generation != new.observed_generation,
        ),
        (Change::Identity, old.identity != new.identity),
        (Change::Profile, old.profile != new.profile),
        (Change::DesiredImage, desired),
        // Also an upgrade record appearing or going with no image changed.
        (
            Change::RunningImages,
            running || (old.upgrade != new.upgrade && !desired),
        ),
        (Change::Jobs, old.jobs != new.jobs),
        (Change::Exposure, old.exposure != new.exposure),
        (Change::LastApplied, old.last_applied != new.last_applied),
    ]
    .into_iter()
    .filter_map(|(change, differs)| differs.then_some(change))
    .collect();
    if !old
        .conditions
        .iter()
        .map(|c| &c.type_)
        .eq(new.conditions.iter().map(|c| &c.type_))
    {
        out.push(Change::ConditionTypes);
    }
    for (a, b) in old.conditions.iter().zip(&new.conditions) {
        if a.type_ != b.type_ {
            continue;
        }
        if a.observed_generation != b.observed_generation {
            out.push(Change::ConditionGeneration {
                type_: b.type_.clone(),
            });
        }
        if a.status != b.status || a.reason != b.reason {
            out.push(Change::Condition {
                type_: b.type_.clone(),
                status: b.status.clone(),
                reason: b.reason.clone(),
            });
        }
    }
    out
}

/// Whether `new` differs from `old` only in progress: rollout counts and
/// condition messages, with every condition's (type, status, reason) and
/// everything else unchanged.
pub fn progress_only(old: &RuntimeStatus, new: &RuntimeStatus) -> bool {
    changes(old, new).is_empty()
}

/// Whether `new` differs from `old` only in the rollout's own conditions
/// (Progressing, Available, Ready: pods coming up or going away) and in the
/// images the pods run (`upgrade.currentImage`, `lastSuccessfulImage`:
/// they follow the same pods; the desired image is the spec's) besides
/// progress. At S/4 every transition written before the last Runtime's
/// first pass also moved those images (issue 32). Every other change (a
/// grant, a handler, Degraded, Blocked, Upgrading, the observed generation,
/// the identity, the profile, the desired image, the job records) is
/// not. Such a change may wait briefly while many Runtimes still wait for
/// their first pass; anything an operator must act on is written at once.
pub fn rollout_only(old: &RuntimeStatus, new: &RuntimeStatus) -> bool {
    changes(old, new).iter().all(|c| match c {
        Change::RunningImages => true,
        Change::Condition { type_, .. } => ROLLOUT_CONDITIONS.contains(&type_.as_str()),
        _ => false,
    })
}

/// The conditions that follow a rollout's pods.
const ROLLOUT_CONDITIONS: [&str; 3] = [
    condition_types::PROGRESSING,
    condition_types::AVAILABLE,
    condition_types::READY,
];

/// Whether a Runtime still waits for its first reconcile at its current
/// generation: created or changed, and no status says it was seen yet. A
/// Runtime being deleted waits for nothing.
pub fn awaiting_first_pass(runtime: &Runtime) -> bool {
    runtime.metadata.deletion_timestamp.is_none()
        && runtime.status.as_ref().and_then(|s| s.observed_generation)
            != runtime.metadata.generation
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

    fn cond(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            observed_generation: Some(1),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
        }
    }

    fn status(conditions: Vec<Condition>, generation: i64) -> RuntimeStatus {
        RuntimeStatus {
            observed_generation: Some(generation),
            conditions,
            ..Default::default()
        }
    }

    #[test]
    fn only_counts_and_messages_may_wait() {
        let base = status(
            vec![
                cond(
                    "Available",
                    "False",
                    "MinimumReplicasUnavailable",
                    "1/10 available",
                ),
                cond("Ready", "False", "NotAvailable", "1/10 available"),
            ],
            1,
        );
        let more_pods = status(
            vec![
                cond(
                    "Available",
                    "False",
                    "MinimumReplicasUnavailable",
                    "4/10 available",
                ),
                cond("Ready", "False", "NotAvailable", "4/10 available"),
            ],
            1,
        );
        assert!(progress_only(&base, &more_pods));
        assert!(progress_only(&base, &base));

        let ready = status(
            vec![
                cond(
                    "Available",
                    "True",
                    "MinimumReplicasAvailable",
                    "10/10 available",
                ),
                cond("Ready", "True", "Ready", "10/10 available"),
            ],
            1,
        );
        assert!(
            !progress_only(&base, &ready),
            "a transition is written at once"
        );

        let other_reason = status(
            vec![
                cond(
                    "Available",
                    "False",
                    "ProgressDeadlineExceeded",
                    "1/10 available",
                ),
                cond("Ready", "False", "NotAvailable", "1/10 available"),
            ],
            1,
        );
        assert!(!progress_only(&base, &other_reason), "a new reason");

        let new_generation = status(base.conditions.clone(), 2);
        assert!(!progress_only(&base, &new_generation), "a new generation");

        let fewer = status(base.conditions[..1].to_vec(), 1);
        assert!(!progress_only(&base, &fewer), "a condition gone");

        let mut with_jobs = base.clone();
        with_jobs.jobs.push(crate::api::JobRunStatus {
            name: "migrate".into(),
            job: "rt-migrate".into(),
            template_hash: "abc".into(),
            uid: None,
        });
        assert!(!progress_only(&base, &with_jobs), "a job record");
    }

    #[test]
    fn changes_name_what_differs_beyond_progress() {
        let base = status(
            vec![
                cond("Available", "False", "MinimumReplicasUnavailable", "1/10"),
                cond("Ready", "False", "NotAvailable", "1/10"),
            ],
            1,
        );
        let mut more = base.clone();
        more.conditions[1].message = "4/10".into();
        assert!(changes(&base, &more).is_empty(), "progress only");
        let mut ready = more.clone();
        ready.conditions[1].status = "True".into();
        ready.conditions[1].reason = "Ready".into();
        ready.observed_generation = Some(2);
        let said = |a, b| {
            changes(a, b)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            said(&base, &ready),
            ["observedGeneration", "Ready=True/Ready"]
        );
        let fewer = status(base.conditions[..1].to_vec(), 1);
        assert_eq!(said(&base, &fewer), ["conditions"]);
        let mut seen_again = base.clone();
        seen_again.conditions[0].observed_generation = Some(2);
        assert_eq!(said(&base, &seen_again), ["Available.observedGeneration"]);
        let mut upgrading = base.clone();
        upgrading.upgrade = Some(crate::api::UpgradeStatus {
            desired_image: Some("app:2".into()),
            current_image: Some("app:1".into()),
            last_successful_image: None,
        });
        assert_eq!(
            said(&base, &upgrading),
            ["upgrade.desiredImage", "upgrade.images"]
        );
        let mut empty_record = base.clone();
        empty_record.upgrade = Some(crate::api::UpgradeStatus::default());
        assert_eq!(said(&base, &empty_record), ["upgrade.images"]);
        assert!(!progress_only(&base, &empty_record), "any upgrade change");
    }

    #[test]
    fn a_rollout_transition_may_wait_but_nothing_an_operator_acts_on() {
        let progressing = status(
            vec![
                cond("ProfileGranted", "True", "Granted", "granted"),
                cond(
                    "Progressing",
                    "True",
                    "NewReplicaSetAvailable",
                    "1/10 updated",
                ),
                cond(
                    "Available",
                    "False",
                    "MinimumReplicasUnavailable",
                    "1/10 available",
                ),
                cond("Ready", "False", "NotAvailable", "1/10 available"),
                cond("Degraded", "False", "AsExpected", ""),
            ],
            1,
        );
        let mut ready = progressing.clone();
        ready.conditions[1] = cond("Progressing", "False", "Complete", "10/10 updated");
        ready.conditions[2] = cond(
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "10/10 available",
        );
        ready.conditions[3] = cond("Ready", "True", "Ready", "10/10 available");
        assert!(rollout_only(&progressing, &ready), "pods came up");
        assert!(rollout_only(&ready, &progressing), "pods went away");
        assert!(!progress_only(&progressing, &ready), "still a transition");

        let mut revoked = ready.clone();
        revoked.conditions[0] = cond("ProfileGranted", "False", "NotGranted", "revoked");
        assert!(
            !rollout_only(&ready, &revoked),
            "a grant decision is written at once"
        );

        let mut degraded = ready.clone();
        degraded.conditions[4] = cond("Degraded", "True", "CrashLooping", "");
        assert!(
            !rollout_only(&ready, &degraded),
            "Degraded is written at once"
        );

        let new_generation = status(ready.conditions.clone(), 2);
        assert!(!rollout_only(&ready, &new_generation), "a new generation");

        let mut blocked = ready.clone();
        blocked
            .conditions
            .push(cond("Blocked", "True", "Frozen", ""));
        assert!(!rollout_only(&ready, &blocked), "a condition added");

        // The pods' images follow the rollout; the desired image is the
        // spec's (and comes with a new generation).
        let image = |desired: &str, current: Option<&str>, last: Option<&str>| {
            Some(crate::api::UpgradeStatus {
                desired_image: Some(desired.into()),
                current_image: current.map(Into::into),
                last_successful_image: last.map(Into::into),
            })
        };
        let mut starting = progressing.clone();
        starting.upgrade = image("app:1", None, None);
        let mut done = ready.clone();
        done.upgrade = image("app:1", Some("app:1"), Some("app:1"));
        assert!(rollout_only(&starting, &done), "images the pods run");
        assert!(
            !progress_only(&starting, &done),
            "but not only progress: written at once outside a backlog"
        );
        let mut other = done.clone();
        other.upgrade = image("app:2", Some("app:1"), Some("app:1"));
        assert!(!rollout_only(&done, &other), "a new desired image");
    }

    #[test]
    fn a_runtime_awaits_its_first_pass_until_a_status_names_its_generation() {
        let mut rt = crate::testkit::status::runtime();
        rt.metadata.generation = Some(3);
        assert!(awaiting_first_pass(&rt), "no status yet");
        rt.status = Some(status(Vec::new(), 2));
        assert!(awaiting_first_pass(&rt), "status of an older generation");
        rt.status = Some(status(Vec::new(), 3));
        assert!(!awaiting_first_pass(&rt), "seen at its generation");
        rt.metadata.generation = Some(4);
        rt.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ));
        assert!(
            !awaiting_first_pass(&rt),
            "being deleted: waits for nothing"
        );
    }
}
