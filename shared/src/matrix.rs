//! The handler matrix (pure): RuntimeClasses as rows, nodes as columns,
//! and per cell whether the class's scheduling rules allow the node,
//! whether the node reports the class's handler (and with which features),
//! and how many pods of the class run there now. Nodes that give the same
//! answer for every class form one column, so 200 nodes of a few kinds are
//! a few columns (issue 31).
//!
//! Handlers are compared as sets: a container runtime may list
//! `status.runtimeHandlers` in a different order on every status update,
//! and an ordered comparison would split one kind of node into many
//! columns (and move them around between frames).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Node, Toleration};
use k8s_openapi::api::node::v1::RuntimeClass;
use serde::Serialize;

use crate::analysis::{NodeInfo, Placement, Presence};
use crate::api::{AttestationState, HandlerAttestation};

/// What the matrix needs of one RuntimeClass.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MatrixClass {
    /// Class name.
    pub name: String,
    /// Its handler.
    pub handler: String,
    /// `scheduling.nodeSelector` (empty: any node).
    pub node_selector: BTreeMap<String, String>,
    /// `scheduling.tolerations`.
    pub tolerations: Vec<Toleration>,
    /// What the agent's canaries saw of its handler (a grant's
    /// `status.attestation`; `None` for a class no grant names).
    pub attestation: Option<HandlerAttestation>,
}

impl MatrixClass {
    /// Reduces a RuntimeClass from the API.
    pub fn from_runtime_class(class: &RuntimeClass) -> Self {
        let scheduling = class.scheduling.as_ref();
        Self {
            name: class.metadata.name.clone().unwrap_or_default(),
            handler: class.handler.clone(),
            node_selector: scheduling
                .and_then(|s| s.node_selector.clone())
                .unwrap_or_default(),
            tolerations: scheduling
                .and_then(|s| s.tolerations.clone())
                .unwrap_or_default(),
            attestation: None,
        }
    }
}

/// The features a node reports for one handler
/// (`status.runtimeHandlers[].features`); `None`: not reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HandlerFeatures {
    /// `recursiveReadOnlyMounts`.
    pub recursive_read_only_mounts: Option<bool>,
    /// `userNamespaces`.
    pub user_namespaces: Option<bool>,
}

impl HandlerFeatures {
    /// `rro`, `userns`, both or nothing: the features that are on.
    pub fn short(&self) -> String {
        let mut out = Vec::new();
        if self.recursive_read_only_mounts == Some(true) {
            out.push("rro");
        }
        if self.user_namespaces == Some(true) {
            out.push("userns");
        }
        out.join(",")
    }
}

/// What the matrix needs of one Node: the analysis's [`NodeInfo`] plus
/// each handler's features.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MatrixNode {
    /// Readiness, cordon, labels, taints and the handler set.
    pub info: NodeInfo,
    /// Handler name → its features. A map: the order the node listed them
    /// in does not matter.
    pub features: BTreeMap<String, HandlerFeatures>,
}

impl MatrixNode {
    /// Reduces a Node from the API.
    pub fn from_node(node: &Node) -> Self {
        let features = node
            .status
            .as_ref()
            .and_then(|s| s.runtime_handlers.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|h| {
                let name = h.name.clone().filter(|n| !n.is_empty())?;
                let f = h.features.as_ref();
                Some((
                    name,
                    HandlerFeatures {
                        recursive_read_only_mounts: f.and_then(|f| f.recursive_read_only_mounts),
                        user_namespaces: f.and_then(|f| f.user_namespaces),
                    },
                ))
            })
            .collect();
        Self {
            info: NodeInfo::from_node(node),
            features,
        }
    }
}

/// Whether a class's scheduling rules let its pods onto a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Scheduling {
    /// The node selector matches and every NoSchedule/NoExecute taint is
    /// tolerated by the class.
    Allowed,
    /// The class's `nodeSelector` does not match the node.
    NotSelected,
    /// The selector matches, but a taint is not tolerated by the class:
    /// only pods that tolerate it themselves land there.
    Tainted,
}

/// Whether a node reports a class's handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum HandlerState {
    /// Listed, with these features.
    Present {
        /// The features reported for it.
        features: HandlerFeatures,
    },
    /// The node lists handlers, not this one.
    Absent,
    /// The node lists no handlers at all.
    Unknown,
}

/// The answer for one class on one node (the grouping key: pods are
/// counted per group, whether any run is part of the answer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Answer {
    scheduling: Scheduling,
    handler: HandlerState,
    running: bool,
    attested: Option<AttestationState>,
}

/// A node's state as far as new pods go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum NodeState {
    /// Ready and schedulable.
    Ready,
    /// Ready but cordoned (`spec.unschedulable`).
    Cordoned,
    /// Not Ready.
    NotReady,
}

/// One cell: one class on one group of nodes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MatrixCell {
    /// The class (row).
    pub class: String,
    /// Whether its scheduling rules allow these nodes.
    pub scheduling: Scheduling,
    /// Whether these nodes report its handler.
    pub handler: HandlerState,
    /// Pods of the class running on these nodes now (summed over the
    /// group).
    pub pods: usize,
    /// What the class's canaries saw on these nodes (`None`: nothing
    /// attested: no grant names the class, or the nodes are not listed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attested: Option<AttestationState>,
    /// When the oldest of these nodes' evidence was produced (seconds since
    /// the epoch): the age the matrix shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence_at: Option<i64>,
}

impl MatrixCell {
    /// Pods of the class may land here and the handler is not there: they
    /// would fail to start (or already run on a handler that went away).
    pub fn broken(&self) -> bool {
        (matches!(self.handler, HandlerState::Absent)
            && (self.scheduling == Scheduling::Allowed || self.pods > 0))
            || self.failing()
    }

    /// The handler is reported here and its canary fails: pods landing here
    /// do not start, or not in the sandbox the class claims.
    pub fn failing(&self) -> bool {
        self.attested == Some(AttestationState::Failing)
    }

    /// Pods may land here and nobody knows whether the handler is there.
    pub fn unknown(&self) -> bool {
        matches!(self.handler, HandlerState::Unknown) && self.scheduling == Scheduling::Allowed
    }

    /// [`MatrixCell::short_at`] without the evidence's age.
    pub fn short(&self) -> String {
        self.short_at(None)
    }

    /// A few characters: scheduling (`✓` allowed, `·` not selected, `T`
    /// taint not tolerated), handler (`H` present, `-` absent, `?`
    /// unknown) with its features (`r` recursiveReadOnlyMounts, `u`
    /// userNamespaces), the canary's verdict (`✔` verified, `✘` failing,
    /// `~` unverified) with the evidence's age at `now` (seconds since the
    /// epoch), and the pods running (`▶3`).
    pub fn short_at(&self, now: Option<i64>) -> String {
        let mut out = String::from(match self.scheduling {
            Scheduling::Allowed => "✓",
            Scheduling::NotSelected => "·",
            Scheduling::Tainted => "T",
        });
        match self.handler {
            HandlerState::Present { features } => {
                out.push('H');
                if features.recursive_read_only_mounts == Some(true) {
                    out.push('r');
                }
                if features.user_namespaces == Some(true) {
                    out.push('u');
                }
            }
            HandlerState::Absent => out.push('-'),
            HandlerState::Unknown => out.push('?'),
        }
        if let Some(state) = self.attested {
            out.push(' ');
            out.push(match state {
                AttestationState::Verified => '✔',
                AttestationState::Failing => '✘',
                AttestationState::Unverified => '~',
            });
            if let (Some(now), Some(at)) = (now, self.evidence_at) {
                out.push_str(&short_age(now - at));
            }
        }
        if self.pods > 0 {
            out.push_str(&format!(" ▶{}", self.pods));
        }
        out
    }
}

/// `45s`, `3m`, `2h`, `4d`: an age in its largest unit.
fn short_age(secs: i64) -> String {
    let secs = secs.max(0);
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86_400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

/// Nodes that give the same answer for every class.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeGroup {
    /// `first-node` alone, or `first-node +N`.
    pub label: String,
    /// The nodes, sorted by name.
    pub nodes: Vec<String>,
    /// Whether new pods can land on them.
    pub state: NodeState,
    /// One cell per class, in the order of [`Matrix::classes`].
    pub cells: Vec<MatrixCell>,
}

/// One row's class.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassHead {
    /// Class name.
    pub class: String,
    /// Its handler.
    pub handler: String,
    /// Whether it has scheduling rules (nodeSelector or tolerations).
    pub scheduling: bool,
}

/// The whole matrix.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Matrix {
    /// The rows, sorted by class name.
    pub classes: Vec<ClassHead>,
    /// The columns: Ready groups first, then by size (largest first), then
    /// by first node name.
    pub groups: Vec<NodeGroup>,
}

/// Where one running pod of a class is (`spec.nodeName`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodPlace<'a> {
    /// The pod's `runtimeClassName`.
    pub class: &'a str,
    /// The node it runs on.
    pub node: &'a str,
}

fn scheduling(class: &MatrixClass, node: &NodeInfo) -> Scheduling {
    let selected = class
        .node_selector
        .iter()
        .all(|(k, v)| node.labels.get(k) == Some(v));
    if !selected {
        return Scheduling::NotSelected;
    }
    // The taints alone: the selector was checked above.
    let tolerations = Placement {
        node_selector: None,
        affinity: None,
        tolerations: &class.tolerations,
    };
    if tolerations.allows(node) {
        Scheduling::Allowed
    } else {
        Scheduling::Tainted
    }
}

fn handler_state(class: &MatrixClass, node: &MatrixNode) -> HandlerState {
    match node.info.presence(&class.handler) {
        Presence::Present => HandlerState::Present {
            features: node
                .features
                .get(&class.handler)
                .copied()
                .unwrap_or_default(),
        },
        Presence::Absent => HandlerState::Absent,
        Presence::Unknown => HandlerState::Unknown,
    }
}

fn node_state(n: &NodeInfo) -> NodeState {
    if !n.ready {
        NodeState::NotReady
    } else if n.unschedulable {
        NodeState::Cordoned
    } else {
        NodeState::Ready
    }
}

/// The matrix of `classes` over `nodes`, with the `pods` running now.
/// Pods on nodes not in `nodes`, or of classes not in `classes`, are not
/// counted anywhere.
pub fn handler_matrix(
    classes: &[MatrixClass],
    nodes: &[MatrixNode],
    pods: &[PodPlace<'_>],
) -> Matrix {
    let mut classes: Vec<&MatrixClass> = classes.iter().collect();
    classes.sort_by(|a, b| a.name.cmp(&b.name));
    classes.dedup_by(|a, b| a.name == b.name);
    let mut running: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for p in pods {
        *running.entry((p.class, p.node)).or_default() += 1;
    }
    // Group key → (nodes, per-class pod counts).
    type Key = (NodeState, Vec<Answer>);
    type Group = (BTreeSet<String>, Vec<usize>, Vec<Option<i64>>);
    let mut groups: BTreeMap<Key, Group> = BTreeMap::new();
    for node in nodes {
        let (answers, counts, evidence) = node_row(&classes, node, &running);
        let entry = groups
            .entry((node_state(&node.info), answers))
            .or_insert_with(|| {
                (
                    BTreeSet::new(),
                    vec![0; classes.len()],
                    vec![None; classes.len()],
                )
            });
        entry.0.insert(node.info.name.clone());
        for (sum, n) in entry.1.iter_mut().zip(counts) {
            *sum += n;
        }
        // The oldest evidence of the group.
        for (oldest, at) in entry.2.iter_mut().zip(evidence) {
            *oldest = match (*oldest, at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
    }
    let mut out: Vec<NodeGroup> = groups
        .into_iter()
        .map(|((state, answers), (names, counts, evidence))| {
            node_group(&classes, state, answers, names, counts, evidence)
        })
        .collect();
    out.sort_by(|a, b| {
        (a.state, std::cmp::Reverse(a.nodes.len()), &a.nodes).cmp(&(
            b.state,
            std::cmp::Reverse(b.nodes.len()),
            &b.nodes,
        ))
    });
    Matrix {
        classes: classes
            .iter()
            .map(|c| ClassHead {
                class: c.name.clone(),
                handler: c.handler.clone(),
                scheduling: !c.node_selector.is_empty() || !c.tolerations.is_empty(),
            })
            .collect(),
        groups: out,
    }
}

/// One node's answer per class (sorted as `classes`), with its running
/// pods and the time of the canary's evidence there.
fn node_row(
    classes: &[&MatrixClass],
    node: &MatrixNode,
    running: &BTreeMap<(&str, &str), usize>,
) -> (Vec<Answer>, Vec<usize>, Vec<Option<i64>>) {
    let mut answers = Vec::with_capacity(classes.len());
    let mut counts = Vec::with_capacity(classes.len());
    let mut evidence = Vec::with_capacity(classes.len());
    for class in classes {
        let attested = class
            .attestation
            .as_ref()
            .and_then(|a| a.node(&node.info.name));
        let n = running
            .get(&(class.name.as_str(), node.info.name.as_str()))
            .copied()
            .unwrap_or(0);
        answers.push(Answer {
            scheduling: scheduling(class, &node.info),
            handler: handler_state(class, node),
            running: n > 0,
            attested: attested.map(|a| a.state),
        });
        counts.push(n);
        evidence.push(
            attested
                .and_then(|a| a.at.as_ref())
                .map(|t| t.0.as_second()),
        );
    }
    (answers, counts, evidence)
}

/// A group of nodes that answer alike: its label (`first-node +N`) and
/// one cell per class.
fn node_group(
    classes: &[&MatrixClass],
    state: NodeState,
    answers: Vec<Answer>,
    names: BTreeSet<String>,
    counts: Vec<usize>,
    evidence: Vec<Option<i64>>,
) -> NodeGroup {
    let nodes: Vec<String> = names.into_iter().collect();
    let label = match nodes.len() {
        0 | 1 => nodes.first().cloned().unwrap_or_default(),
        n => format!("{} +{}", nodes[0], n - 1),
    };
    let cells = classes
        .iter()
        .zip(answers)
        .zip(counts)
        .zip(evidence)
        .map(|(((class, a), pods), evidence_at)| MatrixCell {
            class: class.name.clone(),
            scheduling: a.scheduling,
            handler: a.handler,
            pods,
            attested: a.attested,
            evidence_at,
        })
        .collect();
    NodeGroup {
        label,
        nodes,
        state,
        cells,
    }
}

#[cfg(test)]
#[path = "matrix_tests.rs"]
mod tests;
