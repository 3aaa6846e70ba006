//! `berth plan-grants` on the real cluster: a plan for every change kind
//! (add, remove, change class, change handler, class missing, handler
//! absent on some nodes, invalid file), its exit codes and JSON, and then
//! the check that matters: restarted with the planned file, the agent
//! decides for every Runtime exactly what the plan said.

use std::path::Path;
use std::time::Duration;

use berth_shared::api::Runtime;
use berth_tests::harness::{TestNamespace, wait_for, wait_for_value};
use berth_tests::localcluster::nodes::set_handlers;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::ListParams;
use serde_json::{Value, json};

use crate::agent_support::{
    Agent, AgentOpts, binding_for_service, create_class, create_runtime, setup, wait_condition,
    write_grants,
};

const WAIT: Duration = Duration::from_secs(120);

/// Runs `berth -n NS --agent-lease NS/agent-NS plan-grants FILE ARGS…`:
/// (exit code, stdout, stderr).
pub async fn plan_grants(ns: &str, file: &Path, args: &[&str]) -> (i32, String, String) {
    let lease = format!("{ns}/agent-{ns}");
    let file = file.display().to_string();
    let mut argv = vec!["-n", ns, "--agent-lease", &lease, "plan-grants", &file];
    argv.extend_from_slice(args);
    crate::support::berth::run(None, &argv).await
}

/// The JSON plan of `file`, asserting its exit code.
pub async fn plan_json(ns: &str, file: &Path, code: i32) -> Value {
    let (got, out, err) = plan_grants(ns, file, &["-o", "json"]).await;
    assert_eq!(got, code, "exit code; stdout:\n{out}\nstderr:\n{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("plan-grants -o json: {e}\n{out}"))
}

fn runtime_plan<'a>(plan: &'a Value, name: &str) -> &'a Value {
    plan["runtimes"]
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["name"] == name))
        .unwrap_or_else(|| panic!("no plan for Runtime {name}: {plan:#}"))
}

/// The Ready nodes, sorted by name.
async fn ready_nodes(client: &kube::Client) -> Vec<Node> {
    let mut nodes: Vec<Node> = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("nodes")
        .items
        .into_iter()
        .filter(|n| {
            n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .collect();
    nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    nodes
}

fn handlers_of(n: &Node) -> Vec<String> {
    n.status
        .as_ref()
        .and_then(|s| s.runtime_handlers.as_ref())
        .map(|hs| hs.iter().filter_map(|h| h.name.clone()).collect())
        .unwrap_or_default()
}

/// Adds `handler` to the first Ready node's list only; returns the names
/// of the Ready nodes that do not report it.
async fn handler_on_one_node(ns: &TestNamespace, handler: &str) -> Vec<String> {
    let nodes = ready_nodes(&ns.client).await;
    assert!(nodes.len() >= 2, "needs two Ready nodes");
    let first = nodes[0].metadata.name.clone().unwrap_or_default();
    let mut hs = handlers_of(&nodes[0]);
    hs.push(handler.to_string());
    set_handlers(&ns.client, &first, &hs)
        .await
        .expect("set handlers");
    let api: Api<Node> = Api::all(ns.client.clone());
    wait_for("node reports the added handler", WAIT, || {
        let (api, first, handler) = (api.clone(), first.clone(), handler.to_string());
        async move {
            api.get(&first)
                .await
                .is_ok_and(|n| handlers_of(&n).contains(&handler))
        }
    })
    .await;
    nodes[1..]
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect()
}

/// Waits until every Runtime of `plan` is in the state, on the class, its
/// plan predicted.
async fn ends_as_planned(ns: &TestNamespace, plan: &Value) {
    for r in plan["runtimes"].as_array().expect("runtimes") {
        let name = r["name"].as_str().expect("name").to_string();
        let want = (
            r["after"]["state"].as_str().unwrap_or_default().to_string(),
            r["after"]["runtimeClass"].as_str().map(str::to_string),
        );
        wait_for_value(&format!("{name} as planned {want:?}"), WAIT, || {
            let (name, want) = (name.clone(), want.clone());
            async move { profile(ns, &name).await.filter(|p| *p == want) }
        })
        .await;
    }
}

async fn profile(ns: &TestNamespace, name: &str) -> Option<(String, Option<String>)> {
    let rt = Api::<Runtime>::namespaced(ns.client.clone(), &ns.name)
        .get(name)
        .await
        .ok()?;
    let p = rt.status?.profile?;
    Some((p.state.as_str().to_string(), p.class))
}

#[tokio::test]
async fn plan_grants_predicts_every_change_kind_and_the_restarted_agent_agrees() {
    let (ns, bounded) = setup("plan").await;
    let n = &ns.name;
    // A second class on a handler every node reports, and one whose handler
    // only one node reports.
    let alt = format!("{n}-alt");
    create_class(&ns.client, &alt, "runc").await;
    let partial_handler = format!("partial-{n}");
    let partial = format!("{n}-partial");
    create_class(&ns.client, &partial, &partial_handler).await;
    let lacking = handler_on_one_node(&ns, &partial_handler).await;

    let alias = |s: &str| format!("{n}-{s}");
    let bind =
        |s: &str, class: &str, handler: &str| binding_for_service(&alias(s), class, handler, s);
    let current = write_grants(&[
        bind("keep", &bounded, "bounded-runc"),
        bind("gone", &bounded, "bounded-runc"),
        bind("move", &bounded, "bounded-runc"),
        bind("hmm", &bounded, "bounded-runc"),
        bind("lost", &bounded, "bounded-runc"),
    ]);
    let mut agent = Agent::start(AgentOpts::new(n, Some(&current))).await;
    for s in ["keep", "gone", "move", "hmm", "lost", "newbie", "stall"] {
        create_runtime(
            &ns,
            s,
            json!({"service": s, "replicas": 1, "runtimeProfile": alias(s)}),
        )
        .await;
    }
    for s in ["keep", "gone", "move", "hmm", "lost"] {
        wait_condition(&ns, s, "Ready", "True", None).await;
    }
    for s in ["newbie", "stall"] {
        wait_condition(&ns, s, "Blocked", "True", Some("NotGranted")).await;
    }
    // The console reads the loaded bindings from the published grants.
    let grants: Api<berth_shared::api::RuntimeGrant> = Api::all(ns.client.clone());
    wait_for("five RuntimeGrants published", WAIT, || {
        let grants = grants.clone();
        let label = format!("berth.dev/published-by=agent-{n}");
        async move {
            grants
                .list(&ListParams::default().labels(&label))
                .await
                .is_ok_and(|l| l.items.len() == 5)
        }
    })
    .await;

    // The same file: no change, exit 0.
    let same = plan_json(n, &current, 0).await;
    assert_eq!(same["outcome"], "NoChange", "{same:#}");
    assert_eq!(same["runtimes"], json!([]));

    // Only an addition for a waiting Runtime: safe, exit 2.
    let add_only = write_grants(&[
        bind("keep", &bounded, "bounded-runc"),
        bind("gone", &bounded, "bounded-runc"),
        bind("move", &bounded, "bounded-runc"),
        bind("hmm", &bounded, "bounded-runc"),
        bind("lost", &bounded, "bounded-runc"),
        bind("newbie", &bounded, "bounded-runc"),
    ]);
    let safe = plan_json(n, &add_only, 2).await;
    assert_eq!(safe["outcome"], "Safe", "{safe:#}");
    assert_eq!(runtime_plan(&safe, "newbie")["effect"], "Grant");

    // An invalid file: exit 1, the loader's rules, nothing planned.
    let invalid = write_grants(&["[[bindings]]\nname = \"Bad Name\"\n".to_string()]);
    let bad = plan_json(n, &invalid, 1).await;
    assert_eq!(bad["outcome"], "Invalid");
    let rules: Vec<&str> = bad["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter_map(|p| p["rule"].as_str())
        .collect();
    assert!(rules.contains(&"name-format"), "{bad:#}");
    assert!(rules.contains(&"key-missing"), "{bad:#}");
    let (code, table, _) = plan_grants(n, &invalid, &[]).await;
    assert_eq!(code, 1);
    assert!(table.contains("[name-format] file refused"), "{table}");

    // Every kind at once: keep, remove, change class, change handler,
    // missing class, add, add on a handler absent from some nodes.
    let next = write_grants(&[
        bind("keep", &bounded, "bounded-runc"),
        bind("move", &alt, "runc"),
        bind("hmm", &bounded, "other-runc"),
        bind("lost", &format!("{n}-nope"), "bounded-runc"),
        bind("newbie", &bounded, "bounded-runc"),
        bind("stall", &partial, &partial_handler),
    ]);
    let plan = plan_json(n, &next, 3).await;
    assert_eq!(plan["outcome"], "Disruptive", "{plan:#}");
    let expect = [
        ("gone", "Revoke", "Revoked"),
        ("lost", "Refuse", "ClassMissing"),
        ("hmm", "Refuse", "HandlerMismatch"),
        ("move", "Roll", "Granted"),
        ("newbie", "Grant", "Granted"),
        ("stall", "Grant", "Granted"),
    ];
    for (name, effect, state) in expect {
        let r = runtime_plan(&plan, name);
        assert_eq!(
            (r["effect"].as_str(), r["after"]["state"].as_str()),
            (Some(effect), Some(state)),
            "{name}: {r:#}"
        );
    }
    assert!(
        plan["runtimes"]
            .as_array()
            .expect("runtimes")
            .iter()
            .all(|r| r["name"] != "keep"),
        "an unchanged Runtime is not listed"
    );
    // Revocations first.
    assert_eq!(plan["runtimes"][0]["name"], "gone", "{plan:#}");
    assert_eq!(runtime_plan(&plan, "move")["after"]["runtimeClass"], alt);
    let stall = runtime_plan(&plan, "stall");
    let mut stalled: Vec<String> = stall["stallNodes"]
        .as_array()
        .expect("stallNodes")
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    stalled.sort();
    assert_eq!(stalled, lacking, "{stall:#}");
    assert_eq!(runtime_plan(&plan, "newbie")["stallNodes"], json!([]));
    // Bindings, field by field.
    let changed = |name: &str| -> Vec<(String, String, String)> {
        plan["bindings"]["changed"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == alias(name)))
            .and_then(|c| c["fields"].as_array())
            .map(|fs| {
                fs.iter()
                    .map(|f| {
                        let s = |k: &str| f[k].as_str().unwrap_or_default().to_string();
                        (s("field"), s("from"), s("to"))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(
        changed("move"),
        [
            ("runtime_class".into(), bounded.clone(), alt.clone()),
            ("handler".into(), "bounded-runc".into(), "runc".into()),
        ]
    );
    assert_eq!(
        changed("hmm"),
        [("handler".into(), "bounded-runc".into(), "other-runc".into())]
    );
    assert_eq!(plan["bindings"]["removed"][0]["name"], alias("gone"));
    let added: Vec<&str> = plan["bindings"]["added"]
        .as_array()
        .expect("added")
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    assert_eq!(added, [alias("newbie"), alias("stall")]);
    // Classes: the partial handler is newly required and missing on nodes;
    // the missing class is a reconcile problem.
    let class = |name: &str| {
        plan["classes"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no class {name}: {plan:#}"))
    };
    assert_eq!(class(&partial)["effect"], "HandlerRequired");
    assert_eq!(
        class(&partial)["missingNodes"].as_array().map(Vec::len),
        Some(lacking.len())
    );
    assert_eq!(class(&alt)["effect"], "HandlerRequired");
    let problems: Vec<(String, String)> = plan["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| {
            (
                p["binding"].as_str().unwrap_or_default().to_string(),
                p["rule"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert!(
        problems.contains(&(alias("lost"), "ClassMissing".into())),
        "{problems:?}"
    );
    assert!(
        problems.contains(&(alias("hmm"), "HandlerMismatch".into())),
        "{problems:?}"
    );
    // YAML is the same document; the table names every Runtime.
    let (code, yaml, _) = plan_grants(n, &next, &["-o", "yaml"]).await;
    assert_eq!(code, 3);
    let from_yaml: Value = yaml_serde::from_str(&yaml).expect("yaml");
    assert_eq!(from_yaml, plan);
    let (code, table, _) = plan_grants(n, &next, &[]).await;
    assert_eq!(code, 3);
    for s in ["gone", "lost", "hmm", "move", "newbie", "stall"] {
        assert!(
            table.contains(&format!("{n}/{s} ")),
            "{s} missing in:\n{table}"
        );
    }
    assert!(table.contains("REVOKE"), "{table}");

    // Restart the agent with the planned file: every Runtime ends in the
    // state the plan predicted, with the predicted class.
    agent.kill();
    let mut opts = AgentOpts::new(n, Some(&next));
    opts.identity = format!("{n}-b");
    let _agent = Agent::start(opts).await;
    ends_as_planned(&ns, &plan).await;
    // The unchanged Runtime stayed granted, and the plan of the same file
    // is now empty.
    wait_condition(&ns, "keep", "Ready", "True", None).await;
    wait_for("the agent published the planned bindings", WAIT, || {
        let next = next.clone();
        let n = n.clone();
        async move { plan_grants(&n, &next, &[]).await.0 == 0 }
    })
    .await;

    let nodes = ready_nodes(&ns.client).await;
    let first = nodes[0].metadata.name.clone().unwrap_or_default();
    let hs: Vec<String> = handlers_of(&nodes[0])
        .into_iter()
        .filter(|h| *h != partial_handler)
        .collect();
    let _ = set_handlers(&ns.client, &first, &hs).await;
}

/// The agent's PendingGrantsFile, once it has the wanted verdict.
async fn wait_pending(ns: &TestNamespace, verdict: &str) -> berth_shared::api::PendingGrantsFile {
    let api: Api<berth_shared::api::PendingGrantsFile> = Api::all(ns.client.clone());
    let name = format!("agent-{}", ns.name);
    wait_for_value(&format!("PendingGrantsFile {verdict}"), WAIT, || {
        let (api, name) = (api.clone(), name.clone());
        async move {
            api.get_opt(&name)
                .await
                .ok()
                .flatten()
                .filter(|p| format!("{:?}", p.spec.verdict) == verdict)
        }
    })
    .await
}

/// Overwrites the grants file in place (mode and owner kept), the way an
/// operator edits the agent's copy.
fn rewrite(path: &Path, bindings: &[String]) {
    let mut text = String::from("schema_version = 1\n");
    for b in bindings {
        text.push_str(b);
    }
    std::fs::write(path, text).expect("rewrite grants");
}

#[tokio::test]
async fn pending_file_is_published_planned_and_then_applied_by_the_restart() {
    let (ns, bounded) = setup("plan-pend").await;
    let n = &ns.name;
    let alias = |s: &str| format!("{n}-{s}");
    let bind = |s: &str| binding_for_service(&alias(s), &bounded, "bounded-runc", s);
    let file = write_grants(&[bind("keep"), bind("gone")]);
    let mut agent = Agent::start(AgentOpts::new(n, Some(&file))).await;
    for s in ["keep", "gone", "newbie"] {
        create_runtime(
            &ns,
            s,
            json!({"service": s, "replicas": 1, "runtimeProfile": alias(s)}),
        )
        .await;
    }
    wait_condition(&ns, "keep", "Ready", "True", None).await;
    wait_condition(&ns, "gone", "Ready", "True", None).await;
    wait_condition(&ns, "newbie", "Blocked", "True", Some("NotGranted")).await;
    let published = |count: usize| {
        let grants: Api<berth_shared::api::RuntimeGrant> = Api::all(ns.client.clone());
        let label = format!("berth.dev/published-by=agent-{n}");
        async move {
            wait_for("RuntimeGrants published", WAIT, || {
                let (grants, label) = (grants.clone(), label.clone());
                async move {
                    grants
                        .list(&ListParams::default().labels(&label))
                        .await
                        .is_ok_and(|l| l.items.len() == count)
                }
            })
            .await;
        }
    };
    published(2).await;

    // Nothing pending: the plan of the pending file is empty.
    let (code, out, err) = plan_grants_pending(n, &["-o", "json"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let pending_api: Api<berth_shared::api::PendingGrantsFile> = Api::all(ns.client.clone());
    assert!(
        pending_api
            .get_opt(&format!("agent-{n}"))
            .await
            .expect("get")
            .is_none(),
        "no PendingGrantsFile while the file is the loaded one"
    );

    // An invalid edit: published as Invalid, planned as exit 1.
    rewrite(&file, &["[[bindings]]\nname = \"x\"\n".to_string()]);
    let invalid = wait_pending(&ns, "Invalid").await;
    assert!(
        invalid
            .spec
            .problems
            .iter()
            .any(|p| p.rule == "key-missing"),
        "{:?}",
        invalid.spec.problems
    );
    let (code, out, _) = plan_grants_pending(n, &[]).await;
    assert_eq!(code, 1, "{out}");

    // A file that breaks a file-safety rule (world-writable): Unreadable,
    // the rule named, planned as exit 1.
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let unreadable = wait_pending(&ns, "Unreadable").await;
    assert!(!unreadable.spec.problems.is_empty());
    let (code, out, _) = plan_grants_pending(n, &[]).await;
    assert_eq!(code, 1, "{out}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");

    // A valid edit: drop "gone", add "newbie". Published with its bindings,
    // planned in the cluster without the file.
    rewrite(&file, &[bind("keep"), bind("newbie")]);
    let valid = wait_pending(&ns, "Valid").await;
    let names: Vec<&str> = valid
        .spec
        .bindings
        .iter()
        .map(|b| b.name.as_str())
        .collect();
    assert_eq!(names, [alias("keep"), alias("newbie")]);
    let (code, out, err) = plan_grants_pending(n, &["-o", "json"]).await;
    assert_eq!(code, 3, "{out}\n{err}");
    let plan: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(plan["source"], format!("PendingGrantsFile/agent-{n}"));
    assert_eq!(runtime_plan(&plan, "gone")["effect"], "Revoke");
    assert_eq!(runtime_plan(&plan, "newbie")["effect"], "Grant");
    // The console's Plan view shows it, live from its own watches.
    let shown = console_plan_text(&ns, |t| t.contains("REVOKE") && t.contains("GRANT")).await;
    assert!(
        shown.contains(&format!("{n}/gone [{}]", alias("gone"))),
        "{shown}"
    );
    assert!(
        shown.find("REVOKE") < shown.find("GRANT"),
        "revocations first:\n{shown}"
    );
    // The same content planned from the file gives the same plan.
    let from_file = plan_json(n, &file, 3).await;
    assert_eq!(from_file["runtimes"], plan["runtimes"]);
    assert_eq!(from_file["bindings"], plan["bindings"]);
    // At rest the agent does not rewrite it.
    let rv = valid.metadata.resource_version.clone();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let again = pending_api
        .get(&format!("agent-{n}"))
        .await
        .expect("still pending");
    assert_eq!(again.metadata.resource_version, rv, "rewritten at rest");

    // Restart: the cluster ends as planned, and the pending file is gone.
    agent.kill();
    let mut opts = AgentOpts::new(n, Some(&file));
    opts.identity = format!("{n}-b");
    let _agent = Agent::start(opts).await;
    ends_as_planned(&ns, &plan).await;
    wait_for("PendingGrantsFile deleted after the restart", WAIT, || {
        let (api, name) = (pending_api.clone(), format!("agent-{n}"));
        async move { matches!(api.get_opt(&name).await, Ok(None)) }
    })
    .await;
    published(2).await;
    let (code, out, err) = plan_grants_pending(n, &[]).await;
    assert_eq!(code, 0, "{out}\n{err}");
}

/// `berth plan-grants --pending` for the agent of namespace `ns`.
async fn plan_grants_pending(ns: &str, args: &[&str]) -> (i32, String, String) {
    let lease = format!("{ns}/agent-{ns}");
    let mut argv = vec![
        "-n",
        ns,
        "--agent-lease",
        &lease,
        "plan-grants",
        "--pending",
    ];
    argv.extend_from_slice(args);
    crate::support::berth::run(None, &argv).await
}

/// The text of the console's Plan view, its model fed by its own watchers
/// on the real cluster, once `done` holds (panics after the wait).
async fn console_plan_text(ns: &TestNamespace, done: impl Fn(&str) -> bool) -> String {
    use berth_console::model::{App, ClusterId, Scope, Screen, update};
    use berth_console::watch::Watchers;
    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    let scope = Scope::Namespace(ns.name.clone());
    let lease = (ns.name.clone(), format!("agent-{}", ns.name));
    let mut app = App::new("test", scope.clone(), k8s_openapi::jiff::Timestamp::now());
    app.session.agent_lease = lease.clone();
    let effects = app.open(Screen::Plan(ClusterId::new("test")));
    assert!(!effects.is_empty(), "the Plan view asks for its watches");
    let mut watchers = Watchers::new(
        ns.client.clone(),
        berth_console::watch::WatchStarts::default(),
        scope,
        lease,
        app.origin_of(0),
        tx,
    );
    watchers.ensure(&Screen::Plan(ClusterId::new("test")).kinds());
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        app.now = k8s_openapi::jiff::Timestamp::now();
        app.refresh();
        let text: String = berth_console::views::plan::lines(&app)
            .iter()
            .map(|l| l.to_string() + "\n")
            .collect();
        if done(&text) {
            watchers.stop();
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the Plan view never showed the plan; last:\n{text}"
        );
        if let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(250), rx.recv()).await {
            update(&mut app, m);
            while let Ok(m) = rx.try_recv() {
                update(&mut app, m);
            }
        }
    }
}
