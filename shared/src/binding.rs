//! Who a service is and what a grant gives it: the two value types every
//! other module speaks of (docs/architecture.md §3).
//!
//! They sit at the bottom of the crate and name nothing above it but the
//! schema's patterns, so the grants loader, the grant decision, the CRD
//! types and the plan all share one definition instead of copying the
//! fields: the loader parses into [`Binding`], `RuntimeGrant` and
//! `PendingGrantsFile` embed them (flattened, so the CRD fields are the
//! binding's fields), the plan reports them.

use schemars::JsonSchema;
use serde::ser::SerializeMap as _;
use serde::{Deserialize, Serialize, Serializer};

use crate::patterns;

/// Who a service is: project and environment from its Namespace's labels
/// (so a namespace tenant cannot claim another project's grant), application
/// and service from a Runtime's immutable spec fields. A binding names one
/// exactly; there are no wildcards.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub struct Identity {
    /// Project (Namespace label `berth.dev/project`).
    #[schemars(regex(pattern = patterns::SCOPE_NAME), length(min = 1, max = 40))]
    pub project: String,
    /// Environment (Namespace label `berth.dev/environment`).
    #[schemars(regex(pattern = patterns::SCOPE_NAME), length(min = 1, max = 40))]
    pub environment: String,
    /// Application (`spec.application` of the Runtime).
    #[schemars(regex(pattern = patterns::SCOPE_NAME), length(min = 1, max = 40))]
    pub application: String,
    /// Service (`spec.service` of the Runtime).
    #[schemars(regex(pattern = patterns::SCOPE_NAME), length(min = 1, max = 40))]
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

/// One binding of the grants file: the service it names may select the
/// alias `name`, which means the RuntimeClass granted, whose handler must be
/// the one named.
// Serialized with the CRD's camelCase names; the grants file itself is read
// by the loader's own walk, with its snake_case keys.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    /// The alias services select (`runtimeProfile`); unique in the file.
    #[schemars(regex(pattern = patterns::DNS_LABEL), length(min = 1, max = 63))]
    pub name: String,
    /// The one identity granted.
    #[serde(flatten)]
    pub identity: Identity,
    /// The RuntimeClass granted.
    #[schemars(regex(pattern = patterns::DNS_SUBDOMAIN), length(min = 1, max = 253))]
    pub runtime_class: String,
    /// The handler the RuntimeClass must name.
    #[schemars(regex(pattern = patterns::DNS_LABEL), length(min = 1, max = 63))]
    pub handler: String,
}

/// The keys of a binding in the grants file, in file (and field) order.
pub const FILE_KEYS: [&str; 7] = [
    "name",
    "project",
    "environment",
    "application",
    "service",
    "runtime_class",
    "handler",
];

impl Binding {
    /// Whether this binding is for exactly this identity (no wildcards).
    pub fn matches(&self, identity: &Identity) -> bool {
        self.identity == *identity
    }

    /// Every field with its grants-file key ([`FILE_KEYS`]), in file order:
    /// what tables, diffs and the file form list, so none spells the
    /// fields out again.
    pub fn file_fields(&self) -> [(&'static str, &str); 7] {
        let values = [
            self.name.as_str(),
            &self.identity.project,
            &self.identity.environment,
            &self.identity.application,
            &self.identity.service,
            &self.runtime_class,
            &self.handler,
        ];
        std::array::from_fn(|i| (FILE_KEYS[i], values[i]))
    }
}

/// A binding serialized as the grants file spells it (snake_case keys, file
/// order), e.g. for `berth-agent check-grants -o json`; [`Binding`]'s own
/// serialization is the CRD's camelCase.
#[derive(Clone, Copy, Debug)]
pub struct FileForm<'a>(pub &'a Binding);

impl Serialize for FileForm<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = self.0.file_fields();
        let mut map = serializer.serialize_map(Some(fields.len()))?;
        for (key, value) in fields {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding() -> Binding {
        crate::testkit::binding(
            "bounded-worker",
            crate::testkit::worker::identity(),
            "bounded",
            "bounded-runc",
        )
    }

    #[test]
    fn the_binding_serializes_flat_as_the_crds_and_the_plan_did() {
        // The identity is flattened: the same keys, in the same order, as
        // the copied structs (PendingBinding, PlanBinding) had.
        let json = serde_json::to_string(&binding()).expect("json");
        assert_eq!(
            json,
            r#"{"name":"bounded-worker","project":"demo","environment":"production","application":"analytics","service":"worker","runtimeClass":"bounded","handler":"bounded-runc"}"#
        );
        let back: Binding = serde_json::from_str(&json).expect("back");
        assert_eq!(back, binding());
    }

    #[test]
    fn the_file_form_uses_the_files_keys_in_file_order() {
        let b = binding();
        let keys: Vec<&str> = b.file_fields().iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, FILE_KEYS);
        assert_eq!(
            serde_json::to_string(&FileForm(&b)).expect("json"),
            r#"{"name":"bounded-worker","project":"demo","environment":"production","application":"analytics","service":"worker","runtime_class":"bounded","handler":"bounded-runc"}"#
        );
    }
}
