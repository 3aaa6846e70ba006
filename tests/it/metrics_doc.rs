//! The metrics a dashboard relies on, against a live scrape (issue 30,
//! points 1–3): an agent with a grants file, the admission webhook, a
//! granted Runtime, a Blocked one, a workload that keeps an ungranted class
//! and a pending (invalid) grants file exports every metric that
//! `berth-agent metrics-doc` documents (docs/metrics.md), with exactly the
//! documented type and labels, and nothing undocumented; every metric the
//! dashboard and the alerts name is in that scrape (the API server's own
//! metrics, which the dashboard compares with, in the API server's
//! `/metrics`).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;

use berth_tests::harness::{self, wait_for_value};
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, binding, create_runtime, setup, wait_condition, write_grants,
};
use crate::alerts::{alert_rules, dashboard_exprs};

/// Documented metrics that only appear after a fault this scenario does not
/// cause: `apply_errors_total` needs a step the apiserver refuses
/// (`agent_contract::agent_contract_a_failed_step_names_itself_in_status_events_and_metrics`
/// reads it from a real scrape).
pub(crate) const NEEDS_A_FAULT: &[&str] = &["berth_agent_apply_errors_total"];

/// One row of the documented table: type and label names.
#[derive(Debug)]
pub(crate) struct Documented {
    pub(crate) kind: String,
    labels: BTreeSet<String>,
}

/// `berth-agent metrics-doc`, parsed.
pub(crate) fn documented() -> BTreeMap<String, Documented> {
    let bin = harness::workspace_binary("berth-agent", "berth-agent", "BERTH_AGENT_BIN");
    let out = Command::new(bin)
        .arg("metrics-doc")
        .output()
        .expect("berth-agent metrics-doc");
    assert!(out.status.success(), "metrics-doc failed");
    let table = String::from_utf8(out.stdout).expect("utf-8");
    let page = std::fs::read_to_string(crate::alerts::repo().join("docs/metrics.md"))
        .expect("docs/metrics.md");
    assert!(
        page.contains(&table),
        "docs/metrics.md shows the command's table"
    );
    table
        .lines()
        .skip(2)
        .map(|row| {
            let cells: Vec<&str> = row
                .split(" | ")
                .map(|c| c.trim_matches(['|', ' ']))
                .collect();
            let labels = cells[2]
                .split(", ")
                .filter(|l| *l != "—")
                .map(|l| l.trim_matches('`').to_string())
                .collect();
            (
                cells[0].trim_matches('`').to_string(),
                Documented {
                    kind: cells[1].to_string(),
                    labels,
                },
            )
        })
        .collect()
}

/// A scrape: family → type, and sample name → label-name sets.
#[derive(Debug, Default)]
struct Scrape {
    types: BTreeMap<String, String>,
    samples: BTreeMap<String, BTreeSet<BTreeSet<String>>>,
}

fn parse(text: &str) -> Scrape {
    let mut s = Scrape::default();
    for line in text.lines() {
        if let Some(t) = line.strip_prefix("# TYPE ") {
            if let Some((n, k)) = t.split_once(' ') {
                s.types.insert(n.to_string(), k.to_string());
            }
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let name = line
            .split(['{', ' '])
            .next()
            .unwrap_or_default()
            .to_string();
        let labels: BTreeSet<String> = line
            .split_once('{')
            .and_then(|(_, r)| r.split_once('}'))
            .map(|(l, _)| l)
            .unwrap_or_default()
            .split("\",")
            .filter_map(|p| p.split_once('=').map(|(k, _)| k.trim().to_string()))
            .filter(|k| !k.is_empty())
            .collect();
        s.samples.entry(name).or_default().insert(labels);
    }
    s
}

/// Family name as `# TYPE` says it.
fn family(name: &str, kind: &str) -> String {
    match kind {
        "counter" => name.strip_suffix("_total").unwrap_or(name).to_string(),
        _ => name.to_string(),
    }
}

/// Metric names a PromQL expression names (by prefix).
fn names_in(expr: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = expr;
    while let Some(i) = rest.find(prefix) {
        let boundary = rest[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(tail.len());
        if boundary {
            out.insert(tail[..end].to_string());
        }
        rest = &tail[end..];
    }
    out
}

#[tokio::test]
async fn metrics_doc_live_scrape_matches_docs_dashboard_and_alerts() {
    let (ns, class) = setup("metrics-doc").await;
    let alias = format!("{}-bw", ns.name);
    let grants = write_grants(&[binding(&alias, &class, "bounded-runc")]);
    let mut opts = AgentOpts::new(&ns.name, Some(&grants));
    // The webhook (self-signed, loopback, for no namespace but this test's
    // label value) so that its certificate's expiry is exported.
    let port = berth_tests::bench::process::free_port();
    opts.extra_args = vec![
        "--webhook-listen".into(),
        format!("127.0.0.1:{port}"),
        "--self-signed".into(),
        "--webhook-url".into(),
        format!("https://127.0.0.1:{port}"),
        "--webhook-config-name".into(),
        format!("berth-it-{}", ns.name),
        "--webhook-namespace-label".into(),
        format!("{}={}", crate::support::webhook::WEBHOOK_LABEL, ns.name),
    ];
    let agent = Agent::start(opts).await;
    // Granted; Blocked (a profile no binding grants); a CronJob berth does
    // not manage keeps a class no grant covers.
    create_runtime(&ns, "web", json!({"runtimeProfile": alias, "replicas": 1})).await;
    let kept = crate::support::series_world::blocked_and_retained(&ns).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    // The grants file changes on disk into something the loader refuses:
    // pending, Invalid, never applied.
    std::fs::write(&grants, "this is [not a grants file").expect("rewrite grants");

    let docs = documented();
    let wanted: Vec<String> = docs
        .keys()
        .filter(|n| !NEEDS_A_FAULT.contains(&n.as_str()))
        .cloned()
        .collect();
    let text = wait_for_value(
        "every documented metric in the scrape",
        Duration::from_secs(120),
        || async {
            let text = agent.metrics().await;
            let s = parse(&text);
            wanted
                .iter()
                .all(|n| {
                    let name = if docs[n].kind == "histogram" {
                        format!("{n}_bucket")
                    } else {
                        n.clone()
                    };
                    s.samples.contains_key(&name)
                })
                .then_some(text)
        },
    )
    .await;
    let scrape = parse(&text);

    // Documented ⇔ exported, with the documented type and labels.
    let documented_families: BTreeMap<String, &str> = docs
        .iter()
        .map(|(n, d)| (family(n, &d.kind), d.kind.as_str()))
        .collect();
    for (fam, kind) in &scrape.types {
        assert_eq!(
            documented_families.get(fam).copied(),
            Some(kind.as_str()),
            "{fam} ({kind}) is exported but not documented as such in docs/metrics.md"
        );
    }
    for (name, d) in &docs {
        for (sample, label_sets) in &scrape.samples {
            let of_this = match d.kind.as_str() {
                "histogram" => [
                    format!("{name}_bucket"),
                    format!("{name}_sum"),
                    format!("{name}_count"),
                ]
                .contains(sample),
                _ => sample == name,
            };
            if !of_this {
                continue;
            }
            for labels in label_sets {
                let mut want = d.labels.clone();
                if sample.ends_with("_bucket") {
                    want.insert("le".into());
                }
                assert_eq!(
                    labels, &want,
                    "{sample}: labels differ from docs/metrics.md"
                );
            }
        }
    }
    // The scenario produced the series an operator looks for.
    for needle in [
        "berth_agent_runtime_problem_since_timestamp_seconds{".to_string(),
        format!("berth_agent_grant_runtimes{{grant=\"{alias}\""),
        format!("berth_agent_retained_workloads{{runtime_class=\"{kept}\"}}"),
        "berth_agent_pending_grants_file_observed_timestamp_seconds{verdict=\"In".into(),
    ] {
        assert!(text.contains(&needle), "{needle} missing:\n{text}");
    }
    let expiry = berth_tests::bench::process::metric_sum(
        &text,
        "berth_agent_webhook_certificate_expiry_timestamp_seconds",
        |_| true,
    );
    assert!(expiry > 1.7e9, "a real expiry time: {expiry}");

    // The dashboard and the alerts name only exported metrics.
    let exported = |n: &str| scrape.samples.contains_key(n);
    let mut berth_names = BTreeSet::new();
    let mut apiserver_names = BTreeSet::new();
    let exprs: Vec<String> = dashboard_exprs()
        .into_iter()
        .chain(
            alert_rules()
                .iter()
                .filter_map(|r| r["expr"].as_str().map(str::to_string)),
        )
        .collect();
    for e in &exprs {
        berth_names.extend(names_in(e, "berth_agent_"));
        apiserver_names.extend(names_in(e, "apiserver_"));
    }
    assert!(berth_names.len() >= 15, "{berth_names:?}");
    for n in &berth_names {
        assert!(
            exported(n) || (NEEDS_A_FAULT.contains(&n.as_str()) && docs.contains_key(n)),
            "the dashboard or an alert names {n}, which the agent does not export"
        );
    }
    let apiserver = ns
        .client
        .request_text(
            http::Request::get("/metrics")
                .body(Vec::new())
                .expect("request"),
        )
        .await
        .expect("the API server's /metrics");
    let apiserver = parse(&apiserver);
    for n in &apiserver_names {
        assert!(
            apiserver.samples.contains_key(n),
            "the dashboard names {n}, which the API server does not export"
        );
    }
}
