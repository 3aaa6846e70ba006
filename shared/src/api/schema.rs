//! Hand-written schema fragments for fields whose shape schemars cannot
//! express on its own: string maps whose keys need a pattern (OpenAPI v3
//! structural schemas have no `propertyNames`, so a CEL rule checks them)
//! and quantities (int-or-string with a short description instead of
//! k8s-openapi's page-long one).

use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::json;

use super::patterns;

/// Turns a regular expression into a CEL single-quoted string literal body:
/// CEL gives backslashes a meaning of their own, so they are doubled.
pub(crate) fn cel_regex(re: &str) -> String {
    re.replace('\\', "\\\\").replace('\'', "\\'")
}

/// `spec.config.env`: environment variable names to values.
pub(crate) fn env_map(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "Environment variables rendered into the Runtime's ConfigMap and passed to every container with envFrom. Changing them rolls the pods (config checksum annotation).",
        "type": "object",
        "maxProperties": patterns::MAX_ENV_ENTRIES,
        "additionalProperties": {"type": "string", "maxLength": patterns::MAX_ENV_VALUE_LEN},
        "x-kubernetes-validations": [{
            "rule": format!("self.all(k, k.matches('{}'))", cel_regex(patterns::ENV_NAME)),
            "message": "config.env keys must be environment variable names ([A-Za-z_][A-Za-z0-9_]*)",
        }],
    })
}

/// A map of label keys to label values (podMetadata.labels, selectors).
pub(crate) fn label_map(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "maxProperties": patterns::MAX_MAP_ENTRIES,
        "additionalProperties": {"type": "string", "maxLength": 63},
        "x-kubernetes-validations": [{
            "rule": format!(
                "self.all(k, size(k) <= 317 && k.matches('{}') && self[k].matches('{}'))",
                cel_regex(patterns::LABEL_KEY),
                cel_regex(patterns::LABEL_VALUE),
            ),
            "message": "keys must be valid label keys and values valid label values",
        }],
    })
}

/// `schema` with one more CEL rule.
fn with_rule(mut schema: Schema, rule: serde_json::Value) -> Schema {
    if let Some(rules) = schema
        .as_object_mut()
        .and_then(|o| o.get_mut("x-kubernetes-validations"))
        .and_then(|v| v.as_array_mut())
    {
        rules.push(rule);
    }
    schema
}

/// An ingress peer's `namespaceLabels`: label rules, and never empty (an
/// empty selector admits every namespace; see `super::selectors`).
pub(crate) fn namespace_selector_map(generator: &mut SchemaGenerator) -> Schema {
    with_rule(
        label_map(generator),
        json!({
            "rule": "size(self) > 0",
            "message": super::selector_messages::EMPTY_NAMESPACE_SELECTOR,
            "reason": "FieldValueInvalid",
        }),
    )
}

/// An ingress peer's `podLabels`: label rules, and never empty (an empty
/// selector admits every pod; see `super::selectors`).
pub(crate) fn pod_selector_map(generator: &mut SchemaGenerator) -> Schema {
    with_rule(
        label_map(generator),
        json!({
            "rule": "size(self) > 0",
            "message": super::selector_messages::EMPTY_POD_SELECTOR,
            "reason": "FieldValueInvalid",
        }),
    )
}

/// A map of annotation keys to values (podMetadata.annotations).
pub(crate) fn annotation_map(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "maxProperties": patterns::MAX_MAP_ENTRIES,
        "additionalProperties": {"type": "string", "maxLength": patterns::MAX_ANNOTATION_VALUE_LEN},
        "x-kubernetes-validations": [{
            "rule": format!("self.all(k, size(k) <= 317 && k.matches('{}'))", cel_regex(patterns::LABEL_KEY)),
            "message": "keys must be valid annotation keys",
        }],
    })
}

/// Pod label keys the controllers own: a team setting one would break
/// the ReplicaSet or Job bookkeeping, or pretend another manager.
pub const RESERVED_POD_LABELS: [&str; 4] = [
    "controller-uid",
    "job-name",
    "pod-template-hash",
    "app.kubernetes.io/managed-by",
];
/// Pod label key prefixes the Job controller owns.
pub const RESERVED_POD_LABEL_PREFIXES: [&str; 1] = ["batch.kubernetes.io/"];

fn cel_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("'{i}'")).collect();
    format!("[{}]", quoted.join(", "))
}

/// `schema` with one more CEL rule refusing the map keys that match the
/// CEL predicate `reserved` (over `k`), its message naming the first such
/// key.
fn refusing_keys(
    mut schema: Schema,
    reserved: &str,
    field: &str,
    message: &str,
    why: &str,
) -> Schema {
    let rule = json!({
        "rule": format!("!self.exists(k, {reserved})"),
        "message": message,
        "messageExpression": format!("'podMetadata.{field}: key ' + self.filter(k, {reserved})[0] + ' {why}'"),
    });
    if let Some(rules) = schema
        .as_object_mut()
        .and_then(|o| o.get_mut("x-kubernetes-validations"))
        .and_then(|v| v.as_array_mut())
    {
        rules.push(rule);
    }
    schema
}

/// podMetadata.labels: label keys and values, minus the keys controllers
/// own (refused with a message naming the key).
pub(crate) fn pod_label_map(generator: &mut SchemaGenerator) -> Schema {
    let reserved = format!(
        "(k in {} || {}.exists(p, k.startsWith(p)))",
        cel_list(&RESERVED_POD_LABELS),
        cel_list(&RESERVED_POD_LABEL_PREFIXES)
    );
    refusing_keys(
        label_map(generator),
        &reserved,
        "labels",
        "podMetadata.labels may not set a label the controllers own (controller-uid, job-name, pod-template-hash, app.kubernetes.io/managed-by, batch.kubernetes.io/*)",
        "is owned by the Kubernetes controllers or berth and may not be set",
    )
}

/// podMetadata.annotations: annotation keys, by the allowlist of
/// `super::pod_annotations` (refused with a message naming the key).
pub(crate) fn pod_annotation_map(generator: &mut SchemaGenerator) -> Schema {
    let refused = format!("!{}", super::pod_annotations::CEL_ALLOWED);
    refusing_keys(
        annotation_map(generator),
        &refused,
        "annotations",
        &format!("podMetadata.annotations: {}", super::pod_annotations::WHY),
        &format!("is not allowed: {}", super::pod_annotations::WHY),
    )
}

/// A node selector: label keys to values, same rules as labels.
pub(crate) fn node_selector_map(generator: &mut SchemaGenerator) -> Schema {
    label_map(generator)
}

/// A resource quantity (`100m`, `1`, `256Mi`). Int-or-string like the
/// built-in type, with `isQuantity` so a typo fails at admission instead of
/// when the agent applies the Deployment.
pub(crate) fn quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "A Kubernetes resource quantity, e.g. 100m, 1, 256Mi.",
        "x-kubernetes-int-or-string": true,
        "x-kubernetes-validations": [{
            "rule": "isQuantity(string(self)) && !string(self).startsWith('-')",
            "message": "must be a non-negative resource quantity such as 100m, 1 or 256Mi",
        }],
    })
}

/// An object the agent writes whole (`status.lastApplied`): its shape is
/// Kubernetes' own (a Deployment, a CronJob, an HPA spec, reduced), kept as
/// written rather than repeated in the CRD.
pub(crate) fn preserved_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A list of [`preserved_object`]s.
pub(crate) fn preserved_list(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "maxItems": patterns::MAX_JOBS,
        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    })
}

/// A list of command or argument strings, bounded for the CEL cost budget.
pub(crate) fn arg_list(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "maxItems": patterns::MAX_ARGS,
        "items": {"type": "string", "maxLength": patterns::MAX_ARG_LEN},
    })
}
