//! The contract table against the schema of the Kubernetes version berth
//! runs on (issue 52): `field_paths.txt` holds every field path of the
//! governed kinds in the apiserver's OpenAPI v3, generated from a live
//! apiserver (and checked against one) by the integration test
//! `contract_schema::field_paths_are_the_apiservers`. Moving to a new
//! Kubernetes version regenerates it, and these tests then name every new
//! field the table does not cover and every row whose path is gone.

use std::collections::BTreeMap;

use super::coverage::{Coverage, alternatives, classify, coverage, names};
use super::table::{GOVERNED, Kind, Scope};
use super::{TOLERATED, UNGOVERNED, absolute};

const FIELD_PATHS: &str = include_str!("field_paths.txt");

/// The field paths of each kind.
fn field_paths() -> BTreeMap<Kind, Vec<&'static str>> {
    let mut out: BTreeMap<Kind, Vec<&'static str>> = BTreeMap::new();
    let mut kind = None;
    for line in FIELD_PATHS.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            kind = Some(Kind::from_name(name).unwrap_or_else(|| panic!("unknown kind {name}")));
            continue;
        }
        let kind = kind.unwrap_or_else(|| panic!("{line}: a path before any [Kind]"));
        out.entry(kind).or_default().push(line);
    }
    out
}

#[test]
fn the_field_paths_hold_every_governed_kind() {
    let paths = field_paths();
    for kind in Kind::ALL {
        assert!(
            paths.get(&kind).is_some_and(|p| p.len() > 3),
            "field_paths.txt has no paths of {kind:?}"
        );
    }
}

/// Every field of every governed kind is inside a governed part or named
/// by a row of what is left alone: a field a new Kubernetes version adds
/// outside both fails here the day `field_paths.txt` is regenerated.
#[test]
fn every_field_path_is_governed_or_left_alone_by_a_row() {
    let mut gaps = Vec::new();
    for (kind, paths) in field_paths() {
        for (path, c) in paths.iter().zip(classify(kind, &paths)) {
            if let Coverage::Uncovered = c {
                gaps.push(format!("{} {path}", kind.as_str()));
            }
        }
    }
    assert!(
        gaps.is_empty(),
        "field paths the contract table neither governs nor names as left alone \
         (add a governed or an UNGOVERNED row): {gaps:#?}"
    );
}

fn kinds(scope: Scope) -> Vec<Kind> {
    Kind::ALL
        .into_iter()
        .filter(|k| match scope {
            Scope::Kind(one) => one == *k,
            Scope::PodTemplate => k.pod_template().is_some(),
            Scope::Every => true,
        })
        .collect()
}

/// The alternatives of a row's path that no kind of its scope has (for
/// rows of one kind or of the pod template: every kind of the scope must
/// have it; for rows of every kind, one must).
fn missing(scope: Scope, path: &str, paths: &BTreeMap<Kind, Vec<&str>>) -> Vec<String> {
    if path.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for alternative in alternatives(path) {
        let has = |kind: &Kind| {
            let absolute = absolute(scope, &alternative, *kind).unwrap_or_default();
            paths
                .get(kind)
                .is_some_and(|p| p.iter().any(|schema| names(&absolute, schema)))
        };
        let scoped = kinds(scope);
        let found = match scope {
            Scope::Every => scoped.iter().any(has),
            _ => scoped.iter().all(has),
        };
        if !found {
            out.push(format!("{scope:?} {alternative}"));
        }
    }
    out
}

/// A row (governed, tolerated or left alone) that names a path the schema
/// no longer has protects nothing: a renamed field would otherwise slip
/// out of the table unnoticed.
#[test]
fn every_row_names_paths_the_schema_has() {
    let paths = field_paths();
    let mut gone = Vec::new();
    for row in GOVERNED {
        gone.extend(missing(row.scope, row.path, &paths));
    }
    for row in TOLERATED {
        gone.extend(missing(row.scope, row.path, &paths));
    }
    for row in UNGOVERNED {
        gone.extend(missing(row.scope, row.path, &paths));
    }
    assert!(
        gone.is_empty(),
        "contract table rows naming paths the schema does not have: {gone:#?}"
    );
}

#[test]
fn coverage_follows_the_rows() {
    let at = |kind, path| match coverage(kind, path) {
        Coverage::Governed(row) => format!("governed {} {}", row.path, row.rule.as_str()),
        Coverage::Ungoverned(row) => format!("ungoverned {}", row.path),
        Coverage::Parent => "parent".to_string(),
        Coverage::Uncovered => "uncovered".to_string(),
    };
    assert_eq!(
        at(
            Kind::Deployment,
            "/spec/template/spec/containers/*/env/*/name"
        ),
        "governed /spec/{containers,initContainers}/*/{env,envFrom} environment"
    );
    assert_eq!(
        at(
            Kind::CronJob,
            "/spec/jobTemplate/spec/template/spec/hostPID"
        ),
        "governed /spec/{hostNetwork,hostPID,hostIPC,shareProcessNamespace} host-namespace"
    );
    assert_eq!(at(Kind::Deployment, "/spec/paused"), "governed /spec spec");
    // Labels in the Kubernetes domains are governed on every object, a
    // Job's included; the rest of the labels are left alone.
    for kind in [Kind::Service, Kind::Job] {
        assert_eq!(
            at(kind, "/metadata/labels/*"),
            "governed /metadata/labels/* reserved-label"
        );
    }
    assert_eq!(
        at(Kind::Service, "/metadata/annotations/*"),
        "ungoverned /metadata/{labels,annotations}"
    );
    // A Job's spec is governed, its immutable pod template left alone.
    assert_eq!(at(Kind::Job, "/spec/parallelism"), "governed /spec spec");
    assert_eq!(
        at(Kind::Job, "/spec/template/spec/hostNetwork"),
        "ungoverned /spec/template"
    );
    assert_eq!(at(Kind::ConfigMap, "/someNewField"), "uncovered");
    assert_eq!(at(Kind::Deployment, "/metadata/newField"), "uncovered");
    // A row's concrete key names the schema's map or list.
    let pod = Kind::Deployment.pod_template().unwrap_or_default();
    let restarted = format!("{pod}/metadata/annotations/kubectl.kubernetes.io~1restartedAt");
    assert!(names(&restarted, "/spec/template/metadata/annotations/*"));
    assert!(!names(&restarted, "/spec/template/metadata/annotations"));
    assert_eq!(alternatives("/a/{b,c}/*/{d,e}").len(), 4);
    // An object no row names stands by its fields: a parent when all of
    // them are covered, uncovered when one is not.
    let paths = [
        "/metadata",
        "/metadata/name",
        "/metadata/labels",
        "/metadata/labels/*",
    ];
    assert!(matches!(
        classify(Kind::Service, &paths)[0],
        Coverage::Parent
    ));
    let paths = ["/metadata", "/metadata/name", "/metadata/newField"];
    let c = classify(Kind::Service, &paths);
    assert!(matches!(c[0], Coverage::Uncovered) && matches!(c[2], Coverage::Uncovered));
    assert!(matches!(
        classify(Kind::Service, &["/metadata"])[0],
        Coverage::Uncovered
    ));
}
