//! Values for the adversary, generated from the schema alone: an enum
//! gives a member other than the default, a boolean its other value, an
//! integer, quantity or int-or-string a small one in range, a string one
//! shaped by its format (`byte`, `date-time`) or else a plausible literal
//! for its name (an image, an address, an absolute path, a name); an
//! object gets its required fields, a map one key, a list one element.
//!
//! The apiserver validates far more than the schema says (a `mountPath`
//! must be absolute, a port at most 65535, two probe handlers are one too
//! many), so each field has several candidates, best first: a value it
//! refuses is tried with the next one (`variant`), and a field refused for
//! every candidate is reported as such.

use serde_json::{Value, json};

use super::{Resolved, Schemas};

/// How many variants a compound value (object, map, list) has: the
/// variant picks the candidate of every scalar inside it, and the key of
/// every map.
pub const VARIANTS: usize = 4;

/// Nesting below which required fields are no longer filled in (a guard:
/// the governed kinds' required fields nest a few levels at most).
const MAX_DEPTH: usize = 16;

/// The map key of a variant: a plain name first, then a qualified one
/// (resource names must be qualified to be extended resources).
pub fn key(variant: usize) -> &'static str {
    [
        "adversary",
        "example.com/adversary",
        "adversary-b",
        "example.com/adversary-b",
    ][variant % VARIANTS]
}

/// The schema's own default, if it gives one.
fn default_of(schema: &Resolved) -> Option<&Value> {
    schema.schema.get("default")
}

/// Plausible literals for a string field named `name`, best first.
fn literals(name: &str) -> Vec<Value> {
    let lower = name.to_ascii_lowercase();
    let mut out: Vec<&str> = Vec::new();
    if lower.contains("image") {
        out.push("registry.invalid/adversary:1");
    }
    if lower.ends_with("cidr") || lower.ends_with("cidrs") {
        out.push("203.0.113.0/24");
    }
    if lower.ends_with("ip") || lower.ends_with("ips") || lower == "ipblock" {
        out.push("203.0.113.7");
    }
    if lower.contains("path") && lower != "subpath" && lower != "subpathexpr" {
        out.push("/adversary");
    }
    if lower.contains("host") {
        out.push("adversary.example");
    }
    // Enums the schema does not list: a selector's or toleration's
    // operator, a container's restart policy.
    if lower == "operator" {
        out.extend(["In", "Exists", "NotIn"]);
    }
    if lower == "restartpolicy" {
        out.extend(["Always", "OnFailure", "Never"]);
    }
    // A name is most often a DNS label (a container's, a volume's, a
    // port's): every variant of a new list entry must be one, or the
    // entry is refused for its name and the path it carries is never
    // tried (the full sweep of 2026-12-06 lost hundreds of paths so).
    if lower == "name" || lower.ends_with("name") {
        out.extend(["adversary", "adversary-b", "adversary-c"]);
    }
    out.extend([
        "adversary",
        "/adversary",
        "203.0.113.7",
        "example.com/adversary",
        "1",
    ]);
    let mut seen = Vec::new();
    for v in out {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen.into_iter().map(|s| json!(s)).collect()
}

/// The scalar candidates of a field, best first (empty for a compound).
pub fn scalars(schema: &Resolved, name: &str) -> Vec<Value> {
    if let Some(members) = schema.schema.get("enum").and_then(Value::as_array) {
        let default = default_of(schema);
        let (others, defaults): (Vec<&Value>, Vec<&Value>) = members
            .iter()
            .partition(|m| Some(*m) != default && !is_blank(m));
        return others.into_iter().chain(defaults).cloned().collect();
    }
    if schema.is_quantity() {
        return ["7", "100m", "1Mi", "3"].map(|s| json!(s)).to_vec();
    }
    if schema.is_int_or_string() {
        return vec![json!(7), json!("50%"), json!(1), json!("3")];
    }
    match schema.type_() {
        Some("boolean") => {
            let flipped = !default_of(schema).and_then(Value::as_bool).unwrap_or(false);
            vec![json!(flipped), json!(!flipped)]
        }
        Some("integer") | Some("number") => {
            let min = schema.schema.get("minimum").and_then(Value::as_i64);
            let max = schema.schema.get("maximum").and_then(Value::as_i64);
            [7_i64, 1, 3, 100, 0]
                .into_iter()
                .filter(|n| min.is_none_or(|m| *n >= m) && max.is_none_or(|m| *n <= m))
                .map(|n| json!(n))
                .collect()
        }
        Some("string") => match schema.schema.get("format").and_then(Value::as_str) {
            Some("byte") => vec![json!("YWR2ZXJzYXJ5"), json!("AA==")],
            Some("date-time") => vec![json!("2026-01-01T00:00:00Z")],
            _ => literals(name),
        },
        _ => Vec::new(),
    }
}

fn is_blank(v: &Value) -> bool {
    v.as_str() == Some("")
}

/// Whether the schema is a compound: an object (with properties or as a
/// map), a list, or untyped.
fn is_compound(schema: &Resolved) -> bool {
    scalars(schema, "").is_empty()
}

/// The value of `variant` for a field of this schema named `name`.
pub fn generate(
    schemas: &Schemas,
    schema: &Resolved,
    name: &str,
    variant: usize,
    depth: usize,
) -> Value {
    let scalar = scalars(schema, name);
    if !scalar.is_empty() {
        return scalar[variant % scalar.len()].clone();
    }
    if depth > MAX_DEPTH {
        return json!({});
    }
    if let Some(items) = schema.items() {
        return match schemas.resolve(items) {
            Ok(item) => json!([generate(schemas, &item, name, variant, depth + 1)]),
            Err(_) => json!([]),
        };
    }
    if let Some(values) = schema.map_values() {
        return match schemas.resolve(values) {
            Ok(v) => json!({key(variant): generate(schemas, &v, name, variant, depth + 1)}),
            Err(_) => json!({}),
        };
    }
    let mut object = serde_json::Map::new();
    for required in schema.required() {
        let Some(node) = schema.schema.pointer(&format!("/properties/{required}")) else {
            continue;
        };
        if let Ok(child) = schemas.resolve(node) {
            object.insert(
                required.to_string(),
                generate(schemas, &child, required, variant, depth + 1),
            );
        }
    }
    Value::Object(object)
}

/// The values an attack tries at a field, best first, none equal to what
/// is there now (`current`).
pub fn candidates(
    schemas: &Schemas,
    schema: &Resolved,
    name: &str,
    current: Option<&Value>,
) -> Vec<Value> {
    let all: Vec<Value> = if is_compound(schema) {
        (0..VARIANTS)
            .map(|v| generate(schemas, schema, name, v, 0))
            .collect()
    } else {
        scalars(schema, name)
    };
    let mut out: Vec<Value> = Vec::new();
    for v in all {
        if Some(&v) != current && !out.contains(&v) {
            out.push(v);
        }
    }
    out
}
