//! Selectors that would match everything where a field means "these
//! peers" or "these taints" (issue 27, point 3).
//!
//! An empty label map is a valid Kubernetes selector that matches *every*
//! object: `namespaceLabels: {}` would render `namespaceSelector: {}` and
//! admit every namespace. The CRD refuses these with CEL rules (so
//! `kubectl apply` is refused even while the agent is down); this module is
//! the same rule as a pure function, which render runs too, so a Runtime
//! stored before the rule existed fails to render (Degraded
//! `RenderFailed`, naming the field) instead of opening its policy.
//!
//! The messages here and in the CEL rules are the same constants
//! ([`super::selector_messages`], which the schema reads as well).

use super::RuntimeSpec;
pub use super::selector_messages::{
    EMPTY_NAMESPACE_SELECTOR, EMPTY_POD_SELECTOR, KEYLESS_TOLERATION,
};

/// One selector that would match everything.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct MatchEverything {
    /// The field's path, e.g. `spec.networkPolicy.ingress[0].namespaceLabels`.
    pub field: String,
    /// Why it is refused (one of this module's constants).
    pub message: &'static str,
}

/// Every selector of `spec` that would match everything, in field order.
pub fn match_everything(spec: &RuntimeSpec) -> Vec<MatchEverything> {
    let mut out = Vec::new();
    if let Some(np) = &spec.network_policy {
        // Checked whether or not the policy is enabled: turning it on later
        // must not be what opens it.
        for (i, peer) in np.ingress.iter().enumerate() {
            if peer.namespace_labels.as_ref().is_some_and(|m| m.is_empty()) {
                out.push(MatchEverything {
                    field: format!("spec.networkPolicy.ingress[{i}].namespaceLabels"),
                    message: EMPTY_NAMESPACE_SELECTOR,
                });
            }
            if peer.pod_labels.as_ref().is_some_and(|m| m.is_empty()) {
                out.push(MatchEverything {
                    field: format!("spec.networkPolicy.ingress[{i}].podLabels"),
                    message: EMPTY_POD_SELECTOR,
                });
            }
        }
    }
    if let Some(scheduling) = &spec.scheduling {
        for (i, t) in scheduling.tolerations.iter().enumerate() {
            if t.key.as_deref().is_none_or(str::is_empty) {
                out.push(MatchEverything {
                    field: format!("spec.scheduling.tolerations[{i}]"),
                    message: KEYLESS_TOLERATION,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::Toleration;

    use super::*;
    use crate::api::{IngressPeer, NetworkPolicySpec, SchedulingSpec};

    fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn with_peers(peers: Vec<IngressPeer>) -> RuntimeSpec {
        RuntimeSpec {
            network_policy: Some(NetworkPolicySpec {
                enabled: true,
                ingress: peers,
            }),
            ..Default::default()
        }
    }

    fn fields(spec: &RuntimeSpec) -> Vec<String> {
        match_everything(spec)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn named_peers_pass() {
        let spec = with_peers(vec![
            IngressPeer {
                namespace_labels: labels(&[("kubernetes.io/metadata.name", "gw")]),
                pod_labels: None,
            },
            IngressPeer {
                namespace_labels: None,
                pod_labels: labels(&[("app", "gateway")]),
            },
            IngressPeer {
                namespace_labels: labels(&[("team", "a")]),
                pod_labels: labels(&[("app", "x")]),
            },
            // A label whose value is empty names pods labelled `x: ""`: not everything.
            IngressPeer {
                namespace_labels: None,
                pod_labels: labels(&[("x", "")]),
            },
        ]);
        assert!(match_everything(&spec).is_empty());
        assert!(match_everything(&RuntimeSpec::default()).is_empty());
    }

    #[test]
    fn empty_namespace_selector_is_refused_naming_the_field() {
        let spec = with_peers(vec![
            IngressPeer {
                namespace_labels: labels(&[("a", "b")]),
                pod_labels: None,
            },
            IngressPeer {
                namespace_labels: labels(&[]),
                pod_labels: None,
            },
        ]);
        assert_eq!(
            fields(&spec),
            [
                "spec.networkPolicy.ingress[1].namespaceLabels: an empty selector matches every namespace; name at least one label"
            ]
        );
    }

    #[test]
    fn empty_namespace_selector_with_named_pods_is_still_refused() {
        // Pods labelled app=x in *any* namespace: anyone can label a pod.
        let spec = with_peers(vec![IngressPeer {
            namespace_labels: labels(&[]),
            pod_labels: labels(&[("app", "x")]),
        }]);
        assert_eq!(
            fields(&spec),
            [
                "spec.networkPolicy.ingress[0].namespaceLabels: an empty selector matches every namespace; name at least one label"
            ]
        );
    }

    #[test]
    fn empty_pod_selector_is_refused_alone_and_combined() {
        let spec = with_peers(vec![
            IngressPeer {
                namespace_labels: None,
                pod_labels: labels(&[]),
            },
            IngressPeer {
                namespace_labels: labels(&[("a", "b")]),
                pod_labels: labels(&[]),
            },
            IngressPeer {
                namespace_labels: labels(&[]),
                pod_labels: labels(&[]),
            },
        ]);
        let got = fields(&spec);
        assert_eq!(got.len(), 4, "{got:#?}");
        assert!(got[0].starts_with(
            "spec.networkPolicy.ingress[0].podLabels: an empty selector matches every pod"
        ));
        assert!(got[1].starts_with("spec.networkPolicy.ingress[1].podLabels: "));
        assert!(got[2].starts_with("spec.networkPolicy.ingress[2].namespaceLabels: "));
        assert!(got[3].starts_with("spec.networkPolicy.ingress[2].podLabels: "));
    }

    #[test]
    fn a_disabled_policy_is_checked_too() {
        let mut spec = with_peers(vec![IngressPeer {
            namespace_labels: labels(&[]),
            pod_labels: None,
        }]);
        spec.network_policy.as_mut().unwrap().enabled = false;
        assert_eq!(match_everything(&spec).len(), 1);
    }

    #[test]
    fn keyless_tolerations_are_refused() {
        let toleration = |key: Option<&str>| Toleration {
            key: key.map(str::to_string),
            operator: Some("Exists".into()),
            ..Default::default()
        };
        let spec = RuntimeSpec {
            scheduling: Some(SchedulingSpec {
                tolerations: vec![
                    toleration(Some("dedicated")),
                    toleration(None),
                    toleration(Some("")),
                ],
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            fields(&spec),
            [
                "spec.scheduling.tolerations[1]: a toleration without a key tolerates every taint; name the taint's key",
                "spec.scheduling.tolerations[2]: a toleration without a key tolerates every taint; name the taint's key",
            ]
        );
    }
}

#[cfg(test)]
mod render_tests {
    use std::collections::BTreeMap;

    use crate::api::{IngressPeer, NetworkPolicySpec};
    use crate::render::{RenderError, examples::examples, render};

    /// A Runtime stored before the CRD rule is not rendered: the agent
    /// reports `RenderFailed` naming the field instead of applying a
    /// policy that admits every namespace.
    #[test]
    fn render_refuses_a_stored_match_everything_selector() {
        let mut e = examples()
            .into_iter()
            .find(|e| e.name == "everything")
            .expect("example");
        e.runtime.spec.network_policy = Some(NetworkPolicySpec {
            enabled: true,
            ingress: vec![IngressPeer {
                namespace_labels: Some(BTreeMap::new()),
                pod_labels: None,
            }],
        });
        let err = render(&e.runtime, &e.identity, &e.decision).expect_err("refused");
        assert!(
            matches!(err, RenderError::MatchEverything { .. }),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "Runtime worker: spec.networkPolicy.ingress[0].namespaceLabels: an empty selector matches every namespace; name at least one label"
        );
    }
}
