//! Whether the agent holds back the tenant's changes to a Runtime's managed
//! objects (Blocked), and why. Decided before render: a held Runtime keeps
//! running as it is — only its protection runs (docs/runtime-semantics.md)
//! — and retirement (suspend, clearing the profile) is always carried out.

use crate::api::{Runtime, reasons};
use crate::decide::{Decision, Identity, IdentityError};

/// Why the agent did not apply, when it did not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Applied (or tried to).
    None,
    /// Blocked: the spec's changes are not carried out; the apply step
    /// only protects (recreates missing dependencies, removes forbidden
    /// drift).
    Blocked {
        /// Stable reason.
        reason: String,
        /// Message.
        message: String,
    },
}

impl Hold {
    /// Whether the Runtime is blocked.
    pub fn is_blocked(&self) -> bool {
        matches!(self, Hold::Blocked { .. })
    }
}

/// What a held Runtime gets (and does not): see docs/runtime-semantics.md.
const UNCHANGED: &str = "its spec changes are not carried out; only the protection runs (missing dependencies recreated, forbidden drift removed)";

/// The hold for a Runtime, from its identity, the grant decision and
/// whether an older Runtime holds the identity (its message, if so).
pub fn hold(
    runtime: &Runtime,
    identity: Result<&Identity, &IdentityError>,
    decision: &Decision,
    identity_taken: Option<&str>,
) -> Hold {
    if runtime.spec.suspend {
        // Suspending retires the dependency: always carried out.
        return Hold::None;
    }
    // The namespace's identity labels only matter for a grant: a Runtime
    // without a profile runs on the default runtime wherever it is.
    let wants_profile = runtime
        .spec
        .runtime_profile
        .as_deref()
        .is_some_and(|p| !p.is_empty());
    match identity {
        Err(e) if wants_profile => Hold::Blocked {
            reason: reasons::IDENTITY_INCOMPLETE.to_string(),
            message: format!("{e}; {UNCHANGED}"),
        },
        // Clearing the profile makes the decision NotRequested, which
        // allows changes anyway.
        _ if !decision.allows_changes() => Hold::Blocked {
            reason: decision.reason().to_string(),
            message: decision.message(),
        },
        // One Runtime per identity: a copy would inherit the holder's grant.
        // Checked after the grant decision, so a copy that would be refused
        // anyway keeps saying why.
        _ => match identity_taken {
            Some(message) => Hold::Blocked {
                reason: reasons::IDENTITY_TAKEN.to_string(),
                message: format!("{message}; {UNCHANGED}"),
            },
            None => Hold::None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    /// (profile, suspend, identity complete, decision, taken, expected reason)
    type Case = (
        Option<&'static str>,
        bool,
        bool,
        Decision,
        Option<&'static str>,
        Option<&'static str>,
    );

    #[test]
    fn table() {
        let id = identity();
        let no_labels = IdentityError::MissingLabels {
            namespace: "team".into(),
            missing: vec!["berth.dev/project"],
        };
        // (profile, suspend, identity complete, decision, taken, expected reason)
        let cases: Vec<Case> = vec![
            (None, false, true, Decision::NotRequested, None, None),
            (Some("p"), false, true, granted(), None, None),
            (Some(""), false, false, Decision::NotRequested, None, None),
            (None, false, false, Decision::NotRequested, None, None),
            (
                Some("p"),
                false,
                false,
                not_granted(),
                None,
                Some(reasons::IDENTITY_INCOMPLETE),
            ),
            (Some("p"), true, false, not_granted(), None, None),
            (
                Some("p"),
                false,
                true,
                not_granted(),
                None,
                Some(reasons::NOT_GRANTED),
            ),
            (
                Some("p"),
                false,
                true,
                revoked(),
                Some("held"),
                Some(reasons::REVOKED),
            ),
            (Some("p"), true, true, revoked(), None, None),
            (
                Some("p"),
                false,
                true,
                granted(),
                Some("held"),
                Some(reasons::IDENTITY_TAKEN),
            ),
            (
                None,
                false,
                true,
                Decision::NotRequested,
                Some("held"),
                Some(reasons::IDENTITY_TAKEN),
            ),
            (None, true, true, Decision::NotRequested, Some("held"), None),
        ];
        for (profile, suspend, complete, decision, taken, want) in cases {
            let mut rt = runtime();
            rt.spec.runtime_profile = profile.map(String::from);
            rt.spec.suspend = suspend;
            let identity = if complete { Ok(&id) } else { Err(&no_labels) };
            let got = hold(&rt, identity, &decision, taken);
            let case =
                format!("{profile:?} suspend={suspend} complete={complete} {decision:?} {taken:?}");
            match (want, &got) {
                (None, Hold::None) => {}
                (Some(want), Hold::Blocked { reason, message }) => {
                    assert_eq!(reason, want, "{case}");
                    assert!(!message.is_empty(), "{case}");
                }
                _ => panic!("{case}: got {got:?}, want {want:?}"),
            }
            assert_eq!(got.is_blocked(), want.is_some(), "{case}");
        }
    }

    #[test]
    fn messages_say_nothing_is_changed() {
        let rt = Runtime {
            spec: crate::api::RuntimeSpec {
                runtime_profile: Some("p".into()),
                ..runtime().spec
            },
            ..runtime()
        };
        let Hold::Blocked { message, .. } = hold(
            &rt,
            Ok(&identity()),
            &granted(),
            Some("Runtime a/b already holds it"),
        ) else {
            panic!("not blocked");
        };
        assert_eq!(
            message,
            "Runtime a/b already holds it; its spec changes are not carried out; only the protection runs (missing dependencies recreated, forbidden drift removed)"
        );
    }
}
