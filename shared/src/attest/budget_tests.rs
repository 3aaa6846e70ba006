//! The canary budget (`plan`): a cap on launches per hour that stretches
//! every pair's period alike, played over hours of simulated time.

use std::collections::BTreeMap;

use super::job::job_name;
use super::plan::{BUDGET_WINDOW_SECONDS, budget_room};
use super::tests::{at, class, node, policy};
use super::*;

/// A canary's run time in the simulation: it finishes this long after
/// its Job is created.
const RUN_SECONDS: i64 = 10;
/// The scheduler's tick.
const TICK: i64 = 5;

/// Two classes on `n` nodes each reporting both handlers: `2 × n` pairs.
fn world(n: usize) -> (Vec<CanaryClass>, Vec<CanaryNode>) {
    let classes = vec![class("gvisor", "runsc"), class("plain", "runc")];
    let nodes = (0..n)
        .map(|i| node(&format!("n{i:03}"), &["runsc", "runc"]))
        .collect();
    (classes, nodes)
}

/// Every launch of an agent running `policy` over `classes` and `nodes`
/// from second 0 to `until`: the records its Jobs say (finished
/// [`RUN_SECONDS`] after creation, gone after the policy's TTL), its own
/// ledger of the last hour, `due` at each tick. `nodes_at` may change the
/// nodes over time.
fn simulate(
    classes: &[CanaryClass],
    nodes_at: &dyn Fn(i64) -> Vec<CanaryNode>,
    p: &Policy,
    until: i64,
) -> Vec<CanaryRecord> {
    let mut all: Vec<CanaryRecord> = Vec::new();
    let mut t = 0;
    while t <= until {
        let nodes = nodes_at(t);
        let ttl = p.ttl_seconds(&p.cadence(classes, &nodes));
        let records: Vec<CanaryRecord> = all
            .iter()
            .filter(|r| {
                let created = r.created.expect("created").as_second();
                created + RUN_SECONDS + ttl > t
            })
            .map(|r| {
                let created = r.created.expect("created").as_second();
                let mut r = r.clone();
                if created + RUN_SECONDS <= t {
                    r.outcome = Outcome::Passed {
                        at: Some(at(created + RUN_SECONDS)),
                    };
                }
                r
            })
            .collect();
        let started: Vec<Started> = all
            .iter()
            .filter_map(|r| r.created.map(|c| (r, c)))
            .filter(|(_, c)| c.as_second() > t - BUDGET_WINDOW_SECONDS)
            .map(|(r, c)| Started {
                job: r.job.clone(),
                at: c,
            })
            .collect();
        for l in due(classes, &nodes, &records, &started, p, at(t)) {
            all.push(CanaryRecord {
                job: job_name(&l.class.name, l.node.name(), t),
                class: l.class.name.clone(),
                node: l.node.name().into(),
                subject: l.subject.clone(),
                created: Some(at(t)),
                outcome: Outcome::Running,
            });
        }
        t += TICK;
    }
    all
}

fn created(r: &CanaryRecord) -> i64 {
    r.created.expect("created").as_second()
}

/// Most launches within any `window` seconds.
fn most_within(all: &[CanaryRecord], window: i64) -> usize {
    let times: Vec<i64> = all.iter().map(created).collect();
    times
        .iter()
        .map(|&end| {
            times
                .iter()
                .filter(|&&s| s > end - window && s <= end)
                .count()
        })
        .max()
        .unwrap_or(0)
}

/// Each pair's launch times, in order.
fn by_pair(all: &[CanaryRecord]) -> BTreeMap<(String, String), Vec<i64>> {
    let mut out: BTreeMap<(String, String), Vec<i64>> = BTreeMap::new();
    for r in all {
        out.entry((r.class.clone(), r.node.clone()))
            .or_default()
            .push(created(r));
    }
    out
}

fn budgeted(per_hour: u32) -> Policy {
    Policy {
        budget_per_hour: Some(per_hour),
        ..policy()
    }
}

#[test]
fn the_effective_period_fits_every_pair_in_the_budget() {
    let p = budgeted(360);
    // S: 20 classes × 200 nodes.
    assert_eq!(p.cadence_of(4000).effective_period_seconds, 40_000);
    // Few pairs: the period itself.
    assert_eq!(p.cadence_of(10).effective_period_seconds, 600);
    assert_eq!(p.cadence_of(60).effective_period_seconds, 600);
    assert_eq!(p.cadence_of(61).effective_period_seconds, 610);
    assert_eq!(policy().cadence_of(4000).effective_period_seconds, 600);
    // The burst: the concurrency cap (4), earned back in 4 × 3600 / 360.
    assert_eq!((p.burst(), p.burst_window_seconds()), (Some(4), Some(40)));
    // A budget below the burst: the budget itself, once an hour.
    let tiny = budgeted(2);
    assert_eq!(
        (tiny.burst(), tiny.burst_window_seconds()),
        (Some(2), Some(3600))
    );
    // Jobs outlive the budget's hour, so a new leader counts them.
    assert_eq!(p.ttl_seconds(&p.cadence_of(10)), 3600);
    assert_eq!(p.ttl_seconds(&p.cadence_of(4000)), 120_000);
    assert_eq!(policy().ttl_seconds(&policy().cadence_of(10)), 1800);
}

#[test]
fn the_budget_caps_launches_every_hour_and_every_pair_still_gets_its_turn() {
    // 100 pairs at a 600 s period want 600 launches an hour; 60 allowed.
    let (classes, nodes) = world(50);
    let p = budgeted(60);
    let cadence = p.cadence(&classes, &nodes);
    assert_eq!(
        (cadence.pairs, cadence.effective_period_seconds),
        (100, 6000)
    );
    let hours = 8;
    let all = simulate(&classes, &|_| nodes.clone(), &p, hours * 3600);

    // Never more than the budget in any hour, nor the burst in its window.
    assert!(most_within(&all, 3600) <= 60, "{}", most_within(&all, 3600));
    assert!(most_within(&all, 240) <= 4, "{}", most_within(&all, 240));
    // And the budget is used, not wasted: close to 60 an hour.
    let per_hour = all.len() as f64 / hours as f64;
    assert!(per_hour > 50.0, "{per_hour} an hour");

    // Every pair, none starved: each first ran within the first two hours
    // (100 pairs at 60 an hour), then again about once per effective
    // period, never much later.
    let pairs = by_pair(&all);
    assert_eq!(pairs.len(), 100);
    for (pair, times) in &pairs {
        assert!(times[0] <= 2 * 3600, "{pair:?} first ran at {}", times[0]);
        let gaps: Vec<i64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            gaps.iter().all(|g| (6000..=6000 + 600 + 600).contains(g)),
            "{pair:?}: {gaps:?}"
        );
        assert!(times.len() >= 4, "{pair:?}: {times:?}");
    }

    // Without a budget the same world launches ten times as many.
    let free = simulate(&classes, &|_| nodes.clone(), &policy(), 2 * 3600);
    let free_per_hour = free.len() as f64 / 2.0;
    assert!(
        free_per_hour > 8.0 * per_hour,
        "{free_per_hour} vs {per_hour}"
    );
}

#[test]
fn a_change_goes_first_and_counts_against_the_budget() {
    let (classes, mut nodes) = world(50);
    let p = budgeted(60);
    let joined = 3 * 3600 + 7;
    let mut newcomer = node("z-new", &["runsc", "runc"]);
    newcomer.kernel = Some("6.12.0".into());
    let before = nodes.clone();
    nodes.push(newcomer);
    let all = simulate(
        &classes,
        &|t| {
            if t < joined {
                before.clone()
            } else {
                nodes.clone()
            }
        },
        &p,
        4 * 3600,
    );
    // Its two pairs run within one burst window of its joining, though
    // the budget is spent on the periodic canaries of the others.
    let firsts: Vec<i64> = all
        .iter()
        .filter(|r| r.node == "z-new")
        .map(created)
        .collect();
    assert_eq!(firsts.len(), 2, "{firsts:?}");
    assert!(
        firsts
            .iter()
            .all(|&t| t >= joined && t <= joined + 240 + TICK),
        "{firsts:?}"
    );
    // … and the budget still holds across the change.
    assert!(most_within(&all, 3600) <= 60);
}

#[test]
fn the_budget_counts_jobs_a_new_leader_sees_and_launches_whose_jobs_are_gone() {
    let c = class("gvisor", "runsc");
    let n = node("a", &["runsc"]);
    let p = budgeted(360);
    let job = |s: i64| CanaryRecord {
        job: job_name(&c.name, n.name(), s),
        class: c.name.clone(),
        node: n.name().into(),
        subject: String::new(),
        created: Some(at(s)),
        outcome: Outcome::Passed {
            at: Some(at(s + 5)),
        },
    };
    // A new leader (no ledger) sees four Jobs of the last 40 s: no room.
    let seen: Vec<CanaryRecord> = (0..4).map(|i| job(1000 + i)).collect();
    assert_eq!(budget_room(&seen, &[], &p, at(1010)), 0);
    // The same four, their Jobs deleted, in this agent's ledger: no room.
    let own: Vec<Started> = seen
        .iter()
        .map(|r| Started {
            job: r.job.clone(),
            at: r.created.expect("created"),
        })
        .collect();
    assert_eq!(budget_room(&[], &own, &p, at(1010)), 0);
    // Seen and in the ledger: counted once.
    assert_eq!(budget_room(&seen[..2], &own[..2], &p, at(1010)), 2);
    // Once the burst window has passed, room again.
    assert_eq!(budget_room(&seen, &own, &p, at(1045)), 4);
    // The hour: 360 in it, none more however long ago the burst.
    let hour: Vec<CanaryRecord> = (0..360).map(|i| job(i * 5)).collect();
    assert_eq!(budget_room(&hour, &[], &p, at(1799)), 0);
    assert_eq!(budget_room(&hour, &[], &p, at(3600)), 1);
    // No budget: no cap from it.
    assert_eq!(budget_room(&hour, &[], &policy(), at(1799)), usize::MAX);
}

#[test]
fn the_status_shows_the_effective_period_and_the_budget() {
    let (classes, nodes) = world(50);
    let p = budgeted(60);
    let cadence = p.cadence(&classes, &nodes);
    let s = attest_class(&classes[0], &nodes, &[], &p).status(&p, &cadence);
    assert_eq!(s.period_seconds, 600);
    assert_eq!(s.effective_period_seconds, Some(6000));
    assert_eq!(s.budget_per_hour, Some(60));
    let off = Policy {
        off: Some("off".into()),
        ..p
    };
    let s = attest_class(&classes[0], &nodes, &[], &off).status(&off, &cadence);
    assert_eq!(s.effective_period_seconds, None);
}
