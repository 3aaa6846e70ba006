//! The registry against its documentation: every registered metric is
//! documented with the type and help the exposition says, and
//! `docs/metrics.md` shows exactly the generated table
//! (`BERTH_UPDATE_GOLDEN=1 cargo test -p berth-agent` regenerates it).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::*;

/// `# TYPE` lines of the exposition: family name → type.
fn exposed_types(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
}

/// The family name `# TYPE` uses: counters without `_total`.
fn family(doc: &MetricDoc) -> &str {
    match doc.kind {
        Kind::Counter => doc.name.strip_suffix("_total").unwrap_or(&doc.name),
        _ => &doc.name,
    }
}

#[test]
fn every_registered_metric_is_documented_with_its_exposed_type_and_help() {
    let m = populated();
    let text = m.encode();
    let types = exposed_types(&text);
    let documented: BTreeMap<String, String> = m
        .docs()
        .iter()
        .map(|d| (family(d).to_string(), d.kind.as_str().to_string()))
        .collect();
    assert_eq!(types, documented, "exposition:\n{text}");
    for d in m.docs() {
        let help = format!("# HELP {} {}", family(d), d.help);
        assert!(
            text.lines().any(|l| l.starts_with(&help)),
            "{}: help not exposed as documented",
            d.name
        );
        assert!(d.name.starts_with("berth_agent_"), "{}", d.name);
    }
}

/// Metrics with one child in every family (an empty family is not
/// exposed at all).
fn populated() -> Arc<Metrics> {
    let m = Metrics::new();
    state::runtimes(&m, &[]);
    state::grants(&m, &[], "p");
    m.write("Deployment", "apply");
    m.apply_failed("Deployment", "ApplyFailed");
    m.reconciled("ok", 0.1);
    m.reconcile_failed("apply");
    m.grants_file_loaded(1, Some("ab"));
    m.pending_grants(Some(("Invalid", "cd")));
    m.requests
        .get_or_create(&RequestLabels {
            method: "GET".into(),
            resource: "leases".into(),
        })
        .inc();
    m.handler_nodes
        .get_or_create(&HandlerNodeLabels {
            runtime_class: "gvisor".into(),
            handler: "runsc".into(),
            state: "failing".into(),
        })
        .set(1);
    m.retained_workloads
        .get_or_create(&ClassLabels {
            runtime_class: "gvisor".into(),
        })
        .set(1);
    m.runtime_problems
        .get_or_create(&ProblemLabels {
            runtime_namespace: "n".into(),
            runtime: "r".into(),
            condition: "Blocked".into(),
            reason: "NotGranted".into(),
        })
        .set(1);
    m.grant_runtimes
        .get_or_create(&GrantLabels {
            grant: "g".into(),
            runtime_class: "c".into(),
        })
        .set(1);
    m.grant_nodes
        .get_or_create(&CoverageLabels {
            grant: "g".into(),
            handler: "h".into(),
            coverage: "unknown".into(),
        })
        .set(1);
    m
}

/// Each family's label names are the documented ones.
#[test]
fn exposed_label_names_are_the_documented_ones() {
    let m = populated();
    let text = m.encode();
    for d in m.docs() {
        let mut want: Vec<&str> = d.labels.to_vec();
        if d.kind == Kind::Histogram {
            want.push("le");
        }
        want.sort_unstable();
        let samples: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter(|l| {
                let name = l.split(['{', ' ']).next().unwrap_or_default();
                name == d.name
                    || (d.kind == Kind::Histogram && name == format!("{}_bucket", d.name))
            })
            .collect();
        assert!(!samples.is_empty(), "{}: no sample", d.name);
        for s in samples {
            let mut got: Vec<&str> = s
                .split_once('{')
                .map(|(_, rest)| rest.split('}').next().unwrap_or_default())
                .unwrap_or_default()
                .split(',')
                .filter(|p| !p.is_empty())
                .filter_map(|p| p.split_once('=').map(|(k, _)| k))
                .collect();
            got.sort_unstable();
            assert_eq!(got, want, "{}: {s}", d.name);
        }
    }
}

#[test]
fn the_pending_file_keeps_its_first_seen_time_while_the_content_stays() {
    let m = Metrics::new();
    m.pending_grants(Some(("Invalid", "aa")));
    *m.pending_seen.lock().expect("lock") = Some(("aa".into(), 5));
    m.pending_grants(Some(("Invalid", "aa")));
    assert!(m.encode().contains(
        "berth_agent_pending_grants_file_observed_timestamp_seconds{verdict=\"Invalid\"} 5"
    ));
    m.pending_grants(Some(("Valid", "bb")));
    assert!(!m.encode().contains("} 5\n"));
    m.pending_grants(None);
    assert!(
        !m.encode()
            .contains("berth_agent_pending_grants_file_observed_timestamp_seconds{")
    );
}

const START: &str = "<!-- metrics-table:start (generated by `berth-agent metrics-doc` from agent/src/metrics.rs) -->\n";
const END: &str = "<!-- metrics-table:end -->";

#[test]
fn the_docs_page_shows_the_generated_table() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/metrics.md");
    let page = std::fs::read_to_string(&path).expect("docs/metrics.md");
    let (Some(a), Some(b)) = (page.find(START), page.find(END)) else {
        panic!("docs/metrics.md lacks the metrics table markers");
    };
    let current = &page[a + START.len()..b];
    let expected = markdown(Metrics::new().docs());
    if current != expected && std::env::var("BERTH_UPDATE_GOLDEN").as_deref() == Ok("1") {
        let updated = format!("{}{START}{expected}{}", &page[..a], &page[b..]);
        std::fs::write(&path, updated).expect("write docs/metrics.md");
        return;
    }
    assert_eq!(
        current, expected,
        "docs/metrics.md's table differs from the registry \
         (BERTH_UPDATE_GOLDEN=1 cargo test -p berth-agent metrics regenerates it)"
    );
}

/// The names dashboards and tests used before docs/metrics.md existed are
/// kept (docs/metrics.md promises it).
#[test]
fn earlier_names_are_kept() {
    let m = Metrics::new();
    for name in [
        "berth_agent_reconciles_total",
        "berth_agent_reconcile_duration_seconds",
        "berth_agent_writes_total",
        "berth_agent_api_requests_total",
        "berth_agent_apply_errors_total",
        "berth_agent_runtimes",
        "berth_agent_blocked_runtimes",
        "berth_agent_retained_workloads",
        "berth_agent_grants_loaded",
        "berth_agent_grants_file_stale",
        "berth_agent_leader",
        "berth_agent_grants_digest_mismatch",
    ] {
        assert!(m.docs().iter().any(|d| d.name == name), "{name}");
    }
}

fn runtime(
    name: &str,
    generation: i64,
    status: serde_json::Value,
) -> Arc<berth_shared::api::Runtime> {
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1",
            "kind": "Runtime",
            "metadata": {"name": name, "namespace": "shop", "generation": generation},
            "spec": {"application": "a", "service": name,
                "image": {"repository": "r.example/a", "tag": "1"}},
            "status": status,
        }))
        .expect("runtime"),
    )
}

fn cond(type_: &str, status: &str, reason: &str, at: &str) -> serde_json::Value {
    serde_json::json!({"type": type_, "status": status, "reason": reason, "message": "",
        "lastTransitionTime": at})
}

/// Phases and grant states with their zeros, the queue (a generation not
/// observed yet), and one problem series per condition in its problem
/// status, at its transition time; a healthy Runtime has none.
#[test]
fn runtime_gauges_count_states_queue_and_problems() {
    let m = Metrics::new();
    let blocked = runtime(
        "web",
        3,
        serde_json::json!({"observedGeneration": 2,
        "profile": {"state": "NotGranted"},
        "rollout": {"phase": "Blocked"},
        "conditions": [
            cond("Blocked", "True", "NotGranted", "2026-01-01T00:00:00Z"),
            cond("HandlerReady", "False", "HandlerAbsent", "2026-01-01T00:01:00Z"),
            cond("Degraded", "False", "AsExpected", "2026-01-01T00:00:00Z"),
        ]}),
    );
    let healthy = runtime(
        "api",
        1,
        serde_json::json!({"observedGeneration": 1,
            "profile": {"state": "Granted"},
            "rollout": {"phase": "Complete"},
            "conditions": [cond("HandlerReady", "True", "HandlerPresent", "2026-01-01T00:00:00Z")]}),
    );
    state::runtimes(&m, &[blocked, healthy]);
    let text = m.encode();
    for line in [
        "berth_agent_runtimes_by_phase{phase=\"Blocked\"} 1",
        "berth_agent_runtimes_by_phase{phase=\"Complete\"} 1",
        "berth_agent_runtimes_by_phase{phase=\"Degraded\"} 0",
        "berth_agent_runtimes{state=\"NotGranted\"} 1",
        "berth_agent_runtimes{state=\"Revoked\"} 0",
        "berth_agent_blocked_runtimes 1",
        "berth_agent_queue_depth 1",
        "berth_agent_runtime_problem_since_timestamp_seconds{runtime_namespace=\"shop\",runtime=\"web\",condition=\"Blocked\",reason=\"NotGranted\"} 1767225600",
        "berth_agent_runtime_problem_since_timestamp_seconds{runtime_namespace=\"shop\",runtime=\"web\",condition=\"HandlerReady\",reason=\"HandlerAbsent\"} 1767225660",
    ] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
    assert_eq!(
        text.matches("berth_agent_runtime_problem_since_timestamp_seconds{")
            .count(),
        2,
        "{text}"
    );
}

/// Only this agent's RuntimeGrants count; holders and node coverage per
/// grant.
#[test]
fn grant_gauges_count_states_holders_and_coverage() {
    let grant = |name: &str, publisher: &str, status: serde_json::Value| {
        Arc::new(
            serde_json::from_value::<berth_shared::api::RuntimeGrant>(serde_json::json!({
                "apiVersion": "berth.dev/v1alpha1",
                "kind": "RuntimeGrant",
                "metadata": {"name": name, "labels": {"berth.dev/published-by": publisher}},
                "spec": {"project": "p", "environment": "e", "application": "a", "service": "s",
                    "runtimeClass": "gvisor", "handler": "runsc"},
                "status": status,
            }))
            .expect("grant"),
        )
    };
    let m = Metrics::new();
    let ready = grant(
        "bw",
        "me",
        serde_json::json!({"classPresent": true, "handlerMatches": true,
            "classHasOverhead": false, "classHasScheduling": false, "classDeleting": false,
            "nodes": {"withHandler": 2, "total": 5, "unknown": 1, "summary": ""},
            "runtimes": [{"namespace": "shop", "name": "web"}],
            "conditions": [cond("ClassReady", "True", "ClassReady", "2026-01-01T00:00:00Z")]}),
    );
    let retired = grant(
        "old",
        "me",
        serde_json::json!({"classPresent": true, "handlerMatches": true,
            "classHasOverhead": false, "classHasScheduling": false, "classDeleting": false,
            "conditions": [cond("Retired", "True", "BindingRemoved", "2026-01-01T00:00:00Z")]}),
    );
    let foreign = grant("theirs", "another-agent", serde_json::json!({}));
    state::grants(&m, &[ready, retired, foreign], "me");
    let text = m.encode();
    for line in [
        "berth_agent_grants{state=\"Ready\"} 1",
        "berth_agent_grants{state=\"Retired\"} 1",
        "berth_agent_grants{state=\"NotReady\"} 0",
        "berth_agent_grant_runtimes{grant=\"bw\",runtime_class=\"gvisor\"} 1",
        "berth_agent_grant_nodes{grant=\"bw\",handler=\"runsc\",coverage=\"with_handler\"} 2",
        "berth_agent_grant_nodes{grant=\"bw\",handler=\"runsc\",coverage=\"without_handler\"} 2",
        "berth_agent_grant_nodes{grant=\"bw\",handler=\"runsc\",coverage=\"unknown\"} 1",
    ] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
    assert!(!text.contains("theirs"), "{text}");
}
