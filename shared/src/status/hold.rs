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

/// Kubernetes' own deletion finalizers: the garbage collector is deleting
/// (`foregroundDeletion`) or orphaning (`orphan`) the dependents.
pub const COLLECTOR_FINALIZERS: [&str; 2] = ["foregroundDeletion", "orphan"];

/// A Runtime being deleted (issue 52: deletion is a state berth governs).
/// Until the Runtime is gone its objects keep their protection and it
/// keeps its identity; the garbage collector removes the objects after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deletion {
    /// The finalizers that hold it that are not the garbage collector's
    /// (berth sets none): whoever set one must remove it.
    pub foreign: Vec<String>,
    /// The garbage collector is deleting or orphaning the dependents now:
    /// what is missing is not recreated (that would fight it), only
    /// what is there is corrected.
    pub collecting: bool,
}

/// Whether `runtime` is being deleted, and what holds it.
pub fn deletion(runtime: &Runtime) -> Option<Deletion> {
    runtime.metadata.deletion_timestamp.as_ref()?;
    let finalizers = runtime.metadata.finalizers.iter().flatten();
    let (collector, foreign): (Vec<&String>, Vec<&String>) =
        finalizers.partition(|f| COLLECTOR_FINALIZERS.contains(&f.as_str()));
    Some(Deletion {
        foreign: foreign.into_iter().cloned().collect(),
        collecting: !collector.is_empty(),
    })
}

impl Deletion {
    /// The Blocked message: what holds it and what still runs.
    pub fn message(&self) -> String {
        let held = match self.foreign.as_slice() {
            [] => String::new(),
            names => format!(
                "; held by the finalizer{} {} (not berth's: whoever set it must remove it)",
                if names.len() == 1 { "" } else { "s" },
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let protection = if self.collecting {
            "what is left of its objects keeps its protection (forbidden drift removed) while the garbage collector removes them"
        } else {
            "its objects keep their protection (missing dependencies recreated, forbidden drift removed) and it keeps its identity until it is gone"
        };
        format!("being deleted{held}; {protection}")
    }
}

/// The hold for a Runtime, from its identity, the grant decision and
/// whether an older Runtime holds the identity (its message, if so).
pub fn hold(
    runtime: &Runtime,
    identity: Result<&Identity, &IdentityError>,
    decision: &Decision,
    identity_taken: Option<&str>,
) -> Hold {
    // Being deleted: the spec is not carried out any more, whatever it
    // says (a suspend or a new profile on a Runtime going away), and the
    // protection runs until it is gone.
    if let Some(deletion) = deletion(runtime) {
        return Hold::Blocked {
            reason: reasons::DELETING.to_string(),
            message: deletion.message(),
        };
    }
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
    use super::*;
    use crate::testkit::status::*;

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

    /// Issue 52: a Runtime being deleted is Blocked (reason Deleting),
    /// whatever its spec says, and the message names a foreign finalizer.
    #[test]
    fn a_runtime_being_deleted_is_held_and_its_finalizers_named() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let mut rt = runtime();
        rt.spec.suspend = true;
        assert_eq!(deletion(&rt), None);
        rt.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        rt.metadata.finalizers = Some(vec!["example.com/keep".into()]);
        let d = deletion(&rt).expect("deleting");
        assert_eq!(d.foreign, ["example.com/keep"]);
        assert!(!d.collecting);
        let Hold::Blocked { reason, message } = hold(&rt, Ok(&identity()), &granted(), None) else {
            panic!("not held");
        };
        assert_eq!(reason, reasons::DELETING);
        assert!(message.contains("`example.com/keep`"), "{message}");
        assert!(
            message.contains("missing dependencies recreated"),
            "{message}"
        );
        // The garbage collector's own: nothing is recreated under it.
        rt.metadata.finalizers = Some(vec!["foregroundDeletion".into()]);
        let d = deletion(&rt).expect("deleting");
        assert!(d.foreign.is_empty() && d.collecting);
        assert!(!d.message().contains("recreated"), "{}", d.message());
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
