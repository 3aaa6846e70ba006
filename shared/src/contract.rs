//! What the production contract forbids on a managed object, whoever put it
//! there (docs/drift-and-events.md).
//!
//! Server-side apply only corrects fields the agent itself sets; a field
//! another field manager added (`hostNetwork: true`, an extra container, a
//! `hostPath` volume, a PDB's `minAvailable`) would stay for ever. These
//! checks compare a live object with its rendered form and name every
//! forbidden difference; the agent then replaces the governed part of the
//! object with the rendered one (one write).
//!
//! Governed (a difference is a violation): the pod spec of the Deployment
//! and CronJob templates — host namespaces, containers, init and ephemeral
//! containers, volumes, service account and token automount, runtime
//! class, and each container's privilege settings, capabilities and host
//! ports; a PodDisruptionBudget's whole spec; a ConfigMap's data keys.
//! Tolerated (never a violation, never a write): labels and annotations
//! added by others (policy engines, meshes, `kubectl rollout restart`),
//! fields the apiserver defaults, and objects' status.

use std::collections::BTreeSet;
use std::fmt;

use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec};
use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;

/// One forbidden difference between a live object and its rendered form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Where, e.g. `spec.template.spec.hostNetwork`.
    pub path: String,
    /// The contract rule broken, stable (metrics, logs, docs).
    pub rule: Rule,
}

/// The contract rules a managed object can break.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// hostNetwork, hostPID, hostIPC or a shared process namespace.
    HostNamespace,
    /// A container, init container or ephemeral container berth did not render.
    ExtraContainer,
    /// A volume berth did not render (hostPath or any other).
    ExtraVolume,
    /// A privileged container, added capabilities, privilege escalation, a
    /// writable root filesystem, root user or an unmasked /proc.
    Privilege,
    /// A host port on a container.
    HostPort,
    /// A different service account, or its token mounted.
    ServiceAccount,
    /// A RuntimeClass other than the granted one (or none).
    RuntimeClass,
    /// A PodDisruptionBudget field other than the rendered ones.
    DisruptionBudget,
    /// ConfigMap keys berth did not render (they would become env vars).
    ConfigData,
}

impl Rule {
    /// Stable identifier.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::HostNamespace => "host-namespace",
            Rule::ExtraContainer => "extra-container",
            Rule::ExtraVolume => "extra-volume",
            Rule::Privilege => "privilege",
            Rule::HostPort => "host-port",
            Rule::ServiceAccount => "service-account",
            Rule::RuntimeClass => "runtime-class",
            Rule::DisruptionBudget => "disruption-budget",
            Rule::ConfigData => "config-data",
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.path, self.rule.as_str())
    }
}

struct Found<'a> {
    prefix: &'a str,
    out: Vec<Violation>,
}

impl Found<'_> {
    fn add(&mut self, path: impl fmt::Display, rule: Rule) {
        self.out.push(Violation {
            path: format!("{}.{path}", self.prefix),
            rule,
        });
    }
}

fn names<'a>(list: impl IntoIterator<Item = &'a Container>) -> BTreeSet<&'a str> {
    list.into_iter().map(|c| c.name.as_str()).collect()
}

/// Violations of the pod spec at `prefix` (e.g. `spec.template.spec`).
pub fn pod_spec_violations(prefix: &str, live: &PodSpec, desired: &PodSpec) -> Vec<Violation> {
    let mut f = Found {
        prefix,
        out: Vec::new(),
    };
    for (field, value) in [
        ("hostNetwork", live.host_network),
        ("hostPID", live.host_pid),
        ("hostIPC", live.host_ipc),
        ("shareProcessNamespace", live.share_process_namespace),
    ] {
        if value == Some(true) {
            f.add(field, Rule::HostNamespace);
        }
    }
    let wanted = names(&desired.containers);
    for c in &live.containers {
        if !wanted.contains(c.name.as_str()) {
            f.add(format_args!("containers[{}]", c.name), Rule::ExtraContainer);
        }
    }
    let wanted_init = names(desired.init_containers.iter().flatten());
    for c in live.init_containers.iter().flatten() {
        if !wanted_init.contains(c.name.as_str()) {
            f.add(
                format_args!("initContainers[{}]", c.name),
                Rule::ExtraContainer,
            );
        }
    }
    for c in live.ephemeral_containers.iter().flatten() {
        f.add(
            format_args!("ephemeralContainers[{}]", c.name),
            Rule::ExtraContainer,
        );
    }
    let wanted_volumes: BTreeSet<&str> = desired
        .volumes
        .iter()
        .flatten()
        .map(|v| v.name.as_str())
        .collect();
    for v in live.volumes.iter().flatten() {
        if !wanted_volumes.contains(v.name.as_str()) || v.host_path.is_some() {
            f.add(format_args!("volumes[{}]", v.name), Rule::ExtraVolume);
        }
    }
    if live.service_account_name != desired.service_account_name {
        f.add("serviceAccountName", Rule::ServiceAccount);
    }
    if live
        .service_account
        .as_ref()
        .is_some_and(|sa| Some(sa) != desired.service_account_name.as_ref())
    {
        f.add("serviceAccount", Rule::ServiceAccount);
    }
    if live.automount_service_account_token != desired.automount_service_account_token {
        f.add("automountServiceAccountToken", Rule::ServiceAccount);
    }
    if live.runtime_class_name != desired.runtime_class_name {
        f.add("runtimeClassName", Rule::RuntimeClass);
    }
    if let Some(sc) = &live.security_context {
        if sc.run_as_non_root == Some(false) {
            f.add("securityContext.runAsNonRoot", Rule::Privilege);
        }
        if sc.run_as_user == Some(0) {
            f.add("securityContext.runAsUser", Rule::Privilege);
        }
    }
    for c in live
        .containers
        .iter()
        .chain(live.init_containers.iter().flatten())
    {
        container_violations(&mut f, c);
    }
    f.out
}

fn container_violations(f: &mut Found<'_>, c: &Container) {
    let at = |field: &str| format!("containers[{}].{field}", c.name);
    let sc = c.security_context.clone().unwrap_or_default();
    if sc.privileged == Some(true) {
        f.add(at("securityContext.privileged"), Rule::Privilege);
    }
    if sc
        .capabilities
        .as_ref()
        .and_then(|caps| caps.add.as_ref())
        .is_some_and(|add| !add.is_empty())
    {
        f.add(at("securityContext.capabilities.add"), Rule::Privilege);
    }
    if sc.allow_privilege_escalation != Some(false) {
        f.add(
            at("securityContext.allowPrivilegeEscalation"),
            Rule::Privilege,
        );
    }
    if sc.read_only_root_filesystem != Some(true) {
        f.add(
            at("securityContext.readOnlyRootFilesystem"),
            Rule::Privilege,
        );
    }
    if sc.run_as_non_root == Some(false) || sc.run_as_user == Some(0) {
        f.add(at("securityContext.runAsUser"), Rule::Privilege);
    }
    if sc.proc_mount.as_deref() == Some("Unmasked") {
        f.add(at("securityContext.procMount"), Rule::Privilege);
    }
    if c.ports
        .iter()
        .flatten()
        .any(|p| p.host_port.is_some_and(|h| h != 0))
    {
        f.add(at("ports.hostPort"), Rule::HostPort);
    }
}

/// Violations of a PodDisruptionBudget spec: any shape but the rendered one.
pub fn pdb_violations(
    live: &PodDisruptionBudgetSpec,
    desired: &PodDisruptionBudgetSpec,
) -> Vec<Violation> {
    let mut f = Found {
        prefix: "spec",
        out: Vec::new(),
    };
    if live.min_available != desired.min_available {
        f.add("minAvailable", Rule::DisruptionBudget);
    }
    if live.max_unavailable != desired.max_unavailable {
        f.add("maxUnavailable", Rule::DisruptionBudget);
    }
    if live.unhealthy_pod_eviction_policy != desired.unhealthy_pod_eviction_policy {
        f.add("unhealthyPodEvictionPolicy", Rule::DisruptionBudget);
    }
    if live.selector != desired.selector {
        f.add("selector", Rule::DisruptionBudget);
    }
    f.out
}

/// Violations of a ConfigMap: keys berth did not render.
pub fn config_map_violations(live: &ConfigMap, desired: &ConfigMap) -> Vec<Violation> {
    let mut f = Found {
        prefix: "data",
        out: Vec::new(),
    };
    let wanted: BTreeSet<&String> = desired.data.iter().flatten().map(|(k, _)| k).collect();
    for key in live.data.iter().flatten().map(|(k, _)| k) {
        if !wanted.contains(key) {
            f.add(key, Rule::ConfigData);
        }
    }
    if live.binary_data.as_ref().is_some_and(|b| !b.is_empty()) {
        f.add("binaryData", Rule::ConfigData);
    }
    f.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        Capabilities, ContainerPort, EphemeralContainer, HostPathVolumeSource, PodSecurityContext,
        SecurityContext, Volume,
    };
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn hardened() -> PodSpec {
        PodSpec {
            containers: vec![Container {
                name: "app".into(),
                security_context: Some(SecurityContext {
                    allow_privilege_escalation: Some(false),
                    privileged: Some(false),
                    read_only_root_filesystem: Some(true),
                    run_as_non_root: Some(true),
                    run_as_user: Some(10001),
                    capabilities: Some(Capabilities {
                        drop: Some(vec!["ALL".into()]),
                        add: None,
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            service_account_name: Some("web".into()),
            automount_service_account_token: Some(false),
            volumes: Some(vec![Volume {
                name: "tmp".into(),
                ..Default::default()
            }]),
            security_context: Some(PodSecurityContext {
                run_as_non_root: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn rules(live: &PodSpec) -> Vec<(String, &'static str)> {
        pod_spec_violations("spec.template.spec", live, &hardened())
            .into_iter()
            .map(|v| (v.path, v.rule.as_str()))
            .collect()
    }

    #[test]
    fn the_rendered_spec_has_no_violation() {
        assert!(rules(&hardened()).is_empty());
        // Fields the apiserver defaults are not violations.
        let mut defaulted = hardened();
        defaulted.dns_policy = Some("ClusterFirst".into());
        defaulted.scheduler_name = Some("default-scheduler".into());
        defaulted.restart_policy = Some("Always".into());
        defaulted.containers[0].termination_message_path = Some("/dev/termination-log".into());
        defaulted.containers[0].image_pull_policy = Some("IfNotPresent".into());
        assert!(rules(&defaulted).is_empty());
    }

    #[test]
    fn each_forbidden_change_is_named() {
        type Edit = fn(&mut PodSpec);
        let cases: Vec<(Edit, &str, &str)> = vec![
            (
                |s| s.host_network = Some(true),
                "spec.template.spec.hostNetwork",
                "host-namespace",
            ),
            (
                |s| s.host_pid = Some(true),
                "spec.template.spec.hostPID",
                "host-namespace",
            ),
            (
                |s| s.host_ipc = Some(true),
                "spec.template.spec.hostIPC",
                "host-namespace",
            ),
            (
                |s| s.share_process_namespace = Some(true),
                "spec.template.spec.shareProcessNamespace",
                "host-namespace",
            ),
            (
                |s| {
                    s.containers.push(Container {
                        name: "sidecar".into(),
                        security_context: hardened().containers[0].security_context.clone(),
                        ..Default::default()
                    })
                },
                "spec.template.spec.containers[sidecar]",
                "extra-container",
            ),
            (
                |s| {
                    s.init_containers = Some(vec![Container {
                        name: "init".into(),
                        security_context: hardened().containers[0].security_context.clone(),
                        ..Default::default()
                    }])
                },
                "spec.template.spec.initContainers[init]",
                "extra-container",
            ),
            (
                |s| {
                    s.ephemeral_containers = Some(vec![EphemeralContainer {
                        name: "debug".into(),
                        ..Default::default()
                    }])
                },
                "spec.template.spec.ephemeralContainers[debug]",
                "extra-container",
            ),
            (
                |s| {
                    s.volumes.get_or_insert_with(Vec::new).push(Volume {
                        name: "host".into(),
                        host_path: Some(HostPathVolumeSource {
                            path: "/".into(),
                            type_: None,
                        }),
                        ..Default::default()
                    })
                },
                "spec.template.spec.volumes[host]",
                "extra-volume",
            ),
            (
                |s| {
                    s.volumes = Some(vec![Volume {
                        name: "tmp".into(),
                        host_path: Some(HostPathVolumeSource {
                            path: "/tmp".into(),
                            type_: None,
                        }),
                        ..Default::default()
                    }])
                },
                "spec.template.spec.volumes[tmp]",
                "extra-volume",
            ),
            (
                |s| s.service_account_name = Some("admin".into()),
                "spec.template.spec.serviceAccountName",
                "service-account",
            ),
            (
                |s| s.service_account = Some("admin".into()),
                "spec.template.spec.serviceAccount",
                "service-account",
            ),
            (
                |s| s.automount_service_account_token = Some(true),
                "spec.template.spec.automountServiceAccountToken",
                "service-account",
            ),
            (
                |s| s.runtime_class_name = Some("other".into()),
                "spec.template.spec.runtimeClassName",
                "runtime-class",
            ),
            (
                |s| {
                    s.security_context
                        .get_or_insert_with(Default::default)
                        .run_as_user = Some(0)
                },
                "spec.template.spec.securityContext.runAsUser",
                "privilege",
            ),
            (
                |s| {
                    s.containers[0]
                        .security_context
                        .get_or_insert_with(Default::default)
                        .privileged = Some(true)
                },
                "spec.template.spec.containers[app].securityContext.privileged",
                "privilege",
            ),
            (
                |s| {
                    s.containers[0]
                        .security_context
                        .get_or_insert_with(Default::default)
                        .capabilities = Some(Capabilities {
                        drop: Some(vec!["ALL".into()]),
                        add: Some(vec!["NET_ADMIN".into()]),
                    })
                },
                "spec.template.spec.containers[app].securityContext.capabilities.add",
                "privilege",
            ),
            (
                |s| {
                    s.containers[0]
                        .security_context
                        .get_or_insert_with(Default::default)
                        .allow_privilege_escalation = Some(true)
                },
                "spec.template.spec.containers[app].securityContext.allowPrivilegeEscalation",
                "privilege",
            ),
            (
                |s| {
                    s.containers[0]
                        .security_context
                        .get_or_insert_with(Default::default)
                        .read_only_root_filesystem = None
                },
                "spec.template.spec.containers[app].securityContext.readOnlyRootFilesystem",
                "privilege",
            ),
            (
                |s| {
                    s.containers[0]
                        .security_context
                        .get_or_insert_with(Default::default)
                        .proc_mount = Some("Unmasked".into())
                },
                "spec.template.spec.containers[app].securityContext.procMount",
                "privilege",
            ),
            (
                |s| {
                    s.containers[0].ports = Some(vec![ContainerPort {
                        container_port: 9000,
                        host_port: Some(80),
                        ..Default::default()
                    }])
                },
                "spec.template.spec.containers[app].ports.hostPort",
                "host-port",
            ),
        ];
        for (edit, path, rule) in cases {
            let mut live = hardened();
            edit(&mut live);
            assert_eq!(rules(&live), vec![(path.to_string(), rule)], "{path}");
        }
    }

    #[test]
    fn a_disruption_budget_keeps_its_shape() {
        let desired = PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(1)),
            ..Default::default()
        };
        assert!(pdb_violations(&desired.clone(), &desired).is_empty());
        let edited = PodDisruptionBudgetSpec {
            min_available: Some(IntOrString::Int(1)),
            ..Default::default()
        };
        let found: Vec<String> = pdb_violations(&edited, &desired)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            [
                "spec.minAvailable (disruption-budget)",
                "spec.maxUnavailable (disruption-budget)"
            ]
        );
    }

    #[test]
    fn config_maps_hold_only_rendered_keys() {
        let desired = ConfigMap {
            data: Some([("MODE".to_string(), "prod".to_string())].into()),
            ..Default::default()
        };
        assert!(config_map_violations(&desired.clone(), &desired).is_empty());
        let mut live = desired.clone();
        live.data
            .get_or_insert_with(Default::default)
            .insert("LD_PRELOAD".into(), "/evil.so".into());
        let found: Vec<String> = config_map_violations(&live, &desired)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(found, ["data.LD_PRELOAD (config-data)"]);
    }
}
