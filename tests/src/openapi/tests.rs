//! The walker and the value generator on a small document shaped like the
//! apiserver's (allOf-wrapped refs, lists, maps, enums, quantities,
//! int-or-string, a type that contains itself).

use serde_json::{Value, json};

use super::attack::{field_pointer, fill, merge_patch, overlaps, place, schema_path};
use super::values::{candidates, generate, scalars};
use super::*;

fn document() -> Value {
    let r = |name: &str| json!({"$ref": format!("#/components/schemas/{name}")});
    let wrapped = |name: &str| json!({"default": {}, "allOf": [r(name)]});
    json!({"components": {"schemas": {
        "x.Thing": {
            "type": "object",
            "required": ["spec"],
            "x-kubernetes-group-version-kind": [{"group": "x.dev", "version": "v1", "kind": "Thing"}],
            "properties": {
                "apiVersion": {"type": "string"},
                "spec": wrapped("x.Spec"),
            },
        },
        "x.Spec": {
            "type": "object",
            "properties": {
                "paused": {"type": "boolean"},
                "policy": {"type": "string", "enum": ["Always", "Never"], "default": "Always"},
                "count": {"type": "integer", "format": "int32"},
                "surge": r("x.IntOrString"),
                "limits": {"type": "object", "additionalProperties": r("io.k8s.apimachinery.pkg.api.resource.Quantity")},
                "containers": {"type": "array", "items": r("x.Container")},
                "tree": wrapped("x.Node"),
                "blob": {"type": "string", "format": "byte"},
            },
        },
        "x.Container": {
            "type": "object",
            "required": ["name", "image"],
            "properties": {
                "name": {"type": "string", "default": ""},
                "image": {"type": "string"},
                "mountPath": {"type": "string"},
                "args": {"type": "array", "items": {"type": "string", "default": ""}},
            },
        },
        "x.Node": {
            "type": "object",
            "properties": {"label": {"type": "string"}, "child": wrapped("x.Node")},
        },
        "io.k8s.apimachinery.pkg.api.resource.Quantity": {"oneOf": [{"type": "string"}, {"type": "number"}]},
        "x.IntOrString": {"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]},
    }}})
}

fn thing() -> KindFields {
    let schemas = Schemas::from_document(&document()).expect("schemas");
    let root = schemas.kind_schema("x.dev", "v1", "Thing").expect("kind");
    assert_eq!(root, "x.Thing");
    schemas.fields(root).expect("fields")
}

#[test]
fn every_path_is_walked_through_refs_lists_and_maps() {
    let kf = thing();
    // In the document's key order (sorted, as serde_json keeps objects).
    let paths: Vec<&str> = kf.fields.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/apiVersion",
            "/spec",
            "/spec/blob",
            "/spec/containers",
            "/spec/containers/*",
            "/spec/containers/*/args",
            "/spec/containers/*/args/*",
            "/spec/containers/*/image",
            "/spec/containers/*/mountPath",
            "/spec/containers/*/name",
            "/spec/count",
            "/spec/limits",
            "/spec/limits/*",
            "/spec/paused",
            "/spec/policy",
            "/spec/surge",
            "/spec/tree",
            "/spec/tree/child",
            "/spec/tree/label",
        ]
    );
    // A type inside itself is recorded once more, not walked.
    assert!(kf.get("/spec/tree/child").expect("child").recursive);
    assert!(!kf.get("/spec/tree").expect("tree").recursive);
    assert!(
        kf.get("/spec/limits/*")
            .expect("quantity")
            .schema
            .is_quantity()
    );
    assert!(
        kf.get("/spec/surge")
            .expect("surge")
            .schema
            .is_int_or_string()
    );
    // An allOf-wrapped ref keeps its own keys over the referred schema's.
    assert_eq!(
        kf.get("/spec").expect("spec").schema.schema["default"],
        json!({})
    );
}

#[test]
fn a_missing_kind_or_ref_is_named() {
    let schemas = Schemas::from_document(&document()).expect("schemas");
    assert!(schemas.kind_schema("x.dev", "v2", "Thing").is_none());
    let broken = json!({"components": {"schemas": {
        "x.A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/x.B"}}}}}});
    let err = Schemas::from_document(&broken)
        .expect("schemas")
        .fields("x.A")
        .expect_err("dangling");
    assert_eq!(
        err.to_string(),
        "x.B: $ref to a schema the document does not have"
    );
    assert!(Schemas::from_document(&json!({})).is_err());
}

#[test]
fn values_follow_the_schema() {
    let kf = thing();
    let at = |p: &str| kf.get(p).expect(p);
    let first = |p: &str, current: Option<&Value>| {
        let f = at(p);
        candidates(&kf.schemas, &f.schema, f.name(), current)
            .first()
            .cloned()
    };
    // An enum: a member other than the default.
    assert_eq!(first("/spec/policy", None), Some(json!("Never")));
    // A boolean: the other value than the one there.
    assert_eq!(first("/spec/paused", None), Some(json!(true)));
    assert_eq!(
        first("/spec/paused", Some(&json!(true))),
        Some(json!(false))
    );
    assert_eq!(first("/spec/count", Some(&json!(7))), Some(json!(1)));
    assert_eq!(first("/spec/surge", None), Some(json!(7)));
    assert_eq!(first("/spec/limits/*", None), Some(json!("7")));
    assert_eq!(first("/spec/blob", None), Some(json!("YWR2ZXJzYXJ5")));
    // Strings shaped by their name.
    assert_eq!(
        first("/spec/containers/*/image", None),
        Some(json!("registry.invalid/adversary:1"))
    );
    assert_eq!(
        first("/spec/containers/*/mountPath", None),
        Some(json!("/adversary"))
    );
    // An object gets its required fields, a list one element, a map one key.
    assert_eq!(
        first("/spec/containers", None),
        Some(json!([{"name": "adversary", "image": "registry.invalid/adversary:1"}]))
    );
    assert_eq!(first("/spec/limits", None), Some(json!({"adversary": "7"})));
    let variants = candidates(&kf.schemas, &at("/spec/limits").schema, "limits", None);
    assert!(
        variants.contains(&json!({"example.com/adversary": "100m"})),
        "{variants:?}"
    );
    // A compound's variants differ; none is the value already there.
    let now = json!([{"name": "adversary", "image": "registry.invalid/adversary:1"}]);
    let c = candidates(
        &kf.schemas,
        &at("/spec/containers").schema,
        "containers",
        Some(&now),
    );
    assert!(!c.contains(&now) && !c.is_empty());
    assert!(scalars(&at("/spec/tree").schema, "tree").is_empty());
    assert_eq!(
        generate(&kf.schemas, &at("/spec/tree").schema, "tree", 0, 0),
        json!({})
    );
}

#[test]
fn a_value_is_placed_in_the_first_entry_or_a_new_one() {
    let kf = thing();
    let live = json!({"apiVersion": "x.dev/v1",
        "spec": {"containers": [{"name": "app", "image": "app:1"}]}});
    // Inside a list: berth's own entry.
    let mut o = live.clone();
    let p = place(
        &kf,
        &mut o,
        "/spec/containers/*/mountPath",
        json!("/x"),
        0,
        false,
    )
    .expect("placed");
    assert_eq!(p, "/spec/containers/0/mountPath");
    assert_eq!(o.pointer(&p), Some(&json!("/x")));
    // At a list position: a new entry.
    let mut o = live.clone();
    let entry = json!({"name": "side", "image": "s:1"});
    let p = place(&kf, &mut o, "/spec/containers/*", entry.clone(), 0, false).expect("placed");
    assert_eq!(p, "/spec/containers/1");
    // Below what is missing: created with its required fields.
    let mut o = json!({"spec": {}});
    let p = place(
        &kf,
        &mut o,
        "/spec/containers/*/args/*",
        json!("--evil"),
        0,
        false,
    )
    .expect("placed");
    assert_eq!(p, "/spec/containers/0/args/0");
    assert_eq!(
        o["spec"]["containers"][0],
        json!({"name": "adversary", "image": "registry.invalid/adversary:1", "args": ["--evil"]})
    );
    // A map key by variant.
    let mut o = live.clone();
    let p = place(&kf, &mut o, "/spec/limits/*", json!("7"), 1, false).expect("placed");
    assert_eq!(p, "/spec/limits/example.com~1adversary");
    assert_eq!(o.pointer(&p), Some(&json!("7")));
    assert!(place(&kf, &mut o, "/spec/nothing", json!(1), 0, false).is_err());
    let mut scalar = json!({"spec": 3});
    assert!(place(&kf, &mut scalar, "/spec/paused", json!(true), 0, false).is_err());
    // Fresh: a new entry where the first one is there.
    let mut o = live.clone();
    let p = place(
        &kf,
        &mut o,
        "/spec/containers/*/mountPath",
        json!("/x"),
        0,
        true,
    )
    .expect("placed");
    assert_eq!(p, "/spec/containers/1/mountPath");
    assert_eq!(
        o["spec"]["containers"][1],
        json!({"name": "adversary", "image": "registry.invalid/adversary:1", "mountPath": "/x"})
    );
    assert_eq!(o["spec"]["containers"][0], live["spec"]["containers"][0]);
}

/// What a refusal says is required is filled in from the schema.
#[test]
fn a_required_field_a_refusal_names_is_filled() {
    let kf = thing();
    assert_eq!(
        field_pointer("spec.containers[1].image"),
        "/spec/containers/1/image"
    );
    assert_eq!(
        field_pointer("metadata.annotations[example.com/x]"),
        "/metadata/annotations/example.com~1x"
    );
    assert_eq!(
        schema_path(&kf, "/spec/containers/1/args/0").as_deref(),
        Some("/spec/containers/*/args/*")
    );
    assert_eq!(schema_path(&kf, "/spec/nothing"), None);
    let mut o = json!({"spec": {"containers": [{"name": "a"}]}});
    assert!(fill(&kf, &mut o, "/spec/containers/0/image", 0));
    assert_eq!(
        o["spec"]["containers"][0]["image"],
        "registry.invalid/adversary:1"
    );
    assert!(
        !fill(&kf, &mut o, "/spec/containers/0/image", 1),
        "already there"
    );
    assert!(
        !fill(&kf, &mut o, "/spec/containers/3/image", 0),
        "no parent"
    );
}

#[test]
fn the_patch_carries_exactly_the_change() {
    let before = json!({"spec": {"a": 1, "b": {"c": 2, "d": 3}, "l": [1, 2], "gone": 1}});
    let after = json!({"spec": {"a": 1, "b": {"c": 2, "d": 4}, "l": [1, 2, 3], "new": {}}});
    assert_eq!(
        merge_patch(&before, &after),
        json!({"spec": {"b": {"d": 4}, "l": [1, 2, 3], "new": {}, "gone": null}})
    );
    assert!(overlaps("/a/b", "/a/b/c"));
    assert!(overlaps("/a/b", "/a/b"));
    assert!(!overlaps("/a/b", "/a/bc"));
}

/// A ConfigMap and a Service shaped like the apiserver's, with a field
/// the contract table does not know.
fn core_document() -> Value {
    let r = |name: &str| json!({"$ref": format!("#/components/schemas/{name}")});
    let meta = json!({"type": "object", "properties": {
        "name": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}}});
    json!({"components": {"schemas": {
        "core.Meta": meta,
        "core.ConfigMap": {
            "type": "object",
            "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "ConfigMap"}],
            "properties": {
                "apiVersion": {"type": "string"},
                "metadata": {"default": {}, "allOf": [r("core.Meta")]},
                "data": {"type": "object", "additionalProperties": {"type": "string"}},
                "immutable": {"type": "boolean"},
                "newField": {"type": "string"},
            },
        },
        "core.Service": {
            "type": "object",
            "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Service"}],
            "properties": {
                "spec": {"type": "object", "properties": {
                    "clusterIP": {"type": "string"},
                    "externalIPs": {"type": "array", "items": {"type": "string"}}}},
            },
        },
    }}})
}

#[test]
fn every_path_stands_by_the_contract_table() {
    use super::sweep::{Standing, standings};
    use berth_shared::contract::Kind;
    let schemas = Schemas::from_document(&core_document()).expect("schemas");
    let of = |kind: Kind| {
        let root = schemas.kind_schema("", "v1", kind.as_str()).expect("kind");
        let kf = schemas.fields(root).expect("fields");
        standings(kind, &kf)
    };
    let config = of(Kind::ConfigMap);
    let at = |s: &[(String, Standing)], p: &str| {
        s.iter()
            .find(|(path, _)| path == p)
            .map(|(_, s)| s.clone())
            .expect(p)
    };
    assert_eq!(at(&config, "/data/*"), Standing::Attack);
    assert_eq!(at(&config, "/immutable"), Standing::Attack);
    assert_eq!(at(&config, "/apiVersion"), Standing::Ungoverned);
    // Governed: the reserved-label row (keys in the Kubernetes domains).
    assert_eq!(at(&config, "/metadata/labels/*"), Standing::Attack);
    // An object whose every field is named stands by them.
    assert_eq!(at(&config, "/metadata"), Standing::Ungoverned);
    assert_eq!(at(&config, "/newField"), Standing::Uncovered);
    let service = of(Kind::Service);
    assert_eq!(
        at(&service, "/spec/clusterIP"),
        Standing::Allowlisted("/spec/{clusterIP,clusterIPs,ipFamilies}")
    );
    assert_eq!(at(&service, "/spec/externalIPs/*"), Standing::Attack);
}

#[test]
fn the_report_counts_and_names_the_findings() {
    use super::sweep::{Outcome, Report, Standing};
    use berth_shared::contract::Kind;
    let mut report = Report::default();
    let standings = vec![
        ("/data".to_string(), Standing::Attack),
        ("/data/*".to_string(), Standing::Attack),
        ("/immutable".to_string(), Standing::Attack),
        ("/metadata".to_string(), Standing::Ungoverned),
        ("/newField".to_string(), Standing::Uncovered),
    ];
    report.count(Kind::ConfigMap, &standings, 3);
    report.record(Kind::ConfigMap, "/data", Outcome::Removed);
    report.record(
        Kind::ConfigMap,
        "/data/*",
        Outcome::Refused("Required value".into()),
    );
    report.record(
        Kind::ConfigMap,
        "/immutable",
        Outcome::Leftover {
            pointer: "/immutable".into(),
            value: "true".into(),
        },
    );
    report.refused("Required value");
    report.refused("Required value");
    let text = report.render();
    assert!(text.contains("ConfigMap"), "{text}");
    assert!(text.contains("      2  Required value"), "{text}");
    assert!(text.contains("ConfigMap /data/*: Required value"), "{text}");
    assert_eq!(
        report.findings(),
        [
            "ConfigMap /immutable: true at /immutable stayed",
            "ConfigMap /newField: neither governed nor named by an UNGOVERNED row",
        ]
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("ConfigMap"))
        .expect("row");
    let cells: Vec<&str> = row.split_whitespace().collect();
    // paths governed allowlisted ungoverned attacked removed not-stored refused tolerated leftover
    assert_eq!(
        cells[1..],
        ["5", "3", "0", "1", "3", "1", "0", "1", "0", "1"]
    );
}

#[test]
fn a_refusal_is_counted_by_its_reason() {
    use super::sweep::reason;
    assert_eq!(
        reason(
            r#"Deployment.apps "web" is invalid: spec.template.spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"#
        ),
        "Invalid value: …: must be between 1 and 65535, inclusive"
    );
    assert_eq!(
        reason(
            r#"Deployment.apps "web" is invalid: [spec.template.spec.containers[0].livenessProbe.exec: Forbidden: may not specify more than 1 handler type, spec.template.spec.x: Required value]"#
        ),
        "Forbidden: may not specify more than 1 handler type"
    );
    assert_eq!(
        reason(r#"Service "web" is invalid: spec.type: Invalid value: "a: b": must be one"#),
        "Invalid value: …: must be one"
    );
    assert_eq!(reason("json: cannot unmarshal"), "json: cannot unmarshal");
}

#[test]
fn a_sample_is_the_seeds() {
    use super::sweep::sample;
    let items: Vec<u32> = (0..100).collect();
    let a = sample(&items, Some(10), 7);
    assert_eq!(a.len(), 10);
    assert_eq!(a, sample(&items, Some(10), 7));
    assert_ne!(a, sample(&items, Some(10), 8));
    assert!(a.windows(2).all(|w| w[0] < w[1]), "in order");
    assert_eq!(sample(&items, None, 7), items);
    assert_eq!(sample(&items, Some(500), 7), items);
}
