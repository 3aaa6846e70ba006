//! THE table: what the production contract governs on each managed kind
//! (here), what it tolerates there and what it leaves alone
//! (`allowlist.rs`) — each row with its reason and an example the unit
//! tests play (`tests.rs`, one check per row). `docs/drift-and-events.md`
//! shows this table, generated from it (`docs.rs`; a unit test keeps the
//! page equal to it).
//!
//! Paths are JSON pointers from the object's root (pod template rows: from
//! the pod template, `spec.template` of a Deployment and
//! `spec.jobTemplate.spec.template` of a CronJob). A segment `*` matches
//! any key or list position, `{a,b}` matches `a` or `b`.

use super::rule::Rule;

/// A kind the agent manages for a Runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// The Runtime's environment (`<name>-config`).
    ConfigMap,
    /// The pods' identity.
    ServiceAccount,
    /// In front of the server pods.
    Service,
    /// The server pods.
    Deployment,
    /// The server pods' disruption budget.
    PodDisruptionBudget,
    /// Who may connect to the pods.
    NetworkPolicy,
    /// The server pods' autoscaler.
    HorizontalPodAutoscaler,
    /// A one-time job.
    Job,
    /// A schedule.
    CronJob,
}

impl Kind {
    /// Every kind, in the order the docs list them.
    pub const ALL: [Kind; 9] = [
        Kind::ConfigMap,
        Kind::ServiceAccount,
        Kind::Service,
        Kind::Deployment,
        Kind::PodDisruptionBudget,
        Kind::NetworkPolicy,
        Kind::HorizontalPodAutoscaler,
        Kind::Job,
        Kind::CronJob,
    ];

    /// The Kubernetes kind name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::ConfigMap => "ConfigMap",
            Kind::ServiceAccount => "ServiceAccount",
            Kind::Service => "Service",
            Kind::Deployment => "Deployment",
            Kind::PodDisruptionBudget => "PodDisruptionBudget",
            Kind::NetworkPolicy => "NetworkPolicy",
            Kind::HorizontalPodAutoscaler => "HorizontalPodAutoscaler",
            Kind::Job => "Job",
            Kind::CronJob => "CronJob",
        }
    }

    /// The kind named `name` (the Kubernetes kind name).
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Where the pod template the contract governs sits, if the kind has
    /// one it governs (a Job's template is immutable: not governed).
    pub fn pod_template(self) -> Option<&'static str> {
        match self {
            Kind::Deployment => Some("/spec/template"),
            Kind::CronJob => Some("/spec/jobTemplate/spec/template"),
            _ => None,
        }
    }

    /// Where a pod template the apiserver refuses to change sits (a Job's):
    /// left out of the governed parts (nothing could correct it), and
    /// compared only to tell berth's Job from a planted one
    /// (`contract::job_differences`).
    pub fn immutable_template(self) -> Option<&'static str> {
        match self {
            Kind::Job => Some("/spec/template"),
            _ => None,
        }
    }
}

/// Which objects a row applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// One kind; the path is from the object's root.
    Kind(Kind),
    /// The pod template of every kind that has a governed one (Deployment,
    /// CronJob); the path is from the template.
    PodTemplate,
    /// Every managed kind; the path is from the object's root.
    Every,
}

/// A governed part: live, it must be exactly the rendered one (minus the
/// tolerated fields below). Rows nested in another row of the same scope
/// only name the rule a difference there breaks.
#[derive(Clone, Copy, Debug)]
pub struct Governed {
    /// Where the row applies.
    pub scope: Scope,
    /// The part.
    pub path: &'static str,
    /// The rule a difference there breaks.
    pub rule: Rule,
    /// Why the contract governs it, in an operator's words.
    pub why: &'static str,
    /// A foreign change that breaks it: a JSON merge patch on the rendered
    /// object (pod template rows: on the template). Played by the unit
    /// tests, and shown in the docs.
    pub attack: &'static str,
}

/// What value a tolerated field may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allowed {
    /// Any value.
    Any,
    /// Exactly this JSON value (the apiserver's default).
    Value(&'static str),
    /// The pull policy the apiserver defaults for the container's image:
    /// `Always` for `:latest` or no tag, `IfNotPresent` otherwise.
    DefaultPullPolicy,
    /// The value of this sibling field (the apiserver copies it).
    SameAs(&'static str),
}

/// A field berth does not render that a live object may carry.
#[derive(Clone, Copy, Debug)]
pub struct Tolerated {
    /// Where the row applies.
    pub scope: Scope,
    /// The field.
    pub path: &'static str,
    /// The value it may have.
    pub allowed: Allowed,
    /// Why it is tolerated.
    pub why: &'static str,
    /// A value the unit test expects to be tolerated (JSON).
    pub example: &'static str,
    /// A value the unit test expects to be refused (JSON), if any is.
    pub refused: Option<&'static str>,
}

/// What the contract deliberately leaves alone.
#[derive(Clone, Copy, Debug)]
pub struct Ungoverned {
    /// Which objects.
    pub scope: Scope,
    /// What: a path pattern like the others (`""` is the whole object).
    pub path: &'static str,
    /// Why it is not governed.
    pub why: &'static str,
}

const POD: Scope = Scope::PodTemplate;
const fn kind(k: Kind) -> Scope {
    Scope::Kind(k)
}

/// Every governed part. The catch-all rows (`/spec`, a container) come
/// first; the rule of a difference is that of the longest row above it.
pub const GOVERNED: &[Governed] = &[
    // The pod template of the Deployment and of each CronJob.
    Governed {
        scope: POD,
        path: "/spec",
        rule: Rule::PodSpec,
        why: "every other pod field places or wires the pods (nodeName, dnsConfig, hostAliases, tolerations, affinity, priority, …)",
        attack: r#"{"spec": {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["203.0.113.9"]}}}"#,
    },
    Governed {
        scope: POD,
        path: "/metadata/labels",
        rule: Rule::PodMetadata,
        why: "a foreign label puts the pods into someone else's Service, NetworkPolicy or budget",
        attack: r#"{"metadata": {"labels": {"role": "admin-api"}}}"#,
    },
    Governed {
        scope: POD,
        path: "/metadata/annotations",
        rule: Rule::PodMetadata,
        why: "annotations configure the node's runtime: `container.apparmor.security.beta.kubernetes.io/<container>: unconfined` switches AppArmor off",
        attack: r#"{"metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/app": "unconfined"}}}"#,
    },
    Governed {
        scope: POD,
        path: "/spec/{hostNetwork,hostPID,hostIPC,shareProcessNamespace}",
        rule: Rule::HostNamespace,
        why: "a host namespace gives the pod the node's network, processes or IPC",
        attack: r#"{"spec": {"hostNetwork": true}}"#,
    },
    Governed {
        scope: POD,
        path: "/spec/{containers,initContainers,ephemeralContainers}",
        rule: Rule::ExtraContainer,
        why: "a container berth did not render runs code nobody reviewed",
        attack: r#"{"spec": {"initContainers": [{"name": "sneak", "image": "registry.invalid/x:1"}]}}"#,
    },
    Governed {
        scope: POD,
        path: "/spec/{containers,initContainers}/*",
        rule: Rule::Container,
        why: "image, command, probes, resources and lifecycle hooks are the service's definition",
        attack: r#"{"spec": {"containers": [{"name": "app", "image": "registry.invalid/evil:1"}]}}"#,
    },
    Governed {
        scope: POD,
        path: "/spec/securityContext",
        rule: Rule::Privilege,
        why: "the pod's security context: `seLinuxOptions`, `sysctls`, `appArmorProfile`, the user it runs as",
        attack: r#"{"spec": {"securityContext": {"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "0"}], "seLinuxOptions": {"type": "spc_t"}}}}"#,
    },
    Governed {
        scope: POD,
        path: "/spec/{containers,initContainers}/*/securityContext",
        rule: Rule::Privilege,
        why: "privilege, capabilities, privilege escalation, the root filesystem, `appArmorProfile`, `seLinuxOptions`, `procMount`",
        attack: r#"{"spec": {"containers": [{"name": "app", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}]}}"#,
    },
    Governed {
        scope: POD,
        path: "/spec/{containers,initContainers}/*/{env,envFrom}",
        rule: Rule::Environment,
        why: "an environment variable is code: `LD_PRELOAD`, `JAVA_TOOL_OPTIONS`, another ConfigMap or Secret through `envFrom`",
        attack: r#"{"spec": {"containers": [{"name": "app", "env": [{"name": "LD_PRELOAD", "value": "/tmp/evil.so"}]}]}}"#,
    },
    Governed {
        scope: POD,
        path: "/spec/{containers,initContainers}/*/{volumeMounts,volumeDevices}",
        rule: Rule::Mount,
        why: "a mount puts files (or a device) under the service's paths",
        attack: r#"{"spec": {"containers": [{"name": "app", "volumeMounts": [{"name": "tmp", "mountPath": "/app"}]}]}}"#,
    },
    Governed {
        scope: POD,
        path: "/spec/{containers,initContainers}/*/ports",
        rule: Rule::HostPort,
        why: "ports berth did not render; a `hostPort` binds the node's port",
        attack: r#"{"spec": {"containers": [{"name": "app", "ports": [{"name": "http", "hostPort": 80}]}]}}"#,
    },
    Governed {
        scope: POD,
        path: "/spec/volumes",
        rule: Rule::ExtraVolume,
        why: "a volume berth did not render: a `hostPath`, a Secret, another claim",
        attack: r#"{"spec": {"volumes": [{"name": "host", "hostPath": {"path": "/"}}]}}"#,
    },
    Governed {
        scope: POD,
        path: "/spec/{serviceAccountName,serviceAccount,automountServiceAccountToken}",
        rule: Rule::ServiceAccount,
        why: "the pods run as the Runtime's own ServiceAccount, without its token",
        attack: r#"{"spec": {"automountServiceAccountToken": true}}"#,
    },
    Governed {
        scope: POD,
        path: "/spec/runtimeClassName",
        rule: Rule::RuntimeClass,
        why: "only the granted RuntimeClass (or none without a grant)",
        attack: r#"{"spec": {"runtimeClassName": "unbounded"}}"#,
    },
    // Every managed object.
    Governed {
        scope: Scope::Every,
        path: "/metadata/labels/*",
        rule: Rule::ReservedLabel,
        why: "only the keys in the Kubernetes domains (`*.kubernetes.io/`, `*.k8s.io/`): those are read by Kubernetes components (`service.kubernetes.io/service-proxy-name` makes kube-proxy drop a Service); berth's own are kept set, every other label is left alone",
        attack: r#"{"metadata": {"labels": {"service.kubernetes.io/service-proxy-name": "nowhere"}}}"#,
    },
    // Each kind.
    Governed {
        scope: kind(Kind::Deployment),
        path: "/spec",
        rule: Rule::Spec,
        why: "how and whether the template rolls out (`paused`, `strategy`, `minReadySeconds`) and the pod template",
        attack: r#"{"spec": {"paused": true}}"#,
    },
    Governed {
        scope: kind(Kind::Deployment),
        path: "/spec/selector",
        rule: Rule::Selector,
        why: "which pods the Deployment owns (immutable in the apiserver as well)",
        attack: r#"{"spec": {"selector": {"matchLabels": {"extra": "x"}}}}"#,
    },
    Governed {
        scope: kind(Kind::CronJob),
        path: "/spec",
        rule: Rule::Spec,
        why: "when and how the schedule runs (`suspend`, `schedule`, the job template) and the pod template",
        attack: r#"{"spec": {"suspend": true}}"#,
    },
    Governed {
        scope: kind(Kind::Job),
        path: "/spec",
        rule: Rule::Spec,
        why: "how the one-time job runs while it exists: `suspend`, `parallelism`, `activeDeadlineSeconds`, `backoffLimit`, `ttlSecondsAfterFinished` (the fields the apiserver lets change on it; `completions`, `backoffLimitPerIndex`, `podFailurePolicy`, `successPolicy` and the pod template it refuses to change)",
        attack: r#"{"spec": {"suspend": true, "parallelism": 5, "ttlSecondsAfterFinished": 1}}"#,
    },
    Governed {
        scope: kind(Kind::Service),
        path: "/spec",
        rule: Rule::Spec,
        why: "where traffic goes: `externalIPs` (traffic for any address), ports, type",
        attack: r#"{"spec": {"externalIPs": ["203.0.113.10"]}}"#,
    },
    Governed {
        scope: kind(Kind::Service),
        path: "/spec/selector",
        rule: Rule::Selector,
        why: "an extra key selects no pod (traffic goes nowhere), another value someone else's pods",
        attack: r#"{"spec": {"selector": {"extra": "x"}}}"#,
    },
    Governed {
        scope: kind(Kind::NetworkPolicy),
        path: "/spec",
        rule: Rule::Spec,
        why: "who may connect: an extra rule `{}` admits everyone",
        attack: r#"{"spec": {"ingress": [{}]}}"#,
    },
    Governed {
        scope: kind(Kind::NetworkPolicy),
        path: "/spec/podSelector",
        rule: Rule::Selector,
        why: "an extra key selects no pod: the policy then protects nothing and ingress is open",
        attack: r#"{"spec": {"podSelector": {"matchLabels": {"extra": "x"}}}}"#,
    },
    Governed {
        scope: kind(Kind::PodDisruptionBudget),
        path: "/spec",
        rule: Rule::DisruptionBudget,
        why: "exactly `maxUnavailable: 1` over the Runtime's pods; `minAvailable` or another selector blocks drains or protects nothing",
        attack: r#"{"spec": {"maxUnavailable": null, "minAvailable": 1}}"#,
    },
    Governed {
        scope: kind(Kind::HorizontalPodAutoscaler),
        path: "/spec",
        rule: Rule::Spec,
        why: "bounds and target of the scaling; a foreign `behavior` can stop it scaling up",
        attack: r#"{"spec": {"behavior": {"scaleUp": {"selectPolicy": "Disabled"}}}}"#,
    },
    Governed {
        scope: kind(Kind::ConfigMap),
        path: "/data",
        rule: Rule::ConfigData,
        why: "every key becomes an environment variable of the pods",
        attack: r#"{"data": {"JAVA_TOOL_OPTIONS": "-javaagent:/tmp/evil.jar"}}"#,
    },
    Governed {
        scope: kind(Kind::ConfigMap),
        path: "/binaryData",
        rule: Rule::ConfigData,
        why: "berth renders no binary data",
        attack: r#"{"binaryData": {"blob": "AA=="}}"#,
    },
    Governed {
        scope: kind(Kind::ConfigMap),
        path: "/immutable",
        rule: Rule::ConfigData,
        why: "an immutable ConfigMap cannot follow the Runtime's config; no patch can set it back, so the agent deletes the frozen ConfigMap and creates the rendering in its place",
        attack: r#"{"immutable": false}"#,
    },
    Governed {
        scope: kind(Kind::ServiceAccount),
        path: "/automountServiceAccountToken",
        rule: Rule::ServiceAccount,
        why: "the pods get no API token",
        attack: r#"{"automountServiceAccountToken": true}"#,
    },
    Governed {
        scope: kind(Kind::ServiceAccount),
        path: "/secrets",
        rule: Rule::ServiceAccount,
        why: "no Secret is attached to the pods' identity",
        attack: r#"{"secrets": [{"name": "admin-token"}]}"#,
    },
    Governed {
        scope: kind(Kind::ServiceAccount),
        path: "/imagePullSecrets",
        rule: Rule::ServiceAccount,
        why: "no pull credentials are attached to the pods",
        attack: r#"{"imagePullSecrets": [{"name": "someone-elses-registry"}]}"#,
    },
];
