//! Issue 52, item 6 ("read in the code"): a held (Blocked) Runtime's
//! workloads stay what berth last applied. Blocked stops the tenant's
//! changes: those made through the Runtime (held back) and, here, those
//! made on the objects themselves while it is held — `kubectl scale`, an
//! HPA's bounds, and the parts of the pod template the Runtime's spec
//! controls (image, class, placement, the template's labels and
//! annotations), each played by the tenant (a user bound to `edit` in the
//! namespace, impersonated). On the main of 2026-12-05 every one of them
//! stayed: the held workloads were measured against their own live copy.

use std::time::Duration;

use berth_shared::api::Runtime;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::CronJob;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::agent_support::{
    Agent, AgentOpts, binding_for_service, create_runtime, setup, wait_condition, wait_reconciles,
    write_grants,
};
use crate::contract_adversary::{rolled_out, tenant_client};

/// How long a foreign change may stay before it counts as kept.
const UNDONE_WITHIN: Duration = Duration::from_secs(45);

/// One change by the tenant on a held workload, and how to see it stayed.
struct Edit {
    what: &'static str,
    resource: &'static str,
    name: &'static str,
    patch: Value,
    /// Sent to the `scale` subresource (what `kubectl scale` does).
    scale: bool,
    still: fn(&Value) -> bool,
}

/// Sends the edit as the tenant; whether it was undone within
/// [`UNDONE_WITHIN`]. That it landed is read from the write's own answer
/// (the object as stored by that write): the agent may undo it before any
/// later read (CI of 2026-12-07 read the HPA back already undone).
async fn play(tenant: &Client, admin: &Client, ns: &str, e: &Edit) -> bool {
    let params = PatchParams {
        field_manager: Some("kubectl-edit".into()),
        ..Default::default()
    };
    let json = |v: Result<Value, serde_json::Error>| v.expect("json");
    let landed = match e.resource {
        "deployments" if e.scale => {
            let api: Api<Deployment> = Api::namespaced(tenant.clone(), ns);
            api.patch_scale(e.name, &params, &Patch::Merge(&e.patch))
                .await
                .map(|scale| json(serde_json::to_value(scale)))
        }
        "deployments" => patch::<Deployment>(tenant, ns, e, &params).await,
        "cronjobs" => patch::<CronJob>(tenant, ns, e, &params).await,
        "horizontalpodautoscalers" => {
            patch::<HorizontalPodAutoscaler>(tenant, ns, e, &params).await
        }
        other => panic!("no resource {other}"),
    };
    let landed =
        landed.unwrap_or_else(|err| panic!("{}: the tenant's edit was refused: {err}", e.what));
    assert!(
        (e.still)(&landed),
        "{}: the edit did not land: {landed}",
        e.what
    );
    let now = || async { (e.still)(&read(admin, ns, e.resource, e.name).await) };
    let deadline = tokio::time::Instant::now() + UNDONE_WITHIN;
    while tokio::time::Instant::now() < deadline {
        if !now().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    false
}

/// The tenant's strategic-merge patch; the object the write stored.
async fn patch<K>(client: &Client, ns: &str, e: &Edit, params: &PatchParams) -> kube::Result<Value>
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    Api::<K>::namespaced(client.clone(), ns)
        .patch(e.name, params, &Patch::Strategic(&e.patch))
        .await
        .map(|obj| serde_json::to_value(obj).expect("json"))
}

/// The object as JSON (admin read).
async fn read(client: &Client, ns: &str, resource: &str, name: &str) -> Value {
    let json = |v: Result<Value, serde_json::Error>| v.expect("json");
    match resource {
        "deployments" => json(serde_json::to_value(
            Api::<Deployment>::namespaced(client.clone(), ns)
                .get(name)
                .await
                .expect("get"),
        )),
        "cronjobs" => json(serde_json::to_value(
            Api::<CronJob>::namespaced(client.clone(), ns)
                .get(name)
                .await
                .expect("get"),
        )),
        _ => json(serde_json::to_value(
            Api::<HorizontalPodAutoscaler>::namespaced(client.clone(), ns)
                .get(name)
                .await
                .expect("get"),
        )),
    }
}

fn template(v: &Value) -> &Value {
    v.pointer("/spec/template").unwrap_or(&Value::Null)
}

fn app_image(t: &Value) -> Option<&str> {
    t.pointer("/spec/containers/0/image")
        .and_then(Value::as_str)
}

const EVIL_IMAGE: &str = "registry.invalid/berth/app:while-held";

fn edits() -> Vec<Edit> {
    vec![
        Edit {
            what: "kubectl scale deployment/web --replicas=3",
            resource: "deployments",
            name: "web",
            patch: json!({"spec": {"replicas": 3}}),
            scale: true,
            still: |v| v.pointer("/spec/replicas") == Some(&json!(3)),
        },
        Edit {
            what: "kubectl set image deployment/web app=…:while-held",
            resource: "deployments",
            name: "web",
            patch: json!({"spec": {"template": {"spec": {"containers": [
                {"name": "app", "image": EVIL_IMAGE}]}}}}),
            scale: false,
            still: |v| app_image(template(v)) == Some(EVIL_IMAGE),
        },
        Edit {
            what: "a pod template label (joins someone else's Service)",
            resource: "deployments",
            name: "web",
            patch: json!({"spec": {"template": {"metadata": {"labels": {"role": "admin-api"}}}}}),
            scale: false,
            still: |v| template(v).pointer("/metadata/labels/role").is_some(),
        },
        Edit {
            what: "a pod template annotation",
            resource: "deployments",
            name: "web",
            patch: json!({"spec": {"template": {"metadata": {"annotations": {
                "io.katacontainers.config.hypervisor.kernel_params": "init=/bin/sh"}}}}}),
            scale: false,
            still: |v| {
                template(v)
                    .pointer(
                        "/metadata/annotations/io.katacontainers.config.hypervisor.kernel_params",
                    )
                    .is_some()
            },
        },
        Edit {
            what: "a node selector (placement)",
            resource: "deployments",
            name: "web",
            patch: json!({"spec": {"template": {"spec": {"nodeSelector": {"pool": "payments"}}}}}),
            scale: false,
            still: |v| template(v).pointer("/spec/nodeSelector/pool").is_some(),
        },
        Edit {
            what: "another RuntimeClass",
            resource: "deployments",
            name: "web",
            patch: json!({"spec": {"template": {"spec": {"runtimeClassName": "unbounded"}}}}),
            scale: false,
            still: |v| template(v).pointer("/spec/runtimeClassName") == Some(&json!("unbounded")),
        },
        Edit {
            what: "the schedule's image",
            resource: "cronjobs",
            name: "web-cron-nightly",
            patch: json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [
                {"name": "app", "image": EVIL_IMAGE}]}}}}}}),
            scale: false,
            still: |v| {
                v.pointer("/spec/jobTemplate/spec/template/spec/containers/0/image")
                    == Some(&json!(EVIL_IMAGE))
            },
        },
        Edit {
            what: "the schedule runs every minute",
            resource: "cronjobs",
            name: "web-cron-nightly",
            patch: json!({"spec": {"schedule": "* * * * *"}}),
            scale: false,
            still: |v| v.pointer("/spec/schedule") == Some(&json!("* * * * *")),
        },
        Edit {
            what: "the HPA's maxReplicas 3 -> 10",
            resource: "horizontalpodautoscalers",
            name: "auto",
            patch: json!({"spec": {"maxReplicas": 10}}),
            scale: false,
            still: |v| v.pointer("/spec/maxReplicas") == Some(&json!(10)),
        },
        Edit {
            what: "the HPA's minReplicas 1 -> 3",
            resource: "horizontalpodautoscalers",
            name: "auto",
            patch: json!({"spec": {"minReplicas": 3}}),
            scale: false,
            still: |v| v.pointer("/spec/minReplicas") == Some(&json!(3)),
        },
        Edit {
            what: "the HPA's CPU target 70% -> 5%",
            resource: "horizontalpodautoscalers",
            name: "auto",
            patch: json!({"spec": {"metrics": [{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 5}}}]}}),
            scale: false,
            still: |v| {
                v.pointer("/spec/metrics/0/resource/target/averageUtilization") == Some(&json!(5))
            },
        },
    ]
}

#[tokio::test]
async fn held_workloads_stay_as_berth_last_applied_them() {
    let (ns, class) = setup("held-wl").await;
    let handler = "bounded-runc";
    let profile = |service: &str| format!("{}-{service}", ns.name);
    let grants = write_grants(&[
        binding_for_service(&profile("worker"), &class, handler, "worker"),
        binding_for_service(&profile("auto"), &class, handler, "auto"),
    ]);
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": profile("worker"), "replicas": 1,
            "schedules": [{"name": "nightly", "schedule": "0 3 * * *", "args": ["report"]}]}),
    )
    .await;
    create_runtime(
        &ns,
        "auto",
        json!({"service": "auto", "runtimeProfile": profile("auto"),
            "resources": {"requests": {"cpu": "100m"}},
            "autoscaling": {"enabled": true, "minReplicas": 1, "maxReplicas": 3,
                "targetCPUUtilizationPercentage": 70}}),
    )
    .await;
    for name in ["web", "auto"] {
        wait_condition(&ns, name, "Ready", "True", None).await;
        rolled_out(&ns.client, &ns.name, name, 1).await;
    }

    // The tenant holds both: a profile nobody granted (NotGranted). Its
    // pods keep running as they are, and so must stay.
    let runtimes: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    for name in ["web", "auto"] {
        runtimes
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"runtimeProfile": format!("{}-nope", ns.name)}})),
            )
            .await
            .expect("profile");
        wait_condition(&ns, name, "Blocked", "True", Some("NotGranted")).await;
    }
    wait_reconciles(&agent, 3.0).await;
    let web_before = read(&ns.client, &ns.name, "deployments", "web").await;
    assert_eq!(
        web_before
            .pointer("/spec/template/spec/runtimeClassName")
            .and_then(Value::as_str),
        Some(class.as_str()),
        "held: the pods keep their class"
    );

    let tenant = tenant_client(&ns.client, &ns.name).await;
    let mut kept = Vec::new();
    for e in edits() {
        let undone = play(&tenant, &ns.client, &ns.name, &e).await;
        eprintln!(
            "held: {}: {}",
            e.what,
            if undone { "undone" } else { "STAYED" }
        );
        if !undone {
            kept.push(e.what);
        }
    }
    assert!(
        kept.is_empty(),
        "while held, these edits of the tenant stayed: {kept:#?}\nagent log:\n{}",
        agent.log_text()
    );
    // Still held, and the pod template is the one berth last applied.
    wait_condition(&ns, "web", "Blocked", "True", Some("NotGranted")).await;
    let web_after = read(&ns.client, &ns.name, "deployments", "web").await;
    assert_eq!(template(&web_after), template(&web_before));
    assert_eq!(web_after.pointer("/spec/replicas"), Some(&json!(1)));
}
