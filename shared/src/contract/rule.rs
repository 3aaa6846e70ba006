//! The contract rules a managed object can break ([`Rule`]): what a
//! [`super::Violation`] names and what every row of the table
//! (`table.rs`) governs by.

/// The contract rules a managed object can break.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// hostNetwork, hostPID, hostIPC or a shared process namespace.
    HostNamespace,
    /// A container, init container or ephemeral container berth did not
    /// render (or one it rendered, missing).
    ExtraContainer,
    /// Any other change to one of berth's containers.
    Container,
    /// A volume berth did not render (hostPath or any other).
    ExtraVolume,
    /// A security context other than the rendered one (privilege,
    /// capabilities, AppArmor, SELinux, sysctls, user).
    Privilege,
    /// Container ports berth did not render (a host port binds the node's).
    HostPort,
    /// Environment entries or sources berth did not render.
    Environment,
    /// Volume mounts or devices berth did not render.
    Mount,
    /// A different service account, its token, secrets or pull secrets.
    ServiceAccount,
    /// A RuntimeClass other than the granted one (or none).
    RuntimeClass,
    /// The pod template's labels or annotations.
    PodMetadata,
    /// Any other field of the pod spec.
    PodSpec,
    /// A selector: which pods a Service, NetworkPolicy or Deployment takes.
    Selector,
    /// Any other field of a governed spec.
    Spec,
    /// A PodDisruptionBudget other than the rendered one.
    DisruptionBudget,
    /// ConfigMap content berth did not render (keys become env vars).
    ConfigData,
    /// A label in a Kubernetes domain on the object itself that berth
    /// did not render (Kubernetes components act on them).
    ReservedLabel,
}

impl Rule {
    /// Stable identifier.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::HostNamespace => "host-namespace",
            Rule::ExtraContainer => "extra-container",
            Rule::Container => "container",
            Rule::ExtraVolume => "extra-volume",
            Rule::Privilege => "privilege",
            Rule::HostPort => "host-port",
            Rule::Environment => "environment",
            Rule::Mount => "mount",
            Rule::ServiceAccount => "service-account",
            Rule::RuntimeClass => "runtime-class",
            Rule::PodMetadata => "pod-metadata",
            Rule::PodSpec => "pod-spec",
            Rule::Selector => "selector",
            Rule::Spec => "spec",
            Rule::DisruptionBudget => "disruption-budget",
            Rule::ConfigData => "config-data",
            Rule::ReservedLabel => "reserved-label",
        }
    }
}
