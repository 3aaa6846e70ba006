//! Which cluster a copy of the store, a row, a screen or an action belongs
//! to (issue 56, fleet mode): the kubeconfig context it was reached
//! through. Every path from a row to a request carries one of these from
//! the row itself; nothing looks a cluster up by an object's name.

use std::fmt;
use std::sync::Arc;

/// A cluster of the fleet, named by its kubeconfig context (unique within
/// a kubeconfig). The name is kept as the kubeconfig spells it, to connect
/// with; what is drawn or typed is [`ClusterId::shown`].
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClusterId(Arc<str>);

impl ClusterId {
    /// The cluster reached through context `name`.
    pub fn new(name: impl AsRef<str>) -> Self {
        ClusterId(Arc::from(name.as_ref()))
    }

    /// The context name as the kubeconfig spells it.
    pub fn context(&self) -> &str {
        &self.0
    }

    /// The name made safe for a terminal (a kubeconfig is a file anyone
    /// may have handed over): what the CLUSTER column shows, what a filter
    /// and a confirmation compare with.
    pub fn shown(&self) -> String {
        let s = berth_shared::sanitize::short(&self.0);
        if s.is_empty() { "-".into() } else { s }
    }
}

impl fmt::Debug for ClusterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClusterId({:?})", &*self.0)
    }
}

impl fmt::Display for ClusterId {
    /// The shown name ([`ClusterId::shown`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_kept_as_spelled_and_shown_sanitized() {
        let c = ClusterId::new("prod\u{1b}[2J-eu");
        assert_eq!(c.context(), "prod\u{1b}[2J-eu");
        assert_eq!(c.shown(), "prod-eu");
        assert_eq!(c.to_string(), "prod-eu");
        assert_eq!(ClusterId::new("a"), ClusterId::new("a"));
        assert_ne!(ClusterId::new("a"), ClusterId::new("b"));
    }
}
