//! Nodes and the handlers they report (`Node.status.runtimeHandlers`), and
//! where a pod with given scheduling constraints may land.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Affinity, Node, NodeSelectorRequirement, Taint, Toleration};

/// What the analysis needs of one Node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeInfo {
    /// Node name.
    pub name: String,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// Handler names in `status.runtimeHandlers` (the empty-named default
    /// handler is left out).
    pub handlers: BTreeSet<String>,
    /// Whether the node reports a handler list at all. Only recent kubelets
    /// with a container runtime that reports handlers fill
    /// `status.runtimeHandlers`; a node without the list is *unknown*, not
    /// *absent* (docs/architecture.md §5).
    pub reports_handlers: bool,
    /// Node labels.
    pub labels: BTreeMap<String, String>,
    /// Node taints.
    pub taints: Vec<Taint>,
}

impl NodeInfo {
    /// Reduces a Node from the API.
    pub fn from_node(node: &Node) -> Self {
        let status = node.status.as_ref();
        Self {
            name: node.metadata.name.clone().unwrap_or_default(),
            ready: status
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True")),
            unschedulable: node
                .spec
                .as_ref()
                .and_then(|s| s.unschedulable)
                .unwrap_or(false),
            reports_handlers: status.is_some_and(|s| s.runtime_handlers.is_some()),
            handlers: status
                .and_then(|s| s.runtime_handlers.as_ref())
                .map(|hs| {
                    hs.iter()
                        .filter_map(|h| h.name.clone())
                        .filter(|n| !n.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            labels: node.metadata.labels.clone().unwrap_or_default(),
            taints: node
                .spec
                .as_ref()
                .and_then(|s| s.taints.clone())
                .unwrap_or_default(),
        }
    }

    /// Whether the node reports `handler`.
    pub fn reports(&self, handler: &str) -> bool {
        self.handlers.contains(handler)
    }

    /// Whether `handler` is present, absent, or unknown (no handler list).
    pub fn presence(&self, handler: &str) -> Presence {
        if self.reports(handler) {
            Presence::Present
        } else if self.reports_handlers {
            Presence::Absent
        } else {
            Presence::Unknown
        }
    }
}

/// Whether a node has a handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    /// Listed in `status.runtimeHandlers`.
    Present,
    /// The node lists handlers, and not this one.
    Absent,
    /// The node lists no handlers at all: nobody knows.
    Unknown,
}

/// How many nodes report a handler. Only Ready nodes count: a NotReady node
/// runs nothing new whatever it last reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Ready nodes reporting the handler.
    pub with_handler: usize,
    /// Ready nodes.
    pub total: usize,
    /// Ready nodes that report a handler list without it, by name.
    pub missing: Vec<String>,
    /// Ready nodes that report no handler list (unknown, not missing).
    pub unknown: usize,
    /// NotReady nodes that report it (not counted above).
    pub not_ready_with_handler: usize,
}

impl Coverage {
    /// `n/m`.
    pub fn summary(&self) -> String {
        coverage_summary(self.with_handler, self.total, self.unknown)
    }

    /// Every Ready node reports the handler (and there is at least one).
    pub fn complete(&self) -> bool {
        self.total > 0 && self.with_handler == self.total
    }
}

/// `n/m`, saying how many of the m are unknown; it formats the
/// RuntimeGrant's printer column too, so it lives with that type.
pub use crate::api::coverage_summary;

/// Coverage of `handler` over all `nodes`.
pub fn coverage(nodes: &[NodeInfo], handler: &str) -> Coverage {
    let mut out = Coverage::default();
    for node in nodes {
        if node.ready {
            out.total += 1;
            match node.presence(handler) {
                Presence::Present => out.with_handler += 1,
                Presence::Absent => out.missing.push(node.name.clone()),
                Presence::Unknown => out.unknown += 1,
            }
        } else if node.reports(handler) {
            out.not_ready_with_handler += 1;
        }
    }
    out
}

/// The scheduling constraints of a pod template that decide which nodes it
/// may land on (a subset of what the scheduler considers: node selector,
/// required node affinity, and NoSchedule/NoExecute taints vs tolerations).
#[derive(Clone, Copy, Debug, Default)]
pub struct Placement<'a> {
    /// `nodeSelector`.
    pub node_selector: Option<&'a BTreeMap<String, String>>,
    /// `affinity` (only `nodeAffinity.requiredDuringScheduling…` is used).
    pub affinity: Option<&'a Affinity>,
    /// `tolerations`.
    pub tolerations: &'a [Toleration],
}

impl Placement<'_> {
    /// Whether a pod with these constraints may be scheduled on `node`
    /// (readiness and cordoning are not looked at here).
    pub fn allows(&self, node: &NodeInfo) -> bool {
        let selector_ok = self
            .node_selector
            .is_none_or(|sel| sel.iter().all(|(k, v)| node.labels.get(k) == Some(v)));
        selector_ok && self.affinity_allows(node) && self.tolerates(node)
    }

    fn affinity_allows(&self, node: &NodeInfo) -> bool {
        let Some(required) = self
            .affinity
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
        else {
            return true;
        };
        // Terms are ORed; requirements within a term are ANDed. A term with
        // no requirements matches nothing (as in the scheduler).
        required.node_selector_terms.iter().any(|term| {
            let exprs = term.match_expressions.as_deref().unwrap_or_default();
            let fields = term.match_fields.as_deref().unwrap_or_default();
            if exprs.is_empty() && fields.is_empty() {
                return false;
            }
            exprs
                .iter()
                .all(|r| requirement_matches(r, node.labels.get(&r.key).map(String::as_str)))
                && fields.iter().all(|r| {
                    let value = (r.key == "metadata.name").then_some(node.name.as_str());
                    requirement_matches(r, value)
                })
        })
    }

    fn tolerates(&self, node: &NodeInfo) -> bool {
        node.taints
            .iter()
            .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
            .all(|t| {
                self.tolerations
                    .iter()
                    .any(|tol| toleration_matches(tol, t))
            })
    }
}

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or_default();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), Some(bound)) = (
                value.and_then(|v| v.parse::<i64>().ok()),
                values.first().and_then(|b| b.parse::<i64>().ok()),
            ) else {
                return false;
            };
            if r.operator == "Gt" {
                v > bound
            } else {
                v < bound
            }
        }
        _ => false,
    }
}

fn toleration_matches(tol: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = tol.effect.as_deref().filter(|e| !e.is_empty())
        && effect != taint.effect
    {
        return false;
    }
    match tol.operator.as_deref().unwrap_or("Equal") {
        "Exists" => tol
            .key
            .as_deref()
            .is_none_or(|k| k.is_empty() || k == taint.key),
        _ => {
            tol.key.as_deref() == Some(taint.key.as_str())
                && tol.value.as_deref().unwrap_or_default()
                    == taint.value.as_deref().unwrap_or_default()
        }
    }
}

/// Where pods with a placement may run and whether those nodes report the
/// handler: the input of the `HandlerReady` / `PlacementIncomplete` check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlacementCoverage {
    /// Ready, schedulable nodes the placement allows.
    pub eligible: usize,
    /// Of those, nodes reporting the handler.
    pub with_handler: usize,
    /// Eligible nodes that report a handler list without it, by name.
    pub missing: Vec<String>,
    /// Eligible nodes that report no handler list (unknown).
    pub unknown: usize,
}

impl PlacementCoverage {
    /// Eligible nodes exist and each reports the handler.
    pub fn complete(&self) -> bool {
        self.eligible > 0 && self.missing.is_empty()
    }
}

/// Which Ready, schedulable nodes `placement` allows, and which of them
/// report `handler`.
pub fn placement_coverage(
    nodes: &[NodeInfo],
    placement: &Placement<'_>,
    handler: &str,
) -> PlacementCoverage {
    let mut out = PlacementCoverage::default();
    for node in nodes
        .iter()
        .filter(|n| n.ready && !n.unschedulable && placement.allows(n))
    {
        out.eligible += 1;
        match node.presence(handler) {
            Presence::Present => out.with_handler += 1,
            Presence::Absent => out.missing.push(node.name.clone()),
            Presence::Unknown => out.unknown += 1,
        }
    }
    out
}
