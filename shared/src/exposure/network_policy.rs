//! Foreign NetworkPolicies (issue 52): NetworkPolicies add up. A pod that
//! any policy selects for ingress admits the union of every such policy's
//! rules, so a policy that is not the Runtime's own, in its namespace,
//! selecting its pods, can admit what the Runtime's own policy keeps out.
//!
//! The check is precise where a subset can be proven and conservative
//! everywhere else: a foreign rule is *within* the Runtime's policy when
//! every port it names is the `http` port over TCP (by name, or by the
//! number the `http` port has) and every peer is within one of the
//! Runtime's peers, where a peer is within another when
//!
//! - its namespaces are: the Runtime's namespace (no `namespaceSelector`,
//!   or one requiring `kubernetes.io/metadata.name` of it, a label the
//!   apiserver sets) under an own peer without one, or, under an own
//!   `namespaceLabels`, a selector requiring every one of those labels
//!   (further terms only narrow), or the Runtime's namespace when it
//!   carries those labels now (re-judged when its labels change);
//! - its pods are: anything under an own peer without `podLabels`, else a
//!   selector requiring every one of those labels.
//!
//! Anything else — an `ipBlock`, a rule without `from` or `ports`, another
//! port, protocol or a port range, a selector the proof cannot read (an
//! expression with several values) or a policy too large to keep — counts
//! as admitting more. Whether the policy selects the pods at all is
//! decided by matching its `podSelector` against the labels of every pod
//! template the Runtime runs; one too large to keep is taken to select
//! them.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::hashed::PodLabels;
use super::hashed::{Budget, HashedLabels, HashedSelector, LabelHashes};
use crate::api::IngressPeer;

/// The label the apiserver sets on every Namespace to its own name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The name of the Runtime's container port (the only one its policy
/// admits).
const HTTP_PORT_NAME: &str = "http";

/// How many hashes one foreign NetworkPolicy may keep (selectors, peers and
/// ports together): a policy needing more is kept as "too large" and taken
/// to admit more than the Runtime's own.
pub const POLICY_BUDGET: usize = 256;

/// One port of a foreign rule.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Port {
    /// The named port `http` over TCP.
    Http,
    /// A numbered TCP port, no range.
    Number(i32),
    /// Anything else: another name, protocol or a range.
    Other,
}

/// Where a foreign peer's pods are.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Namespaces {
    /// The policy's own namespace (no `namespaceSelector`).
    Own,
    /// The namespaces a selector selects.
    Selected(HashedSelector),
}

/// One peer of a foreign rule.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Peer {
    /// Pods (`None`: all) in namespaces.
    Pods {
        namespaces: Namespaces,
        pods: Option<HashedSelector>,
    },
    /// An `ipBlock`, a peer naming nothing, or one too large to keep.
    Unprovable,
}

/// One ingress rule of a foreign policy.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    /// `None`: every source.
    from: Option<Box<[Peer]>>,
    /// `None`: every port.
    ports: Option<Box<[Port]>>,
}

/// What a foreign policy admits.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ingress {
    /// No ingress rule, or not an ingress policy: it only isolates.
    Nothing,
    /// These rules.
    Rules(Box<[Rule]>),
    /// Too large to keep.
    TooLarge,
}

/// Someone else's NetworkPolicy, reduced to what the check reads, in at
/// most [`POLICY_BUDGET`] hashes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignPolicy {
    /// `None`: too large to keep, taken to select every pod.
    pod_selector: Option<HashedSelector>,
    ingress: Ingress,
}

impl ForeignPolicy {
    /// The policy's spec reduced (`None` spec: it selects nothing).
    pub fn of(spec: Option<&NetworkPolicySpec>, h: &LabelHashes) -> Self {
        let Some(spec) = spec else {
            return ForeignPolicy {
                pod_selector: None,
                ingress: Ingress::Nothing,
            };
        };
        let mut budget = Budget::new(POLICY_BUDGET);
        // Absent is `{}`: every pod of the namespace.
        let every_pod = LabelSelector::default();
        let pod_selector = HashedSelector::of(
            spec.pod_selector.as_ref().unwrap_or(&every_pod),
            h,
            &mut budget,
        );
        let for_ingress = spec
            .policy_types
            .as_ref()
            .is_none_or(|t| t.iter().any(|t| t == "Ingress"));
        let rules = spec.ingress.as_deref().unwrap_or_default();
        let ingress = if !for_ingress || rules.is_empty() {
            Ingress::Nothing
        } else {
            rules
                .iter()
                .map(|r| rule(r, h, &mut budget))
                .collect::<Option<Box<[Rule]>>>()
                .map_or(Ingress::TooLarge, Ingress::Rules)
        };
        ForeignPolicy {
            pod_selector,
            ingress,
        }
    }

    /// Whether it admits anything at all (one that does not only
    /// isolates, and need not be kept).
    pub fn admits_anything(&self) -> bool {
        self.ingress != Ingress::Nothing
    }

    /// Whether the policy selects any of `pods` for ingress at all.
    fn selects(&self, pods: &PodLabels) -> bool {
        match &self.pod_selector {
            Some(s) => pods.sets().iter().any(|l| s.matches(l)),
            None => true,
        }
    }
}

fn rule(r: &NetworkPolicyIngressRule, h: &LabelHashes, budget: &mut Budget) -> Option<Rule> {
    let from = match r.from.as_deref() {
        None | Some([]) => None,
        Some(peers) => Some(peers.iter().map(|p| peer(p, h, budget)).collect()),
    };
    let ports = match r.ports.as_deref() {
        None | Some([]) => None,
        Some(ports) => {
            if !budget.take(ports.len()) {
                return None;
            }
            Some(ports.iter().map(port).collect())
        }
    };
    budget.take(1).then_some(Rule { from, ports })
}

fn peer(p: &NetworkPolicyPeer, h: &LabelHashes, budget: &mut Budget) -> Peer {
    if p.ip_block.is_some() || (p.namespace_selector.is_none() && p.pod_selector.is_none()) {
        return Peer::Unprovable;
    }
    let namespaces = match &p.namespace_selector {
        None => Namespaces::Own,
        Some(s) => match HashedSelector::of(s, h, budget) {
            Some(s) => Namespaces::Selected(s),
            None => return Peer::Unprovable,
        },
    };
    let pods = match &p.pod_selector {
        None => None,
        Some(s) => match HashedSelector::of(s, h, budget) {
            Some(s) => Some(s),
            None => return Peer::Unprovable,
        },
    };
    Peer::Pods { namespaces, pods }
}

fn port(p: &NetworkPolicyPort) -> Port {
    let tcp = p.protocol.as_deref().is_none_or(|proto| proto == "TCP");
    match (&p.port, p.end_port, tcp) {
        (Some(IntOrString::String(name)), None, true) if name == HTTP_PORT_NAME => Port::Http,
        (Some(IntOrString::Int(n)), None, true) => Port::Number(*n),
        _ => Port::Other,
    }
}

/// One peer of the Runtime's own policy, hashed.
#[derive(Clone, Debug)]
struct OwnPeer {
    /// `None`: the Runtime's namespace.
    namespaces: Option<Vec<u64>>,
    /// `None`: every pod.
    pods: Option<Vec<u64>>,
}

/// What the Runtime's own policy admits: only `http` over TCP, from its
/// peers (none: nothing at all).
#[derive(Clone, Debug)]
pub struct OwnPolicy {
    peers: Vec<OwnPeer>,
    http_port: i32,
    /// The Runtime's namespace as the `kubernetes.io/metadata.name` pair.
    namespace_name: u64,
    /// The Runtime's namespace's labels now.
    namespace_labels: HashedLabels,
}

impl OwnPolicy {
    /// The policy `spec.networkPolicy.ingress` renders, for a Runtime in
    /// `namespace` (with `namespace_labels` now) whose `http` port is
    /// `http_port`.
    pub fn new(
        ingress: &[IngressPeer],
        http_port: i32,
        namespace: &str,
        namespace_labels: &BTreeMap<String, String>,
        h: &LabelHashes,
    ) -> Self {
        OwnPolicy {
            peers: ingress
                .iter()
                .map(|p| OwnPeer {
                    namespaces: p.namespace_labels.as_ref().map(|m| h.pairs(m)),
                    pods: p.pod_labels.as_ref().map(|m| h.pairs(m)),
                })
                .collect(),
            http_port,
            namespace_name: h.pair(NAMESPACE_NAME_LABEL, namespace),
            namespace_labels: h.labels(namespace_labels),
        }
    }

    fn admits_port(&self, p: &Port) -> bool {
        match p {
            Port::Http => true,
            Port::Number(n) => *n == self.http_port,
            Port::Other => false,
        }
    }

    fn admits_peer(&self, p: &Peer) -> bool {
        let Peer::Pods { namespaces, pods } = p else {
            return false;
        };
        self.peers.iter().any(|o| {
            let namespaces_within = match (&o.namespaces, namespaces) {
                (None, Namespaces::Own) => true,
                (None, Namespaces::Selected(s)) => s.requires(self.namespace_name),
                (Some(own), Namespaces::Selected(s)) => s.requires_all(own),
                (Some(own), Namespaces::Own) => self.namespace_labels.has_all(own),
            };
            let pods_within = match (&o.pods, pods) {
                (None, _) => true,
                (Some(own), Some(s)) => s.requires_all(own),
                (Some(_), None) => false,
            };
            namespaces_within && pods_within
        })
    }
}

/// What a foreign policy admits beyond the Runtime's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Beyond {
    /// Rule `n` (from 1) has no `from`: every source.
    EverySource(usize),
    /// Rule `n` has no `ports`: every port.
    EveryPort(usize),
    /// Rule `n` names a port other than `http` over TCP.
    OtherPort(usize),
    /// Rule `n`'s peer `m` (from 1) is not within any of the Runtime's
    /// peers.
    Peer(usize, usize),
    /// The policy is too large to keep: taken to admit more.
    TooLarge,
}

impl std::fmt::Display for Beyond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Beyond::EverySource(r) => write!(f, "ingress rule {r} admits every source"),
            Beyond::EveryPort(r) => write!(f, "ingress rule {r} admits every port"),
            Beyond::OtherPort(r) => write!(
                f,
                "ingress rule {r} admits a port other than the Runtime's http port over TCP"
            ),
            Beyond::Peer(r, p) => write!(
                f,
                "ingress rule {r}, peer {p} admits sources the Runtime's networkPolicy.ingress does not"
            ),
            Beyond::TooLarge => f.write_str(
                "its ingress rules are too large to compare and are taken to admit more",
            ),
        }
    }
}

/// What `foreign` admits to any of `pods` beyond `own`; `None` when it
/// selects none of them or admits nothing more.
pub fn beyond(own: &OwnPolicy, foreign: &ForeignPolicy, pods: &PodLabels) -> Option<Beyond> {
    if !foreign.selects(pods) {
        return None;
    }
    let rules = match &foreign.ingress {
        Ingress::Nothing => return None,
        Ingress::TooLarge => return Some(Beyond::TooLarge),
        Ingress::Rules(rules) => rules,
    };
    for (i, r) in rules.iter().enumerate() {
        let n = i + 1;
        let Some(from) = &r.from else {
            return Some(Beyond::EverySource(n));
        };
        let Some(ports) = &r.ports else {
            return Some(Beyond::EveryPort(n));
        };
        if !ports.iter().all(|p| own.admits_port(p)) {
            return Some(Beyond::OtherPort(n));
        }
        if let Some(m) = from.iter().position(|p| !own.admits_peer(p)) {
            return Some(Beyond::Peer(n, m + 1));
        }
    }
    None
}

#[cfg(test)]
#[path = "network_policy_tests.rs"]
mod tests;
