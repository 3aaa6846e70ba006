//! An independent checker agrees (issue 27, point 10): kube-score's default
//! checks on every golden render find nothing but what docs/kube-score.md
//! lists as deliberately ignored, each under its stated condition. The
//! table in that doc *is* the ignore list: this test parses it.
//!
//! No cluster: kube-score reads the YAML files.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use berth_tests::localcluster::binaries::{Binaries, pinned_version};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_path_buf()
}

/// The kube-score binary from `tests/k8s/build.sh` (built once per machine).
fn kube_score_path() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let log_dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let bins = Binaries::resolve_test_tools(log_dir).unwrap_or_else(|e| {
            panic!("tests/k8s/build.sh (which builds kube-score) failed: {e}")
        });
        bins.path("kube-score")
            .unwrap_or_else(|_| {
                panic!(
                    "tests/k8s/build.sh named no kube-score binary (with BERTH_K8S_BIN_DIR set, put kube-score {} there)",
                    pinned_version("KUBE_SCORE_VERSION").unwrap_or("?")
                )
            })
            .to_path_buf()
    })
}

/// When a documented ignore applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum When {
    Always,
    ImageByDigest,
    NoNetworkPolicy,
    ReplicasZero,
}

impl When {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "always" => Some(When::Always),
            "image pinned by digest" => Some(When::ImageByDigest),
            "no NetworkPolicy rendered" => Some(When::NoNetworkPolicy),
            "replicas 0" => Some(When::ReplicasZero),
            _ => None,
        }
    }
}

/// One row of the doc's table.
#[derive(Clone, Debug)]
struct Ignore {
    check: String,
    finding: String,
    when: When,
}

/// The rows of the "Findings deliberately ignored" table.
fn documented_ignores() -> Vec<Ignore> {
    let doc =
        std::fs::read_to_string(repo().join("docs/kube-score.md")).expect("docs/kube-score.md");
    let section = doc
        .split("## Findings deliberately ignored")
        .nth(1)
        .expect("the doc has a 'Findings deliberately ignored' section");
    let mut out = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert!(
            cells.len() >= 4,
            "a row needs check, finding, when and why: {line}"
        );
        assert!(!cells[3].is_empty(), "a row without its reason: {line}");
        let when = When::parse(cells[2]).unwrap_or_else(|| {
            panic!(
                "unknown condition {:?} in docs/kube-score.md: {line}",
                cells[2]
            )
        });
        out.push(Ignore {
            check: cells[0].trim_matches('`').to_string(),
            finding: cells[1].to_string(),
            when,
        });
    }
    assert!(!out.is_empty(), "no rows parsed from docs/kube-score.md");
    out
}

/// The rendered objects of one golden file.
fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("golden file");
    yaml_serde::Deserializer::from_str(&text)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).expect("yaml document"))
        .filter(|v| !v.is_null())
        .collect()
}

fn pod_spec(obj: &Value) -> Option<&Value> {
    obj.pointer("/spec/template/spec")
        .or_else(|| obj.pointer("/spec/jobTemplate/spec/template/spec"))
}

/// Whether `when` holds for the object `kind/name` of a golden file.
fn holds(when: When, docs: &[Value], kind: &str, name: &str) -> bool {
    let obj = docs
        .iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name);
    match when {
        When::Always => true,
        When::NoNetworkPolicy => !docs.iter().any(|d| d["kind"] == "NetworkPolicy"),
        When::ImageByDigest => obj
            .and_then(pod_spec)
            .and_then(|p| p["containers"].as_array())
            .is_some_and(|cs| {
                cs.iter()
                    .all(|c| c["image"].as_str().is_some_and(|i| i.contains("@sha256:")))
            }),
        When::ReplicasZero => obj.is_some_and(|o| o["spec"]["replicas"] == 0),
    }
}

/// Every finding of kube-score on `path`: `(kind, name, check, message)`.
fn findings(path: &Path) -> Vec<(String, String, String, String)> {
    let minor = pinned_version("KUBERNETES_VERSION")
        .and_then(|v| v.strip_prefix("v1."))
        .and_then(|v| v.split('.').next())
        .expect("KUBERNETES_VERSION");
    let out = Command::new(kube_score_path())
        .args(["score", "--output-format", "json", "--kubernetes-version"])
        .arg(format!("v1.{minor}"))
        .arg(path)
        .output()
        .expect("run kube-score");
    // Exit 1 means "something critical": the findings say what.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "kube-score on {}: {}\n{}",
        path.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("kube-score json");
    let mut found = Vec::new();
    for object in report.as_array().expect("a list of objects") {
        let kind = object["type_meta"]["kind"].as_str().unwrap_or_default();
        let name = object["object_meta"]["name"].as_str().unwrap_or_default();
        for check in object["checks"].as_array().into_iter().flatten() {
            let grade = check["grade"].as_i64().unwrap_or(0);
            if check["skipped"] == true || grade >= 10 {
                continue;
            }
            let id = check["check"]["id"].as_str().unwrap_or_default();
            let comments: Vec<String> = check["comments"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["summary"].as_str().unwrap_or_default().to_string())
                .collect();
            // A failed check without a comment is still a finding.
            let comments = if comments.is_empty() {
                vec![String::new()]
            } else {
                comments
            };
            for summary in comments {
                found.push((kind.to_string(), name.to_string(), id.to_string(), summary));
            }
        }
    }
    found
}

#[test]
fn kube_score_finds_nothing_but_the_documented_ignores() {
    let ignores = documented_ignores();
    let golden = repo().join("shared/src/render/golden");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&golden)
        .expect("golden dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "golden renders: {files:?}");
    let mut unexpected = Vec::new();
    let mut used = BTreeSet::new();
    for file in &files {
        let docs = documents(file);
        for (kind, name, check, message) in findings(file) {
            let row = ignores.iter().position(|i| {
                i.check == check && i.finding == message && holds(i.when, &docs, &kind, &name)
            });
            match row {
                Some(r) => {
                    used.insert(r);
                }
                None => unexpected.push(format!(
                    "{}: {kind}/{name}: [{check}] {message}",
                    file.file_name().unwrap_or_default().to_string_lossy()
                )),
            }
        }
    }
    assert!(
        unexpected.is_empty(),
        "kube-score findings not in docs/kube-score.md's ignore table (fix the render, or document why it is ignored):\n{}",
        unexpected.join("\n")
    );
    let stale: Vec<_> = ignores
        .iter()
        .enumerate()
        .filter(|(i, _)| !used.contains(i))
        .map(|(_, r)| format!("[{}] {}", r.check, r.finding))
        .collect();
    assert!(
        stale.is_empty(),
        "rows of docs/kube-score.md's ignore table that match no finding any more (remove them): {stale:?}"
    );
}

/// The conditions are not decoration: the same finding outside its
/// condition is not ignored (a tag image without Always, a rendered
/// NetworkPolicy that leaves a pod out).
#[test]
fn conditional_ignores_do_not_hide_the_real_weakness() {
    let ignores = documented_ignores();
    let everything = repo().join("shared/src/render/golden/everything.yaml");
    let text = std::fs::read_to_string(&everything).expect("everything.yaml");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kube-score-adversary");
    std::fs::create_dir_all(&dir).expect("dir");
    // 1. The image by tag, the pull policy left at IfNotPresent.
    let by_tag = text.replace(&format!("@sha256:{}", "ab".repeat(32)), ":1.4.2");
    // 2. The NetworkPolicy narrowed to the server pods again (the old render).
    let narrowed = text.replacen(
        "  podSelector:\n    matchLabels:\n      berth.dev/runtime: worker\n",
        "  podSelector:\n    matchLabels:\n      app.kubernetes.io/component: server\n      berth.dev/runtime: worker\n",
        1,
    );
    assert_ne!(
        by_tag, text,
        "the everything render pins its image by digest"
    );
    assert_ne!(
        narrowed, text,
        "the everything render's policy selects berth.dev/runtime"
    );
    for (case, yaml, needle) in [
        ("by-tag", by_tag, "ImagePullPolicy is not set to Always"),
        (
            "narrowed",
            narrowed,
            "The pod does not have a matching NetworkPolicy",
        ),
    ] {
        let path = dir.join(format!("{case}.yaml"));
        std::fs::write(&path, &yaml).expect("write");
        let docs = documents(&path);
        let unexpected: Vec<_> = findings(&path)
            .into_iter()
            .filter(|(kind, name, check, message)| {
                !ignores.iter().any(|i| {
                    &i.check == check && &i.finding == message && holds(i.when, &docs, kind, name)
                })
            })
            .collect();
        assert!(
            unexpected.iter().any(|(_, _, _, m)| m == needle),
            "{case}: expected an un-ignored {needle:?}, got {unexpected:?}"
        );
    }
}
