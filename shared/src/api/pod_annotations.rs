//! Which `podMetadata.annotations` keys reach the pods: an allowlist by
//! the form of the key, not a list of refused prefixes (issue 52).
//!
//! Pod annotations configure the node: the container runtime and its
//! shims read them (`io.katacontainers.config.hypervisor.kernel_params`,
//! `dev.gvisor.*`, `io.kubernetes.cri-o.*`, `run.oci.*`), and so do
//! Kubernetes components (`container.apparmor.security.beta.kubernetes.io/*`,
//! `seccomp.security.alpha.kubernetes.io/*`, `cdi.k8s.io/*`). A list of
//! refused prefixes is one runtime behind the next one. The rule instead:
//!
//! - a **prefixed key** (`domain/name`) passes unless its domain is
//!   Kubernetes' own: `kubernetes.io`, `k8s.io` or a subdomain of either
//!   (reserved for Kubernetes components, which are what read them);
//! - a **plain name** (no `/`) passes only without a dot: the
//!   reverse-DNS keys the runtimes read (OCI annotations) have no slash
//!   and always a dot, so none of them can pass.
//!
//! What it refuses that a team might want: `kubectl.kubernetes.io/default-container`
//! (kubectl's default container; the pods have one container anyway),
//! `cluster-autoscaler.kubernetes.io/safe-to-evict` (the PodDisruptionBudget
//! governs evictions), any plain key with a dot (`my.note`: write
//! `example.com/note` instead). Tools' own domains pass
//! (`prometheus.io/scrape`, `sidecar.istio.io/inject`,
//! `karpenter.sh/do-not-disrupt`). There is no operator knob: a key under
//! a Kubernetes domain changes what a component does with the pods, which
//! is the operator's decision for the whole class, not a team's.
//!
//! The CRD enforces the rule (CEL, [`CEL_RULE`]); the renderer applies
//! [`allowed`] too, so a Runtime stored before the rule never puts a
//! refused key on its pods (its status says which, `Degraded`
//! `PodAnnotationRefused`). A unit test keeps the two equal.

use std::collections::BTreeMap;

/// The Kubernetes-reserved domains: a key under one of them, or under a
/// subdomain of one, is for Kubernetes components.
pub const RESERVED_DOMAINS: [&str; 2] = ["kubernetes.io", "k8s.io"];

/// Whether the domain (the part before `/`) is Kubernetes' own.
pub fn reserved_domain(domain: &str) -> bool {
    RESERVED_DOMAINS
        .iter()
        .any(|d| domain == *d || domain.ends_with(&format!(".{d}")))
}

/// Whether a podMetadata annotation key may be put on the pods (the rule
/// in the module documentation). The key's syntax is checked elsewhere.
pub fn allowed(key: &str) -> bool {
    match key.split_once('/') {
        Some((domain, _)) => !reserved_domain(domain),
        None => !key.contains('.'),
    }
}

/// The keys of `annotations` the rule refuses, in order.
pub fn refused(annotations: &BTreeMap<String, String>) -> Vec<String> {
    annotations
        .keys()
        .filter(|k| !allowed(k))
        .cloned()
        .collect()
}

/// The CEL predicate over `k` that is [`allowed`] (RE2: no look-around).
pub const CEL_ALLOWED: &str =
    r"(k.contains('/') ? !k.matches('^([^/]*\\.)?(kubernetes|k8s)\\.io/') : !k.contains('.'))";

/// The rule's reason, for the CRD's message and the status.
pub const WHY: &str = "pod annotations configure the node runtime and Kubernetes components: only keys outside the Kubernetes domains (*.kubernetes.io/, *.k8s.io/) and plain names without a dot are allowed";

/// Keys the unit tests play (here and against the CRD's CEL rule).
#[cfg(test)]
pub(crate) mod tests_keys {
    /// The keys runtimes and Kubernetes read, and keys teams use.
    pub(crate) const REFUSED: &[&str] = &[
        "io.katacontainers.config.hypervisor.kernel_params",
        "io.katacontainers.config.runtime.disable_guest_seccomp",
        "dev.gvisor.internal.nvproxy",
        "dev.gvisor.spec.mount.tmp.type",
        "io.kubernetes.cri-o.userns-mode",
        "io.kubernetes.cri-o.Devices",
        "io.containerd.runc.v2.group",
        "run.oci.keep_original_groups",
        "container.seccomp.security.alpha.kubernetes.io/app",
        "container.apparmor.security.beta.kubernetes.io/app",
        "seccomp.security.alpha.kubernetes.io/pod",
        "cdi.k8s.io/gpu",
        "kubernetes.io/egress-bandwidth",
        "kubectl.kubernetes.io/default-container",
        "cluster-autoscaler.kubernetes.io/safe-to-evict",
        "my.note",
    ];
    pub(crate) const ALLOWED: &[&str] = &[
        "note",
        "team_owner",
        "prometheus.io/scrape",
        "sidecar.istio.io/inject",
        "karpenter.sh/do-not-disrupt",
        "example.com/note",
        "notkubernetes.io/x",
        "kubernetes.io.example.com/x",
    ];
}

#[cfg(test)]
mod tests {
    use super::tests_keys::{ALLOWED, REFUSED};
    use super::*;

    #[test]
    fn runtime_and_kubernetes_keys_are_refused_tools_keys_pass() {
        for key in REFUSED {
            assert!(!allowed(key), "{key} passed");
        }
        for key in ALLOWED {
            assert!(allowed(key), "{key} refused");
        }
    }
}
