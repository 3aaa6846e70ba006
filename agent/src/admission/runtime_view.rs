//! What a review reads of a Runtime: the few fields of its spec the verdict
//! looks at, parsed leniently, and where they come from in an admission
//! request's object. Read by the review and by the lookup of claimants.

use kube::core::DynamicObject;
use serde::Deserialize;

/// The part of a Runtime's spec the verdict looks at. Deliberately lenient
/// (everything else is ignored) so that a newer or older schema never makes
/// the webhook refuse a change it cannot parse in full.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeView {
    /// `spec.application`.
    #[serde(default)]
    pub application: String,
    /// `spec.service`.
    #[serde(default)]
    pub service: String,
    /// `spec.runtimeProfile`.
    #[serde(default)]
    pub runtime_profile: Option<String>,
    /// `spec.suspend`.
    #[serde(default)]
    pub suspend: bool,
}

impl RuntimeView {
    /// The requested alias, `None` when unset or empty.
    pub fn requested(&self) -> Option<&str> {
        self.runtime_profile.as_deref().filter(|p| !p.is_empty())
    }
}

/// The Runtime's spec, as much of it as a review reads.
pub fn spec_of(obj: &DynamicObject) -> Result<RuntimeView, serde_json::Error> {
    let spec = obj.data.get("spec").cloned().unwrap_or_default();
    serde_json::from_value(spec)
}
