//! Labels and label selectors kept as keyed hashes (issue 52): what the
//! agent keeps of someone else's Service, NetworkPolicy or EndpointSlice
//! is a few `u64`s per label, never the strings, and never more than a
//! fixed number of them ([`Budget`]): the memory of a foreign object does
//! not grow with what its owner puts in it.
//!
//! The hashes are keyed with a [`RandomState`] made once per process, so
//! no one can aim a label at another's hash. A collision (2^-64 per pair)
//! can only make two different labels look alike: it can make a selector
//! look as if it selected a pod it does not (a report too many), or make
//! a foreign peer look narrower than it is (a report too few); with a
//! secret key neither can be aimed.

use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasher, RandomState};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// The keyed hash of label keys and `key=value` pairs. One instance must
/// hash both sides of a comparison; cloning keeps the key.
#[derive(Clone, Debug, Default)]
pub struct LabelHashes(RandomState);

impl LabelHashes {
    /// A label key.
    pub fn key(&self, key: &str) -> u64 {
        self.0.hash_one((0u8, key))
    }

    /// A `key=value` pair.
    pub fn pair(&self, key: &str, value: &str) -> u64 {
        self.0.hash_one((1u8, key, value))
    }

    /// A pod name's generated prefix in a namespace (see
    /// [`super::endpoint_slice`]).
    pub fn target(&self, namespace: &str, base: &str) -> u64 {
        self.0.hash_one((2u8, namespace, base))
    }

    /// Every pair of a label map.
    pub fn pairs(&self, labels: &BTreeMap<String, String>) -> Vec<u64> {
        labels.iter().map(|(k, v)| self.pair(k, v)).collect()
    }

    /// A label set, as a selector is matched against it.
    pub fn labels(&self, labels: &BTreeMap<String, String>) -> HashedLabels {
        HashedLabels {
            keys: labels.keys().map(|k| self.key(k)).collect(),
            pairs: labels.iter().map(|(k, v)| self.pair(k, v)).collect(),
        }
    }
}

/// One object's labels, hashed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HashedLabels {
    keys: HashSet<u64>,
    pairs: HashSet<u64>,
}

impl HashedLabels {
    /// Whether the labels hold this pair.
    pub fn has_pair(&self, pair: u64) -> bool {
        self.pairs.contains(&pair)
    }

    /// Whether the labels hold every one of `pairs`.
    pub fn has_all(&self, pairs: &[u64]) -> bool {
        pairs.iter().all(|p| self.pairs.contains(p))
    }
}

/// How many hashes one foreign object may keep. Each label pair, key or
/// value of a selector, peer and port takes one; an object that needs more
/// is kept as "too large" and judged conservatively by the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget(usize);

impl Budget {
    /// A budget of `n` hashes.
    pub const fn new(n: usize) -> Self {
        Budget(n)
    }

    /// Takes `n`; `false` (taking nothing) when fewer are left.
    pub fn take(&mut self, n: usize) -> bool {
        match self.0.checked_sub(n) {
            Some(left) => {
                self.0 = left;
                true
            }
            None => false,
        }
    }
}

/// A match expression's operator (the apiserver admits only these four in
/// the selectors berth reads; anything else is kept as `Unknown` and
/// matches, conservatively, everything).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Expr {
    op: Op,
    key: u64,
    /// The `key=value` pair of each value.
    values: Box<[u64]>,
}

/// A label selector (`matchLabels` and `matchExpressions`), hashed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashedSelector {
    /// `matchLabels`, and each `key In [one value]`: pairs every selected
    /// object carries.
    required: Box<[u64]>,
    /// Every other expression.
    exprs: Box<[Expr]>,
}

impl HashedSelector {
    /// The selector hashed, or `None` when it does not fit in `budget`.
    pub fn of(selector: &LabelSelector, h: &LabelHashes, budget: &mut Budget) -> Option<Self> {
        let mut required = Vec::new();
        let mut exprs = Vec::new();
        for (k, v) in selector.match_labels.iter().flatten() {
            if !budget.take(1) {
                return None;
            }
            required.push(h.pair(k, v));
        }
        for e in selector.match_expressions.iter().flatten() {
            let values = e.values.as_deref().unwrap_or_default();
            if !budget.take(1 + values.len()) {
                return None;
            }
            let op = match e.operator.as_str() {
                "In" => Op::In,
                "NotIn" => Op::NotIn,
                "Exists" => Op::Exists,
                "DoesNotExist" => Op::DoesNotExist,
                _ => Op::Unknown,
            };
            if op == Op::In && values.len() == 1 {
                required.push(h.pair(&e.key, &values[0]));
                continue;
            }
            exprs.push(Expr {
                op,
                key: h.key(&e.key),
                values: values.iter().map(|v| h.pair(&e.key, v)).collect(),
            });
        }
        Some(HashedSelector {
            required: required.into(),
            exprs: exprs.into(),
        })
    }

    /// Whether an object with `labels` is selected. `In` with no value
    /// selects nothing, as the apiserver's own selectors do.
    pub fn matches(&self, labels: &HashedLabels) -> bool {
        labels.has_all(&self.required)
            && self.exprs.iter().all(|e| match e.op {
                Op::In => e.values.iter().any(|v| labels.pairs.contains(v)),
                Op::NotIn => !e.values.iter().any(|v| labels.pairs.contains(v)),
                Op::Exists => labels.keys.contains(&e.key),
                Op::DoesNotExist => !labels.keys.contains(&e.key),
                Op::Unknown => true,
            })
    }

    /// Whether everything this selector selects carries every one of
    /// `pairs` (so it selects no more than a `matchLabels` of `pairs`
    /// does): provable when `pairs` are among its required pairs, since
    /// every further term only narrows it.
    pub fn requires_all(&self, pairs: &[u64]) -> bool {
        pairs.iter().all(|p| self.required.contains(p))
    }

    /// Whether the selector requires this one pair.
    pub fn requires(&self, pair: u64) -> bool {
        self.required.contains(&pair)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        }
    }

    fn selector(labels: &[(&str, &str)], exprs: Vec<LabelSelectorRequirement>) -> LabelSelector {
        LabelSelector {
            match_labels: (!labels.is_empty()).then(|| map(labels)),
            match_expressions: (!exprs.is_empty()).then_some(exprs),
        }
    }

    #[test]
    fn a_selector_matches_as_the_apiserver_matches() {
        let h = LabelHashes::default();
        let pod = h.labels(&map(&[("app", "web"), ("tier", "front")]));
        let mut b = Budget::new(100);
        let yes = [
            selector(&[], vec![]),
            selector(&[("app", "web")], vec![]),
            selector(&[], vec![expr("app", "In", &["web", "api"])]),
            selector(&[], vec![expr("app", "NotIn", &["api"])]),
            selector(&[], vec![expr("absent", "NotIn", &["x"])]),
            selector(&[], vec![expr("tier", "Exists", &[])]),
            selector(&[], vec![expr("absent", "DoesNotExist", &[])]),
            selector(&[], vec![expr("app", "Gt", &["1"])]),
        ];
        let no = [
            selector(&[("app", "api")], vec![]),
            selector(&[("app", "web"), ("x", "y")], vec![]),
            selector(&[], vec![expr("app", "In", &["api"])]),
            selector(&[], vec![expr("app", "In", &[])]),
            selector(&[], vec![expr("app", "NotIn", &["web"])]),
            selector(&[], vec![expr("absent", "Exists", &[])]),
            selector(&[], vec![expr("tier", "DoesNotExist", &[])]),
        ];
        for s in yes {
            let hs = HashedSelector::of(&s, &h, &mut b).expect("fits");
            assert!(hs.matches(&pod), "{s:?}");
        }
        for s in no {
            let hs = HashedSelector::of(&s, &h, &mut b).expect("fits");
            assert!(!hs.matches(&pod), "{s:?}");
        }
    }

    #[test]
    fn required_pairs_prove_a_narrower_selector_and_nothing_else_does() {
        let h = LabelHashes::default();
        let mut b = Budget::new(100);
        let own = h.pairs(&map(&[("role", "frontend")]));
        let narrower = [
            selector(&[("role", "frontend")], vec![]),
            selector(&[("role", "frontend"), ("x", "y")], vec![]),
            selector(&[], vec![expr("role", "In", &["frontend"])]),
            selector(
                &[("role", "frontend")],
                vec![expr("anything", "NotIn", &["z"])],
            ),
        ];
        let not_proven = [
            selector(&[], vec![]),
            selector(&[("role", "backend")], vec![]),
            selector(&[], vec![expr("role", "In", &["frontend", "backend"])]),
            selector(&[], vec![expr("role", "Exists", &[])]),
        ];
        for s in narrower {
            let hs = HashedSelector::of(&s, &h, &mut b).expect("fits");
            assert!(hs.requires_all(&own), "{s:?}");
        }
        for s in not_proven {
            let hs = HashedSelector::of(&s, &h, &mut b).expect("fits");
            assert!(!hs.requires_all(&own), "{s:?}");
        }
    }

    #[test]
    fn a_selector_over_budget_is_not_kept_and_the_budget_is_shared() {
        let h = LabelHashes::default();
        let big = selector(
            &[("a", "1"), ("b", "2")],
            vec![expr("c", "In", &["x", "y"])],
        );
        // 2 pairs + 1 key + 2 values.
        let mut b = Budget::new(5);
        assert!(HashedSelector::of(&big, &h, &mut b).is_some());
        assert!(HashedSelector::of(&big, &h, &mut b).is_none(), "spent");
        let mut b = Budget::new(4);
        assert!(HashedSelector::of(&big, &h, &mut b).is_none());
    }

    #[test]
    fn hashes_are_keyed_per_instance_and_stable_within_one() {
        let (a, b) = (LabelHashes::default(), LabelHashes::default());
        assert_eq!(a.pair("app", "web"), a.clone().pair("app", "web"));
        assert_ne!(a.pair("app", "web"), b.pair("app", "web"));
        assert_ne!(a.pair("app", "web"), a.pair("app", "api"));
        assert_ne!(a.key("app"), a.pair("app", ""));
    }
}

/// The labels of every pod template a Runtime runs (its Deployment's,
/// Jobs' and CronJobs'), hashed: what a foreign selector is matched
/// against.
#[derive(Clone, Debug, Default)]
pub struct PodLabels(Vec<HashedLabels>);

impl PodLabels {
    /// The label sets of `templates`.
    pub fn new<'a>(
        h: &LabelHashes,
        templates: impl IntoIterator<Item = &'a BTreeMap<String, String>>,
    ) -> Self {
        let mut sets: Vec<HashedLabels> = Vec::new();
        for t in templates {
            let l = h.labels(t);
            if !sets.contains(&l) {
                sets.push(l);
            }
        }
        PodLabels(sets)
    }

    /// Every label set.
    pub fn sets(&self) -> &[HashedLabels] {
        &self.0
    }
}
