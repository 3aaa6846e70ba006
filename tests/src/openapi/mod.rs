//! The apiserver's own OpenAPI v3, walked (issue 52, the schema-driven
//! adversary): every field path of a kind the contract governs, with the
//! schema that says what a value there may be.
//!
//! A group-version document (`/openapi/v3/apis/apps/v1`) holds its kinds'
//! schemas under `components.schemas`, each kind marked by
//! `x-kubernetes-group-version-kind`. A property names its type through a
//! `$ref`, usually wrapped in `allOf` beside its own `default` and
//! `description`; [`Schemas::resolve`] flattens that into one schema whose
//! own keys win. A path is a JSON pointer from the object's root in which
//! `*` stands for any list position or map key
//! (`/spec/template/spec/containers/*/env/*/name`). A type that contains
//! itself is walked once per branch: below its second occurrence only
//! the path is recorded, marked recursive.
//!
//! Pure: JSON in, paths out.

use std::collections::HashMap;

use berth_shared::contract::Kind;
use serde_json::{Map, Value};

pub mod attack;
pub mod sweep;
pub mod values;

#[cfg(test)]
mod tests;

/// What is wrong with a document.
#[derive(Debug, thiserror::Error)]
pub enum OpenApiError {
    /// The document has no `components.schemas`.
    #[error("the OpenAPI document has no components.schemas")]
    NoSchemas,
    /// No schema is marked with this group, version and kind.
    #[error("no schema for {group}/{version} {kind} in the OpenAPI document")]
    NoKind {
        group: String,
        version: String,
        kind: String,
    },
    /// A `$ref` names a schema the document does not have.
    #[error("{0}: $ref to a schema the document does not have")]
    DanglingRef(String),
}

/// The schemas of one group-version document.
#[derive(Debug, Clone)]
pub struct Schemas {
    components: Map<String, Value>,
}

/// A schema with its `$ref` and `allOf` resolved: its own keys, over those
/// of what it refers to.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The flattened schema.
    pub schema: Value,
    /// The names of the component schemas it was built from, outermost
    /// first (`io.k8s.api.core.v1.PodSpec`).
    pub refs: Vec<String>,
}

impl Resolved {
    /// The schema's `type`, if it names one.
    pub fn type_(&self) -> Option<&str> {
        self.schema.get("type").and_then(Value::as_str)
    }

    /// Its object properties (empty when it has none).
    pub fn properties(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
    }

    /// Its required properties.
    pub fn required(&self) -> Vec<&str> {
        self.schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect()
    }

    /// A list's item schema.
    pub fn items(&self) -> Option<&Value> {
        (self.type_() == Some("array"))
            .then(|| self.schema.get("items"))
            .flatten()
    }

    /// A map's value schema (`additionalProperties` that is a schema).
    pub fn map_values(&self) -> Option<&Value> {
        self.schema
            .get("additionalProperties")
            .filter(|v| v.is_object())
    }

    /// Whether it is a `resource.Quantity` (a string like `100m` or `1Gi`).
    pub fn is_quantity(&self) -> bool {
        self.refs
            .iter()
            .any(|r| r.ends_with("pkg.api.resource.Quantity"))
    }

    /// Whether it is an `intstr.IntOrString`.
    pub fn is_int_or_string(&self) -> bool {
        self.schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
            || self.schema.get("format").and_then(Value::as_str) == Some("int-or-string")
    }
}

/// One field path of a kind.
#[derive(Debug, Clone)]
pub struct Field {
    /// The JSON pointer pattern (`*` for a list position or a map key).
    pub path: String,
    /// What a value there may be.
    pub schema: Resolved,
    /// Whether its type already occurs above it (not walked further).
    pub recursive: bool,
}

impl Field {
    /// The last named segment of the path (`/spec/ports/*` → `ports`): the
    /// field's name, for plausible literals.
    pub fn name(&self) -> &str {
        self.path
            .rsplit('/')
            .find(|s| *s != "*")
            .unwrap_or_default()
    }
}

/// Every field path of one kind, and the way back from a path to its field.
#[derive(Debug, Clone)]
pub struct KindFields {
    /// The document's schemas (to generate values below a field).
    pub schemas: Schemas,
    /// Every field, parents before children.
    pub fields: Vec<Field>,
    by_path: HashMap<String, usize>,
}

impl KindFields {
    /// The field at `path`, if the kind has it.
    pub fn get(&self, path: &str) -> Option<&Field> {
        self.by_path.get(path).map(|&i| &self.fields[i])
    }
}

/// Escapes a property name as a JSON pointer segment.
pub fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

impl Schemas {
    /// The schemas of a group-version document (`/openapi/v3/api/v1`).
    pub fn from_document(doc: &Value) -> Result<Schemas, OpenApiError> {
        let components = doc
            .pointer("/components/schemas")
            .and_then(Value::as_object)
            .ok_or(OpenApiError::NoSchemas)?
            .clone();
        Ok(Schemas { components })
    }

    /// The name of the schema marked with this group, version and kind
    /// (the core group is `""`).
    pub fn kind_schema(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.components.iter().find_map(|(name, schema)| {
            let gvks = schema
                .get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array)?;
            gvks.iter()
                .any(|g| g["group"] == group && g["version"] == version && g["kind"] == kind)
                .then_some(name.as_str())
        })
    }

    /// `node` with its `$ref` and `allOf` flattened: the referred schemas'
    /// keys, then its own over them.
    pub fn resolve(&self, node: &Value) -> Result<Resolved, OpenApiError> {
        let mut refs = Vec::new();
        let schema = self.flatten(node, &mut refs)?;
        Ok(Resolved { schema, refs })
    }

    fn flatten(&self, node: &Value, refs: &mut Vec<String>) -> Result<Value, OpenApiError> {
        let Some(own) = node.as_object() else {
            return Ok(node.clone());
        };
        let mut out = Map::new();
        let mut bases: Vec<&Value> = Vec::new();
        if let Some(r) = own.get("$ref") {
            bases.push(r);
        }
        let all_of = own.get("allOf").and_then(Value::as_array);
        for part in all_of.into_iter().flatten() {
            bases.push(part);
        }
        for base in bases {
            let flat = match base.as_str() {
                Some(reference) => {
                    let name = reference
                        .strip_prefix("#/components/schemas/")
                        .unwrap_or(reference)
                        .to_string();
                    let target = self
                        .components
                        .get(&name)
                        .ok_or_else(|| OpenApiError::DanglingRef(name.clone()))?;
                    refs.push(name);
                    self.flatten(target, refs)?
                }
                None => self.flatten(base, refs)?,
            };
            if let Value::Object(m) = flat {
                out.extend(m);
            }
        }
        for (k, v) in own {
            if k != "$ref" && k != "allOf" {
                out.insert(k.clone(), v.clone());
            }
        }
        Ok(Value::Object(out))
    }

    /// Every field path of the kind whose schema is `root` (a component
    /// name), parents before children, in the schema's property order.
    pub fn fields(&self, root: &str) -> Result<KindFields, OpenApiError> {
        let top = self
            .components
            .get(root)
            .ok_or_else(|| OpenApiError::DanglingRef(root.to_string()))?;
        let mut fields = Vec::new();
        let resolved = self.resolve(top)?;
        let mut stack = vec![root.to_string()];
        self.children(&resolved, "", &mut stack, &mut fields)?;
        let by_path = fields
            .iter()
            .enumerate()
            .map(|(i, f)| (f.path.clone(), i))
            .collect();
        Ok(KindFields {
            schemas: self.clone(),
            fields,
            by_path,
        })
    }

    fn children(
        &self,
        parent: &Resolved,
        path: &str,
        stack: &mut Vec<String>,
        out: &mut Vec<Field>,
    ) -> Result<(), OpenApiError> {
        let mut below: Vec<(String, &Value)> = parent
            .properties()
            .map(|(k, v)| (format!("{path}/{}", escape(k)), v))
            .collect();
        if let Some(items) = parent.items() {
            below.push((format!("{path}/*"), items));
        }
        if let Some(values) = parent.map_values() {
            below.push((format!("{path}/*"), values));
        }
        for (child_path, node) in below {
            let schema = self.resolve(node)?;
            let recursive = schema.refs.iter().any(|r| stack.contains(r));
            out.push(Field {
                path: child_path.clone(),
                schema: schema.clone(),
                recursive,
            });
            if recursive {
                continue;
            }
            let pushed = schema.refs.len();
            stack.extend(schema.refs.iter().cloned());
            self.children(&schema, &child_path, stack, out)?;
            stack.truncate(stack.len() - pushed);
        }
        Ok(())
    }
}

/// The group and version a governed kind is served at (the apiserver's
/// OpenAPI document `api/v1` or `apis/GROUP/VERSION`): the versions berth
/// writes.
pub fn group_version(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::ConfigMap | Kind::ServiceAccount | Kind::Service => ("", "v1"),
        Kind::Deployment => ("apps", "v1"),
        Kind::Job | Kind::CronJob => ("batch", "v1"),
        Kind::NetworkPolicy => ("networking.k8s.io", "v1"),
        Kind::PodDisruptionBudget => ("policy", "v1"),
        Kind::HorizontalPodAutoscaler => ("autoscaling", "v2"),
    }
}

/// The resource (plural) a governed kind is served as.
pub fn plural(kind: Kind) -> &'static str {
    match kind {
        Kind::ConfigMap => "configmaps",
        Kind::ServiceAccount => "serviceaccounts",
        Kind::Service => "services",
        Kind::Deployment => "deployments",
        Kind::PodDisruptionBudget => "poddisruptionbudgets",
        Kind::NetworkPolicy => "networkpolicies",
        Kind::HorizontalPodAutoscaler => "horizontalpodautoscalers",
        Kind::Job => "jobs",
        Kind::CronJob => "cronjobs",
    }
}

/// The key of a group-version document in `/openapi/v3`'s `paths`.
pub fn document_key(kind: Kind) -> String {
    match group_version(kind) {
        ("", version) => format!("api/{version}"),
        (group, version) => format!("apis/{group}/{version}"),
    }
}

/// `shared/src/contract/field_paths.txt`: every field path of each
/// governed kind, under a `[Kind]` line, one pointer a line.
pub fn field_paths_text(version: &str, kinds: &[(Kind, KindFields)]) -> String {
    let mut out = format!(
        "# Every field path of the kinds berth governs, in the apiserver's own\n\
         # OpenAPI v3 (Kubernetes {version}): under each kind, one JSON pointer a\n\
         # line, `*` for a list position or a map key. Generated, do not edit:\n\
         #   BERTH_UPDATE_GOLDEN=1 cargo test -p berth-tests --test it contract_schema::field_paths\n\
         # The contract table is held to it by shared/src/contract/coverage_tests.rs.\n"
    );
    for (kind, kf) in kinds {
        out.push_str(&format!("[{}]\n", kind.as_str()));
        for f in &kf.fields {
            out.push_str(&f.path);
            out.push('\n');
        }
    }
    out
}
