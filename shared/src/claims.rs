//! One Runtime per identity (docs/architecture.md §3).
//!
//! A grant binds one exact identity (project, environment, application,
//! service). Without this rule a copy of a Runtime — in the same namespace,
//! or in another namespace carrying the same project/environment labels —
//! would inherit the grant. Every Runtime with a complete identity claims
//! it, whether it requests a profile or not: otherwise an old Runtime
//! without a profile could take the grant from the one running with it by
//! adding a profile later. The oldest claimant holds the identity; the
//! admission webhook refuses the others and the controller blocks them.
//!
//! Pure: the agent hands in what it read (from its caches at reconcile,
//! from two LIST requests at admission).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::decide::Identity;

/// One Runtime that claims an identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// `metadata.creationTimestamp`; `None` for a Runtime not created yet
    /// (an admission CREATE), which is younger than every stored one.
    pub created: Option<Time>,
    /// `metadata.deletionTimestamp` is set: it is going away. It still
    /// holds its identity until it is gone (issue 52: a Runtime held in
    /// deletion by a foreign finalizer kept its pods running while a copy
    /// was admitted and took the grant), and is never blocked itself.
    pub deleting: bool,
}

impl Claim {
    /// `namespace/name`, as messages name a Runtime.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    fn same_object(&self, other: &Claim) -> bool {
        self.namespace == other.namespace && self.name == other.name
    }

    /// Older first: creation time (not yet created = youngest), then
    /// namespace, then name — a total order, so every agent replica and the
    /// webhook pick the same holder.
    fn age_key(&self) -> (bool, Option<&Time>, &str, &str) {
        (
            self.created.is_none(),
            self.created.as_ref(),
            &self.namespace,
            &self.name,
        )
    }
}

/// The holder among claimants of one identity: the oldest one, being
/// deleted or not (a Runtime holds its identity until it is gone).
pub fn holder<'a>(claims: impl IntoIterator<Item = &'a Claim>) -> Option<&'a Claim> {
    claims
        .into_iter()
        .min_by(|a, b| a.age_key().cmp(&b.age_key()))
}

/// The Runtime that holds the identity `me` claims, when it is another one.
/// `others` may contain `me` (it is skipped). A Runtime being deleted is
/// never kept from anything (it is going), but still keeps others from
/// its identity while it is there.
pub fn taken_by<'a>(me: &Claim, others: impl IntoIterator<Item = &'a Claim>) -> Option<&'a Claim> {
    if me.deleting {
        return None;
    }
    let rivals: Vec<&Claim> = others.into_iter().filter(|o| !o.same_object(me)).collect();
    let oldest = holder(rivals.iter().copied())?;
    (oldest.age_key() < me.age_key()).then_some(oldest)
}

/// The message a refused or blocked claimant carries: names the holder and
/// the way out.
pub fn taken_message(me: &Claim, identity: &Identity, holder: &Claim) -> String {
    format!(
        "Runtime {} claims {identity}, which Runtime {} already holds (one Runtime per identity; the older one keeps it); delete one of them, or give this one another application or service",
        me.key(),
        holder.key()
    )
}

/// Project/environment pairs that more than one namespace carries, with
/// those namespaces (sorted): each such pair makes copies in different
/// namespaces claim one identity, which an operator should hear about.
/// Input: namespace name and its (project, environment), for namespaces
/// with a complete, valid pair.
pub fn shared_scopes<'a>(
    namespaces: impl IntoIterator<Item = (&'a str, (&'a str, &'a str))>,
) -> BTreeMap<(String, String), Vec<String>> {
    let mut by_scope: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (ns, (project, environment)) in namespaces {
        by_scope
            .entry((project.to_string(), environment.to_string()))
            .or_default()
            .push(ns.to_string());
    }
    by_scope.retain(|_, names| {
        names.sort();
        names.dedup();
        names.len() > 1
    });
    by_scope
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Option<Time> {
        Some(Time(
            k8s_openapi::jiff::Timestamp::from_second(secs).expect("timestamp"),
        ))
    }

    fn claim(ns: &str, name: &str, created: Option<Time>, deleting: bool) -> Claim {
        Claim {
            namespace: ns.into(),
            name: name.into(),
            created,
            deleting,
        }
    }

    #[test]
    fn holder_table() {
        let a = claim("ns-a", "web", t(100), false);
        let b = claim("ns-a", "copy", t(200), false);
        let b_same_second = claim("ns-b", "web", t(100), false);
        let a_deleting = claim("ns-a", "web", t(100), true);
        let fresh = claim("ns-a", "new", None, false);
        let cases: Vec<(&str, Vec<&Claim>, Option<&Claim>)> = vec![
            ("nobody claims", vec![], None),
            ("one claimant holds", vec![&b], Some(&b)),
            ("older wins", vec![&b, &a], Some(&a)),
            (
                "same second: namespace then name decide",
                vec![&b_same_second, &a],
                Some(&a),
            ),
            (
                "a deleting holder holds until it is gone (issue 52)",
                vec![&a_deleting, &b],
                Some(&a_deleting),
            ),
            (
                "all deleting: the oldest still holds",
                vec![&a_deleting],
                Some(&a_deleting),
            ),
            ("not created yet is youngest", vec![&fresh, &b], Some(&b)),
            ("only the new one", vec![&fresh], Some(&fresh)),
        ];
        for (what, claims, want) in cases {
            assert_eq!(holder(claims), want, "{what}");
        }
    }

    #[test]
    fn taken_by_table() {
        let old = claim("ns-a", "web", t(100), false);
        let young = claim("ns-b", "web", t(200), false);
        let create = claim("ns-c", "web", None, false);
        let old_deleting = claim("ns-a", "web", t(100), true);
        let cases: Vec<(&str, &Claim, Vec<&Claim>, Option<&Claim>)> = vec![
            ("alone", &old, vec![&old], None),
            ("the holder itself (update)", &old, vec![&old, &young], None),
            ("the younger one", &young, vec![&old, &young], Some(&old)),
            (
                "a create against a stored one",
                &create,
                vec![&young],
                Some(&young),
            ),
            (
                "a create against the oldest",
                &create,
                vec![&young, &old],
                Some(&old),
            ),
            (
                "the holder is being deleted: it holds until it is gone",
                &young,
                vec![&old_deleting, &young],
                Some(&old_deleting),
            ),
            (
                "a deleting claimant is never blocked",
                &old_deleting,
                vec![&old],
                None,
            ),
        ];
        for (what, me, others, want) in cases {
            assert_eq!(taken_by(me, others), want, "{what}");
        }
    }

    #[test]
    fn message_names_the_holder_and_identity() {
        let id = Identity {
            project: "demo".into(),
            environment: "production".into(),
            application: "analytics".into(),
            service: "worker".into(),
        };
        let msg = taken_message(
            &claim("ns-b", "copy", t(2), false),
            &id,
            &claim("ns-a", "web", t(1), false),
        );
        assert!(msg.contains("Runtime ns-b/copy claims project=demo environment=production application=analytics service=worker"), "{msg}");
        assert!(msg.contains("Runtime ns-a/web already holds"), "{msg}");
    }

    #[test]
    fn shared_scopes_table() {
        let none = shared_scopes([("a", ("demo", "prod")), ("b", ("demo", "staging"))]);
        assert!(none.is_empty(), "{none:?}");
        let two = shared_scopes([
            ("team-b", ("demo", "prod")),
            ("solo", ("other", "prod")),
            ("team-a", ("demo", "prod")),
        ]);
        assert_eq!(
            two.into_iter().collect::<Vec<_>>(),
            vec![(
                ("demo".to_string(), "prod".to_string()),
                vec!["team-a".to_string(), "team-b".to_string()]
            )]
        );
    }
}
