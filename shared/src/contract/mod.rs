//! The production contract on a managed object, whoever changed it
//! (docs/drift-and-events.md): deny by default.
//!
//! The governed part of each managed object is exactly the rendered one.
//! Server-side apply only corrects the fields the agent itself sets; a
//! field, map key or list entry another field manager added
//! (`hostNetwork: true`, a key in a selector, an `LD_PRELOAD` env entry,
//! an AppArmor annotation) would stay for ever. So the live object's
//! governed parts are compared with the rendered ones, and every
//! difference is a violation unless the one table (`table.rs`,
//! `allowlist.rs`) tolerates
//! that field with that value (fields the apiserver defaults, the replica
//! count the autoscaler owns, `kubectl rollout restart`). The agent then
//! writes one merge patch that makes those parts exactly the rendered
//! ones again, keeping the tolerated fields ([`correction`]).
//!
//! Pure: JSON in, JSON out.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

mod allowlist;
pub mod coverage;
#[cfg(test)]
mod coverage_tests;
mod docs;
mod exact;
mod rule;
pub mod table;
#[cfg(test)]
mod tests;

pub use allowlist::{TOLERATED, UNGOVERNED};
pub use docs::markdown;
pub use exact::{Difference, default_pull_policy};
pub use rule::Rule;
pub use table::{Allowed, GOVERNED, Governed, Kind, Scope, Tolerated, Ungoverned};

use exact::{Exact, Seg, Tolerance, matches, pattern};

/// One forbidden difference between a live object and its rendered form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Where, e.g. `spec.template.spec.hostNetwork`.
    pub path: String,
    /// The contract rule broken, stable (metrics, logs, docs).
    pub rule: Rule,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.path, self.rule.as_str())
    }
}

/// What one comparison covers: the governed parts of `kind`, with the pod
/// rows under `template` (none: not compared), and without `strip` (a part
/// the apiserver refuses to change, left out of both sides).
#[derive(Clone, Copy, Debug)]
struct View {
    kind: Kind,
    template: Option<&'static str>,
    strip: Option<&'static str>,
}

impl View {
    /// What the contract governs (and corrects) on `kind`.
    fn governing(kind: Kind) -> View {
        View {
            kind,
            template: kind.pod_template(),
            strip: kind.immutable_template(),
        }
    }

    /// Everything berth renders on `kind`, an immutable pod template
    /// included: whether an object is berth's rendering at all.
    fn whole(kind: Kind) -> View {
        View {
            kind,
            template: kind.pod_template().or(kind.immutable_template()),
            strip: None,
        }
    }

    /// `live` and `desired` without the part left out.
    fn sides<'a>(&self, live: &'a Value, desired: &'a Value) -> (Cow<'a, Value>, Cow<'a, Value>) {
        let Some(strip) = self.strip else {
            return (Cow::Borrowed(live), Cow::Borrowed(desired));
        };
        let without = |v: &Value| {
            let mut v = v.clone();
            if let Some((parent, key)) = strip.rsplit_once('/')
                && let Some(m) = v.pointer_mut(parent).and_then(Value::as_object_mut)
            {
                m.remove(key);
            }
            v
        };
        (Cow::Owned(without(live)), Cow::Owned(without(desired)))
    }
}

/// Whether a row applies to `kind` as the contract governs it, and its
/// path from the object's root.
fn absolute(scope: Scope, path: &str, kind: Kind) -> Option<String> {
    absolute_in(scope, path, View::governing(kind))
}

/// Whether a row applies in `view`, and its path from the object's root.
fn absolute_in(scope: Scope, path: &str, view: View) -> Option<String> {
    match scope {
        Scope::Kind(k) if k == view.kind => Some(path.to_string()),
        Scope::Kind(_) => None,
        Scope::PodTemplate => view.template.map(|t| format!("{t}{path}")),
        Scope::Every => Some(path.to_string()),
    }
}

/// The object's own labels in a Kubernetes domain (`*.kubernetes.io/`,
/// `*.k8s.io/`) that differ from the rendered ones: each key with the
/// value it must have (None: removed). Kubernetes components act on these
/// (`service.kubernetes.io/service-proxy-name` makes kube-proxy drop a
/// Service); every other foreign label is left alone.
fn reserved_labels(live: &Value, desired: &Value) -> Vec<(String, Option<Value>)> {
    let want = desired.pointer("/metadata/labels");
    let reserved = |k: &str| {
        k.split_once('/')
            .is_some_and(|(domain, _)| crate::api::pod_annotations::reserved_domain(domain))
    };
    live.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| reserved(k))
        .filter_map(|(k, v)| {
            let wanted = want.and_then(|w| w.get(k));
            (wanted != Some(v)).then(|| (k.clone(), wanted.cloned()))
        })
        .collect()
}

/// The governed rows in `view` with their absolute patterns.
fn governed(view: View) -> Vec<(Vec<Seg>, String, &'static Governed)> {
    GOVERNED
        .iter()
        .filter_map(|row| {
            let path = absolute_in(row.scope, row.path, view)?;
            Some((pattern(&path), path, row))
        })
        .collect()
}

fn exact(view: View) -> Exact<'static> {
    Exact {
        tolerances: TOLERATED
            .iter()
            .filter_map(|row| {
                let path = absolute_in(row.scope, row.path, view)?;
                Some(Tolerance {
                    pattern: pattern(&path),
                    row,
                })
            })
            .collect(),
    }
}

/// The parts of `kind` compared whole: governed rows that are plain
/// pointers and not inside another governed row.
pub fn roots(kind: Kind) -> Vec<String> {
    roots_in(View::governing(kind))
}

fn roots_in(view: View) -> Vec<String> {
    let rows = governed(view);
    let plain: Vec<&String> = rows
        .iter()
        .map(|(_, p, _)| p)
        .filter(|p| !p.contains('*') && !p.contains('{'))
        .collect();
    plain
        .iter()
        .filter(|p| {
            !plain
                .iter()
                .any(|q| q != *p && p.starts_with(&format!("{q}/")))
        })
        .map(|p| (*p).clone())
        .collect()
}

fn keys(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// The rule a difference at `keys` breaks: the longest governed row above it.
fn rule_at(rows: &[(Vec<Seg>, String, &'static Governed)], keys: &[String]) -> Rule {
    rows.iter()
        .enumerate()
        .filter(|(_, (pat, _, _))| matches(pat, keys, false))
        .max_by_key(|(i, (pat, _, _))| (pat.len(), *i))
        .map_or(Rule::Spec, |(_, (_, _, row))| row.rule)
}

/// Every difference between the governed parts of `live` and `desired`
/// (both the whole object as JSON) that no tolerance covers.
pub fn violations(kind: Kind, live: &Value, desired: &Value) -> Vec<Violation> {
    violations_in(View::governing(kind), live, desired)
}

/// Every difference between a live Job and berth's rendering of it, its
/// immutable pod template included (where the apiserver's defaults and the
/// labels it adds are tolerated): empty when the Job is exactly what berth
/// would create. What tells a planted Job from berth's own (the agent's
/// one-time Jobs).
pub fn job_differences(live: &Value, desired: &Value) -> Vec<Violation> {
    violations_in(View::whole(Kind::Job), live, desired)
}

fn violations_in(view: View, live: &Value, desired: &Value) -> Vec<Violation> {
    let rows = governed(view);
    let compare = exact(view);
    let labels = reserved_labels(live, desired)
        .into_iter()
        .map(|(key, _)| Violation {
            path: format!("metadata.labels.{key}"),
            rule: Rule::ReservedLabel,
        });
    let (live, desired) = view.sides(live, desired);
    roots_in(view)
        .iter()
        .flat_map(|root| {
            compare.differences(&keys(root), live.pointer(root), desired.pointer(root))
        })
        .map(|d| Violation {
            rule: rule_at(&rows, &d.keys),
            path: d.shown,
        })
        .chain(labels)
        .collect()
}

/// A JSON merge patch that makes every governed part of `live` exactly the
/// rendered one: the desired content, an explicit null for every field
/// `live` has and `desired` does not (unless tolerated), lists replaced
/// whole (their entries keep their tolerated fields). It carries the
/// object's `uid` (so it fails rather than touch a recreated object) and
/// sets the desired labels and annotations (others' stay).
pub fn correction(kind: Kind, live: &Value, desired: &Value, uid: Option<&str>) -> Value {
    let view = View::governing(kind);
    let compare = exact(view);
    let mut patch = serde_json::json!({"metadata": {"uid": uid}});
    for key in ["labels", "annotations"] {
        if let Some(v) = desired.pointer(&format!("/metadata/{key}")) {
            patch["metadata"][key] = v.clone();
        }
    }
    for (key, wanted) in reserved_labels(live, desired) {
        patch["metadata"]["labels"][key.as_str()] = wanted.unwrap_or(Value::Null);
    }
    let (live, desired) = view.sides(live, desired);
    for root in roots_in(view) {
        let segments = keys(&root);
        let Some(part) = compare.patch(&segments, live.pointer(&root), desired.pointer(&root))
        else {
            continue;
        };
        let mut at = &mut patch;
        for (i, segment) in segments.iter().enumerate() {
            if i + 1 == segments.len() {
                at[segment.as_str()] = part.clone();
            } else {
                if !at.get(segment.as_str()).is_some_and(Value::is_object) {
                    at[segment.as_str()] = serde_json::json!({});
                }
                at = &mut at[segment.as_str()];
            }
        }
    }
    patch
}
