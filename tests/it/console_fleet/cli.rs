//! `get`, `check` and `plan-grants` over both clusters: each item and
//! finding names its cluster; a cluster that cannot be reached is
//! reported, and fatal only when every cluster is.

use std::collections::BTreeMap;
use std::path::Path;

use super::{SERIAL, berth, json_of, world};

#[tokio::test]
async fn the_cli_reads_each_cluster_and_finds_what_differs() {
    let _one = SERIAL.lock().await;
    let w = world("fleet-cli").await;
    let (n, ab) = (w.a.name.clone(), "fleet-a,fleet-b");

    // get: every item names its cluster.
    let (code, out, err) = berth(&w, &["--context", ab, "get", "runtimes", "-o", "json"]).await;
    assert_eq!(code, 0, "{err}");
    let items: Vec<(String, String)> = json_of(&out)["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            (
                i["cluster"].as_str().unwrap_or_default().to_string(),
                i["name"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    for c in ["fleet-a", "fleet-b"] {
        for name in ["web", "api"] {
            assert!(items.contains(&(c.into(), name.into())), "{items:?}");
        }
    }
    let (code, out, _) = berth(&w, &["--context", ab, "get", "runtimes"]).await;
    assert_eq!(code, 0);
    assert!(out.starts_with("CLUSTER"), "{out}");

    // check: the fleet findings, each naming both clusters.
    let fleet_kinds = |out: &str| -> BTreeMap<String, (String, String)> {
        json_of(out)["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter(|i| i["kind"].as_str().is_some_and(|k| k.starts_with("fleet-")))
            .map(|i| {
                (
                    i["kind"].as_str().unwrap_or_default().to_string(),
                    (
                        i["severity"].as_str().unwrap_or_default().to_string(),
                        i["cluster"].as_str().unwrap_or_default().to_string(),
                    ),
                )
            })
            .collect()
    };
    let (_, out, err) = berth(
        &w,
        &["--context", ab, "check", "-o", "json", "--fail-on", "never"],
    )
    .await;
    let found = fleet_kinds(&out);
    let both = "fleet-a,fleet-b".to_string();
    assert_eq!(
        found,
        BTreeMap::from([
            (
                "fleet-grant-differs".to_string(),
                ("warning".to_string(), both.clone())
            ),
            (
                "fleet-handler-uneven".to_string(),
                ("warning".to_string(), both.clone())
            ),
            (
                "fleet-identity-split".to_string(),
                ("warning".to_string(), both.clone())
            ),
        ]),
        "{out}\n{err}"
    );
    // Declared to run one grants file: the digests differ, an error.
    let (code, out, _) = berth(
        &w,
        &[
            "--context",
            ab,
            "--fleet-grants-same",
            ab,
            "check",
            "-o",
            "json",
        ],
    )
    .await;
    let found = fleet_kinds(&out);
    assert_eq!(found["fleet-grants-file-differs"].0, "error", "{out}");
    assert_eq!(found["fleet-grant-differs"].0, "error", "{out}");
    assert_eq!(code, 3);
    // A consistent fleet (one cluster through two contexts): none.
    let (_, out, _) = berth(
        &w,
        &[
            "--context",
            "fleet-a=same,fleet-a2=same",
            "check",
            "-o",
            "json",
            "--fail-on",
            "never",
        ],
    )
    .await;
    assert!(fleet_kinds(&out).is_empty(), "{out}");

    // plan-grants: a's file is what a runs, and changes b.
    let file = w.grants_a.display().to_string();
    let (code, out, err) = berth(&w, &["--context", ab, "plan-grants", &file]).await;
    let (in_a, in_b) = out
        .split_once("=== cluster fleet-b ===")
        .expect("b's section");
    assert!(
        in_a.contains("=== cluster fleet-a ===") && in_a.contains(": NoChange (exit 0)"),
        "{out}"
    );
    assert!(in_b.contains(&format!("+ {n}-api")), "{out}");
    assert!(in_b.contains(&format!("~ {n}-batch")), "{out}");
    assert!(matches!(code, 2 | 3), "{code}: {err}");
}

#[tokio::test]
async fn a_cluster_that_cannot_be_reached_is_reported_and_fatal_only_alone() {
    let _one = SERIAL.lock().await;
    let w = world("fleet-down").await;
    // Two contexts on a closed port, beside a.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let kubeconfig = w.dir.join("kubeconfig-down");
    add_down_contexts(&w.kubeconfig, &kubeconfig, closed);
    let run = |args: Vec<String>| {
        let (kubeconfig, lease, n) = (kubeconfig.clone(), w.lease.clone(), w.a.name.clone());
        async move {
            let mut all = vec!["-n".to_string(), n, "--agent-lease".into(), lease];
            all.extend(args);
            let refs: Vec<&str> = all.iter().map(String::as_str).collect();
            crate::support::berth::run(Some(&kubeconfig), &refs).await
        }
    };
    let args = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
    let (code, out, err) = run(args("--context fleet-a,fleet-down get runtimes -o json")).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning: cluster fleet-down:"), "{err}");
    let items = json_of(&out)["items"].as_array().cloned().expect("items");
    assert!(
        !items.is_empty() && items.iter().all(|i| i["cluster"] == "fleet-a"),
        "{out}"
    );
    let (code, _, err) = run(args("--context fleet-down,fleet-down2 get runtimes")).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no cluster could be read"), "{err}");
    let (code, out, _) = run(args("--context fleet-a,fleet-down check -o json")).await;
    assert_eq!(code, 3);
    assert!(
        json_of(&out)["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|i| i["kind"] == "cluster-unreachable" && i["cluster"] == "fleet-down"),
        "{out}"
    );
}

/// `from` plus `fleet-down` and `fleet-down2`: a's credentials, a server
/// on a closed port.
fn add_down_contexts(from: &Path, to: &Path, port: u16) {
    let mut kc = kube::config::Kubeconfig::read_from(from).expect("kubeconfig");
    let base = kc
        .contexts
        .iter()
        .find(|c| c.name == "fleet-a")
        .cloned()
        .expect("fleet-a");
    let cluster = kc
        .clusters
        .iter()
        .find(|c| c.name == "fleet-a")
        .cloned()
        .expect("cluster");
    for name in ["fleet-down", "fleet-down2"] {
        let mut c = cluster.clone();
        c.name = name.into();
        if let Some(inner) = c.cluster.as_mut() {
            inner.server = Some(format!("https://127.0.0.1:{port}"));
        }
        let mut ctx = base.clone();
        ctx.name = name.into();
        if let Some(inner) = ctx.context.as_mut() {
            inner.cluster = name.into();
        }
        kc.clusters.push(c);
        kc.contexts.push(ctx);
    }
    std::fs::write(to, yaml_serde::to_string(&kc).expect("yaml")).expect("write");
}
