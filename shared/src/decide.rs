//! The grant decision (docs/architecture.md §5, step 2): a pure function from what the
//! agent read — the loaded bindings, the Runtime's identity, the requested
//! profile, the RuntimeClass as observed, and what was decided last time —
//! to one [`Decision`] with a stable reason and a human message.
//!
//! It takes bindings as a slice of [`GrantBinding`], the grants loader's
//! binding type.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::node::v1::RuntimeClass;

use crate::api::{ProfileState, ProfileStatus, Runtime, reasons};

/// Namespace label naming the project (set by cluster admins).
pub const PROJECT_LABEL: &str = "berth.dev/project";
/// Namespace label naming the environment (set by cluster admins).
pub const ENVIRONMENT_LABEL: &str = "berth.dev/environment";

/// One grant: a binding of the loaded grants file, exactly as loaded (one
/// type, so the grant the loader accepted is the grant decide checks).
pub use crate::grants::Binding as GrantBinding;

/// Who a Runtime is: project and environment from its Namespace's labels
/// (so a namespace tenant cannot claim another project's grant), application
/// and service from its immutable spec fields.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity {
    /// From Namespace label `berth.dev/project`.
    pub project: String,
    /// From Namespace label `berth.dev/environment`.
    pub environment: String,
    /// From `spec.application`.
    pub application: String,
    /// From `spec.service`.
    pub service: String,
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "project={} environment={} application={} service={}",
            self.project, self.environment, self.application, self.service
        )
    }
}

impl Identity {
    /// The status form of the identity.
    pub fn to_status(&self) -> crate::api::IdentityStatus {
        crate::api::IdentityStatus {
            project: Some(self.project.clone()),
            environment: Some(self.environment.clone()),
            application: Some(self.application.clone()),
            service: Some(self.service.clone()),
        }
    }
}

/// Why an identity could not be formed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// The Namespace lacks one or both identity labels.
    #[error("namespace {namespace} lacks label(s) {}", missing.join(", "))]
    MissingLabels {
        /// The Namespace's name.
        namespace: String,
        /// The labels that are absent or empty.
        missing: Vec<&'static str>,
    },
    /// A label is present but not a valid project/environment name.
    #[error(
        "namespace {namespace} label {label}={value:?} is not a valid name ([a-z]([-a-z0-9]{{0,38}}[a-z0-9])?)"
    )]
    InvalidLabel {
        /// The Namespace's name.
        namespace: String,
        /// The label key.
        label: &'static str,
        /// The offending value.
        value: String,
    },
}

/// Whether `value` is a valid project, environment, application or service
/// name (`[a-z]([-a-z0-9]{0,38}[a-z0-9])?`, the CRD's
/// [`crate::api::patterns::SCOPE_NAME`]): the grants file's own rule, so a
/// Namespace label is held to exactly what a binding may name.
pub fn is_scope_name(value: &str) -> bool {
    crate::grants::validate::identity(value).is_ok()
}

/// Project and environment from a Namespace's labels.
pub fn namespace_scope(
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> Result<(String, String), IdentityError> {
    let get = |key: &'static str| labels.get(key).filter(|v| !v.is_empty());
    let (project, environment) = (get(PROJECT_LABEL), get(ENVIRONMENT_LABEL));
    let missing: Vec<&'static str> = [
        (PROJECT_LABEL, project.is_none()),
        (ENVIRONMENT_LABEL, environment.is_none()),
    ]
    .into_iter()
    .filter_map(|(label, absent)| absent.then_some(label))
    .collect();
    let (Some(project), Some(environment)) = (project, environment) else {
        return Err(IdentityError::MissingLabels {
            namespace: namespace.to_string(),
            missing,
        });
    };
    for (label, value) in [(PROJECT_LABEL, project), (ENVIRONMENT_LABEL, environment)] {
        if !is_scope_name(value) {
            return Err(IdentityError::InvalidLabel {
                namespace: namespace.to_string(),
                label,
                value: value.clone(),
            });
        }
    }
    Ok((project.clone(), environment.clone()))
}

/// The identity of `runtime` living in `namespace`.
pub fn identity(namespace: &Namespace, runtime: &Runtime) -> Result<Identity, IdentityError> {
    let name = namespace.metadata.name.as_deref().unwrap_or_default();
    let empty = BTreeMap::new();
    let labels = namespace.metadata.labels.as_ref().unwrap_or(&empty);
    let (project, environment) = namespace_scope(name, labels)?;
    Ok(Identity {
        project,
        environment,
        application: runtime.spec.application.clone(),
        service: runtime.spec.service.clone(),
    })
}

/// What the agent observed about a RuntimeClass, reduced to what the
/// decision needs. Built with [`ObservedClass::from_runtime_class`] or by
/// hand in tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedClass {
    /// The class name.
    pub name: String,
    /// Its handler.
    pub handler: String,
    /// `overhead` is set.
    pub has_overhead: bool,
    /// `scheduling` is set.
    pub has_scheduling: bool,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

impl ObservedClass {
    /// Reduces a RuntimeClass from the API.
    pub fn from_runtime_class(class: &RuntimeClass) -> Self {
        Self {
            name: class.metadata.name.clone().unwrap_or_default(),
            handler: class.handler.clone(),
            // An empty overhead (no podFixed entries) changes nothing, so it
            // does not make the class unsupported.
            has_overhead: class
                .overhead
                .as_ref()
                .is_some_and(|o| o.pod_fixed.as_ref().is_some_and(|p| !p.is_empty())),
            has_scheduling: class.scheduling.as_ref().is_some_and(|s| {
                s.node_selector.as_ref().is_some_and(|n| !n.is_empty())
                    || s.tolerations.as_ref().is_some_and(|t| !t.is_empty())
            }),
            deleting: class.metadata.deletion_timestamp.is_some(),
        }
    }
}

/// Everything [`decide`] looks at.
#[derive(Clone, Copy, Debug)]
pub struct DecideInput<'a> {
    /// The loaded bindings (empty when no grants file is configured).
    pub bindings: &'a [GrantBinding],
    /// The identity, or why it could not be formed.
    pub identity: Result<&'a Identity, &'a IdentityError>,
    /// `spec.runtimeProfile`.
    pub requested: Option<&'a str>,
    /// The RuntimeClass named by the matching binding, as observed (`None`
    /// when absent). The agent looks it up after finding the binding; see
    /// [`binding_for`].
    pub class: Option<&'a ObservedClass>,
    /// `status.profile` from the last reconcile: how "revoked" is told
    /// apart from "never granted".
    pub previous: Option<&'a ProfileStatus>,
}

/// The grant decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// No profile requested: the cluster's default runtime.
    NotRequested,
    /// Granted: run with `runtime_class`.
    Granted {
        /// The alias.
        alias: String,
        /// The RuntimeClass to set as `runtimeClassName`.
        runtime_class: String,
        /// Its handler.
        handler: String,
    },
    /// No binding with this alias exists for the identity.
    NotGranted {
        /// The alias.
        alias: String,
        /// Why, in words (no binding, another identity, identity incomplete).
        detail: String,
        /// Stable reason (`NotGranted` or `IdentityIncomplete`).
        reason: &'static str,
    },
    /// The Runtime was granted this alias before and the binding is gone.
    Revoked {
        /// The alias.
        alias: String,
        /// The class it ran with, from the previous status.
        runtime_class: Option<String>,
        /// What changed.
        detail: String,
    },
    /// The binding exists but its RuntimeClass does not.
    ClassMissing {
        /// The alias.
        alias: String,
        /// The missing class.
        runtime_class: String,
        /// The handler the binding expects.
        handler: String,
    },
    /// The RuntimeClass names another handler than the binding.
    HandlerMismatch {
        /// The alias.
        alias: String,
        /// The class.
        runtime_class: String,
        /// The handler the binding expects.
        expected: String,
        /// The handler the class names.
        actual: String,
    },
    /// The RuntimeClass sets overhead or scheduling, which berth does not
    /// support: both are applied by admission behind the Runtime's back.
    ClassUnsupported {
        /// The alias.
        alias: String,
        /// The class.
        runtime_class: String,
        /// The handler.
        handler: String,
        /// `overhead` is set.
        overhead: bool,
        /// `scheduling` is set.
        scheduling: bool,
    },
    /// The RuntimeClass is being deleted.
    ClassDeleting {
        /// The alias.
        alias: String,
        /// The class.
        runtime_class: String,
        /// The handler.
        handler: String,
    },
}

impl Decision {
    /// The profile state written to `status.profile.state`.
    pub fn state(&self) -> ProfileState {
        match self {
            Decision::NotRequested => ProfileState::NotRequested,
            Decision::Granted { .. } => ProfileState::Granted,
            Decision::NotGranted { .. } => ProfileState::NotGranted,
            Decision::Revoked { .. } => ProfileState::Revoked,
            Decision::ClassMissing { .. } => ProfileState::ClassMissing,
            Decision::HandlerMismatch { .. } => ProfileState::HandlerMismatch,
            Decision::ClassUnsupported { .. } => ProfileState::ClassUnsupported,
            Decision::ClassDeleting { .. } => ProfileState::ClassDeleting,
        }
    }

    /// The stable condition reason (see [`crate::api::reasons`]).
    pub fn reason(&self) -> &'static str {
        match self {
            Decision::NotRequested => reasons::NOT_REQUESTED,
            Decision::Granted { .. } => reasons::GRANTED,
            Decision::NotGranted { reason, .. } => reason,
            Decision::Revoked { .. } => reasons::REVOKED,
            Decision::ClassMissing { .. } => reasons::CLASS_MISSING,
            Decision::HandlerMismatch { .. } => reasons::HANDLER_MISMATCH,
            Decision::ClassUnsupported { .. } => reasons::CLASS_UNSUPPORTED,
            Decision::ClassDeleting { .. } => reasons::CLASS_DELETING,
        }
    }

    /// A sentence for conditions, events and the admission webhook.
    pub fn message(&self) -> String {
        match self {
            Decision::NotRequested => {
                "no runtimeProfile requested; the cluster's default runtime is used".into()
            }
            Decision::Granted {
                alias,
                runtime_class,
                handler,
            } => {
                format!(
                    "profile {alias} is granted: RuntimeClass {runtime_class} (handler {handler})"
                )
            }
            Decision::NotGranted { alias, detail, .. } => {
                format!("profile {alias} is not granted: {detail}")
            }
            Decision::Revoked { alias, detail, .. } => format!(
                "profile {alias} was granted before and is now revoked: {detail}; managed objects are left as they are until runtimeProfile is cleared, the Runtime is suspended or deleted, or the grant returns"
            ),
            Decision::ClassMissing {
                alias,
                runtime_class,
                ..
            } => {
                format!(
                    "profile {alias} is granted but RuntimeClass {runtime_class} does not exist"
                )
            }
            Decision::HandlerMismatch {
                alias,
                runtime_class,
                expected,
                actual,
            } => format!(
                "profile {alias}: RuntimeClass {runtime_class} names handler {actual}, but the grant expects {expected}"
            ),
            Decision::ClassUnsupported {
                alias,
                runtime_class,
                overhead,
                scheduling,
                ..
            } => {
                let what = match (overhead, scheduling) {
                    (true, true) => "overhead and scheduling",
                    (true, false) => "overhead",
                    _ => "scheduling",
                };
                format!(
                    "profile {alias}: RuntimeClass {runtime_class} sets {what}, which berth does not support (admission would change the pods' resources or placement behind the Runtime's back)"
                )
            }
            Decision::ClassDeleting {
                alias,
                runtime_class,
                ..
            } => {
                format!("profile {alias}: RuntimeClass {runtime_class} is being deleted")
            }
        }
    }

    /// Whether pods may be rendered with `runtimeClassName`.
    pub fn is_granted(&self) -> bool {
        matches!(self, Decision::Granted { .. })
    }

    /// Whether nothing about the profile stands in the way (granted or not
    /// requested). Anything else blocks changes to managed objects unless
    /// the change retires the dependency.
    pub fn allows_changes(&self) -> bool {
        matches!(self, Decision::NotRequested | Decision::Granted { .. })
    }

    /// The alias the decision is about, if any.
    pub fn alias(&self) -> Option<&str> {
        match self {
            Decision::NotRequested => None,
            Decision::Granted { alias, .. }
            | Decision::NotGranted { alias, .. }
            | Decision::Revoked { alias, .. }
            | Decision::ClassMissing { alias, .. }
            | Decision::HandlerMismatch { alias, .. }
            | Decision::ClassUnsupported { alias, .. }
            | Decision::ClassDeleting { alias, .. } => Some(alias),
        }
    }

    /// `status.profile` for this decision (`None` when not requested).
    pub fn profile_status(&self) -> Option<ProfileStatus> {
        let state = self.state();
        let status = |alias: &str, class: Option<&str>, handler: Option<&str>| ProfileStatus {
            alias: Some(alias.to_string()),
            class: class.map(str::to_string),
            handler: handler.map(str::to_string),
            state,
        };
        match self {
            Decision::NotRequested => None,
            Decision::Granted {
                alias,
                runtime_class,
                handler,
            }
            | Decision::ClassMissing {
                alias,
                runtime_class,
                handler,
            }
            | Decision::ClassUnsupported {
                alias,
                runtime_class,
                handler,
                ..
            }
            | Decision::ClassDeleting {
                alias,
                runtime_class,
                handler,
            } => Some(status(alias, Some(runtime_class), Some(handler))),
            Decision::HandlerMismatch {
                alias,
                runtime_class,
                expected,
                ..
            } => Some(status(alias, Some(runtime_class), Some(expected))),
            Decision::NotGranted { alias, .. } => Some(status(alias, None, None)),
            Decision::Revoked {
                alias,
                runtime_class,
                ..
            } => Some(status(alias, runtime_class.as_deref(), None)),
        }
    }
}

/// The binding named `alias` for `identity`, if the file has one. The agent
/// calls this first to know which RuntimeClass to look up for [`decide`].
pub fn binding_for<'a>(
    bindings: &'a [GrantBinding],
    identity: &Identity,
    alias: &str,
) -> Option<&'a GrantBinding> {
    bindings
        .iter()
        .find(|b| b.name == alias && b.matches(identity))
}

/// Decides the grant. Order matters: without a request nothing else is
/// looked at; without a binding the class is irrelevant; a binding's class
/// is then checked for existence, deletion, handler, and unsupported fields,
/// so the message names the first thing an operator has to fix.
pub fn decide(input: DecideInput<'_>) -> Decision {
    let Some(alias) = input.requested.filter(|a| !a.is_empty()) else {
        return Decision::NotRequested;
    };
    let alias_owned = alias.to_string();
    // Granted (or already revoked) for this same alias last time: losing the
    // binding now is a revocation, which blocks instead of rolling pods off
    // the class.
    let previously_granted = input.previous.is_some_and(|p| {
        p.alias.as_deref() == Some(alias)
            && matches!(p.state, ProfileState::Granted | ProfileState::Revoked)
    });
    let previous_class = input.previous.and_then(|p| p.class.clone());

    let identity = match input.identity {
        Ok(identity) => identity,
        Err(error) => {
            let detail = format!("the Runtime's identity is incomplete: {error}");
            return if previously_granted {
                Decision::Revoked {
                    alias: alias_owned,
                    runtime_class: previous_class,
                    detail,
                }
            } else {
                Decision::NotGranted {
                    alias: alias_owned,
                    detail,
                    reason: reasons::IDENTITY_INCOMPLETE,
                }
            };
        }
    };

    let Some(binding) = binding_for(input.bindings, identity, alias) else {
        let detail = if input.bindings.iter().any(|b| b.name == alias) {
            format!("binding {alias} exists but not for {identity}")
        } else if input.bindings.is_empty() {
            "no grants are loaded".to_string()
        } else {
            format!("no binding named {alias} in the grants file")
        };
        return if previously_granted {
            Decision::Revoked {
                alias: alias_owned,
                runtime_class: previous_class,
                detail,
            }
        } else {
            Decision::NotGranted {
                alias: alias_owned,
                detail,
                reason: reasons::NOT_GRANTED,
            }
        };
    };

    let runtime_class = binding.runtime_class.clone();
    let handler = binding.handler.clone();
    // A class observed under another name is not the binding's class; treat
    // it as absent rather than trusting a caller mix-up.
    let class = input.class.filter(|c| c.name == binding.runtime_class);
    let Some(class) = class else {
        return Decision::ClassMissing {
            alias: alias_owned,
            runtime_class,
            handler,
        };
    };
    if class.deleting {
        return Decision::ClassDeleting {
            alias: alias_owned,
            runtime_class,
            handler,
        };
    }
    if class.handler != binding.handler {
        return Decision::HandlerMismatch {
            alias: alias_owned,
            runtime_class,
            expected: handler,
            actual: class.handler.clone(),
        };
    }
    if class.has_overhead || class.has_scheduling {
        return Decision::ClassUnsupported {
            alias: alias_owned,
            runtime_class,
            handler,
            overhead: class.has_overhead,
            scheduling: class.has_scheduling,
        };
    }
    Decision::Granted {
        alias: alias_owned,
        runtime_class,
        handler,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::node::v1::{Overhead, Scheduling};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    fn binding() -> GrantBinding {
        GrantBinding {
            name: "bounded-worker".into(),
            project: "demo".into(),
            environment: "production".into(),
            application: "analytics".into(),
            service: "worker".into(),
            runtime_class: "bounded-worker".into(),
            handler: "bounded-runc".into(),
        }
    }

    fn ident() -> Identity {
        Identity {
            project: "demo".into(),
            environment: "production".into(),
            application: "analytics".into(),
            service: "worker".into(),
        }
    }

    fn class() -> ObservedClass {
        ObservedClass {
            name: "bounded-worker".into(),
            handler: "bounded-runc".into(),
            ..Default::default()
        }
    }

    fn run(
        bindings: &[GrantBinding],
        identity: &Identity,
        requested: Option<&str>,
        class: Option<&ObservedClass>,
        previous: Option<&ProfileStatus>,
    ) -> Decision {
        decide(DecideInput {
            bindings,
            identity: Ok(identity),
            requested,
            class,
            previous,
        })
    }

    #[test]
    fn not_requested() {
        let d = run(&[binding()], &ident(), None, None, None);
        assert_eq!(d, Decision::NotRequested);
        assert_eq!(d.reason(), "NotRequested");
        assert!(d.profile_status().is_none());
        assert!(d.allows_changes());
        // An empty alias is the same as none.
        assert_eq!(
            run(&[], &ident(), Some(""), None, None),
            Decision::NotRequested
        );
        // Identity problems do not matter without a request.
        let err = IdentityError::MissingLabels {
            namespace: "x".into(),
            missing: vec![PROJECT_LABEL],
        };
        let d = decide(DecideInput {
            bindings: &[],
            identity: Err(&err),
            requested: None,
            class: None,
            previous: None,
        });
        assert_eq!(d, Decision::NotRequested);
    }

    #[test]
    fn granted() {
        let d = run(
            &[binding()],
            &ident(),
            Some("bounded-worker"),
            Some(&class()),
            None,
        );
        assert!(d.is_granted());
        assert_eq!(d.state(), ProfileState::Granted);
        assert_eq!(d.reason(), "Granted");
        assert!(
            d.message()
                .contains("RuntimeClass bounded-worker (handler bounded-runc)")
        );
        let status = d.profile_status().expect("status");
        assert_eq!(status.class.as_deref(), Some("bounded-worker"));
        assert_eq!(status.handler.as_deref(), Some("bounded-runc"));
    }

    #[test]
    fn not_granted() {
        let d = run(&[binding()], &ident(), Some("other"), Some(&class()), None);
        assert_eq!(d.state(), ProfileState::NotGranted);
        assert_eq!(d.reason(), "NotGranted");
        assert!(
            d.message().contains("no binding named other"),
            "{}",
            d.message()
        );
        assert!(!d.allows_changes());

        // Same alias, another service: exact match only.
        let mut other = ident();
        other.service = "api".into();
        let d = run(
            &[binding()],
            &other,
            Some("bounded-worker"),
            Some(&class()),
            None,
        );
        assert_eq!(d.state(), ProfileState::NotGranted);
        assert!(
            d.message().contains("exists but not for"),
            "{}",
            d.message()
        );

        let d = run(&[], &ident(), Some("bounded-worker"), Some(&class()), None);
        assert!(d.message().contains("no grants are loaded"));
    }

    #[test]
    fn identity_incomplete() {
        let err = namespace_scope("team-a", &BTreeMap::new()).expect_err("no labels");
        assert_eq!(
            err.to_string(),
            "namespace team-a lacks label(s) berth.dev/project, berth.dev/environment"
        );
        let d = decide(DecideInput {
            bindings: &[binding()],
            identity: Err(&err),
            requested: Some("bounded-worker"),
            class: Some(&class()),
            previous: None,
        });
        assert_eq!(d.state(), ProfileState::NotGranted);
        assert_eq!(d.reason(), "IdentityIncomplete");
        assert!(d.message().contains("lacks label(s)"));
        // Previously granted, labels removed: revoked, not silently ungranted.
        let prev = run(
            &[binding()],
            &ident(),
            Some("bounded-worker"),
            Some(&class()),
            None,
        )
        .profile_status();
        let d = decide(DecideInput {
            bindings: &[binding()],
            identity: Err(&err),
            requested: Some("bounded-worker"),
            class: Some(&class()),
            previous: prev.as_ref(),
        });
        assert_eq!(d.state(), ProfileState::Revoked);
    }

    #[test]
    fn revoked() {
        let prev = run(
            &[binding()],
            &ident(),
            Some("bounded-worker"),
            Some(&class()),
            None,
        )
        .profile_status();
        let d = run(
            &[],
            &ident(),
            Some("bounded-worker"),
            Some(&class()),
            prev.as_ref(),
        );
        assert_eq!(d.state(), ProfileState::Revoked);
        assert_eq!(d.reason(), "Revoked");
        assert!(d.message().contains("revoked"));
        assert_eq!(
            d.profile_status().and_then(|p| p.class).as_deref(),
            Some("bounded-worker")
        );
        // Stays revoked on the next reconcile (previous state Revoked).
        let prev = d.profile_status();
        let again = run(
            &[],
            &ident(),
            Some("bounded-worker"),
            Some(&class()),
            prev.as_ref(),
        );
        assert_eq!(again.state(), ProfileState::Revoked);
        // A previous grant of another alias does not make this one revoked.
        let d = run(&[], &ident(), Some("something-else"), None, prev.as_ref());
        assert_eq!(d.state(), ProfileState::NotGranted);
        // The grant returning makes it granted again.
        let d = run(
            &[binding()],
            &ident(),
            Some("bounded-worker"),
            Some(&class()),
            prev.as_ref(),
        );
        assert!(d.is_granted());
        // Previously NotGranted stays NotGranted.
        let prev = run(&[], &ident(), Some("bounded-worker"), None, None).profile_status();
        let d = run(&[], &ident(), Some("bounded-worker"), None, prev.as_ref());
        assert_eq!(d.state(), ProfileState::NotGranted);
    }

    #[test]
    fn class_missing() {
        let d = run(&[binding()], &ident(), Some("bounded-worker"), None, None);
        assert_eq!(d.state(), ProfileState::ClassMissing);
        assert_eq!(d.reason(), "ClassMissing");
        assert!(d.message().contains("does not exist"));
        // A class of another name is not the binding's class.
        let wrong = ObservedClass {
            name: "other".into(),
            ..class()
        };
        let d = run(
            &[binding()],
            &ident(),
            Some("bounded-worker"),
            Some(&wrong),
            None,
        );
        assert_eq!(d.state(), ProfileState::ClassMissing);
    }

    #[test]
    fn handler_mismatch() {
        let c = ObservedClass {
            handler: "runc".into(),
            ..class()
        };
        let d = run(
            &[binding()],
            &ident(),
            Some("bounded-worker"),
            Some(&c),
            None,
        );
        assert_eq!(d.state(), ProfileState::HandlerMismatch);
        assert_eq!(d.reason(), "HandlerMismatch");
        assert!(
            d.message()
                .contains("names handler runc, but the grant expects bounded-runc"),
            "{}",
            d.message()
        );
    }

    #[test]
    fn class_unsupported() {
        for (overhead, scheduling, word) in [
            (true, false, "sets overhead,"),
            (false, true, "sets scheduling,"),
            (true, true, "overhead and scheduling"),
        ] {
            let c = ObservedClass {
                has_overhead: overhead,
                has_scheduling: scheduling,
                ..class()
            };
            let d = run(
                &[binding()],
                &ident(),
                Some("bounded-worker"),
                Some(&c),
                None,
            );
            assert_eq!(d.state(), ProfileState::ClassUnsupported);
            assert_eq!(d.reason(), "ClassUnsupported");
            assert!(d.message().contains(word), "{}", d.message());
        }
    }

    #[test]
    fn class_deleting_wins_over_other_class_problems() {
        let c = ObservedClass {
            deleting: true,
            handler: "runc".into(),
            has_overhead: true,
            ..class()
        };
        let d = run(
            &[binding()],
            &ident(),
            Some("bounded-worker"),
            Some(&c),
            None,
        );
        assert_eq!(d.state(), ProfileState::ClassDeleting);
        assert_eq!(d.reason(), "ClassDeleting");
        assert!(d.message().contains("being deleted"));
    }

    #[test]
    fn observed_class_from_api() {
        let mut rc = RuntimeClass {
            metadata: ObjectMeta {
                name: Some("bounded-worker".into()),
                ..Default::default()
            },
            handler: "bounded-runc".into(),
            ..Default::default()
        };
        assert_eq!(ObservedClass::from_runtime_class(&rc), class());
        rc.overhead = Some(Overhead {
            pod_fixed: Some(BTreeMap::from([("cpu".into(), Quantity("250m".into()))])),
        });
        rc.scheduling = Some(Scheduling {
            node_selector: Some(BTreeMap::from([("a".into(), "b".into())])),
            tolerations: None,
        });
        rc.metadata.deletion_timestamp = Some(Time(Default::default()));
        let o = ObservedClass::from_runtime_class(&rc);
        assert!(o.has_overhead && o.has_scheduling && o.deleting);
        // Empty overhead/scheduling blocks change nothing.
        rc.overhead = Some(Overhead { pod_fixed: None });
        rc.scheduling = Some(Scheduling::default());
        let o = ObservedClass::from_runtime_class(&rc);
        assert!(!o.has_overhead && !o.has_scheduling);
    }

    #[test]
    fn namespace_labels() {
        let labels = BTreeMap::from([
            (PROJECT_LABEL.to_string(), "demo".to_string()),
            (ENVIRONMENT_LABEL.to_string(), "production".to_string()),
        ]);
        assert_eq!(
            namespace_scope("ns", &labels),
            Ok(("demo".into(), "production".into()))
        );
        let mut only_project = labels.clone();
        only_project.remove(ENVIRONMENT_LABEL);
        assert_eq!(
            namespace_scope("ns", &only_project),
            Err(IdentityError::MissingLabels {
                namespace: "ns".into(),
                missing: vec![ENVIRONMENT_LABEL]
            })
        );
        let mut empty_value = labels.clone();
        empty_value.insert(PROJECT_LABEL.into(), String::new());
        assert!(matches!(
            namespace_scope("ns", &empty_value),
            Err(IdentityError::MissingLabels { .. })
        ));
        let mut bad = labels.clone();
        bad.insert(PROJECT_LABEL.into(), "Demo".into());
        let err = namespace_scope("ns", &bad).expect_err("invalid");
        assert!(
            err.to_string().contains("berth.dev/project=\"Demo\""),
            "{err}"
        );

        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some("ns".into()),
                labels: Some(labels),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut rt = Runtime::new("worker", Default::default());
        rt.spec.application = "analytics".into();
        rt.spec.service = "worker".into();
        assert_eq!(
            identity(&ns, &rt),
            Ok(Identity {
                project: "demo".into(),
                environment: "production".into(),
                ..ident()
            })
        );
    }

    #[test]
    fn scope_names() {
        for ok in ["a", "demo", "a1", "a-b", &format!("a{}", "b".repeat(39))] {
            assert!(is_scope_name(ok), "{ok}");
        }
        for bad in [
            "",
            "1a",
            "a-",
            "A",
            "a_b",
            &format!("a{}", "b".repeat(40)),
            "ä",
        ] {
            assert!(!is_scope_name(bad), "{bad}");
        }
    }
}
