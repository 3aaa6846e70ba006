//! The outcome of an admission review, as the review reaches it and the
//! grant-set gate (`super::grant_set::gate`) may turn it.

/// The outcome of a review.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Admit; `warning` is shown to the client (kubectl prints it).
    Allowed {
        /// The grant decision, when one was made.
        reason: &'static str,
        /// A warning for the client.
        warning: Option<String>,
    },
    /// Refuse with a stable reason and a message naming what to fix.
    Denied {
        /// The decision's stable reason (`NotGranted`, `ClassMissing` …).
        reason: &'static str,
        /// The message the client sees.
        message: String,
    },
}

impl Verdict {
    /// Whether the request is admitted.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Verdict::Allowed { .. })
    }
}
