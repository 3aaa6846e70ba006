//! berth's CRDs against a real apiserver: they install and become
//! Established, every schema and CEL rule rejects what it should, unknown
//! fields (an arbitrary PodSpec) are pruned, and every object rendered for
//! every golden example passes a server-side dry-run create.

use std::fmt::Debug;

use berth_shared::api::{Runtime, crds};
use berth_shared::render::{Rendered, examples::examples, render};
use berth_tests::harness::{TestNamespace, install_crds};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn dry_run() -> PostParams {
    PostParams {
        dry_run: true,
        ..Default::default()
    }
}

fn runtime_api(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &ApiResource::erase::<Runtime>(&()))
}

/// A complete, valid Runtime.
fn valid(name: &str) -> Value {
    json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Runtime",
        "metadata": {"name": name},
        "spec": {
            "application": "analytics",
            "service": "worker",
            "image": {"repository": "registry.example/analytics/worker", "tag": "1.2.3"},
            "replicas": 2,
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": 1, "memory": "256Mi"}},
            "config": {"env": {"LOG_LEVEL": "info"}},
            "expose": {"port": 8080, "type": "ClusterIP"},
            "jobs": [{"name": "migrate", "args": ["migrate"]}],
            "schedules": [{"name": "nightly", "schedule": "0 3 * * *", "concurrencyPolicy": "Forbid"}],
            "podMetadata": {"labels": {"team": "data"}, "annotations": {"example.com/owner": "data"}},
            "scheduling": {
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}
            },
            "networkPolicy": {"enabled": true, "ingress": [{"podLabels": {"app": "gateway"}}]},
            "autoscaling": {"enabled": true, "minReplicas": 2, "maxReplicas": 4, "targetCPUUtilizationPercentage": 70},
            "shutdownDrainTimeoutSeconds": 20
        }
    })
}

fn object(v: Value) -> DynamicObject {
    serde_json::from_value(v).expect("dynamic object")
}

/// Asserts that creating `v` fails with 422 and a message containing `needle`.
async fn assert_rejected(api: &Api<DynamicObject>, case: &str, v: Value, needle: &str) {
    match api.create(&dry_run(), &object(v)).await {
        Ok(_) => panic!("{case}: accepted, expected rejection containing {needle:?}"),
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{case}: {status:?}");
            assert!(
                status.message.contains(needle),
                "{case}: expected {needle:?} in {:?}",
                status.message
            );
        }
        Err(e) => panic!("{case}: unexpected error {e}"),
    }
}

#[tokio::test]
async fn crds_install_and_become_established() {
    let ns = TestNamespace::new("crds").await;
    install_crds(&ns.client).await;
    let api: Api<CustomResourceDefinition> = Api::all(ns.client.clone());
    for crd in crds() {
        let name = crd.metadata.name.clone().expect("name");
        let live = api.get(&name).await.expect("get crd");
        let established = live
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        assert!(established, "{name} is not Established: {:?}", live.status);
        let names_accepted = live
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "NamesAccepted" && c.status == "True")
            });
        assert!(names_accepted, "{name}: names not accepted");
        assert_eq!(
            live.spec.names.categories.as_deref(),
            Some(&["berth".to_string()][..])
        );
    }
    // The valid example is accepted as a real create and served back.
    let runtimes = runtime_api(&ns.client, &ns.name);
    runtimes
        .create(&PostParams::default(), &object(valid("accepted")))
        .await
        .expect("valid Runtime is accepted");
    let typed: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    let back = typed.get("accepted").await.expect("typed get");
    assert_eq!(back.spec.application, "analytics");
}

#[tokio::test]
async fn schema_and_cel_rules_reject_for_real() {
    let ns = TestNamespace::new("crd-cel").await;
    install_crds(&ns.client).await;
    let api = runtime_api(&ns.client, &ns.name);

    type Change = fn(&mut Value);
    let cases: Vec<(&str, Change, &str)> = vec![
        (
            "tag and digest",
            |v| v["spec"]["image"]["digest"] = json!(format!("sha256:{}", "0".repeat(64))),
            "exactly one of image.tag or image.digest",
        ),
        (
            "neither tag nor digest",
            |v| v["spec"]["image"] = json!({"repository": "r"}),
            "exactly one of image.tag or image.digest",
        ),
        (
            "bad digest",
            |v| v["spec"]["image"] = json!({"repository": "r", "digest": "md5:abc"}),
            "spec.image.digest",
        ),
        (
            "bad repository",
            |v| v["spec"]["image"]["repository"] = json!("Registry/UPPER"),
            "spec.image.repository",
        ),
        (
            "empty ingress peer",
            |v| v["spec"]["networkPolicy"]["ingress"] = json!([{}]),
            "needs namespaceLabels or podLabels",
        ),
        (
            "autoscaling max < min",
            |v| {
                v["spec"]["autoscaling"] =
                    json!({"enabled": true, "minReplicas": 4, "maxReplicas": 3})
            },
            "maxReplicas must be at least minReplicas",
        ),
        (
            "autoscaling without cpu request",
            |v| v["spec"]["resources"]["requests"] = json!({"memory": "1Gi"}),
            "requires resources.requests.cpu",
        ),
        (
            "duplicate job names",
            |v| v["spec"]["jobs"] = json!([{"name": "a"}, {"name": "a"}]),
            "job names must be unique",
        ),
        (
            "duplicate schedule names",
            |v| {
                v["spec"]["schedules"] = json!([{"name": "n", "schedule": "@daily"}, {"name": "n", "schedule": "@hourly"}])
            },
            "schedule names must be unique",
        ),
        (
            "job name not a DNS label",
            |v| v["spec"]["jobs"] = json!([{"name": "Bad_Name"}]),
            "spec.jobs[0].name",
        ),
        (
            "schedule name not a DNS label",
            |v| v["spec"]["schedules"][0]["name"] = json!("-x"),
            "spec.schedules[0].name",
        ),
        (
            "bad cron",
            |v| v["spec"]["schedules"][0]["schedule"] = json!("every day"),
            "spec.schedules[0].schedule",
        ),
        (
            "bad env key",
            |v| v["spec"]["config"]["env"] = json!({"1BAD": "x"}),
            "environment variable names",
        ),
        (
            "bad label key",
            |v| v["spec"]["podMetadata"]["labels"] = json!({"-bad": "x"}),
            "valid label keys",
        ),
        (
            "bad label value",
            |v| v["spec"]["podMetadata"]["labels"] = json!({"ok": "not ok"}),
            "valid label values",
        ),
        (
            "bad annotation key",
            |v| v["spec"]["podMetadata"]["annotations"] = json!({"bad key": "x"}),
            "valid annotation keys",
        ),
        (
            "bad node selector",
            |v| v["spec"]["scheduling"]["nodeSelector"] = json!({"a/b/c": "x"}),
            "valid label keys",
        ),
        (
            "bad quantity",
            |v| v["spec"]["resources"]["requests"]["cpu"] = json!("lots"),
            "resource quantity",
        ),
        (
            "negative quantity",
            |v| v["spec"]["resources"]["limits"]["memory"] = json!("-1Gi"),
            "resource quantity",
        ),
        (
            "replicas too high",
            |v| v["spec"]["replicas"] = json!(101),
            "spec.replicas",
        ),
        (
            "replicas negative",
            |v| v["spec"]["replicas"] = json!(-1),
            "spec.replicas",
        ),
        (
            "drain too long",
            |v| v["spec"]["shutdownDrainTimeoutSeconds"] = json!(601),
            "spec.shutdownDrainTimeoutSeconds",
        ),
        (
            "job deadline too long",
            |v| v["spec"]["jobs"][0]["activeDeadlineSeconds"] = json!(86401),
            "activeDeadlineSeconds",
        ),
        (
            "port out of range",
            |v| v["spec"]["expose"]["port"] = json!(70000),
            "spec.expose.port",
        ),
        (
            "unknown service type",
            |v| v["spec"]["expose"]["type"] = json!("ExternalName"),
            "spec.expose.type",
        ),
        (
            "bad application",
            |v| v["spec"]["application"] = json!("Analytics"),
            "spec.application",
        ),
        (
            "bad profile",
            |v| v["spec"]["runtimeProfile"] = json!("Not_A_Label"),
            "spec.runtimeProfile",
        ),
        (
            "too many jobs",
            |v| {
                v["spec"]["jobs"] = json!(
                    (0..17)
                        .map(|i| json!({"name": format!("j{i}")}))
                        .collect::<Vec<_>>()
                )
            },
            "spec.jobs",
        ),
    ];
    for (case, change, needle) in cases {
        let mut v = valid("rejected");
        change(&mut v);
        assert_rejected(&api, case, v, needle).await;
    }

    // Transition rules need a stored object.
    let stored = api
        .create(&PostParams::default(), &object(valid("immutable")))
        .await
        .expect("create");
    for (field, needle) in [
        ("application", "application is immutable"),
        ("service", "service is immutable"),
    ] {
        let mut changed = serde_json::to_value(&stored).expect("json");
        changed["spec"][field] = json!("other");
        match api
            .replace("immutable", &PostParams::default(), &object(changed))
            .await
        {
            Ok(_) => panic!("{field} change accepted"),
            Err(kube::Error::Api(status)) => {
                assert!(status.message.contains(needle), "{}", status.message)
            }
            Err(e) => panic!("{field}: {e}"),
        }
    }
    // Other fields stay mutable.
    let mut changed = serde_json::to_value(&stored).expect("json");
    changed["spec"]["replicas"] = json!(3);
    changed["spec"]["autoscaling"]["enabled"] = json!(false);
    api.replace("immutable", &PostParams::default(), &object(changed))
        .await
        .expect("replicas is mutable");
}

#[tokio::test]
async fn unknown_fields_are_pruned() {
    let ns = TestNamespace::new("crd-prune").await;
    install_crds(&ns.client).await;
    let api = runtime_api(&ns.client, &ns.name);
    let mut v = valid("pruned");
    v["spec"]["podSpec"] = json!({"hostNetwork": true, "containers": [{"name": "x", "image": "y", "securityContext": {"privileged": true}}]});
    v["spec"]["scheduling"]["hostNetwork"] = json!(true);
    let created = api
        .create(&PostParams::default(), &object(v))
        .await
        .expect("create");
    let back = serde_json::to_value(&created).expect("json");
    assert!(
        back["spec"].get("podSpec").is_none(),
        "podSpec was stored: {back}"
    );
    assert!(
        back["spec"]["scheduling"].get("hostNetwork").is_none(),
        "hostNetwork was stored: {back}"
    );
}

async fn dry_run_create<K>(client: &Client, ns: &str, case: &str, object: &K)
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    if let Err(e) = api.create(&dry_run(), object).await {
        panic!(
            "{case}: {} {:?} failed server-side dry-run: {e}",
            K::kind(&()),
            object.meta().name
        );
    }
}

async fn dry_run_all(client: &Client, ns: &str, case: &str, r: &Rendered) {
    dry_run_create(client, ns, case, &r.config_map).await;
    dry_run_create(client, ns, case, &r.service_account).await;
    dry_run_create(client, ns, case, &r.service).await;
    dry_run_create(client, ns, case, &r.deployment).await;
    dry_run_create(client, ns, case, &r.pod_disruption_budget).await;
    if let Some(np) = &r.network_policy {
        dry_run_create(client, ns, case, np).await;
    }
    if let Some(hpa) = &r.horizontal_pod_autoscaler {
        dry_run_create(client, ns, case, hpa).await;
    }
    for job in &r.jobs {
        dry_run_create(client, ns, case, job).await;
    }
    for cron in &r.cron_jobs {
        dry_run_create(client, ns, case, cron).await;
    }
}

#[tokio::test]
async fn every_rendered_object_passes_server_side_dry_run() {
    let ns = TestNamespace::new("crd-render").await;
    install_crds(&ns.client).await;
    let runtimes: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    let examples = examples();
    assert!(examples.len() >= 7);
    for example in examples {
        let mut runtime = example.runtime.clone();
        runtime.metadata.namespace = Some(ns.name.clone());

        // The example Runtime itself is valid for the CRD.
        let mut to_create = runtime.clone();
        to_create.metadata.uid = None;
        runtimes
            .create(&dry_run(), &to_create)
            .await
            .unwrap_or_else(|e| panic!("{}: Runtime failed dry-run: {e}", example.name));

        let rendered = render(&runtime, &example.identity, &example.decision)
            .unwrap_or_else(|e| panic!("{}: render: {e}", example.name));
        dry_run_all(&ns.client, &ns.name, example.name, &rendered).await;
    }
}
