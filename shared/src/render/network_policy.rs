//! The optional ingress-only NetworkPolicy: only the configured peers, only
//! to the `http` port. Egress is not restricted (out of scope). Enabled
//! with no peers renders a policy that admits nothing: a policy that is on
//! never fails open. It selects every pod of the Runtime, Job and CronJob
//! pods too: those have no `http` port, so nothing may connect to them.

use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::api::IngressPeer;

use super::ctx::{Ctx, HTTP_PORT_NAME};
use super::labels::{self, Component};

fn peer(p: &IngressPeer) -> NetworkPolicyPeer {
    let selector = |m: &Option<std::collections::BTreeMap<String, String>>| {
        m.as_ref().map(|labels| LabelSelector {
            match_labels: Some(labels.clone()),
            match_expressions: None,
        })
    };
    NetworkPolicyPeer {
        namespace_selector: selector(&p.namespace_labels),
        pod_selector: selector(&p.pod_labels),
        ip_block: None,
    }
}

/// `None` when the policy is off (the agent then deletes only its own).
pub(crate) fn render(ctx: &Ctx<'_>) -> Option<NetworkPolicy> {
    let np = ctx.spec.network_policy.as_ref().filter(|n| n.enabled)?;
    // No peers: no ingress rule at all, which admits no traffic.
    let rules = if np.ingress.is_empty() {
        Vec::new()
    } else {
        vec![NetworkPolicyIngressRule {
            from: Some(np.ingress.iter().map(peer).collect()),
            ports: Some(vec![NetworkPolicyPort {
                port: Some(IntOrString::String(HTTP_PORT_NAME.to_string())),
                protocol: Some("TCP".to_string()),
                end_port: None,
            }]),
        }]
    };
    Some(NetworkPolicy {
        metadata: ctx.meta(&ctx.names.workload, Component::Server),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(labels::runtime_pods(ctx.name)),
                match_expressions: None,
            }),
            policy_types: Some(vec!["Ingress".to_string()]),
            ingress: Some(rules),
            egress: None,
        }),
    })
}
