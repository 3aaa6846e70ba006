//! The Helm chart is generated from the kustomize base in `assets/` and must
//! render to the same objects (see assets/chart/berth/README.md). No cluster
//! is needed: these are plain tests in the integration binary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

fn assets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets")
}

fn chart() -> PathBuf {
    assets().join("chart/berth")
}

/// Literal text in `assets/` → the template expression that replaces it in
/// the chart. Rendering with the default values must give the text back.
const SUBSTITUTIONS: &[(&str, &str)] = &[
    (
        "image: ghcr.io/berth-dev/berth-agent:0.1.0",
        "image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"",
    ),
    ("  replicas: 2\n", "  replicas: {{ .Values.replicas }}\n"),
    (
        "secretName: berth-grants",
        "secretName: {{ .Values.grantsSecretName }}",
    ),
    (
        "system:serviceaccount:berth-system:",
        "system:serviceaccount:{{ .Release.Namespace }}:",
    ),
    (
        "namespace: berth-system",
        "namespace: {{ .Release.Namespace }}",
    ),
];

/// Chart files (relative to the chart) and the assets each is generated from.
const TEMPLATES: &[(&str, &[&str])] = &[
    (
        "templates/rbac.yaml",
        &["rbac/agent.yaml", "rbac/agent-admission.yaml"],
    ),
    (
        "templates/admission-policy.yaml",
        &["admission/runtimegrant-policy.yaml"],
    ),
    (
        "templates/agent.yaml",
        &["deploy/agent-service.yaml", "deploy/agent-deployment.yaml"],
    ),
];

const HEADER: &str = "# GENERATED from assets/ by `BERTH_UPDATE_GOLDEN=1 cargo test -p berth-tests --test it chart`; do not edit.\n";

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The chart file generated from the given asset files.
fn generate(sources: &[&str]) -> String {
    let mut out = String::from(HEADER);
    for src in sources {
        let mut text = read(&assets().join(src));
        for (literal, template) in SUBSTITUTIONS {
            text = text.replace(literal, template);
        }
        out.push_str("---\n");
        out.push_str(&text);
    }
    out
}

/// Every chart file and its expected content.
fn expected_chart_files() -> Vec<(PathBuf, String)> {
    let mut files: Vec<(PathBuf, String)> = TEMPLATES
        .iter()
        .map(|(dest, sources)| (chart().join(dest), generate(sources)))
        .collect();
    for crd in ["runtimes.berth.dev.yaml", "runtimegrants.berth.dev.yaml"] {
        files.push((
            chart().join("crds").join(crd),
            read(&assets().join("crds").join(crd)),
        ));
    }
    files
}

#[test]
fn chart_is_generated_from_assets_without_drift() {
    let update = std::env::var_os("BERTH_UPDATE_GOLDEN").is_some();
    let mut drifted = Vec::new();
    for (path, want) in expected_chart_files() {
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        if have != want {
            if update {
                std::fs::write(&path, &want).expect("write chart file");
            } else {
                drifted.push(path.display().to_string());
            }
        }
    }
    assert!(
        drifted.is_empty(),
        "chart files drifted from assets/ (regenerate with BERTH_UPDATE_GOLDEN=1): {drifted:?}"
    );
}

/// A deliberately minimal offline renderer: `{{ .Values.a.b }}` and
/// `{{ .Release.Namespace }}` only. Anything else is an error, so the chart
/// cannot use template logic this test does not understand.
fn render(template: &str, values: &serde_yaml::Value, namespace: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}").ok_or("unterminated {{")? + start;
        let expr = rest[start + 2..end].trim();
        let value = if expr == ".Release.Namespace" {
            namespace.to_string()
        } else if let Some(path) = expr.strip_prefix(".Values.") {
            let mut v = values;
            for key in path.split('.') {
                v = v.get(key).ok_or_else(|| format!("no value {path}"))?;
            }
            match v {
                serde_yaml::Value::String(s) => s.clone(),
                serde_yaml::Value::Number(n) => n.to_string(),
                serde_yaml::Value::Bool(b) => b.to_string(),
                other => return Err(format!("{path} is not a scalar: {other:?}")),
            }
        } else {
            return Err(format!("unsupported template construct {{{{ {expr} }}}}"));
        };
        out.push_str(&value);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

type ObjectKey = (String, String, String);

/// kustomize re-serializes YAML (e.g. `600.0` becomes `600`); compare values,
/// not spellings: integral floats become integers.
fn normalize(v: serde_yaml::Value) -> serde_yaml::Value {
    use serde_yaml::Value;
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => {
                Value::Number((f as i64).into())
            }
            _ => Value::Number(n),
        },
        Value::Sequence(items) => Value::Sequence(items.into_iter().map(normalize).collect()),
        Value::Mapping(m) => Value::Mapping(
            m.into_iter()
                .map(|(k, v)| (normalize(k), normalize(v)))
                .collect(),
        ),
        other => other,
    }
}

fn objects(yaml: &str) -> BTreeMap<ObjectKey, serde_yaml::Value> {
    let mut map = BTreeMap::new();
    for doc in serde_yaml::Deserializer::from_str(yaml) {
        let v = serde_yaml::Value::deserialize(doc).expect("valid YAML");
        if v.is_null() {
            continue;
        }
        let s = |k: &str| {
            v.get("metadata")
                .and_then(|m| m.get(k))
                .and_then(|x| x.as_str())
                .unwrap_or_default()
                .to_string()
        };
        let kind = v
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or_default()
            .to_string();
        map.insert((kind, s("namespace"), s("name")), normalize(v));
    }
    map
}

#[test]
fn chart_renders_to_the_kustomize_objects() {
    let values: serde_yaml::Value =
        serde_yaml::from_str(&read(&chart().join("values.yaml"))).expect("values.yaml");
    let mut rendered = String::new();
    for dir in ["crds", "templates"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(chart().join(dir))
            .expect("chart dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        for f in files {
            let text = read(&f);
            rendered.push_str("\n---\n");
            rendered.push_str(
                &render(&text, &values, "berth-system")
                    .unwrap_or_else(|e| panic!("{}: {e}", f.display())),
            );
        }
    }
    let chart_objects = objects(&rendered);

    let mut kustomize_objects = objects(&crate::assets::kustomize_assets());
    // Left to the operator by the chart: the release namespace and the
    // grants Secret.
    kustomize_objects.retain(|(kind, _, _), _| kind != "Namespace" && kind != "Secret");

    let chart_keys: Vec<_> = chart_objects.keys().collect();
    let kustomize_keys: Vec<_> = kustomize_objects.keys().collect();
    assert_eq!(chart_keys, kustomize_keys, "same objects");
    let differing: Vec<_> = kustomize_objects
        .iter()
        .filter(|(key, want)| chart_objects.get(*key) != Some(*want))
        .map(|(key, _)| key)
        .collect();
    assert!(differing.is_empty(), "objects differ: {differing:?}");
}

#[test]
fn renderer_refuses_template_logic() {
    let values = serde_yaml::Value::Null;
    assert!(render("{{ if .Values.x }}", &values, "ns").is_err());
    assert!(render("{{ .Values.missing }}", &values, "ns").is_err());
    assert_eq!(
        render("a {{ .Release.Namespace }} b", &values, "ns").as_deref(),
        Ok("a ns b")
    );
}
