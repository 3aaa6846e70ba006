//! Events that alarm only on trouble (docs/drift-and-events.md).
//!
//! A Runtime is *in trouble* when one of its conditions is in a bad state:
//! Blocked, Degraded, ProfileGranted=False, HandlerReady=False or a rollout
//! past its deadline. The agent raises one Warning when a Runtime enters
//! trouble (or its trouble changes reason) — one, however many conditions
//! say so — and one Normal Event when it recovers. An upgrade starting and
//! finishing are Normal Events. The expected first progression of a new
//! Runtime (Progressing → Ready) raises nothing, and neither does a steady
//! reconcile.
//!
//! Exposure (`Exposed`, issue 52) is told apart from trouble: a Runtime
//! already Degraded or Blocked can also become exposed, and one Warning
//! per trouble would hide it. Each object that newly reaches or runs as
//! the pods (a new entry of `status.exposure`) raises a Warning with the
//! condition's reason (`ForeignNetworkPolicy`, `Orphaned`, …), and the end
//! of the exposure a Normal `ExposureCleared`.

use berth_shared::api::{Runtime, RuntimeStatus, condition_types as ct, reasons};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Resource;
use kube::runtime::events::{Event, EventType};

use crate::controller::context::Context;

/// One Event to publish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// Warning (trouble) or Normal (progress, recovery).
    pub warning: bool,
    /// Stable reason.
    pub reason: String,
    /// Human note.
    pub note: String,
}

/// Reason of the Normal Event a changed one-time Job's new run raises.
pub const JOB_RERUN: &str = "JobRerun";

/// Reason of the Warning Event a Job planted at a one-time job's name
/// raises (it is deleted: `apply::jobs`).
pub const PLANTED_JOB: &str = "PlantedJob";

/// Reason of the Normal Event a Runtime's recovery raises.
pub const RECOVERED: &str = "Recovered";

/// Reason of the Normal Event raised when nothing foreign reaches or runs
/// as a Runtime's pods any more.
pub const EXPOSURE_CLEARED: &str = "ExposureCleared";

fn find<'a>(status: &'a RuntimeStatus, type_: &str) -> Option<&'a Condition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

/// The condition that says what is wrong, most important first; `None`
/// when nothing is.
pub fn trouble(status: &RuntimeStatus) -> Option<&Condition> {
    let is = |type_: &str, bad_status: &str| find(status, type_).filter(|c| c.status == bad_status);
    is(ct::BLOCKED, "True")
        .or_else(|| is(ct::DEGRADED, "True"))
        .or_else(|| is(ct::PROFILE_GRANTED, "False"))
        .or_else(|| is(ct::HANDLER_READY, "False"))
        .or_else(|| {
            is(ct::PROGRESSING, "False").filter(|c| c.reason == reasons::PROGRESS_DEADLINE_EXCEEDED)
        })
}

fn note(c: &Condition) -> String {
    let mut note = format!("{}={}: {}", c.type_, c.status, c.message);
    note.truncate(1000);
    note
}

/// The Events the change from `old` to `new` raises.
pub fn plan(old: Option<&RuntimeStatus>, new: &RuntimeStatus) -> Vec<Planned> {
    let mut out = Vec::new();
    let before = old.and_then(trouble);
    match (before, trouble(new)) {
        (_, Some(now)) if before.is_none_or(|b| b.type_ != now.type_ || b.reason != now.reason) => {
            out.push(Planned {
                warning: true,
                reason: now.reason.clone(),
                note: note(now),
            });
        }
        (Some(was), None) => out.push(Planned {
            warning: false,
            reason: RECOVERED.to_string(),
            note: format!(
                "recovered: {}={} ({}) no longer holds",
                was.type_, was.status, was.reason
            ),
        }),
        _ => {}
    }
    out.extend(exposure(old, new));
    // A one-time Job whose definition changed runs once more: say so.
    if let Some(old) = old {
        for run in &new.jobs {
            if old
                .jobs
                .iter()
                // A record moved from the whole-Job hash to the definition
                // hash (another length) after an upgrade is not a re-run.
                .any(|r| {
                    r.name == run.name
                        && r.template_hash != run.template_hash
                        && r.template_hash.len() == run.template_hash.len()
                })
            {
                out.push(Planned {
                    warning: false,
                    reason: JOB_RERUN.to_string(),
                    note: format!(
                        "the definition of job {} changed; it runs once more as Job {}",
                        run.name, run.job
                    ),
                });
            }
        }
    }
    // Upgrades: Normal Events when one starts and when it completes; never
    // on a first status (nothing was running before).
    if let (Some(old), Some(now)) = (old, find(new, ct::UPGRADING)) {
        let was_upgrading = find(old, ct::UPGRADING).is_some_and(|c| c.status == "True");
        let upgrading = now.status == "True";
        if upgrading != was_upgrading && (upgrading || now.reason == reasons::IMAGE_CURRENT) {
            out.push(Planned {
                warning: false,
                reason: now.reason.clone(),
                note: note(now),
            });
        }
    }
    out
}

/// The Events of the `Exposed` condition: a Warning when objects newly
/// reach or run as the pods, a Normal one when none does any more.
fn exposure(old: Option<&RuntimeStatus>, new: &RuntimeStatus) -> Option<Planned> {
    let exposed = |s: &RuntimeStatus| find(s, ct::EXPOSED).filter(|c| c.status == "True").cloned();
    let was = old.and_then(exposed);
    match exposed(new) {
        Some(now) => {
            let fresh: Vec<String> = new
                .exposure
                .iter()
                .filter(|r| old.is_none_or(|o| was.is_none() || !o.exposure.contains(r)))
                .map(|r| format!("{}/{}/{}", r.kind, r.namespace, r.name))
                .collect();
            let reason_changed = was.as_ref().is_none_or(|w| w.reason != now.reason);
            (reason_changed || !fresh.is_empty()).then(|| Planned {
                warning: true,
                reason: now.reason.clone(),
                note: if fresh.is_empty() || was.is_none() {
                    note(&now)
                } else {
                    let mut n = format!(
                        "Exposed=True: newly {}; {}",
                        fresh.join(", "),
                        now.message
                    );
                    n.truncate(1000);
                    n
                },
            })
        }
        None => was.map(|w| Planned {
            warning: false,
            reason: EXPOSURE_CLEARED.to_string(),
            note: format!(
                "no longer exposed: nothing that is not the Runtime's own reaches or runs as its pods (was {})",
                w.reason
            ),
        }),
    }
}

/// Publishes the planned Events; failures are logged, never retried.
pub async fn publish(
    ctx: &Context,
    runtime: &Runtime,
    old: Option<&RuntimeStatus>,
    new: &RuntimeStatus,
) {
    send(ctx, runtime, plan(old, new)).await;
}

/// One Warning per Job planted at a one-time job's name and deleted:
/// which Job, and what told it from berth's.
pub async fn planted_jobs(ctx: &Context, runtime: &Runtime, planted: &[super::apply::Planted]) {
    let events = planted
        .iter()
        .map(|p| {
            let mut note = format!(
                "Job {} at a one-time job's name is not the one berth created ({}); deleted: it is not taken as run",
                p.job,
                p.differences.join(", ")
            );
            note.truncate(1000);
            Planned {
                warning: true,
                reason: PLANTED_JOB.to_string(),
                note,
            }
        })
        .collect();
    send(ctx, runtime, events).await;
}

async fn send(ctx: &Context, runtime: &Runtime, events: Vec<Planned>) {
    let reference = runtime.object_ref(&());
    for planned in events {
        let event = Event {
            type_: if planned.warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: planned.reason,
            note: Some(planned.note),
            action: "Reconcile".to_string(),
            secondary: None,
        };
        match ctx.access.recorder.publish(&event, &reference).await {
            Ok(()) => ctx.record.metrics.write("Event", "create"),
            Err(e) => tracing::warn!(error = %e, "publishing event failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(t: &str, s: &str, r: &str) -> Condition {
        Condition {
            status: s.into(),
            ..berth_shared::api::condition::unknown(t, r, "")
        }
    }

    fn status(conditions: &[(&str, &str, &str)]) -> RuntimeStatus {
        RuntimeStatus {
            conditions: conditions.iter().map(|(t, s, r)| c(t, s, r)).collect(),
            ..Default::default()
        }
    }

    fn healthy() -> RuntimeStatus {
        status(&[
            (ct::PROFILE_GRANTED, "True", "Granted"),
            (ct::HANDLER_READY, "True", "HandlerPresent"),
            (ct::PROGRESSING, "False", "RolloutComplete"),
            (ct::READY, "True", "AsExpected"),
            (ct::DEGRADED, "False", "AsExpected"),
            (ct::BLOCKED, "False", "AsExpected"),
            (ct::UPGRADING, "False", "ImageCurrent"),
        ])
    }

    fn rolling_out() -> RuntimeStatus {
        status(&[
            (ct::PROFILE_GRANTED, "True", "Granted"),
            (ct::HANDLER_READY, "True", "HandlerPresent"),
            (ct::PROGRESSING, "True", "RollingOut"),
            (ct::READY, "False", "RollingOut"),
            (ct::DEGRADED, "False", "AsExpected"),
            (ct::BLOCKED, "False", "AsExpected"),
            (ct::UPGRADING, "False", "ImageCurrent"),
        ])
    }

    fn blocked(reason: &str) -> RuntimeStatus {
        status(&[
            (ct::PROFILE_GRANTED, "False", reason),
            (ct::HANDLER_READY, "False", reason),
            (ct::PROGRESSING, "False", reason),
            (ct::READY, "False", reason),
            (ct::DEGRADED, "False", "AsExpected"),
            (ct::BLOCKED, "True", reason),
            (ct::UPGRADING, "False", "ImageCurrent"),
        ])
    }

    fn kinds(events: &[Planned]) -> Vec<(bool, &str)> {
        events
            .iter()
            .map(|e| (e.warning, e.reason.as_str()))
            .collect()
    }

    #[test]
    fn a_new_runtime_rolling_out_raises_nothing() {
        assert!(plan(None, &rolling_out()).is_empty());
        assert!(plan(Some(&rolling_out()), &healthy()).is_empty());
        assert!(plan(None, &healthy()).is_empty());
        assert!(plan(Some(&healthy()), &healthy()).is_empty());
        // Ready going back to rolling out (a scale, a config change) is
        // not trouble either.
        assert!(plan(Some(&healthy()), &rolling_out()).is_empty());
    }

    #[test]
    fn entering_trouble_is_one_warning_however_many_conditions_say_so() {
        assert_eq!(
            kinds(&plan(None, &blocked("NotGranted"))),
            [(true, "NotGranted")]
        );
        assert_eq!(
            kinds(&plan(Some(&healthy()), &blocked("Revoked"))),
            [(true, "Revoked")]
        );
        // Staying in the same trouble is quiet; a new reason is news.
        assert!(plan(Some(&blocked("Revoked")), &blocked("Revoked")).is_empty());
        assert_eq!(
            kinds(&plan(Some(&blocked("Revoked")), &blocked("ClassMissing"))),
            [(true, "ClassMissing")]
        );
    }

    #[test]
    fn each_bad_state_is_trouble() {
        let mut cases = Vec::new();
        let mut bad = vec![
            (ct::DEGRADED, "True", "Conflict"),
            (ct::DEGRADED, "True", "DependencyNotOwned"),
            (ct::PROFILE_GRANTED, "False", "ClassMissing"),
            (ct::HANDLER_READY, "False", "HandlerAbsent"),
            (ct::HANDLER_READY, "False", "PlacementIncomplete"),
            (ct::PROGRESSING, "False", "ProgressDeadlineExceeded"),
        ];
        // Each failed apply step is its own Warning reason.
        bad.extend(reasons::APPLY_FAILURES.map(|r| (ct::DEGRADED, "True", r)));
        for (t, s, r) in bad {
            let mut st = healthy();
            for cond in &mut st.conditions {
                if cond.type_ == t {
                    cond.status = s.into();
                    cond.reason = r.into();
                }
            }
            cases.push((st, r));
        }
        for (st, reason) in cases {
            assert_eq!(
                kinds(&plan(Some(&healthy()), &st)),
                [(true, reason)],
                "{reason}"
            );
            assert_eq!(
                kinds(&plan(Some(&st), &healthy())),
                [(false, RECOVERED)],
                "{reason}"
            );
        }
    }

    fn exposed(mut st: RuntimeStatus, reason: &str, objects: &[&str]) -> RuntimeStatus {
        st.conditions.push(c(ct::EXPOSED, "True", reason));
        st.exposure = objects
            .iter()
            .map(|n| berth_shared::api::ExposureRef {
                kind: "Service".into(),
                namespace: "team".into(),
                name: n.to_string(),
                reason: reason.into(),
            })
            .collect();
        st
    }

    fn unexposed(mut st: RuntimeStatus) -> RuntimeStatus {
        st.conditions.push(c(ct::EXPOSED, "False", "AsExpected"));
        st
    }

    #[test]
    fn exposure_warns_for_each_new_object_even_in_trouble_and_clears_once() {
        let quiet = unexposed(healthy());
        let one = exposed(healthy(), reasons::FOREIGN_SERVICE, &["a"]);
        let two = exposed(healthy(), reasons::FOREIGN_SERVICE, &["a", "b"]);
        assert!(plan(Some(&quiet), &quiet).is_empty());
        assert_eq!(
            kinds(&plan(Some(&quiet), &one)),
            [(true, reasons::FOREIGN_SERVICE)]
        );
        assert_eq!(
            kinds(&plan(None, &one)),
            [(true, reasons::FOREIGN_SERVICE)],
            "exposed from the first status"
        );
        assert!(
            plan(Some(&one), &one).is_empty(),
            "staying exposed is quiet"
        );
        let more = plan(Some(&one), &two);
        assert_eq!(kinds(&more), [(true, reasons::FOREIGN_SERVICE)]);
        assert!(
            more[0].note.contains("newly Service/team/b"),
            "{}",
            more[0].note
        );
        assert!(plan(Some(&two), &one).is_empty(), "one going is no news");
        assert_eq!(
            kinds(&plan(Some(&two), &quiet)),
            [(false, EXPOSURE_CLEARED)]
        );
        // A Runtime already in trouble still warns of its exposure.
        let in_trouble = unexposed(blocked("Revoked"));
        let both = exposed(blocked("Revoked"), reasons::ORPHANED, &["web-1"]);
        assert_eq!(
            kinds(&plan(Some(&in_trouble), &both)),
            [(true, reasons::ORPHANED)]
        );
        // An older agent's status without the condition: exposed is news.
        assert_eq!(
            kinds(&plan(Some(&healthy()), &one)),
            [(true, reasons::FOREIGN_SERVICE)]
        );
    }

    #[test]
    fn upgrades_are_normal_events_and_upgrading_false_is_never_a_warning() {
        let mut upgrading = healthy();
        for cond in &mut upgrading.conditions {
            if cond.type_ == ct::UPGRADING {
                cond.status = "True".into();
                cond.reason = "ImageChanging".into();
            }
        }
        assert_eq!(
            kinds(&plan(Some(&healthy()), &upgrading)),
            [(false, "ImageChanging")]
        );
        assert_eq!(
            kinds(&plan(Some(&upgrading), &healthy())),
            [(false, "ImageCurrent")]
        );
        assert!(plan(None, &upgrading).is_empty());
    }

    #[test]
    fn a_changed_job_running_again_is_a_normal_event() {
        let run = |hash: &str| berth_shared::api::JobRunStatus {
            name: "migrate".into(),
            job: "web-job-migrate".into(),
            template_hash: hash.into(),
            uid: None,
        };
        let mut before = healthy();
        before.jobs = vec![run("a")];
        let mut after = healthy();
        after.jobs = vec![run("b")];
        assert_eq!(kinds(&plan(Some(&before), &after)), [(false, JOB_RERUN)]);
        assert!(plan(Some(&before), &before).is_empty());
        // The first run of a new Runtime's job is expected: no Event.
        assert!(plan(Some(&healthy()), &before).is_empty());
        // A record moved from the whole-Job hash (20 hex) to the definition
        // hash (16 hex) by an upgraded agent ran nothing again: no Event.
        before.jobs = vec![run(&"a".repeat(20))];
        after.jobs = vec![run(&"b".repeat(16))];
        assert!(plan(Some(&before), &after).is_empty());
    }
}
