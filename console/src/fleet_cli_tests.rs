//! The CLI over several contexts without a cluster: parsing the fleet,
//! every printed item carrying its cluster, the exit codes over the
//! union, and the findings across clusters read from real stores.

use crate::check::FailOn;
use crate::fixtures;
use crate::fleet_cli::{Fleet, check_exit_code, plan_exit_code, render_check, render_plans};
use crate::get::{Format, What, format_fleet};
use crate::model::Object;
use crate::rows::findings::{ClusterInputs, fleet_findings};
use crate::store::{ClusterId, Store};
use berth_shared::findings::FindingKind;

fn store_of(objs: Vec<Object>) -> Store {
    let mut s = Store::default();
    for o in objs {
        s.apply(o);
    }
    s
}

fn lease() -> (String, String) {
    ("berth-system".into(), "berth-agent".into())
}

#[test]
fn the_context_list_names_contexts_and_label_groups() {
    let f = Fleet::parse("prod-eu=prod, prod-us=prod,staging, dev=dev").expect("parse");
    assert_eq!(f.contexts, ["prod-eu", "prod-us", "staging", "dev"]);
    // A label of one context declares nothing.
    assert_eq!(
        f.same_grants,
        [vec!["prod-eu".to_string(), "prod-us".into()]]
    );
    assert!(Fleet::parse("a,b,a").is_err(), "a context twice");
    assert!(Fleet::parse("a,=x").is_err(), "an empty name");
    // Context names keep their colons, slashes and at signs.
    let eks = "arn:aws:eks:eu-west-1:1:cluster/prod";
    let f = Fleet::parse(&format!("{eks},admin@kind")).expect("parse");
    assert_eq!(f.contexts, [eks, "admin@kind"]);
}

#[test]
fn get_over_two_clusters_names_the_cluster_of_every_row_and_item() {
    let (a, b) = (store_of(fixtures::objects()), store_of(fixtures::objects()));
    let stores = [
        (ClusterId::new("prod-eu"), &a),
        (ClusterId::new("prod-us"), &b),
    ];
    let t = format_fleet(What::Runtimes, &stores, fixtures::now(), Format::Table);
    let mut lines = t.lines();
    assert!(
        lines
            .next()
            .is_some_and(|h| h.starts_with("CLUSTER   NAMESPACE   NAME")),
        "{t}"
    );
    assert_eq!(
        t.lines().filter(|l| l.starts_with("prod-us ")).count(),
        3,
        "{t}"
    );
    let j = format_fleet(What::Runtimes, &stores, fixtures::now(), Format::Json);
    let v: serde_json::Value = serde_json::from_str(&j).expect("json");
    let items = v["items"].as_array().expect("items");
    assert_eq!(items.len(), 6);
    assert!(
        items
            .iter()
            .all(|i| i["cluster"] == "prod-eu" || i["cluster"] == "prod-us")
    );
    let y = format_fleet(What::Runtimes, &stores, fixtures::now(), Format::Yaml);
    let vy: serde_json::Value = yaml_serde::from_str(&y).expect("yaml");
    assert_eq!(v, vy);
}

#[test]
fn check_over_a_fleet_finds_what_no_cluster_alone_shows() {
    // prod-us's Runtime demo/web is blocked where prod-eu's is granted, and
    // its grants came from another file.
    let mut us = fixtures::objects();
    for o in &mut us {
        match o {
            Object::Runtime(rt) if rt.metadata.name.as_deref() == Some("web") => {
                if let Some(p) = rt.status.as_mut().and_then(|s| s.profile.as_mut()) {
                    p.state = berth_shared::api::ProfileState::Revoked;
                }
            }
            Object::RuntimeGrant(g) => {
                if let Some(src) = g.status.as_mut().and_then(|s| s.source.as_mut()) {
                    src.sha256 = Some("cd".repeat(32));
                }
            }
            _ => {}
        }
    }
    let (a, b) = (store_of(fixtures::objects()), store_of(us));
    let (eu, us) = (ClusterId::new("prod-eu"), ClusterId::new("prod-us"));
    let inputs = [
        ClusterInputs {
            cluster: eu.clone(),
            store: &a,
            refused: &[],
        },
        ClusterInputs {
            cluster: us.clone(),
            store: &b,
            refused: &[],
        },
    ];
    let now = fixtures::now();
    let kinds_of = |f: &[(Vec<ClusterId>, berth_shared::findings::Finding)]| -> Vec<FindingKind> {
        f.iter()
            .filter(|(cs, _)| cs.len() > 1)
            .map(|(_, f)| f.kind)
            .collect()
    };
    let undeclared = fleet_findings(&inputs, &[], &lease(), now, &[]);
    assert_eq!(kinds_of(&undeclared), [FindingKind::FleetIdentitySplit]);
    let declared = fleet_findings(&inputs, &[], &lease(), now, &[vec![eu.clone(), us.clone()]]);
    assert_eq!(
        kinds_of(&declared),
        [
            FindingKind::FleetGrantsFileDiffers,
            FindingKind::FleetIdentitySplit
        ]
    );
    // A cluster not read: its own finding, an error.
    let unread = [(ClusterId::new("prod-ap"), "connection refused".to_string())];
    let f = fleet_findings(&inputs, &unread, &lease(), now, &[]);
    let (cs, unreachable) = f
        .iter()
        .find(|(_, f)| f.kind == FindingKind::ClusterUnreachable)
        .expect("cluster-unreachable");
    assert_eq!(cs, &[ClusterId::new("prod-ap")]);
    assert_eq!(
        unreachable.message,
        "cluster prod-ap could not be read: connection refused"
    );
    assert_eq!(check_exit_code(&f, FailOn::Error), 3);
    assert_eq!(check_exit_code(&f, FailOn::Never), 0);
    // Every item says its cluster(s), in the table and in JSON.
    let j: serde_json::Value = serde_json::from_str(&render_check(&f, Format::Json)).expect("json");
    let items = j["items"].as_array().expect("items");
    assert!(
        items
            .iter()
            .all(|i| i["cluster"].is_string() && i["clusters"].is_array())
    );
    assert!(
        items
            .iter()
            .any(|i| i["kind"] == "fleet-identity-split" && i["cluster"] == "prod-eu,prod-us")
    );
    let t = render_check(&f, Format::Table);
    assert!(t.starts_with("CLUSTER"), "{t}");
    assert!(t.contains("prod-ap"), "{t}");
}

#[test]
fn plan_exit_codes_over_clusters() {
    let plan = |code: i32| {
        let mut p = crate::rows::plan::plan_from_store(
            &Store::default(),
            "berth-agent",
            &berth_shared::plan::Candidate {
                source: "f.toml".into(),
                sha256: None,
                bindings: Ok(Vec::new()),
            },
        );
        p.exit_code = code;
        p
    };
    let c = |n: &str| ClusterId::new(n);
    let ok = |n: &str, code| (c(n), Ok(plan(code)));
    let failed = (
        c("x"),
        Err::<berth_shared::plan::Plan, _>("down".to_string()),
    );
    assert_eq!(plan_exit_code(&[ok("a", 0), ok("b", 0)]), 0);
    assert_eq!(plan_exit_code(&[ok("a", 0), ok("b", 2)]), 2);
    assert_eq!(plan_exit_code(&[ok("a", 2), failed.clone()]), 1);
    assert_eq!(plan_exit_code(&[ok("a", 3), failed.clone()]), 3);
    let plans = [ok("a", 2), failed];
    let t = render_plans(&plans, Format::Table);
    assert!(
        t.contains("=== cluster a ===") && t.contains("=== cluster x ===\ncannot plan: down"),
        "{t}"
    );
    let j: serde_json::Value =
        serde_json::from_str(&render_plans(&plans, Format::Json)).expect("json");
    assert_eq!(j["kind"], "PlanList");
    assert_eq!(j["exitCode"], 1);
    assert_eq!(j["items"][0]["cluster"], "a");
    assert_eq!(j["items"][1]["error"], "down");
}
