//! Which canaries are due: for every granted class and every node that
//! reports its handler and is not skipped, one when it never ran (or what
//! it checks changed), and again once a period has passed since the last;
//! never two at once for one (class, node), and at most
//! [`Policy::max_active`] at a time in all.
//!
//! The budget ([`Policy::budget_per_hour`]) caps canary launches across
//! the cluster: at most that many in any hour, and at most a burst
//! ([`Policy::burst`]) in any [`Policy::burst_window_seconds`], so a spent
//! budget frees a little at a time rather than once an hour. Rather than
//! starve some pairs, it stretches every pair's period alike to
//! [`Cadence::effective_period_seconds`] = max(period, pairs × 3600 /
//! budget): what the budget can carry, each pair in turn, the longest ago
//! first. A change (a pair never run, or whose subject changed) is still
//! due at once and goes first, and counts against the budget like any
//! other launch. Launches are counted from the canary Jobs' own creation
//! times and the agent's own launches ([`Started`]), so a restarted or new
//! leader keeps to the same budget.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use k8s_openapi::jiff::Timestamp;

use super::expect::{CanaryClass, CanaryNode};
use super::job::subject;
use super::record::{CanaryRecord, Outcome};

/// How the agent runs canaries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Why canaries are off (`None`: they run).
    pub off: Option<String>,
    /// The agent's own image (what canaries run).
    pub image: String,
    /// Seconds between two canaries of one (class, node).
    pub period_seconds: i64,
    /// Most canary Jobs unfinished at once.
    pub max_active: usize,
    /// The pod's `activeDeadlineSeconds`.
    pub deadline_seconds: i64,
    /// Most canary launches in any hour, cluster-wide (`None`: no cap).
    pub budget_per_hour: Option<u32>,
}

/// The budget's long window: launches are capped per hour.
pub const BUDGET_WINDOW_SECONDS: i64 = 3600;

impl Policy {
    /// Most launches within [`Self::burst_window_seconds`]: the
    /// concurrency cap, and never more than the budget itself.
    pub fn burst(&self) -> Option<usize> {
        let budget = usize::try_from(self.budget_per_hour?).unwrap_or(usize::MAX);
        Some(self.max_active.min(budget).max(1))
    }

    /// The budget's short window: the time the budget takes to earn a
    /// burst back (`burst × 3600 / budget`, rounded up).
    pub fn burst_window_seconds(&self) -> Option<i64> {
        let budget = i64::from(self.budget_per_hour?.max(1));
        let burst = i64::try_from(self.burst()?).unwrap_or(i64::MAX);
        Some((burst.saturating_mul(BUDGET_WINDOW_SECONDS) + budget - 1) / budget)
    }

    /// The cadence of `pairs` (class, node) pairs under this policy.
    pub fn cadence_of(&self, pairs: usize) -> Cadence {
        let stretched = self.budget_per_hour.map_or(0, |budget| {
            let pairs = i64::try_from(pairs).unwrap_or(i64::MAX);
            let budget = i64::from(budget.max(1));
            (pairs.saturating_mul(BUDGET_WINDOW_SECONDS) + budget - 1) / budget
        });
        Cadence {
            pairs,
            effective_period_seconds: self.period_seconds.max(stretched),
        }
    }

    /// The cadence of these classes and nodes ([`attestable`] pairs).
    pub fn cadence(&self, classes: &[CanaryClass], nodes: &[CanaryNode]) -> Cadence {
        self.cadence_of(attestable(classes, nodes).count())
    }

    /// `ttlSecondsAfterFinished` of a canary Job at `cadence`: three
    /// effective periods, so that a restarted agent still finds each
    /// node's last evidence, and at least the budget's window, so that it
    /// still counts the last hour's launches.
    pub fn ttl_seconds(&self, cadence: &Cadence) -> i64 {
        let window = if self.budget_per_hour.is_some() {
            BUDGET_WINDOW_SECONDS
        } else {
            0
        };
        cadence
            .effective_period_seconds
            .saturating_mul(3)
            .max(window)
    }
}

/// How often each pair is attested.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cadence {
    /// The (class, node) pairs canaries attest.
    pub pairs: usize,
    /// Seconds between two canaries of one pair: the period, stretched so
    /// that every pair fits the budget.
    pub effective_period_seconds: i64,
}

/// A canary this agent started: the budget counts it even before its Job
/// is cached, and after its Job is gone (deleted by someone else).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Started {
    /// The Job's name.
    pub job: String,
    /// When it was created.
    pub at: Timestamp,
}

/// The (class, node) pairs canaries attest: valid classes on the nodes
/// that report their handler and are not skipped.
pub fn attestable<'a>(
    classes: &'a [CanaryClass],
    nodes: &'a [CanaryNode],
) -> impl Iterator<Item = (&'a CanaryClass, &'a CanaryNode)> + 'a {
    classes
        .iter()
        .filter(|c| c.invalid.is_none())
        .flat_map(move |class| {
            nodes
                .iter()
                .filter(|n| n.info.reports(&class.handler) && n.skip_reason().is_none())
                .map(move |node| (class, node))
        })
}

/// Launches within the last `window` seconds before `now`: the Jobs seen
/// and this agent's own launches, each Job once.
fn launched_within(
    records: &[CanaryRecord],
    started: &[Started],
    window: i64,
    now: Timestamp,
) -> usize {
    let since = now.as_second().saturating_sub(window);
    let seen = records
        .iter()
        .filter_map(|r| r.created.map(|t| (r.job.as_str(), t)));
    let own = started.iter().map(|s| (s.job.as_str(), s.at));
    seen.chain(own)
        .filter(|(_, t)| t.as_second() > since)
        .map(|(job, _)| job)
        .collect::<std::collections::HashSet<&str>>()
        .len()
}

/// How many launches the budget allows now (`usize::MAX`: no budget).
pub fn budget_room(
    records: &[CanaryRecord],
    started: &[Started],
    policy: &Policy,
    now: Timestamp,
) -> usize {
    let (Some(budget), Some(burst), Some(window)) = (
        policy.budget_per_hour,
        policy.burst(),
        policy.burst_window_seconds(),
    ) else {
        return usize::MAX;
    };
    let budget = usize::try_from(budget).unwrap_or(usize::MAX);
    let hour = launched_within(records, started, BUDGET_WINDOW_SECONDS, now);
    let short = launched_within(records, started, window, now);
    budget.saturating_sub(hour).min(burst.saturating_sub(short))
}

/// One canary to start.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// The class.
    pub class: CanaryClass,
    /// The node.
    pub node: CanaryNode,
    /// What it checks ([`subject`]).
    pub subject: String,
}

/// Up to a tenth of the period, fixed per (class, node): canaries of many
/// nodes that first ran together do not stay in step.
pub fn spread(class: &str, node: &str, period_seconds: i64) -> i64 {
    let tenth = (period_seconds / 10).max(1);
    let mut h = DefaultHasher::new();
    (class, node).hash(&mut h);
    i64::try_from(h.finish() % u64::try_from(tenth).unwrap_or(1)).unwrap_or(0)
}

/// The canaries due now, most urgent first (never run or changed, then
/// failing, then the longest ago), within the cap on unfinished canaries
/// and the budget; each pair once per effective period
/// ([`Policy::cadence`]). `started`: this agent's own launches of the last
/// hour (the budget counts them with the Jobs in `records`).
pub fn due(
    classes: &[CanaryClass],
    nodes: &[CanaryNode],
    records: &[CanaryRecord],
    started: &[Started],
    policy: &Policy,
    now: Timestamp,
) -> Vec<Launch> {
    if policy.off.is_some() {
        return Vec::new();
    }
    let active = records.iter().filter(|r| !r.finished()).count();
    let room = policy
        .max_active
        .saturating_sub(active)
        .min(budget_room(records, started, policy, now));
    if room == 0 {
        return Vec::new();
    }
    let period = policy.cadence(classes, nodes).effective_period_seconds;
    let mut by_pair: HashMap<(&str, &str), Vec<&CanaryRecord>> = HashMap::new();
    for r in records {
        by_pair
            .entry((r.class.as_str(), r.node.as_str()))
            .or_default()
            .push(r);
    }
    // (urgency, last created second, launch)
    let mut wanted: Vec<(u8, i64, Launch)> = Vec::new();
    for (class, node) in attestable(classes, nodes) {
        let of_pair = by_pair
            .get(&(class.name.as_str(), node.name()))
            .map_or(&[][..], Vec::as_slice);
        if of_pair.iter().any(|r| !r.finished()) {
            continue;
        }
        let current = subject(class, node, &policy.image);
        let last = of_pair
            .iter()
            .filter(|r| r.subject == current)
            .max_by_key(|r| r.created);
        let launch = || Launch {
            class: class.clone(),
            node: node.clone(),
            subject: current.clone(),
        };
        match last {
            None => wanted.push((0, i64::MIN, launch())),
            Some(r) => {
                let created = r.created.map_or(i64::MIN, |t| t.as_second());
                let next = created.saturating_add(period).saturating_add(spread(
                    &class.name,
                    node.name(),
                    period,
                ));
                if now.as_second() >= next {
                    let failing = matches!(r.outcome, Outcome::Failed { .. });
                    wanted.push((if failing { 1 } else { 2 }, created, launch()));
                }
            }
        }
    }
    wanted.sort_by(|a, b| {
        (a.0, a.1, &a.2.class.name, a.2.node.name()).cmp(&(
            b.0,
            b.1,
            &b.2.class.name,
            b.2.node.name(),
        ))
    });
    wanted.into_iter().take(room).map(|(_, _, l)| l).collect()
}
