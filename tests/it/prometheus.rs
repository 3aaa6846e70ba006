//! A real Prometheus against berth (issue 55, item 2): the `prometheus`
//! server of the same Go module and version as promtool scrapes an agent
//! and evaluates the shipped rule file (`assets/monitoring/berth-alerts.yaml`)
//! on the local cluster. Shown by Prometheus's own HTTP API:
//! - every series of docs/metrics.md is scraped (`/api/v1/label/__name__/values`),
//!   and no undocumented `berth_agent_` one;
//! - `BerthAgentDown` is inactive while the agent is scraped, fires when it
//!   stops and resolves when it is back (`/api/v1/rules`);
//! - `BerthRetainedWorkloads` fires for the class of a grant revoked while
//!   a Runtime's workload still runs on it.
//!
//! Bent from the issue: the agent is the host process the other tests run
//! (`crate::support::agent`, a static scrape target on its `--http-addr`),
//! not the in-cluster agent behind its metrics Service, which is not built
//! yet (issue 55, item 1). The rule file is the shipped one with every
//! `for:` shortened to [`FOR`] (5 minutes to 6 hours shipped); the
//! expressions, labels and annotations are the shipped ones, checked equal.

mod server;

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use crate::agent_support::{
    Agent, AgentOpts, binding_for_service, create_class, create_runtime, setup, wait_condition,
    write_grants,
};
use crate::metrics_doc::{NEEDS_A_FAULT, documented};
use server::Prometheus;

/// The `for:` of every rule in the test's copy of the rule file.
const FOR: &str = "3s";

/// How long an alert may take to change state: a scrape (1 s), an
/// evaluation (1 s), [`FOR`], on a loaded machine.
const ALERT_WAIT: Duration = Duration::from_secs(90);

/// The shipped rule file with every rule's `for:` set to [`FOR`]; nothing
/// else differs (checked).
fn rules_with_short_for() -> Value {
    let path = crate::alerts::monitoring().join("berth-alerts.yaml");
    let shipped: Value =
        yaml_serde::from_str(&std::fs::read_to_string(&path).expect("rule file")).expect("YAML");
    let mut copy = shipped.clone();
    for group in copy["groups"].as_array_mut().expect("groups") {
        for rule in group["rules"].as_array_mut().expect("rules") {
            rule["for"] = json!(FOR);
        }
    }
    let strip = |doc: &Value| -> Value {
        let mut doc = doc.clone();
        for group in doc["groups"].as_array_mut().expect("groups") {
            for rule in group["rules"].as_array_mut().expect("rules") {
                rule.as_object_mut().expect("rule").remove("for");
            }
        }
        doc
    };
    assert_eq!(strip(&copy), strip(&shipped), "only `for:` differs");
    copy
}

/// Scrape the agent on `port` every second, evaluate every second.
fn config(port: u16) -> Value {
    json!({
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": ["rules.yaml"],
        "scrape_configs": [{
            "job_name": "berth-agent",
            "static_configs": [{"targets": [format!("127.0.0.1:{port}")]}],
        }],
    })
}

/// The sample names docs/metrics.md documents (a histogram's three),
/// without those that need a fault this world does not cause.
fn documented_names() -> BTreeSet<String> {
    documented()
        .into_iter()
        .filter(|(n, _)| !NEEDS_A_FAULT.contains(&n.as_str()))
        .flat_map(|(n, d)| match d.kind.as_str() {
            "histogram" => vec![
                format!("{n}_bucket"),
                format!("{n}_sum"),
                format!("{n}_count"),
            ],
            _ => vec![n],
        })
        .collect()
}

/// An agent of `ns` serving `/metrics` on `http_port` (the scrape target,
/// the same across a restart), with the webhook (self-signed, for this
/// test's namespace label only) so that its certificate's expiry is
/// exported, as in metrics_doc.
fn agent_opts<'a>(
    ns: &'a str,
    grants: &'a std::path::Path,
    identity: &str,
    http_port: u16,
    webhook_port: u16,
) -> AgentOpts<'a> {
    let mut o = AgentOpts::new(ns, Some(grants));
    o.identity = format!("{ns}-{identity}");
    o.http_port = Some(http_port);
    o.extra_args = vec![
        "--webhook-listen".into(),
        format!("127.0.0.1:{webhook_port}"),
        "--self-signed".into(),
        "--webhook-url".into(),
        format!("https://127.0.0.1:{webhook_port}"),
        "--webhook-config-name".into(),
        format!("berth-it-{ns}"),
        "--webhook-namespace-label".into(),
        format!("{}={ns}", crate::support::webhook::WEBHOOK_LABEL),
    ];
    o
}

fn has_label(alerts: &[Value], key: &str, value: &str) -> bool {
    alerts.iter().any(|l| l[key] == value)
}

#[tokio::test]
async fn prometheus_scrapes_the_documented_series_and_fires_the_shipped_alerts() {
    let (ns, class) = setup("prometheus").await;
    // Two grants: `web`'s stays, `worker`'s is revoked later (its own
    // class, so that no other grant covers it).
    let revocable = format!("{}-revocable", ns.name);
    create_class(&ns.client, &revocable, "runc").await;
    let (web, worker) = (format!("{}-web", ns.name), format!("{}-worker", ns.name));
    let both = write_grants(&[
        binding_for_service(&web, &class, "bounded-runc", "web"),
        binding_for_service(&worker, &revocable, "runc", "worker"),
    ]);
    let web_only = write_grants(&[binding_for_service(&web, &class, "bounded-runc", "web")]);

    let http_port = berth_tests::bench::process::free_port();
    let webhook_port = berth_tests::bench::process::free_port();
    let opts = |grants, identity| agent_opts(&ns.name, grants, identity, http_port, webhook_port);
    let mut first = Agent::start(opts(&both, "a")).await;
    let dir =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("prometheus-{}", ns.name));
    let _ = std::fs::remove_dir_all(&dir);
    let prometheus = Prometheus::start(&dir, &config(http_port), &rules_with_short_for()).await;

    // The world of metrics_doc: granted Runtimes, a Blocked one, a CronJob
    // berth does not manage keeping a class no grant covers, and a pending
    // grants file the loader refuses.
    create_runtime(
        &ns,
        "web",
        json!({"service": "web", "runtimeProfile": web, "replicas": 1}),
    )
    .await;
    create_runtime(
        &ns,
        "worker",
        json!({"service": "worker", "runtimeProfile": worker, "replicas": 1}),
    )
    .await;
    crate::support::series_world::blocked_and_retained(&ns).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    wait_condition(&ns, "worker", "Ready", "True", None).await;
    std::fs::write(&both, "this is [not a grants file").expect("rewrite grants");

    // Every documented series, as Prometheus holds them.
    let want = documented_names();
    let names = berth_tests::harness::wait_for_value(
        "every documented series in Prometheus",
        Duration::from_secs(120),
        || async {
            let names = prometheus.names("berth-agent").await;
            want.is_subset(&names).then_some(names)
        },
    )
    .await;
    let scraped: BTreeSet<String> = names
        .iter()
        .filter(|n| n.starts_with("berth_agent_"))
        .cloned()
        .collect();
    let all_documented: BTreeSet<String> = documented()
        .into_keys()
        .flat_map(|n| {
            ["", "_bucket", "_sum", "_count"]
                .into_iter()
                .map(move |s| format!("{n}{s}"))
        })
        .collect();
    let undocumented: Vec<&String> = scraped.difference(&all_documented).collect();
    assert!(
        undocumented.is_empty(),
        "scraped but not in docs/metrics.md: {undocumented:?}"
    );
    eprintln!(
        "Prometheus holds {} berth_agent_ series names, every documented one but {NEEDS_A_FAULT:?}",
        scraped.len()
    );

    // Scraped: BerthAgentDown stays inactive (long enough for FOR to pass
    // had its expression been true).
    tokio::time::sleep(Duration::from_secs(6)).await;
    let (state, _) = prometheus
        .alert("BerthAgentDown")
        .await
        .expect("rule loaded");
    assert_eq!(
        state, "inactive",
        "BerthAgentDown while the agent is scraped"
    );
    let (_, retained) = prometheus
        .alert("BerthRetainedWorkloads")
        .await
        .expect("rule loaded");
    assert!(
        !has_label(&retained, "runtime_class", &revocable),
        "{revocable} is granted: {retained:?}"
    );

    // The agent stops: the alert fires.
    first.kill();
    let t0 = std::time::Instant::now();
    prometheus
        .wait_alert("BerthAgentDown", "firing", ALERT_WAIT, |_| true)
        .await;
    eprintln!(
        "BerthAgentDown firing {:?} after the agent stopped",
        t0.elapsed()
    );

    // Back (on the same port), with worker's grant taken away: the alert
    // resolves, and worker's Deployment keeps a class no grant covers.
    let second = Agent::start(opts(&web_only, "b")).await;
    let t0 = std::time::Instant::now();
    prometheus
        .wait_alert("BerthAgentDown", "inactive", ALERT_WAIT, |_| true)
        .await;
    eprintln!(
        "BerthAgentDown resolved {:?} after the agent was back",
        t0.elapsed()
    );
    wait_condition(&ns, "worker", "Blocked", "True", Some("Revoked")).await;
    let alerts = prometheus
        .wait_alert("BerthRetainedWorkloads", "firing", ALERT_WAIT, |a| {
            has_label(a, "runtime_class", &revocable)
        })
        .await;
    eprintln!("BerthRetainedWorkloads firing: {alerts:?}");
    drop(second);
    drop(prometheus);
}
