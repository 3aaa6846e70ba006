//! What a class claims about its handler, and what a node offers a canary.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::node::v1::RuntimeClass;

use super::{NOFILE_ANNOTATION, SANDBOX_ANNOTATION, SIMULATED_NODE_ANNOTATION};
use crate::analysis::NodeInfo;

/// The kind of sandbox a handler gives a pod, as the pod can tell from
/// inside: which kernel answers its system calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SandboxKind {
    /// The node's own kernel (runc and its relatives).
    Host,
    /// gVisor's kernel (runsc): a kernel release and `/proc/version` of
    /// its own.
    Gvisor,
    /// A virtual machine's kernel (Kata): neither the host's nor gVisor's.
    Vm,
}

impl SandboxKind {
    /// The word of the annotation and the canary's `--sandbox`.
    pub fn word(self) -> &'static str {
        match self {
            SandboxKind::Host => "host",
            SandboxKind::Gvisor => "gvisor",
            SandboxKind::Vm => "vm",
        }
    }

    /// How a message names it.
    pub fn described(self) -> &'static str {
        match self {
            SandboxKind::Host => "the host kernel",
            SandboxKind::Gvisor => "gVisor",
            SandboxKind::Vm => "a VM's kernel",
        }
    }

    /// Parses the word.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "host" => Some(SandboxKind::Host),
            "gvisor" => Some(SandboxKind::Gvisor),
            "vm" => Some(SandboxKind::Vm),
            _ => None,
        }
    }

    /// The kind a handler's name suggests when the class declares none:
    /// `runsc…` or `gvisor…` is gVisor, `kata…` a VM, anything else the
    /// host kernel.
    pub fn from_handler(handler: &str) -> Self {
        if handler.starts_with("runsc") || handler.starts_with("gvisor") {
            SandboxKind::Gvisor
        } else if handler.starts_with("kata") {
            SandboxKind::Vm
        } else {
            SandboxKind::Host
        }
    }
}

impl fmt::Display for SandboxKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// What a RuntimeClass claims about its handler, as far as a canary can
/// check it from inside a pod.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CanaryClass {
    /// The class.
    pub name: String,
    /// Its handler.
    pub handler: String,
    /// The sandbox kind (declared by [`SANDBOX_ANNOTATION`] or following
    /// the handler's name).
    pub sandbox: SandboxKind,
    /// The declared open-files limit ([`NOFILE_ANNOTATION`]), if any.
    pub nofile: Option<u64>,
    /// Why the claims cannot be checked: an annotation the canary cannot
    /// read (the rule broken, with the value).
    pub invalid: Option<String>,
}

impl CanaryClass {
    /// Reads a RuntimeClass's claims.
    pub fn from_runtime_class(class: &RuntimeClass) -> Self {
        let empty = BTreeMap::new();
        let annotations = class.metadata.annotations.as_ref().unwrap_or(&empty);
        Self::from_parts(
            class.metadata.name.as_deref().unwrap_or_default(),
            &class.handler,
            annotations,
        )
    }

    /// The claims of class `name` with `handler` and these annotations.
    pub fn from_parts(name: &str, handler: &str, annotations: &BTreeMap<String, String>) -> Self {
        let mut invalid = Vec::new();
        let sandbox = match annotations.get(SANDBOX_ANNOTATION) {
            None => SandboxKind::from_handler(handler),
            Some(v) => SandboxKind::parse(v).unwrap_or_else(|| {
                invalid.push(format!(
                    "annotation {SANDBOX_ANNOTATION}={v:?} is not one of host, gvisor, vm"
                ));
                SandboxKind::from_handler(handler)
            }),
        };
        let nofile = match annotations.get(NOFILE_ANNOTATION) {
            None => None,
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    invalid.push(format!(
                        "annotation {NOFILE_ANNOTATION}={v:?} is not a positive whole number"
                    ));
                    None
                }
            },
        };
        CanaryClass {
            name: name.to_string(),
            handler: handler.to_string(),
            sandbox,
            nofile,
            invalid: (!invalid.is_empty()).then(|| invalid.join("; ")),
        }
    }

    /// What a canary of this class checks, in the order it checks them.
    pub fn checks(&self) -> Vec<String> {
        let mut out = vec![
            "sandbox started".to_string(),
            format!("kernel: {}", self.sandbox.described()),
            "uid 10001".to_string(),
            "read-only root filesystem".to_string(),
            "no capabilities".to_string(),
            "no new privileges".to_string(),
            "no service-account token".to_string(),
        ];
        if let Some(n) = self.nofile {
            out.push(format!("open-files limit {n}"));
        }
        out
    }
}

/// Node conditions that mean the node is full: a canary would be refused
/// or evicted, so it is skipped.
pub const PRESSURE_CONDITIONS: [&str; 3] = ["MemoryPressure", "DiskPressure", "PIDPressure"];

/// What the canaries need of one Node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CanaryNode {
    /// Readiness, cordon, handlers, labels and taints.
    pub info: NodeInfo,
    /// `status.nodeInfo.kernelVersion`: the host kernel a runc canary
    /// must see (and a gVisor one must not).
    pub kernel: Option<String>,
    /// Driven by kwok ([`SIMULATED_NODE_ANNOTATION`]): runs no container.
    pub simulated: bool,
    /// The pressure conditions that are True.
    pub pressure: Vec<String>,
}

impl CanaryNode {
    /// Reduces a Node from the API.
    pub fn from_node(node: &Node) -> Self {
        let status = node.status.as_ref();
        let pressure = status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .filter(|c| c.status == "True" && PRESSURE_CONDITIONS.contains(&c.type_.as_str()))
            .map(|c| c.type_.clone())
            .collect();
        CanaryNode {
            info: NodeInfo::from_node(node),
            kernel: status
                .and_then(|s| s.node_info.as_ref())
                .map(|i| i.kernel_version.clone())
                .filter(|k| !k.is_empty()),
            simulated: node
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(SIMULATED_NODE_ANNOTATION)),
            pressure,
        }
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// Why no canary runs here now, if none does: simulated, NotReady,
    /// cordoned or under pressure.
    pub fn skip_reason(&self) -> Option<String> {
        if self.simulated {
            Some(
                "simulated node (kwok): it runs no container, so nothing on it can be attested"
                    .to_string(),
            )
        } else if !self.info.ready {
            Some("node NotReady".to_string())
        } else if self.info.unschedulable {
            Some("node cordoned".to_string())
        } else if !self.pressure.is_empty() {
            Some(format!("node full ({})", self.pressure.join(", ")))
        } else {
            None
        }
    }
}
