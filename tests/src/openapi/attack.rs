//! Where an attack's value goes in a live object, and the patch that puts
//! it there.
//!
//! A field path (`/spec/template/spec/containers/*/ports/*/hostPort`) is
//! made concrete on the object at hand: a list position inside the path
//! takes the first entry (one berth rendered, where there is one: the
//! subtle attack is a field added to berth's own container, not a new
//! container) or, placed `fresh`, a new entry (for a field the first entry
//! cannot take beside what it has: a second volume source, a second probe
//! handler); a path that ends at a list position appends an entry, a map
//! key is the variant's [`key`](super::values::key). What is missing on
//! the way is created from the schema (an object with its required fields,
//! an empty list). The attack then goes out as one JSON merge patch from
//! the live object to the changed one ([`merge_patch`]).

use serde_json::{Map, Value};

use super::values::{generate, key};
use super::{Field, KindFields, escape};

/// What stops a value from being placed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlaceError {
    /// The path is not one of the kind's fields.
    #[error("{0}: not a field of the kind")]
    Unknown(String),
    /// Something other than an object or a list is in the way.
    #[error("{path}: {at} holds a scalar")]
    Blocked { path: String, at: String },
}

/// The fields from the root down to `path`: `/a`, `/a/b`, `/a/b/*`, ….
fn chain<'a>(kf: &'a KindFields, path: &str) -> Result<Vec<&'a Field>, PlaceError> {
    let mut out = Vec::new();
    let mut prefix = String::new();
    for segment in path.split('/').skip(1) {
        prefix.push('/');
        prefix.push_str(segment);
        out.push(
            kf.get(&prefix)
                .ok_or_else(|| PlaceError::Unknown(path.to_string()))?,
        );
    }
    Ok(out)
}

/// What to create where a field is missing on the way down: an object
/// with its required fields, an empty list or map (the next segment fills
/// it).
fn intermediate(kf: &KindFields, field: &Field, variant: usize) -> Value {
    if field.schema.items().is_some() {
        Value::Array(Vec::new())
    } else if field.schema.map_values().is_some() {
        Value::Object(Map::new())
    } else {
        generate(&kf.schemas, &field.schema, field.name(), variant, 0)
    }
}

/// The concrete pointer `value` will be placed at for `path` on `object`,
/// and the object with it there (see the module's rules). `variant` picks
/// map keys and the required fields of what is created.
pub fn place(
    kf: &KindFields,
    object: &mut Value,
    path: &str,
    value: Value,
    variant: usize,
    fresh: bool,
) -> Result<String, PlaceError> {
    let fields = chain(kf, path)?;
    let mut at = object;
    let mut pointer = String::new();
    let last = fields.len().saturating_sub(1);
    for (i, field) in fields.iter().enumerate() {
        let segment = field.path.rsplit('/').next().unwrap_or_default();
        let blocked = |pointer: &str| PlaceError::Blocked {
            path: path.to_string(),
            at: pointer.to_string(),
        };
        let slot: &mut Value = match at {
            Value::Array(list) => {
                let index = if i == last || list.is_empty() || fresh {
                    let filler = if i == last {
                        Value::Null
                    } else {
                        intermediate(kf, field, variant)
                    };
                    list.push(filler);
                    list.len() - 1
                } else {
                    0
                };
                pointer.push_str(&format!("/{index}"));
                &mut list[index]
            }
            Value::Object(map) => {
                let k = if segment == "*" && field.path == "/metadata/labels/*" {
                    // An object's own labels are governed only in the
                    // Kubernetes domains (`reserved-label`); any other
                    // label is left alone on purpose (UNGOVERNED).
                    let name = key(variant).rsplit('/').next().unwrap_or("adversary");
                    format!("adversary.kubernetes.io/{name}")
                } else if segment == "*" {
                    key(variant).to_string()
                } else {
                    segment.replace("~1", "/").replace("~0", "~")
                };
                pointer.push('/');
                pointer.push_str(&escape(&k));
                let entry = map.entry(k).or_insert(Value::Null);
                if i != last && entry.is_null() {
                    *entry = intermediate(kf, field, variant);
                }
                entry
            }
            _ => return Err(blocked(&pointer)),
        };
        if i == last {
            *slot = value;
            return Ok(pointer);
        }
        at = slot;
    }
    Err(PlaceError::Unknown(path.to_string()))
}

/// The JSON merge patch (RFC 7386) that turns `before` into `after`:
/// objects are merged key by key, anything else (a list, a scalar) is
/// replaced whole, a removed key is `null`.
pub fn merge_patch(before: &Value, after: &Value) -> Value {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let mut out = Map::new();
            for (k, av) in a {
                match b.get(k) {
                    Some(bv) if bv == av => {}
                    Some(bv) if bv.is_object() && av.is_object() => {
                        out.insert(k.clone(), merge_patch(bv, av));
                    }
                    _ => {
                        out.insert(k.clone(), av.clone());
                    }
                }
            }
            for k in b.keys() {
                if !a.contains_key(k) {
                    out.insert(k.clone(), Value::Null);
                }
            }
            Value::Object(out)
        }
        _ => after.clone(),
    }
}

/// The pointer of a field an apiserver refusal names
/// (`spec.template.spec.initContainers[0].image`,
/// `metadata.annotations[example.com/x]`).
pub fn field_pointer(field: &str) -> String {
    let mut out = String::new();
    let mut key = String::new();
    let mut chars = field.chars();
    let flush = |key: &mut String, out: &mut String| {
        if !key.is_empty() {
            out.push('/');
            out.push_str(&escape(key));
            key.clear();
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '.' => flush(&mut key, &mut out),
            '[' => {
                flush(&mut key, &mut out);
                let inner: String = chars.by_ref().take_while(|c| *c != ']').collect();
                out.push('/');
                out.push_str(&escape(&inner));
            }
            _ => key.push(c),
        }
    }
    flush(&mut key, &mut out);
    out
}

/// The field path of a concrete pointer (`/spec/containers/0/image` →
/// `/spec/containers/*/image`), if the kind has it.
pub fn schema_path(kf: &KindFields, pointer: &str) -> Option<String> {
    let mut path = String::new();
    for segment in pointer.split('/').skip(1) {
        let named = format!("{path}/{segment}");
        path = if kf.get(&named).is_some() {
            named
        } else {
            format!("{path}/*")
        };
        kf.get(&path)?;
    }
    Some(path)
}

/// Fills the field at the concrete `pointer` of `object` with a value
/// generated from its schema, when it is missing and its parent is there:
/// what an apiserver refusal says is required beside an attack (a new
/// init container's `image`). Whether it filled it.
pub fn fill(kf: &KindFields, object: &mut Value, pointer: &str, variant: usize) -> bool {
    let Some(field) = schema_path(kf, pointer).and_then(|p| kf.get(&p)) else {
        return false;
    };
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return false;
    };
    let key = last.replace("~1", "/").replace("~0", "~");
    let value = generate(&kf.schemas, &field.schema, field.name(), variant, 0);
    match object.pointer_mut(parent) {
        Some(Value::Object(map)) if !map.contains_key(&key) => {
            map.insert(key, value);
            true
        }
        _ => false,
    }
}

/// Whether one pointer is the other or above it: two attacks at such
/// pointers cannot be told apart in one batch.
pub fn overlaps(a: &str, b: &str) -> bool {
    a == b || a.starts_with(&format!("{b}/")) || b.starts_with(&format!("{a}/"))
}
