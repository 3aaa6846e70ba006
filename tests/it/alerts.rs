//! berth's alerting rules and Grafana dashboard, checked by Prometheus's own
//! tool (issue 30, points 2 and 3): `promtool check rules` on
//! `assets/monitoring/berth-alerts.yaml`, `promtool test rules` on one unit
//! test file per alert (each with a case where it must not fire), every
//! alert's summary, description and runbook section in `docs/alerts.md`,
//! every PromQL expression of the dashboard parsed by promtool (as recording
//! rules of a generated rule file), and the chart's copies equal to
//! `assets/monitoring/` (`BERTH_UPDATE_GOLDEN=1` refreshes them).
//!
//! No cluster: promtool reads files. That the metrics these name are
//! exported is checked against a live scrape in `metrics_doc`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use berth_tests::localcluster::binaries::{Binaries, pinned_version};
use serde_json::Value;

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_path_buf()
}

pub(crate) fn monitoring() -> PathBuf {
    repo().join("assets/monitoring")
}

/// The promtool binary from `tests/k8s/build.sh` (built once per machine).
fn promtool() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let log_dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let bins = Binaries::resolve_test_tools(log_dir)
            .unwrap_or_else(|e| panic!("tests/k8s/build.sh (which builds promtool) failed: {e}"));
        bins.path("promtool")
            .unwrap_or_else(|_| {
                panic!(
                    "tests/k8s/build.sh named no promtool binary (with BERTH_K8S_BIN_DIR set, put promtool {} there)",
                    pinned_version("PROMETHEUS_VERSION").unwrap_or("?")
                )
            })
            .to_path_buf()
    })
}

/// Runs promtool; panics with its output unless it succeeds.
fn run_promtool(args: &[&str], dir: &Path) -> String {
    let out = Command::new(promtool())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run promtool");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?} failed:\n{text}");
    text
}

/// Every rule of the alerts file, as JSON.
pub(crate) fn alert_rules() -> Vec<Value> {
    let text =
        std::fs::read_to_string(monitoring().join("berth-alerts.yaml")).expect("berth-alerts.yaml");
    let doc: Value = yaml_serde::from_str(&text).expect("alerts YAML");
    doc["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// The repository's address: `repository` of the workspace's Cargo.toml,
/// the one place that names it (the runbook links are built on it).
fn repository() -> String {
    let text = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    text.lines()
        .find_map(|l| l.strip_prefix("repository = "))
        .map(|v| v.trim().trim_matches('"').to_string())
        .expect("Cargo.toml names the repository")
}

/// GitHub's anchor of a Markdown heading (lowercase, spaces to dashes,
/// punctuation dropped).
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn alerts_pass_promtool_check_and_one_unit_test_file_each() {
    let dir = monitoring();
    let out = run_promtool(&["check", "rules", "berth-alerts.yaml"], &dir);
    assert!(out.contains("SUCCESS"), "{out}");

    let alerts: Vec<String> = alert_rules()
        .iter()
        .map(|r| {
            r["alert"]
                .as_str()
                .expect("every rule is an alert")
                .to_string()
        })
        .collect();
    assert!(alerts.len() >= 10, "{alerts:?}");
    let tests_dir = dir.join("tests");
    let mut files: Vec<String> = std::fs::read_dir(&tests_dir)
        .expect("assets/monitoring/tests")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    files.sort();
    // One file per alert, testing that alert (and only it).
    let mut tested = BTreeSet::new();
    for f in &files {
        let doc: Value =
            yaml_serde::from_str(&std::fs::read_to_string(tests_dir.join(f)).expect("test file"))
                .expect("test YAML");
        let names: BTreeSet<String> = doc["tests"]
            .as_array()
            .expect("tests")
            .iter()
            .flat_map(|t| t["alert_rule_test"].as_array().cloned().unwrap_or_default())
            .map(|c| c["alertname"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(names.len(), 1, "{f} tests one alert: {names:?}");
        let cases: Vec<Value> = doc["tests"][0]["alert_rule_test"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            cases
                .iter()
                .any(|c| c["exp_alerts"].as_array().is_some_and(Vec::is_empty))
                && cases
                    .iter()
                    .any(|c| c["exp_alerts"].as_array().is_some_and(|a| !a.is_empty())),
            "{f}: a case where the alert fires and one where it must not"
        );
        tested.extend(names);
    }
    let want: BTreeSet<String> = alerts.iter().cloned().collect();
    assert_eq!(tested, want, "one unit test file per alert");
    assert_eq!(files.len(), alerts.len(), "{files:?}");

    let mut args = vec!["test", "rules"];
    let paths: Vec<String> = files.iter().map(|f| format!("tests/{f}")).collect();
    args.extend(paths.iter().map(String::as_str));
    let out = run_promtool(&args, &dir);
    assert_eq!(out.matches("SUCCESS").count(), files.len(), "{out}");
}

#[test]
fn alerts_each_have_a_summary_a_description_and_a_runbook_section() {
    let doc = std::fs::read_to_string(repo().join("docs/alerts.md")).expect("docs/alerts.md");
    let anchors: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(anchor)
        .collect();
    for rule in alert_rules() {
        let name = rule["alert"].as_str().expect("alert");
        let ann = &rule["annotations"];
        for key in ["summary", "description"] {
            assert!(
                ann[key].as_str().is_some_and(|s| s.len() > 20),
                "{name}: {key}"
            );
        }
        let url = ann["runbook_url"].as_str().expect("runbook_url");
        let (page, section) = url.split_once('#').expect("runbook_url has an anchor");
        assert_eq!(
            page,
            format!("{}/blob/main/docs/alerts.md", repository()),
            "{name}: the runbook is docs/alerts.md in the repository Cargo.toml names"
        );
        assert_eq!(section, name.to_lowercase(), "{name}: its own section");
        assert!(
            anchors.contains(section),
            "{name}: docs/alerts.md has no section #{section}"
        );
        assert!(
            rule["labels"]["severity"].as_str().is_some(),
            "{name}: severity"
        );
    }
}

/// Every `expr` of the dashboard, at any depth.
pub(crate) fn dashboard_exprs() -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("expr", Value::String(s)) => out.push(s.clone()),
                        _ => walk(v, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let text = std::fs::read_to_string(monitoring().join("berth-dashboard.json"))
        .expect("berth-dashboard.json");
    let doc: Value = serde_json::from_str(&text).expect("dashboard JSON");
    let mut out = Vec::new();
    walk(&doc, &mut out);
    out
}

#[test]
fn dashboard_promql_parses_with_promtool() {
    let exprs = dashboard_exprs();
    assert!(exprs.len() >= 20, "{exprs:?}");
    let rules: Vec<Value> = exprs
        .iter()
        .enumerate()
        .map(|(i, e)| serde_json::json!({"record": format!("berth_dashboard:expr_{i}"), "expr": e}))
        .collect();
    let file = serde_json::json!({"groups": [{"name": "berth-dashboard", "rules": rules}]});
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard-rules");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("dashboard.yaml"),
        yaml_serde::to_string(&file).expect("yaml"),
    )
    .expect("write rules");
    let out = run_promtool(&["check", "rules", "dashboard.yaml"], &dir);
    assert!(
        out.contains(&format!("SUCCESS: {} rules found", exprs.len())),
        "{out}"
    );
    // Grafana's sidecar finds the dashboard by its uid and title.
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(monitoring().join("berth-dashboard.json")).expect("json"),
    )
    .expect("json");
    assert_eq!(doc["uid"], "berth-agent");
}

/// The chart ships copies of `assets/monitoring/` (it cannot read outside
/// its directory); `BERTH_UPDATE_GOLDEN=1` copies them.
#[test]
fn alerts_and_dashboard_chart_copies_match_assets() {
    let chart = repo().join("assets/chart/berth/files/monitoring");
    let update = std::env::var_os("BERTH_UPDATE_GOLDEN").is_some();
    for f in ["berth-alerts.yaml", "berth-dashboard.json"] {
        let want = std::fs::read_to_string(monitoring().join(f)).expect("asset");
        let path = chart.join(f);
        if update {
            std::fs::create_dir_all(&chart).expect("mkdir");
            std::fs::write(&path, &want).expect("write copy");
        }
        let got = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            got == want,
            "{} differs from assets/monitoring/{f} (BERTH_UPDATE_GOLDEN=1 copies it)",
            path.display()
        );
    }
}

/// `helm template` with both parts on renders the rule groups and the
/// dashboard unchanged (a PrometheusRule whose spec is the rule file, a
/// ConfigMap with Grafana's sidecar label and the values' labels), and with
/// the defaults renders neither.
#[test]
fn alerts_and_dashboard_chart_renders_them_only_when_enabled() {
    let bins =
        Binaries::resolve_test_tools(Path::new(env!("CARGO_TARGET_TMPDIR"))).expect("build.sh");
    let helm = bins.path("helm").expect("helm");
    let chart = repo().join("assets/chart/berth");
    let render = |extra: &[&str]| -> Vec<Value> {
        let out = Command::new(helm)
            .args(["template", "berth"])
            .arg(&chart)
            .args(["--namespace", "berth-system"])
            .args(extra)
            .output()
            .expect("helm template");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("utf-8");
        yaml_serde::Deserializer::from_str(&text)
            .filter_map(|d| serde::Deserialize::deserialize(d).ok())
            .filter(|v: &Value| !v.is_null())
            .collect()
    };
    let monitoring_objects = |docs: &[Value]| -> Vec<Value> {
        docs.iter()
            .filter(|d| {
                d["kind"] == "PrometheusRule"
                    || d["metadata"]["labels"]["grafana_dashboard"].is_string()
            })
            .cloned()
            .collect()
    };
    assert!(
        monitoring_objects(&render(&[])).is_empty(),
        "off by default"
    );

    let docs = render(&[
        "--set",
        "prometheusRule.enabled=true",
        "--set",
        "prometheusRule.labels.release=kube-prometheus-stack",
        "--set",
        "dashboard.enabled=true",
        "--set",
        "dashboard.labels.team=ops",
    ]);
    let objs = monitoring_objects(&docs);
    assert_eq!(objs.len(), 2, "{objs:?}");
    let rule = objs
        .iter()
        .find(|o| o["kind"] == "PrometheusRule")
        .expect("rule");
    assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(
        rule["metadata"]["labels"]["release"],
        "kube-prometheus-stack"
    );
    let file: Value = yaml_serde::from_str(
        &std::fs::read_to_string(monitoring().join("berth-alerts.yaml")).expect("rules"),
    )
    .expect("rules YAML");
    assert_eq!(
        rule["spec"], file,
        "the PrometheusRule's spec is the rule file"
    );
    let cm = objs
        .iter()
        .find(|o| o["kind"] == "ConfigMap")
        .expect("configmap");
    assert_eq!(cm["metadata"]["labels"]["grafana_dashboard"], "1");
    assert_eq!(cm["metadata"]["labels"]["team"], "ops");
    let shipped: Value = serde_json::from_str(
        cm["data"]["berth-dashboard.json"]
            .as_str()
            .expect("dashboard data"),
    )
    .expect("dashboard JSON");
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(monitoring().join("berth-dashboard.json")).expect("dashboard"),
    )
    .expect("dashboard JSON");
    assert_eq!(shipped, dashboard);
}
