//! Who a Runtime is (docs/architecture.md §3): project and environment
//! from its Namespace's labels, application and service from its spec —
//! the identity a binding must name exactly.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;

use crate::api::Runtime;
use crate::binding::Identity;

/// Namespace label naming the project (set by cluster admins).
pub const PROJECT_LABEL: &str = "berth.dev/project";
/// Namespace label naming the environment (set by cluster admins).
pub const ENVIRONMENT_LABEL: &str = "berth.dev/environment";

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
/// [`crate::patterns::SCOPE_NAME`]): the grants file's own rule, so a
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
