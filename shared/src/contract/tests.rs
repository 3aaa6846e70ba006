//! One check per row of the contract table (`table.rs`), played on the
//! fullest render (`render::examples`, "everything"), plus the docs page
//! kept equal to the table.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::*;
use crate::render::examples::examples;
use crate::render::render;

/// Every rendered object of every example, as (kind, JSON).
fn rendered(example: &str) -> Vec<(Kind, Value)> {
    let e = examples()
        .into_iter()
        .find(|e| e.name == example)
        .expect("example");
    let r = render(&e.runtime, &e.identity, &e.decision).expect("render");
    fn v<T: serde::Serialize>(o: &T) -> Value {
        serde_json::to_value(o).expect("json")
    }
    let mut out = vec![
        (Kind::ConfigMap, v(&r.config_map)),
        (Kind::ServiceAccount, v(&r.service_account)),
        (Kind::Service, v(&r.service)),
        (Kind::Deployment, v(&r.deployment)),
        (Kind::PodDisruptionBudget, v(&r.pod_disruption_budget)),
    ];
    out.extend(r.network_policy.iter().map(|o| (Kind::NetworkPolicy, v(o))));
    out.extend(
        r.horizontal_pod_autoscaler
            .iter()
            .map(|o| (Kind::HorizontalPodAutoscaler, v(o))),
    );
    out.extend(r.jobs.iter().map(|o| (Kind::Job, v(o))));
    out.extend(r.cron_jobs.iter().map(|o| (Kind::CronJob, v(o))));
    out
}

fn everything(kind: Kind) -> Value {
    rendered("everything")
        .into_iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, v)| v)
        .expect("kind rendered by the everything example")
}

/// RFC 7386 JSON merge patch (what the agent sends).
fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = json!({});
            }
            let t = target.as_object_mut().expect("object");
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// A strategic merge patch, roughly (what an intruder sends with
/// `kubectl patch`): like a merge patch, but lists of named entries merge
/// entry by entry.
fn strategic(target: &mut Value, patch: &Value) {
    match (target.as_object_mut(), patch) {
        (Some(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                    continue;
                }
                let slot = t.entry(k.clone()).or_insert(Value::Null);
                let named = v
                    .as_array()
                    .is_some_and(|e| e.iter().all(|e| e.get("name").is_some()));
                if let (true, Some(list), Some(entries)) =
                    (named, slot.as_array_mut(), v.as_array())
                {
                    for e in entries {
                        match list.iter_mut().find(|l| l.get("name") == e.get("name")) {
                            Some(l) => strategic(l, e),
                            None => list.push(e.clone()),
                        }
                    }
                } else if slot.is_object() && v.is_object() {
                    strategic(slot, v);
                } else {
                    *slot = v.clone();
                }
            }
        }
        _ => *target = patch.clone(),
    }
}

/// `patch` nested under `pointer`.
fn under(pointer: &str, patch: Value) -> Value {
    keys(pointer).into_iter().rev().fold(patch, |inner, k| {
        let mut m = serde_json::Map::new();
        m.insert(k, inner);
        Value::Object(m)
    })
}

fn kinds_of(scope: Scope) -> Vec<Kind> {
    match scope {
        Scope::Kind(k) => vec![k],
        Scope::PodTemplate => Kind::ALL
            .into_iter()
            .filter(|k| k.pod_template().is_some())
            .collect(),
        Scope::Every => Kind::ALL.to_vec(),
    }
}

fn shown(v: &[Violation]) -> Vec<String> {
    v.iter().map(ToString::to_string).collect()
}

#[test]
fn every_governed_row_removes_its_attack_in_one_patch() {
    for row in GOVERNED {
        let attack: Value = serde_json::from_str(row.attack).expect(row.attack);
        for kind in kinds_of(row.scope) {
            let desired = everything(kind);
            let patch = match (row.scope, kind.pod_template()) {
                (Scope::PodTemplate, Some(t)) => under(t, attack.clone()),
                _ => attack.clone(),
            };
            let mut live = desired.clone();
            strategic(&mut live, &patch);
            let found = violations(kind, &live, &desired);
            assert!(
                !found.is_empty() && found.iter().all(|v| v.rule == row.rule),
                "{kind:?} {}: the attack breaks rule {} only: {:?}",
                row.path,
                row.rule.as_str(),
                shown(&found)
            );
            let fix = correction(kind, &live, &desired, Some("u1"));
            assert_eq!(fix["metadata"]["uid"], "u1");
            merge(&mut live, &fix);
            assert!(
                violations(kind, &live, &desired).is_empty(),
                "{kind:?} {}: corrected in one patch {fix}",
                row.path
            );
            for root in roots(kind) {
                assert_eq!(live.pointer(&root), desired.pointer(&root), "{root}");
            }
        }
    }
}

/// `doc` with the parents of `keys` made (list entries get a name), so
/// a field can be set there.
fn make_parents(doc: &mut Value, keys: &[String]) {
    let mut at = doc;
    for (i, k) in keys.iter().enumerate() {
        let next_is_index = keys.get(i + 1).is_some_and(|n| n.parse::<usize>().is_ok());
        let fresh = || if next_is_index { json!([]) } else { json!({}) };
        at = match at {
            Value::Array(list) => {
                let index: usize = k.parse().expect("index");
                while list.len() <= index {
                    list.push(json!({"name": format!("t{}", list.len())}));
                }
                &mut list[index]
            }
            Value::Object(m) => m.entry(k.clone()).or_insert_with(fresh),
            other => panic!("cannot descend into {other} at {k}"),
        };
    }
}

/// The first concrete path of a pattern (`*` → 0, `{a,b}` → a).
fn concrete(path: &str) -> Vec<String> {
    keys(path)
        .into_iter()
        .map(|k| {
            if k == "*" {
                "0".to_string()
            } else if let Some(inner) = k.strip_prefix('{').and_then(|k| k.strip_suffix('}')) {
                inner.split(',').next().unwrap_or_default().to_string()
            } else {
                k
            }
        })
        .collect()
}

fn set(doc: &mut Value, keys: &[String], value: Value) {
    let (last, parents) = keys.split_last().expect("a path");
    make_parents(doc, parents);
    let pointer: String = parents
        .iter()
        .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
        .collect();
    let parent = doc.pointer_mut(&pointer).expect("parent");
    parent
        .as_object_mut()
        .expect("object")
        .insert(last.clone(), value);
}

fn remove(doc: &mut Value, keys: &[String]) {
    let (last, parents) = keys.split_last().expect("a path");
    let pointer: String = parents
        .iter()
        .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
        .collect();
    if let Some(Value::Object(m)) = doc.pointer_mut(&pointer) {
        m.remove(last);
    }
}

#[test]
fn every_tolerated_row_tolerates_its_value_and_refuses_others() {
    for row in TOLERATED {
        for kind in kinds_of(row.scope) {
            let path = match (row.scope, kind.pod_template()) {
                (Scope::PodTemplate, Some(t)) => format!("{t}{}", row.path),
                _ => row.path.to_string(),
            };
            let at = concrete(&path);
            let (_, parents) = at.split_last().expect("path");
            // A render that does not set the field.
            let mut desired = everything(kind);
            make_parents(&mut desired, parents);
            remove(&mut desired, &at);
            let example: Value = serde_json::from_str(row.example).expect(row.example);
            let mut live = desired.clone();
            set(&mut live, &at, example.clone());
            assert!(
                violations(kind, &live, &desired).is_empty(),
                "{kind:?} {path}: {example} is tolerated: {:?}",
                shown(&violations(kind, &live, &desired))
            );
            // A correction for something else keeps it.
            let mut attacked = live.clone();
            merge(
                &mut attacked,
                &under(&roots(kind)[0], json!({"x-foreign": 1})),
            );
            let fix = correction(kind, &attacked, &desired, None);
            merge(&mut attacked, &fix);
            assert!(violations(kind, &attacked, &desired).is_empty());
            let kept: String = at
                .iter()
                .map(|k| format!("/{}", k.replace('/', "~1")))
                .collect();
            assert_eq!(attacked.pointer(&kept), Some(&example), "{path} kept");
            if let Some(refused) = row.refused {
                let refused: Value = serde_json::from_str(refused).expect(refused);
                let mut live = desired.clone();
                set(&mut live, &at, refused.clone());
                assert!(
                    !violations(kind, &live, &desired).is_empty(),
                    "{kind:?} {path}: {refused} is refused"
                );
                let fix = correction(kind, &live, &desired, None);
                merge(&mut live, &fix);
                assert!(violations(kind, &live, &desired).is_empty(), "{path}");
            }
        }
    }
}

#[test]
fn ungoverned_rows_are_not_compared() {
    for (kind, desired) in rendered("everything") {
        let mut live = desired.clone();
        merge(
            &mut live,
            &json!({"metadata": {"labels": {"policy.example/checked": "true"},
                "annotations": {"mesh.example/inject": "false"}},
                "status": {"anything": 1}}),
        );
        assert!(violations(kind, &live, &desired).is_empty(), "{kind:?}");
    }
    // A Job's pod template: not governed (the apiserver refuses any change
    // to it), and no correction writes into it; its other fields are.
    let job = everything(Kind::Job);
    let mut live = job.clone();
    merge(
        &mut live,
        &json!({"spec": {"template": {"spec": {"hostNetwork": true}}}}),
    );
    assert!(violations(Kind::Job, &live, &job).is_empty());
    merge(&mut live, &json!({"spec": {"parallelism": 5}}));
    assert_eq!(
        shown(&violations(Kind::Job, &live, &job)),
        ["spec.parallelism (spec)"]
    );
    let fix = correction(Kind::Job, &live, &job, None);
    assert_eq!(fix.pointer("/spec/template"), None, "{fix}");
    assert_eq!(
        fix.pointer("/spec/parallelism"),
        Some(&Value::Null),
        "{fix}"
    );
}

/// What tells a planted Job from berth's: the whole rendering, template
/// included, less what the apiserver adds to a Job it stores.
#[test]
fn a_job_differs_from_berths_by_its_whole_rendering() {
    let job = everything(Kind::Job);
    let mut stored = job.clone();
    merge(
        &mut stored,
        &json!({"spec": {"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
            "completions": 1, "parallelism": 1, "completionMode": "NonIndexed", "manualSelector": false,
            "suspend": false, "podReplacementPolicy": "TerminatingOrFailed",
            "template": {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": "u",
                "batch.kubernetes.io/job-name": "web-job-migrate",
                "controller-uid": "u", "job-name": "web-job-migrate"}},
                "spec": {"dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler"}}}}),
    );
    assert!(
        job_differences(&stored, &job).is_empty(),
        "{:?}",
        shown(&job_differences(&stored, &job))
    );
    let mut planted = stored.clone();
    strategic(
        &mut planted,
        &json!({"spec": {"template": {"spec": {"runtimeClassName": "other",
            "containers": [{"name": "app", "env": [{"name": "LD_PRELOAD", "value": "x"}]}]}}}}),
    );
    let found = shown(&job_differences(&planted, &job));
    assert!(
        found.iter().any(|f| f.contains("runtimeClassName"))
            && found.iter().any(|f| f.contains("env[LD_PRELOAD]")),
        "{found:?}"
    );
    // Governed, the template is left out.
    assert!(violations(Kind::Job, &planted, &job).is_empty());
}

#[test]
fn every_render_is_its_own_exact_form() {
    for e in examples() {
        for (kind, desired) in rendered(e.name) {
            assert!(
                violations(kind, &desired, &desired).is_empty(),
                "{} {kind:?}",
                e.name
            );
        }
    }
}

#[test]
fn violations_name_the_entry_and_the_rule() {
    let desired = everything(Kind::Deployment);
    let mut live = desired.clone();
    strategic(
        &mut live,
        &json!({"spec": {"template": {"spec": {
            "containers": [{"name": "app", "env": [{"name": "LD_PRELOAD", "value": "/x.so"}],
                "envFrom": [{"configMapRef": {"name": "worker-config", "optional": false}},
                            {"secretRef": {"name": "stolen"}}]},
                           {"name": "sidecar", "image": "x"}]}}}}),
    );
    assert_eq!(
        shown(&violations(Kind::Deployment, &live, &desired)),
        [
            "spec.template.spec.containers[app].env[LD_PRELOAD] (environment)",
            "spec.template.spec.containers[app].envFrom (environment)",
            "spec.template.spec.containers[sidecar] (extra-container)",
        ]
    );
    // A reordered list is a difference too (env order matters: `$(VAR)`).
    let desired = json!({"data": {}, "spec": {"template": {"spec": {"containers": [
        {"name": "app", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "$(A)"}]}]}}}});
    let mut live = desired.clone();
    live["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array_mut()
        .expect("env")
        .reverse();
    assert_eq!(
        shown(&violations(Kind::Deployment, &live, &desired)),
        ["spec.template.spec.containers[app].env (environment)"]
    );
}

#[test]
fn the_correction_keeps_defaults_inside_replaced_lists() {
    let desired = everything(Kind::Deployment);
    let mut live = desired.clone();
    let c = &mut live["spec"]["template"]["spec"]["containers"][0];
    c["terminationMessagePath"] = json!("/dev/termination-log");
    c["imagePullPolicy"] = json!("IfNotPresent");
    c["env"] = json!([{"name": "LD_PRELOAD", "value": "/x.so"}]);
    live["spec"]["template"]["spec"]["dnsPolicy"] = json!("ClusterFirst");
    live["spec"]["template"]["spec"]["hostNetwork"] = json!(true);
    live["spec"]["replicas"] = json!(4);
    let fix = correction(Kind::Deployment, &live, &desired, Some("u"));
    let pod = &fix["spec"]["template"]["spec"];
    assert_eq!(pod["hostNetwork"], Value::Null);
    assert!(pod.get("hostNetwork").is_some(), "removed explicitly");
    assert!(
        pod.get("dnsPolicy").is_none(),
        "a tolerated field is left alone"
    );
    assert!(
        fix["spec"].get("replicas").is_none(),
        "the autoscaler's count too"
    );
    let c = &pod["containers"][0];
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert!(c.get("env").is_none());
    // A Service's allocated address is never nulled.
    let desired = everything(Kind::Service);
    let mut live = desired.clone();
    live["spec"]["clusterIP"] = json!("10.96.0.12");
    live["spec"]["selector"]["extra"] = json!("x");
    let fix = correction(Kind::Service, &live, &desired, None);
    assert!(fix["spec"].get("clusterIP").is_none(), "{fix}");
    assert_eq!(fix["spec"]["selector"]["extra"], Value::Null);
}

/// Issue 52: on the live side only `null` is nothing. An explicit `{}`,
/// `[]` or `""` the rendering lacks is a difference and is removed (a
/// peer's `namespaceSelector: {}` selects every namespace); an empty value
/// the rendering has and the apiserver dropped is not one.
#[test]
fn an_explicit_empty_value_is_a_value() {
    let desired = everything(Kind::NetworkPolicy);
    let peers = desired
        .pointer("/spec/ingress/0/from")
        .and_then(Value::as_array)
        .expect("the everything example renders ingress peers");
    let only_pods = peers
        .iter()
        .position(|p| p.get("namespaceSelector").is_none())
        .expect("a peer naming only pod labels");
    for empty in [json!({}), json!([]), json!("")] {
        let mut live = desired.clone();
        live["spec"]["ingress"][0]["from"][only_pods]["namespaceSelector"] = empty.clone();
        let found = shown(&violations(Kind::NetworkPolicy, &live, &desired));
        assert_eq!(
            found,
            [format!(
                "spec.ingress[0].from[{only_pods}].namespaceSelector (spec)"
            )],
            "{empty}"
        );
        let mut fixed = live.clone();
        merge(
            &mut fixed,
            &correction(Kind::NetworkPolicy, &live, &desired, None),
        );
        assert_eq!(fixed, desired, "{empty} removed by the correction");
    }
    // `null` is nothing; so is an empty value the rendering has and the
    // apiserver did not keep (a toleration's `value: ""`).
    let mut live = desired.clone();
    live["spec"]["ingress"][0]["from"][only_pods]["namespaceSelector"] = Value::Null;
    assert!(violations(Kind::NetworkPolicy, &live, &desired).is_empty());
    let mut rendered = everything(Kind::Deployment);
    rendered["spec"]["template"]["spec"]["tolerations"] =
        json!([{"key": "k", "operator": "Exists", "value": ""}]);
    let mut stored = rendered.clone();
    stored["spec"]["template"]["spec"]["tolerations"] = json!([{"key": "k", "operator": "Exists"}]);
    assert!(violations(Kind::Deployment, &stored, &rendered).is_empty());
    // The same empty value on both sides (`emptyDir: {}`) is equal.
    let both =
        json!({"spec": {"template": {"spec": {"volumes": [{"name": "tmp", "emptyDir": {}}]}}}});
    assert!(violations(Kind::Deployment, &both, &both).is_empty());
}

#[test]
fn pull_policy_defaults_follow_the_image() {
    for (image, policy) in [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("registry:5000/nginx", "Always"),
        ("registry:5000/nginx:1.2", "IfNotPresent"),
        ("nginx@sha256:ab", "IfNotPresent"),
        ("nginx:1", "IfNotPresent"),
    ] {
        assert_eq!(default_pull_policy(image), policy, "{image}");
    }
}

const START: &str = "<!-- contract-table:start (generated from shared/src/contract/table.rs and allowlist.rs) -->\n";
const END: &str = "<!-- contract-table:end -->";

#[test]
fn the_docs_page_shows_the_table() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/drift-and-events.md");
    let page = std::fs::read_to_string(&path).expect("docs/drift-and-events.md");
    let (Some(a), Some(b)) = (page.find(START), page.find(END)) else {
        panic!("docs/drift-and-events.md lacks the contract table markers");
    };
    let current = &page[a + START.len()..b];
    let expected = markdown();
    if current != expected && std::env::var("BERTH_UPDATE_GOLDEN").as_deref() == Ok("1") {
        let updated = format!("{}{START}{expected}{}", &page[..a], &page[b..]);
        std::fs::write(&path, updated).expect("write docs/drift-and-events.md");
        return;
    }
    assert_eq!(
        current, expected,
        "docs/drift-and-events.md's contract table differs from shared/src/contract/table.rs and allowlist.rs \
         (BERTH_UPDATE_GOLDEN=1 cargo test -p berth-shared regenerates it)"
    );
}

/// The schema-driven adversary's finding (issue 52): a probe added to a
/// container that renders none, as the apiserver stores it (its defaults
/// filled in). Keeping the tolerated defaults of an object that is
/// itself foreign left `httpGet: {scheme: HTTP}` without a port, which the
/// apiserver refuses, so the correction failed on every reconcile and the
/// probe stayed. A foreign object goes whole, its defaults with it, in a
/// replaced list and outside one; a field someone else owns inside one
/// (`Allowed::Any`) still stays.
#[test]
fn a_foreign_object_goes_with_its_defaults() {
    let probe = json!({
        "httpGet": {"path": "/adversary", "port": 7, "scheme": "HTTP"},
        "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3
    });
    let desired = everything(Kind::CronJob);
    let pod = Kind::CronJob.pod_template().unwrap_or_default();
    let container = format!("{pod}/spec/containers/0");
    assert!(
        desired
            .pointer(&format!("{container}/livenessProbe"))
            .is_none(),
        "the everything example's CronJob container renders no probe"
    );
    let mut live = desired.clone();
    live.pointer_mut(&container).expect("a container")["livenessProbe"] = probe.clone();
    let fix = correction(Kind::CronJob, &live, &desired, None);
    let mut fixed = live.clone();
    merge(&mut fixed, &fix);
    assert_eq!(
        fixed.pointer(&format!("{container}/livenessProbe")),
        None,
        "the probe goes whole: {fix}"
    );
    assert!(violations(Kind::CronJob, &fixed, &desired).is_empty());
    // Outside a list: a foreign object under a rendered one is nulled whole
    // (on a rendering without a strategy, whose defaults are tolerated).
    let mut desired = everything(Kind::Deployment);
    desired["spec"]
        .as_object_mut()
        .and_then(|spec| spec.remove("strategy"))
        .expect("the everything example renders a strategy");
    let mut live = desired.clone();
    live["spec"]["strategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 7, "maxUnavailable": "25%"}});
    let fix = correction(Kind::Deployment, &live, &desired, None);
    assert_eq!(fix["spec"]["strategy"], Value::Null, "{fix}");
    // Defaults alone are kept; an owned field keeps its object.
    live["spec"]["strategy"] = json!({"type": "RollingUpdate"});
    let fix = correction(Kind::Deployment, &live, &desired, None);
    assert!(fix["spec"].get("strategy").is_none(), "{fix}");
    let mut live = desired.clone();
    let annotations = format!(
        "{}/metadata/annotations",
        Kind::Deployment.pod_template().unwrap_or_default()
    );
    let at = live.pointer_mut(&annotations).expect("pod annotations");
    at["kubectl.kubernetes.io/restartedAt"] = json!("2026-01-01T00:00:00Z");
    at["adversary"] = json!("x");
    let mut fixed = live.clone();
    merge(
        &mut fixed,
        &correction(Kind::Deployment, &live, &desired, None),
    );
    let kept = fixed.pointer(&annotations).expect("annotations");
    assert_eq!(
        kept["kubectl.kubernetes.io/restartedAt"],
        "2026-01-01T00:00:00Z"
    );
    assert!(kept.get("adversary").is_none());
}
