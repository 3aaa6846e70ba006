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
use crate::api::{Runtime, RuntimeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// Whether `new` differs from `old` only in progress: rollout counts and
/// condition messages, with every condition's (type, status, reason) and
/// everything else unchanged.
pub fn progress_only(old: &RuntimeStatus, new: &RuntimeStatus) -> bool {
    same_except(old, new, |_| false, false)
}

/// Whether `new` differs from `old` only in the rollout's own conditions
/// (Progressing, Available, Ready: pods coming up or going away) and in the
/// images the pods run (`upgrade.currentImage`, `lastSuccessfulImage`:
/// they follow the same pods; the desired image is the spec's) besides
/// progress. At S/4 every transition written before the last Runtime's
/// first pass also moved those images (issue 32). Every other condition (a grant, a handler, Degraded, Blocked,
/// Upgrading), the observed generation, the identity, the profile, the
/// upgrade and the job records are unchanged. Such a change may wait
/// briefly while many Runtimes still wait for their first pass; anything
/// an operator must act on is written at once.
pub fn rollout_only(old: &RuntimeStatus, new: &RuntimeStatus) -> bool {
    same_except(old, new, |type_| ROLLOUT_CONDITIONS.contains(&type_), true)
}

/// The conditions that follow a rollout's pods.
const ROLLOUT_CONDITIONS: [&str; 3] = [
    condition_types::PROGRESSING,
    condition_types::AVAILABLE,
    condition_types::READY,
];

/// Whether `old` and `new` agree on everything but progress (counts and
/// messages), the status and reason of the conditions `may_change` names
/// and, with `images`, the images the pods run. The list of condition
/// types must stay the same.
fn same_except(
    old: &RuntimeStatus,
    new: &RuntimeStatus,
    may_change: impl Fn(&str) -> bool,
    images: bool,
) -> bool {
    let same_conditions = old.conditions.len() == new.conditions.len()
        && old
            .conditions
            .iter()
            .zip(&new.conditions)
            .all(|(a, b)| same_condition(a, b, may_change(&a.type_)));
    let same_upgrade = if images {
        let desired = |s: &RuntimeStatus| s.upgrade.as_ref().and_then(|u| u.desired_image.clone());
        desired(old) == desired(new)
    } else {
        old.upgrade == new.upgrade
    };
    same_conditions
        && same_upgrade
        && old.observed_generation == new.observed_generation
        && old.identity == new.identity
        && old.profile == new.profile
        && old.jobs == new.jobs
}

fn same_condition(a: &Condition, b: &Condition, may_change: bool) -> bool {
    a.type_ == b.type_
        && a.observed_generation == b.observed_generation
        && (may_change || (a.status == b.status && a.reason == b.reason))
}

/// What differs from `old` to `new` beyond progress, in words: the
/// top-level fields (`observedGeneration`, `identity`, `profile`,
/// `upgrade`, `jobs`), `conditions` when their list of types changed, and
/// `Type=status/reason` for each condition whose status or reason did.
/// Empty: only progress (counts, messages). For the agent's log, which
/// says why a status was written.
pub fn changes(old: &RuntimeStatus, new: &RuntimeStatus) -> Vec<String> {
    let mut out: Vec<String> = [
        (
            "observedGeneration",
            old.observed_generation != new.observed_generation,
        ),
        ("identity", old.identity != new.identity),
        ("profile", old.profile != new.profile),
        ("upgrade", old.upgrade != new.upgrade),
        ("jobs", old.jobs != new.jobs),
    ]
    .into_iter()
    .filter(|(_, differs)| *differs)
    .map(|(name, _)| name.to_string())
    .collect();
    let types = |s: &RuntimeStatus| {
        s.conditions
            .iter()
            .map(|c| c.type_.clone())
            .collect::<Vec<_>>()
    };
    if types(old) != types(new) {
        out.push("conditions".into());
    }
    for (a, b) in old.conditions.iter().zip(&new.conditions) {
        if a.type_ == b.type_ && !same_condition(a, b, false) {
            out.push(format!("{}={}/{}", b.type_, b.status, b.reason));
        }
    }
    out
}

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
        assert_eq!(
            changes(&base, &ready),
            ["observedGeneration", "Ready=True/Ready"]
        );
        let fewer = status(base.conditions[..1].to_vec(), 1);
        assert_eq!(changes(&base, &fewer), ["conditions"]);
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
        let mut rt = crate::status::fixtures::runtime();
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
