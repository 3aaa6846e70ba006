//! Which canaries are due: for every granted class and every node that
//! reports its handler and is not skipped, one when it never ran (or what
//! it checks changed), and again once a period has passed since the last;
//! never two at once for one (class, node), and at most
//! [`Policy::max_active`] at a time in all.

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

/// The canaries due now, most urgent first (never run, then failing,
/// then the longest ago), within the cap on unfinished canaries.
pub fn due(
    classes: &[CanaryClass],
    nodes: &[CanaryNode],
    records: &[CanaryRecord],
    policy: &Policy,
    now: Timestamp,
) -> Vec<Launch> {
    if policy.off.is_some() {
        return Vec::new();
    }
    let active = records.iter().filter(|r| !r.finished()).count();
    let room = policy.max_active.saturating_sub(active);
    if room == 0 {
        return Vec::new();
    }
    // (urgency, last created second, launch)
    let mut wanted: Vec<(u8, i64, Launch)> = Vec::new();
    for class in classes.iter().filter(|c| c.invalid.is_none()) {
        for node in nodes
            .iter()
            .filter(|n| n.info.reports(&class.handler) && n.skip_reason().is_none())
        {
            let of_pair: Vec<&CanaryRecord> = records
                .iter()
                .filter(|r| r.class == class.name && r.node == node.name())
                .collect();
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
                    let next = created
                        .saturating_add(policy.period_seconds)
                        .saturating_add(spread(&class.name, node.name(), policy.period_seconds));
                    if now.as_second() >= next {
                        let failing = matches!(r.outcome, Outcome::Failed { .. });
                        wanted.push((if failing { 1 } else { 2 }, created, launch()));
                    }
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
