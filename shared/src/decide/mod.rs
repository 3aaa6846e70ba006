//! The grant decision (docs/architecture.md §5, step 2): a pure function from what the
//! agent read — the loaded bindings, the Runtime's identity, the requested
//! profile, the RuntimeClass as observed, and what was decided last time —
//! to one [`Decision`] with a stable reason and a human message.
//!
//! It takes bindings as a slice of [`GrantBinding`], the grants loader's
//! binding type.

//!
//! [`identity`] (who a Runtime is) lives in its own file; the decision
//! here; the table tests in `tests.rs`.

mod identity;
#[cfg(test)]
mod tests;

use k8s_openapi::api::node::v1::RuntimeClass;

use crate::api::{ProfileState, ProfileStatus, reasons};

/// One grant: a binding of the loaded grants file, exactly as loaded (one
/// type, so the grant the loader accepted is the grant decide checks).
pub use crate::binding::Binding as GrantBinding;
/// Who a Runtime is (the type lives with [`GrantBinding`], which names one).
pub use crate::binding::Identity;
pub use identity::{
    ENVIRONMENT_LABEL, IdentityError, PROJECT_LABEL, identity, is_scope_name, namespace_scope,
};

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
    // No grant now: a revocation if there was one, else a refusal.
    let refuse = |detail: String, reason: &'static str| {
        if previously_granted {
            Decision::Revoked {
                alias: alias_owned.clone(),
                runtime_class: previous_class.clone(),
                detail,
            }
        } else {
            Decision::NotGranted {
                alias: alias_owned.clone(),
                detail,
                reason,
            }
        }
    };

    let identity = match input.identity {
        Ok(identity) => identity,
        Err(error) => {
            return refuse(
                format!("the Runtime's identity is incomplete: {error}"),
                reasons::IDENTITY_INCOMPLETE,
            );
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
        return refuse(detail, reasons::NOT_GRANTED);
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
