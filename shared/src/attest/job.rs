//! The canary Job: one per (class, node), in the agent's namespace, pinned
//! to the node, on the class, from the agent's own image, under the full
//! production contract (the pod security context and container security
//! context of every berth pod, bounded resources, no token, no service
//! links).
//!
//! Its pod failure policy is how the agent learns which check failed
//! without reading a Pod: each of the canary's exit codes is a `FailJob`
//! rule of its own ([`RULES`]), and the Job's `Failed` condition then
//! names the rule's index (`PodFailurePolicy`: "… matching FailJob rule at
//! index N"). A pod whose sandbox was never created has no exit code; its
//! `PodReadyToStartContainers` condition is False, which a rule of its own
//! catches (after the exit codes: a pod whose container ran and failed
//! loses its sandbox afterwards, and its exit code must win). A pod that
//! never starts at all (not scheduled) is ended by the Job's deadline.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{
    Job, JobSpec, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{
    Affinity, Container, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    PodSpec, PodTemplateSpec, ResourceRequirements, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use sha2::{Digest, Sha256};

use super::checks::Failure;
use super::expect::{CanaryClass, CanaryNode};
use super::{CANARY_LABEL, CLASS_ANNOTATION, CONTAINER, NODE_ANNOTATION, SUBJECT_ANNOTATION};
use crate::api::meta::{MANAGED_BY_AGENT, MANAGED_BY_LABEL};
use crate::render::pod_template::{container_security_context, pod_security_context};

/// `app.kubernetes.io/name` of every canary Job and pod.
pub const CANARY_NAME: &str = "berth-canary";

/// Seconds a canary's pod may take from the kubelet's start to its end
/// (`activeDeadlineSeconds` of the pod): a sandbox that is not created by
/// then fails the pod, and the Job says so.
pub const DEFAULT_DEADLINE_SECONDS: i64 = 40;

/// What the Job adds to the pod's deadline before it gives up on a pod
/// that never started (not scheduled).
pub const SCHEDULING_GRACE_SECONDS: i64 = 30;

/// One rule of the canary's pod failure policy, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// The pod was evicted or preempted (`DisruptionTarget`): ignored, a
    /// new pod runs.
    Disrupted,
    /// The canary exited with this failure's code.
    Check(Failure),
    /// The pod's sandbox was never ready (`PodReadyToStartContainers`
    /// False) and no exit code matched.
    NoSandbox,
    /// Any other non-zero exit code (a crash, a kill).
    OtherExit,
}

/// The rules, in the order of `spec.podFailurePolicy.rules`.
pub fn rules() -> Vec<Rule> {
    let mut out = vec![Rule::Disrupted];
    out.extend(Failure::ALL.iter().map(|f| Rule::Check(*f)));
    out.push(Rule::NoSandbox);
    out.push(Rule::OtherExit);
    out
}

/// What to render.
#[derive(Clone, Copy, Debug)]
pub struct CanaryJob<'a> {
    /// The Job's name ([`job_name`]).
    pub name: &'a str,
    /// The agent's namespace.
    pub namespace: &'a str,
    /// The class and its claims.
    pub class: &'a CanaryClass,
    /// The node it is pinned to.
    pub node: &'a CanaryNode,
    /// The agent's own image.
    pub image: &'a str,
    /// The subject fingerprint ([`subject`]).
    pub subject: &'a str,
    /// `ttlSecondsAfterFinished`.
    pub ttl_seconds: i32,
    /// The pod's `activeDeadlineSeconds`.
    pub deadline_seconds: i64,
}

fn hex(bytes: &[u8], chars: usize) -> String {
    bytes
        .iter()
        .take(chars.div_ceil(2))
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        .chars()
        .take(chars)
        .collect()
}

/// The fingerprint of what a canary checks: the class, its handler and
/// claims, the node and its kernel, the image. Evidence from a canary of
/// another fingerprint is stale.
pub fn subject(class: &CanaryClass, node: &CanaryNode, image: &str) -> String {
    let text = serde_json::json!({
        "class": class.name,
        "handler": class.handler,
        "sandbox": class.sandbox.word(),
        "nofile": class.nofile,
        "node": node.name(),
        "kernel": node.kernel,
        "image": image,
    })
    .to_string();
    hex(&Sha256::digest(text.as_bytes()), 16)
}

/// `berth-canary-<pair>-<time>`: ten hex characters of the (class, node)
/// pair and the creation second in base 36, well within a label's 63
/// characters (the Job controller labels its pods with the Job's name).
pub fn job_name(class: &str, node: &str, unix_seconds: i64) -> String {
    let pair = hex(&Sha256::digest(format!("{class}\0{node}").as_bytes()), 10);
    let mut n = u64::try_from(unix_seconds).unwrap_or(0);
    let mut t = Vec::new();
    loop {
        let d = u8::try_from(n % 36).unwrap_or(0);
        t.push(if d < 10 { b'0' + d } else { b'a' + d - 10 });
        n /= 36;
        if n == 0 {
            break;
        }
    }
    t.reverse();
    format!("{CANARY_NAME}-{pair}-{}", String::from_utf8_lossy(&t))
}

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        (CANARY_LABEL.to_string(), "true".to_string()),
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY_AGENT.to_string()),
        (
            "app.kubernetes.io/name".to_string(),
            CANARY_NAME.to_string(),
        ),
    ])
}

fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), Quantity((*v).to_string())))
        .collect()
}

/// The canary's arguments (after the image's entrypoint, `berth-agent`).
pub fn args(class: &CanaryClass, node: &CanaryNode) -> Vec<String> {
    let mut out = vec![
        "canary".to_string(),
        "--class".to_string(),
        class.name.clone(),
        "--sandbox".to_string(),
        class.sandbox.word().to_string(),
    ];
    if let Some(k) = &node.kernel {
        out.extend(["--host-kernel".to_string(), k.clone()]);
    }
    if let Some(n) = class.nofile {
        out.extend(["--nofile".to_string(), n.to_string()]);
    }
    out
}

fn policy() -> PodFailurePolicy {
    let exit = |operator: &str, values: Vec<i32>| PodFailurePolicyOnExitCodesRequirement {
        container_name: Some(CONTAINER.to_string()),
        operator: operator.to_string(),
        values,
    };
    let condition = |type_: &str, status: &str| {
        vec![PodFailurePolicyOnPodConditionsPattern {
            type_: type_.to_string(),
            status: status.to_string(),
        }]
    };
    let rules = rules()
        .into_iter()
        .map(|rule| match rule {
            Rule::Disrupted => PodFailurePolicyRule {
                action: "Ignore".to_string(),
                on_pod_conditions: Some(condition("DisruptionTarget", "True")),
                on_exit_codes: None,
            },
            Rule::Check(f) => PodFailurePolicyRule {
                action: "FailJob".to_string(),
                on_exit_codes: Some(exit("In", vec![f.exit_code()])),
                on_pod_conditions: None,
            },
            Rule::NoSandbox => PodFailurePolicyRule {
                action: "FailJob".to_string(),
                on_pod_conditions: Some(condition("PodReadyToStartContainers", "False")),
                on_exit_codes: None,
            },
            Rule::OtherExit => {
                let mut known: Vec<i32> = vec![0];
                known.extend(Failure::ALL.iter().map(|f| f.exit_code()));
                PodFailurePolicyRule {
                    action: "FailJob".to_string(),
                    on_exit_codes: Some(exit("NotIn", known)),
                    on_pod_conditions: None,
                }
            }
        })
        .collect();
    PodFailurePolicy { rules }
}

/// The canary Job.
pub fn render(c: &CanaryJob<'_>) -> Job {
    let annotations = BTreeMap::from([
        (CLASS_ANNOTATION.to_string(), c.class.name.clone()),
        (NODE_ANNOTATION.to_string(), c.node.name().to_string()),
        (SUBJECT_ANNOTATION.to_string(), c.subject.to_string()),
    ]);
    // The pod tolerates the node's own taints: the canary attests this
    // node's handler, wherever the node's taints keep other pods away.
    let tolerations: Vec<Toleration> = c
        .node
        .info
        .taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .map(|t| Toleration {
            key: Some(t.key.clone()),
            operator: Some("Exists".to_string()),
            effect: Some(t.effect.clone()),
            ..Default::default()
        })
        .collect();
    let pull = if c.image.contains("@sha256:") {
        "IfNotPresent"
    } else {
        "Always"
    };
    let container = Container {
        name: CONTAINER.to_string(),
        image: Some(c.image.to_string()),
        image_pull_policy: Some(pull.to_string()),
        args: Some(args(c.class, c.node)),
        resources: Some(ResourceRequirements {
            requests: Some(quantities(&[
                ("cpu", "10m"),
                ("memory", "32Mi"),
                ("ephemeral-storage", "16Mi"),
            ])),
            limits: Some(quantities(&[
                ("memory", "64Mi"),
                ("ephemeral-storage", "64Mi"),
            ])),
            ..Default::default()
        }),
        security_context: Some(container_security_context()),
        termination_message_policy: Some("FallbackToLogsOnError".to_string()),
        ..Default::default()
    };
    let spec = PodSpec {
        containers: vec![container],
        restart_policy: Some("Never".to_string()),
        automount_service_account_token: Some(false),
        enable_service_links: Some(false),
        security_context: Some(pod_security_context()),
        runtime_class_name: Some(c.class.name.clone()),
        active_deadline_seconds: Some(c.deadline_seconds),
        termination_grace_period_seconds: Some(5),
        affinity: Some(Affinity {
            node_affinity: Some(NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_fields: Some(vec![NodeSelectorRequirement {
                            key: "metadata.name".to_string(),
                            operator: "In".to_string(),
                            values: Some(vec![c.node.name().to_string()]),
                        }]),
                        match_expressions: None,
                    }],
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        tolerations: (!tolerations.is_empty()).then_some(tolerations),
        ..Default::default()
    };
    Job {
        metadata: ObjectMeta {
            name: Some(c.name.to_string()),
            namespace: Some(c.namespace.to_string()),
            labels: Some(labels()),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            active_deadline_seconds: Some(c.deadline_seconds + SCHEDULING_GRACE_SECONDS),
            ttl_seconds_after_finished: Some(c.ttl_seconds),
            pod_failure_policy: Some(policy()),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels()),
                    ..Default::default()
                }),
                spec: Some(spec),
            },
            ..Default::default()
        }),
        status: None,
    }
}

/// The NetworkPolicy shipped beside the agent (`assets/deploy`, the
/// chart): every canary pod of the namespace, no ingress, no egress. A
/// canary needs no network; with the policy in place a compromised image
/// could not reach anything either.
pub fn network_policy(namespace: &str) -> k8s_openapi::api::networking::v1::NetworkPolicy {
    use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicySpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(CANARY_NAME.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/part-of".to_string(),
                "berth".to_string(),
            )])),
            ..Default::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    CANARY_LABEL.to_string(),
                    "true".to_string(),
                )])),
                match_expressions: None,
            }),
            policy_types: Some(vec!["Ingress".to_string(), "Egress".to_string()]),
            ingress: None,
            egress: None,
        }),
    }
}
