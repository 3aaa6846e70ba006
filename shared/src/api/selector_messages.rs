//! Why a selector that would match everything is refused: one text for
//! the CRD's CEL rules (the schema) and for the same rule as a function
//! ([`super::selectors`]), so `kubectl apply` and the agent say the same.

/// Why an empty `namespaceLabels` is refused.
pub const EMPTY_NAMESPACE_SELECTOR: &str =
    "an empty selector matches every namespace; name at least one label";
/// Why an empty `podLabels` is refused.
pub const EMPTY_POD_SELECTOR: &str = "an empty selector matches every pod; name at least one label (to admit every pod of a namespace, name the namespace in namespaceLabels and leave podLabels out)";
/// Why a toleration without a key is refused.
pub const KEYLESS_TOLERATION: &str =
    "a toleration without a key tolerates every taint; name the taint's key";
