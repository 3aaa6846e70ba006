//! "Exactly the rendered one": the differences between a live part and
//! its rendered form that no tolerance covers, and the merge patch that
//! removes them. JSON in, JSON out; pure.
//!
//! Equal means: the same keys with the same values at every depth, lists
//! of the same length in the same order (entries carrying a `name` are
//! matched by it, so a report names them). A field the live object has and
//! the rendered one does not is a difference unless a tolerance covers its
//! path and value.
//!
//! The live object is the apiserver's own JSON (`stored` in the agent),
//! and in it only `null` is nothing: an explicit `{}`, `[]` or `""` is a
//! value the apiserver chose to keep, and often a wide one — a
//! `namespaceSelector: {}` on a NetworkPolicy peer turns "these pods in my
//! namespace" into "these pods in every namespace" (issue 52). The rendered
//! object is typed output, where an empty value the apiserver drops on
//! storing (an empty string, list or map under `omitempty`) matches an
//! absent live field.

use serde_json::{Map, Value};

use super::table::{Allowed, Tolerated};

/// One segment of a path pattern.
#[derive(Clone, Debug)]
pub(crate) enum Seg {
    /// Any key or list position.
    Any,
    /// One of these keys.
    OneOf(Vec<String>),
}

impl Seg {
    fn matches(&self, key: &str) -> bool {
        match self {
            Seg::Any => true,
            Seg::OneOf(keys) => keys.iter().any(|k| k == key),
        }
    }
}

/// Parses a pointer pattern (`/a/*/{b,c}/d~1e`) into segments.
pub(crate) fn pattern(path: &str) -> Vec<Seg> {
    path.split('/')
        .skip(1)
        .map(|s| {
            if s == "*" {
                Seg::Any
            } else if let Some(inner) = s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Seg::OneOf(inner.split(',').map(unescape).collect())
            } else {
                Seg::OneOf(vec![unescape(s)])
            }
        })
        .collect()
}

fn unescape(s: &str) -> String {
    s.replace("~1", "/").replace("~0", "~")
}

/// Whether `path` starts with `pattern` (`exact`: is exactly as long).
pub(crate) fn matches(pattern: &[Seg], path: &[String], exact: bool) -> bool {
    if pattern.len() > path.len() || (exact && pattern.len() != path.len()) {
        return false;
    }
    pattern.iter().zip(path).all(|(p, k)| p.matches(k))
}

/// A tolerance resolved to an absolute pattern.
pub(crate) struct Tolerance<'a> {
    pub(crate) pattern: Vec<Seg>,
    pub(crate) row: &'a Tolerated,
}

/// One difference no tolerance covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// Where, as keys from the object's root (list entries: their index;
    /// an entry added or missing is reported at its list).
    pub keys: Vec<String>,
    /// Where, for people: `spec.template.spec.containers[app].env[LD_PRELOAD]`.
    pub shown: String,
}

/// The pull policy the apiserver gives a container of `image` without one.
pub fn default_pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        Some((_, tag)) if tag != "latest" => "IfNotPresent",
        _ => "Always",
    }
}

/// `null`, `{}`, `[]` or `""`: a rendered value the apiserver may drop.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// The value, unless it is `null` (nothing, in JSON as in a merge patch).
fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn name_of(v: &Value) -> Option<&str> {
    v.get("name").and_then(Value::as_str)
}

/// Whether both lists are keyed by `name` (every entry has one).
fn keyed(a: &[Value], b: &[Value]) -> bool {
    a.iter().chain(b).all(|v| name_of(v).is_some())
}

/// Whether a tolerated row's `allowed` takes `value` (inside `parent`).
fn allows(allowed: Allowed, value: &Value, parent: Option<&Value>) -> bool {
    match allowed {
        Allowed::Any => true,
        Allowed::Value(json) => serde_json::from_str::<Value>(json).is_ok_and(|v| &v == value),
        Allowed::DefaultPullPolicy => {
            let image = parent
                .and_then(|p| p.get("image"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            value.as_str() == Some(default_pull_policy(image))
        }
        Allowed::SameAs(field) => parent.and_then(|p| p.get(field)) == Some(value),
    }
}

/// The comparison of one object with its tolerances.
pub(crate) struct Exact<'a> {
    pub(crate) tolerances: Vec<Tolerance<'a>>,
}

#[derive(Clone)]
struct Path {
    keys: Vec<String>,
    shown: String,
}

impl Path {
    fn root(keys: &[String]) -> Path {
        Path {
            keys: keys.to_vec(),
            shown: keys.join("."),
        }
    }
    fn key(&self, k: &str) -> Path {
        let mut keys = self.keys.clone();
        keys.push(k.to_string());
        let shown = if self.shown.is_empty() {
            k.to_string()
        } else {
            format!("{}.{k}", self.shown)
        };
        Path { keys, shown }
    }
    fn entry(&self, index: usize, name: Option<&str>) -> Path {
        let mut keys = self.keys.clone();
        keys.push(index.to_string());
        let label = name.map_or_else(|| index.to_string(), str::to_string);
        Path {
            keys,
            shown: format!("{}[{label}]", self.shown),
        }
    }
    fn named(&self, name: &str) -> Difference {
        Difference {
            keys: self.keys.clone(),
            shown: format!("{}[{name}]", self.shown),
        }
    }
    fn here(&self) -> Difference {
        Difference {
            keys: self.keys.clone(),
            shown: self.shown.clone(),
        }
    }
}

impl Exact<'_> {
    /// Whether a field the rendered object lacks may have `value` at
    /// `keys`, inside `parent`.
    pub(crate) fn tolerated(&self, keys: &[String], value: &Value, parent: Option<&Value>) -> bool {
        self.tolerance(keys, value, parent).is_some()
    }

    /// The row that tolerates `value` at `keys` (inside `parent`), if one
    /// does.
    fn tolerance(
        &self,
        keys: &[String],
        value: &Value,
        parent: Option<&Value>,
    ) -> Option<&Tolerated> {
        self.tolerances
            .iter()
            .find(|t| matches(&t.pattern, keys, true) && allows(t.row.allowed, value, parent))
            .map(|t| t.row)
    }

    /// Whether a live value the rendered object lacks is, or holds, a
    /// field someone else owns (a row tolerating any value: the
    /// autoscaler's count, `kubectl rollout restart`'s annotation), as
    /// opposed to only the defaults the apiserver fills in.
    fn owns(&self, at: &Path, live: &Value, parent: Option<&Value>) -> bool {
        match self.tolerance(&at.keys, live, parent) {
            Some(row) => row.allowed == Allowed::Any,
            None => live
                .as_object()
                .is_some_and(|m| m.iter().any(|(k, v)| self.owns(&at.key(k), v, Some(live)))),
        }
    }

    /// Every difference between the live part at `root` and the rendered one.
    pub(crate) fn differences(
        &self,
        root: &[String],
        live: Option<&Value>,
        desired: Option<&Value>,
    ) -> Vec<Difference> {
        let mut out = Vec::new();
        self.diff(&Path::root(root), live, desired, None, &mut out);
        out
    }

    fn diff(
        &self,
        at: &Path,
        live: Option<&Value>,
        desired: Option<&Value>,
        parent: Option<&Value>,
        out: &mut Vec<Difference>,
    ) {
        let live = present(live);
        let desired = present(desired);
        match (live, desired) {
            (None, None) => {}
            // Rendered empty, stored as nothing: the same.
            (None, Some(d)) if is_empty(d) => {}
            (None, Some(_)) => out.push(at.here()),
            (Some(l), None) => self.extra(at, l, parent, out),
            (Some(Value::Object(l)), Some(Value::Object(d))) => {
                let lv = live;
                for (k, lv_k) in l {
                    self.diff(&at.key(k), Some(lv_k), d.get(k), lv, out);
                }
                for (k, dv) in d {
                    if !l.contains_key(k) {
                        self.diff(&at.key(k), None, Some(dv), lv, out);
                    }
                }
            }
            (Some(Value::Array(l)), Some(Value::Array(d))) => self.list(at, l, d, out),
            (Some(l), Some(d)) => {
                if l != d {
                    out.push(at.here());
                }
            }
        }
    }

    /// A live value the rendered object does not have.
    fn extra(&self, at: &Path, live: &Value, parent: Option<&Value>, out: &mut Vec<Difference>) {
        if self.tolerated(&at.keys, live, parent) {
            return;
        }
        match live {
            // An explicit empty value is a value (`namespaceSelector: {}`).
            Value::Object(m) if m.is_empty() => out.push(at.here()),
            Value::Array(a) if a.is_empty() => out.push(at.here()),
            // Name what inside it is not tolerated.
            Value::Object(m) => {
                for (k, v) in m {
                    self.diff(&at.key(k), Some(v), None, Some(live), out);
                }
            }
            Value::Array(a) if a.iter().all(|v| name_of(v).is_some()) => {
                for v in a {
                    out.push(at.named(name_of(v).unwrap_or_default()));
                }
            }
            _ => out.push(at.here()),
        }
    }

    fn list(&self, at: &Path, live: &[Value], desired: &[Value], out: &mut Vec<Difference>) {
        if keyed(live, desired) {
            let live_names: Vec<&str> = live.iter().filter_map(name_of).collect();
            let desired_names: Vec<&str> = desired.iter().filter_map(name_of).collect();
            for (i, l) in live.iter().enumerate() {
                let name = name_of(l).unwrap_or_default();
                match desired.iter().find(|d| name_of(d) == Some(name)) {
                    Some(d) => self.diff(&at.entry(i, Some(name)), Some(l), Some(d), None, out),
                    None => out.push(at.named(name)),
                }
            }
            for name in &desired_names {
                if !live_names.contains(name) {
                    out.push(at.named(name));
                }
            }
            let common: Vec<&str> = live_names
                .iter()
                .copied()
                .filter(|n| desired_names.contains(n))
                .collect();
            let wanted: Vec<&str> = desired_names
                .iter()
                .copied()
                .filter(|n| live_names.contains(n))
                .collect();
            if common != wanted {
                out.push(at.here());
            }
        } else if live.len() != desired.len() {
            out.push(at.here());
        } else {
            for (i, (l, d)) in live.iter().zip(desired).enumerate() {
                self.diff(&at.entry(i, None), Some(l), Some(d), None, out);
            }
        }
    }

    /// The merge patch value that makes the live part at `root` exactly
    /// the rendered one, leaving tolerated fields as they are; `None`
    /// when nothing is to be written there.
    pub(crate) fn patch(
        &self,
        root: &[String],
        live: Option<&Value>,
        desired: Option<&Value>,
    ) -> Option<Value> {
        let at = Path::root(root);
        match present(desired) {
            Some(d) => Some(self.patch_present(&at, live, d)),
            None => present(live).and_then(|l| self.patch_absent(&at, l, None)),
        }
    }

    /// For a live value the rendered object lacks: `None` if tolerated,
    /// else null, or an object removing only what is not tolerated.
    fn patch_absent(&self, at: &Path, live: &Value, parent: Option<&Value>) -> Option<Value> {
        if self.tolerated(&at.keys, live, parent) {
            return None;
        }
        let Value::Object(m) = live else {
            return Some(Value::Null);
        };
        let mut out = Map::new();
        let mut kept = false;
        for (k, v) in m {
            match self.patch_absent(&at.key(k), v, Some(live)) {
                Some(p) => {
                    out.insert(k.clone(), p);
                }
                None => kept = true,
            }
        }
        // Nothing tolerated in it, or a foreign object whose kept fields
        // are only the defaults the apiserver gave it (a probe's
        // `periodSeconds`, its `httpGet.scheme`): it goes whole. Its
        // defaults alone would be an object berth did not render, and
        // often one the apiserver refuses (an `httpGet` without a port).
        if !kept || (!out.is_empty() && !self.owns(at, live, parent)) {
            return Some(Value::Null);
        }
        (!out.is_empty()).then_some(Value::Object(out))
    }

    fn patch_present(&self, at: &Path, live: Option<&Value>, desired: &Value) -> Value {
        match (live, desired) {
            (Some(Value::Object(l)), Value::Object(d)) => {
                let mut out = Map::new();
                for (k, dv) in d {
                    out.insert(k.clone(), self.patch_present(&at.key(k), l.get(k), dv));
                }
                for (k, lv) in l {
                    if d.contains_key(k) || lv.is_null() {
                        continue;
                    }
                    if let Some(p) = self.patch_absent(&at.key(k), lv, live) {
                        out.insert(k.clone(), p);
                    }
                }
                Value::Object(out)
            }
            // A merge patch replaces a list whole: its entries are full
            // values, keeping the tolerated fields of the live entries.
            (_, Value::Array(_)) | (_, Value::Object(_)) => self.full(at, live, desired),
            (_, d) => d.clone(),
        }
    }

    /// `desired` plus the tolerated fields of `live` it lacks.
    fn full(&self, at: &Path, live: Option<&Value>, desired: &Value) -> Value {
        match (live, desired) {
            (Some(Value::Object(l)), Value::Object(d)) => {
                let mut out = d.clone();
                for (k, dv) in d {
                    out.insert(k.clone(), self.full(&at.key(k), l.get(k), dv));
                }
                for (k, lv) in l {
                    if !d.contains_key(k)
                        && let Some(kept) = self.kept(&at.key(k), lv, live)
                    {
                        out.insert(k.clone(), kept);
                    }
                }
                Value::Object(out)
            }
            (Some(Value::Array(l)), Value::Array(d)) => {
                let by_name = keyed(l, d);
                let entries = d.iter().enumerate().map(|(i, dv)| {
                    let lv = if by_name {
                        l.iter().find(|lv| name_of(lv) == name_of(dv))
                    } else if l.len() == d.len() {
                        l.get(i)
                    } else {
                        None
                    };
                    self.full(&at.entry(i, None), lv, dv)
                });
                Value::Array(entries.collect())
            }
            _ => desired.clone(),
        }
    }

    /// Of a live value the rendered object lacks, what is tolerated.
    fn kept(&self, at: &Path, live: &Value, parent: Option<&Value>) -> Option<Value> {
        if self.tolerated(&at.keys, live, parent) {
            return Some(live.clone());
        }
        let Value::Object(m) = live else {
            return None;
        };
        let out: Map<String, Value> = m
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), self.kept(&at.key(k), v, Some(live))?)))
            .collect();
        // A foreign object keeps nothing of its defaults (see
        // `patch_absent`), only what someone else owns in it.
        if out != *m && !self.owns(at, live, parent) {
            return None;
        }
        (!out.is_empty()).then_some(Value::Object(out))
    }
}
