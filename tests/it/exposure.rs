//! Issue 52, point 5, on the real control plane: what adds up around a
//! Runtime's pods is seen. Each attack is played by another party (objects
//! created with the test's own credentials, never the agent's) against a
//! rolled-out Runtime, and must turn its `Exposed` condition True naming
//! the object, list it in `status.exposure`, raise a Warning, and clear
//! (with a Normal Event) once the object is gone:
//!
//! - a foreign allow-all NetworkPolicy (policies add up), and one
//!   admitting another port; a policy within the Runtime's own peers and
//!   port is not reported, nor is any policy while the Runtime's own is
//!   off (nothing isolates the pods then);
//! - a foreign Service selecting the pods by a podMetadata label, and an
//!   EndpointSlice written for a Service without a selector that names a
//!   pod of the Runtime;
//! - an orphaned ReplicaSet (relabelled so its Deployment let it go) and,
//!   with `--watch-bare-pods`, an orphaned pod (its `pod-template-hash`
//!   removed), both on the granted class; `berth get retained` shows them
//!   as orphans and `berth check` names them.
//!
//! On the main of 2026-12-05 (02e59ca) none of this was reported anywhere:
//! the Runtime had no such condition and stayed Ready, `berth check`
//! listed nothing and Retained hid the orphans (they carry a grant's
//! labels).

use std::time::Duration;

use berth_shared::api::{Runtime, RuntimeStatus};
use berth_tests::harness::{TestNamespace, wait_for_value};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::agent_support::{
    Agent, AgentOpts, Granted, condition, create_runtime, runtime_events, server_pods,
    setup_granted, wait_condition, wait_reconciles, writes,
};
use crate::contract_adversary::rolled_out;

const WAIT: Duration = Duration::from_secs(120);

/// The Runtime's `Exposed` condition and `status.exposure`, once the
/// condition is `status` with `reason` and its message names every one of
/// `named` (`Kind/namespace/name`).
async fn exposed(
    ns: &TestNamespace,
    name: &str,
    status: &str,
    reason: &str,
    named: &[String],
) -> RuntimeStatus {
    let api: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    let what = format!("Runtime {name} Exposed={status} ({reason}) naming {named:?}");
    let found = wait_for_value(&what, WAIT, || {
        let api = api.clone();
        async move {
            let rt = api.get(name).await.ok()?;
            let c = condition(&rt, "Exposed")?;
            (c.status == status
                && c.reason == reason
                && named.iter().all(|n| c.message.contains(n.as_str())))
            .then(|| rt.status.clone())?
        }
    })
    .await;
    for n in named {
        assert!(
            found
                .exposure
                .iter()
                .any(|r| format!("{}/{}/{}", r.kind, r.namespace, r.name) == *n),
            "status.exposure names {n}: {:?}",
            found.exposure
        );
    }
    found
}

/// The Runtime's `Exposed` message now.
async fn exposed_message(ns: &TestNamespace, name: &str) -> (String, String, String) {
    let rt: Runtime = Api::namespaced(ns.client.clone(), &ns.name)
        .get(name)
        .await
        .expect("runtime");
    let c = condition(&rt, "Exposed").expect("Exposed");
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

async fn wait_event(ns: &TestNamespace, name: &str, reason: &str, warning: bool) {
    let e = wait_for_value(&format!("{reason} Event on {name}"), WAIT, || async {
        runtime_events(ns, name, reason).await.into_iter().next()
    })
    .await;
    assert_eq!(
        e.type_.as_deref(),
        Some(if warning { "Warning" } else { "Normal" }),
        "{e:?}"
    );
}

async fn create<K>(ns: &TestNamespace, v: Value) -> K
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let obj: K = serde_json::from_value(v).expect("object");
    Api::<K>::namespaced(ns.client.clone(), &ns.name)
        .create(&PostParams::default(), &obj)
        .await
        .expect("create")
}

async fn delete<K>(ns: &TestNamespace, name: &str)
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    Api::<K>::namespaced(ns.client.clone(), &ns.name)
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete");
}

/// Settled: a few more reconciles write nothing at all.
async fn quiet(agent: &Agent) {
    wait_reconciles(agent, 2.0).await;
    let before = writes(&agent.metrics().await);
    wait_reconciles(agent, 4.0).await;
    let after = writes(&agent.metrics().await);
    assert_eq!(
        after - before,
        0.0,
        "no writes at rest; log:\n{}",
        agent.log_text()
    );
}

#[tokio::test]
async fn exposure_foreign_network_policies_that_admit_more_are_named() {
    let Granted { ns, bw, grants, .. } = setup_granted("exposure-np").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(
        &ns,
        "web",
        json!({
            "runtimeProfile": bw,
            "replicas": 1,
            "expose": {"port": 9090},
            "networkPolicy": {"enabled": true, "ingress": [{"podLabels": {"role": "frontend"}}]},
        }),
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    exposed(&ns, "web", "False", "AsExpected", &[]).await;
    let n = ns.name.as_str();

    // Within the Runtime's own policy (the same peer, narrower, the http
    // port by name and by number): admits nothing more, not reported.
    create::<NetworkPolicy>(
        &ns,
        json!({"metadata": {"name": "frontend-in"}, "spec": {"podSelector": {},
            "ingress": [
                {"from": [{"podSelector": {"matchLabels": {"role": "frontend", "tier": "edge"}}}], "ports": [{"port": "http"}]},
                {"from": [{"podSelector": {"matchLabels": {"role": "frontend"}}}], "ports": [{"port": 9090, "protocol": "TCP"}]},
            ]}}),
    )
    .await;
    // Egress only, or no rule at all: they only isolate.
    create::<NetworkPolicy>(
        &ns,
        json!({"metadata": {"name": "deny-all"}, "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}}),
    )
    .await;
    wait_reconciles(&agent, 4.0).await;
    let (status, _, message) = exposed_message(&ns, "web").await;
    assert_eq!(status, "False", "{message}");

    // An allow-all policy: every source, every port.
    create::<NetworkPolicy>(
        &ns,
        json!({"metadata": {"name": "allow-all"}, "spec": {"podSelector": {}, "ingress": [{}]}}),
    )
    .await;
    let allow_all = format!("NetworkPolicy/{n}/allow-all");
    exposed(
        &ns,
        "web",
        "True",
        "ForeignNetworkPolicy",
        std::slice::from_ref(&allow_all),
    )
    .await;
    wait_event(&ns, "web", "ForeignNetworkPolicy", true).await;
    let (_, _, message) = exposed_message(&ns, "web").await;
    assert!(message.contains("admits every source"), "{message}");
    assert!(!message.contains("frontend-in"), "{message}");

    // The right peer, another port: also more.
    create::<NetworkPolicy>(
        &ns,
        json!({"metadata": {"name": "metrics"}, "spec": {
            "podSelector": {"matchLabels": {"berth.dev/runtime": "web"}},
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "frontend"}}}], "ports": [{"port": 9100}]}]}}),
    )
    .await;
    let metrics = format!("NetworkPolicy/{n}/metrics");
    exposed(
        &ns,
        "web",
        "True",
        "ForeignNetworkPolicy",
        &[allow_all.clone(), metrics.clone()],
    )
    .await;
    quiet(&agent).await;

    // The Runtime's own policy off: nothing isolates the pods, no other
    // policy can admit more, none is judged.
    let runtimes: Api<Runtime> = Api::namespaced(ns.client.clone(), n);
    runtimes
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"networkPolicy": {"enabled": false}}})),
        )
        .await
        .expect("policy off");
    exposed(&ns, "web", "False", "AsExpected", &[]).await;
    let (_, _, message) = exposed_message(&ns, "web").await;
    assert!(message.contains("NetworkPolicy is off"), "{message}");
    wait_event(&ns, "web", "ExposureCleared", false).await;

    // On again, the open policies gone: not exposed.
    runtimes
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"networkPolicy": {"enabled": true}}})),
        )
        .await
        .expect("policy on");
    exposed(&ns, "web", "True", "ForeignNetworkPolicy", &[allow_all]).await;
    delete::<NetworkPolicy>(&ns, "allow-all").await;
    delete::<NetworkPolicy>(&ns, "metrics").await;
    exposed(&ns, "web", "False", "AsExpected", &[]).await;
    quiet(&agent).await;
}

#[tokio::test]
async fn exposure_foreign_services_and_endpoint_slices_that_reach_the_pods_are_named() {
    let Granted { ns, bw, grants, .. } = setup_granted("exposure-svc").await;
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(
        &ns,
        "web",
        json!({"runtimeProfile": bw, "replicas": 1, "podMetadata": {"labels": {"app": "web"}}}),
    )
    .await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    rolled_out(&ns.client, &ns.name, "web", 1).await;
    exposed(&ns, "web", "False", "AsExpected", &[]).await;
    let n = ns.name.as_str();

    // A Service of someone else's pods: not reported.
    create::<Service>(
        &ns,
        json!({"metadata": {"name": "other"}, "spec": {"selector": {"app": "other"}, "ports": [{"port": 80}]}}),
    )
    .await;
    // A NodePort Service selecting the Runtime's pods by their podMetadata
    // label: another way in than the Runtime's `expose`.
    create::<Service>(
        &ns,
        json!({"metadata": {"name": "web-public"}, "spec": {"type": "NodePort",
            "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 9000}]}}),
    )
    .await;
    let public = format!("Service/{n}/web-public");
    exposed(
        &ns,
        "web",
        "True",
        "ForeignService",
        std::slice::from_ref(&public),
    )
    .await;
    wait_event(&ns, "web", "ForeignService", true).await;
    let (_, _, message) = exposed_message(&ns, "web").await;
    assert!(!message.contains("/other "), "{message}");

    // A Service without a selector, and an EndpointSlice written for it by
    // hand that names one of the Runtime's pods.
    create::<Service>(
        &ns,
        json!({"metadata": {"name": "legacy"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    let pod = server_pods(&ns, "web")
        .await
        .into_iter()
        .next()
        .expect("a server pod");
    let pod_name = pod.metadata.name.clone().expect("name");
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .unwrap_or_else(|| "10.0.0.9".into());
    create::<EndpointSlice>(
        &ns,
        json!({"metadata": {"name": "legacy-1", "labels": {
                "kubernetes.io/service-name": "legacy",
                "endpointslice.kubernetes.io/managed-by": "tenant.example.com"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [ip], "targetRef": {"kind": "Pod", "name": pod_name, "namespace": n}}],
            "ports": [{"name": "", "port": 9000, "protocol": "TCP"}]}),
    )
    .await;
    let slice = format!("EndpointSlice/{n}/legacy-1");
    exposed(
        &ns,
        "web",
        "True",
        "ForeignService",
        &[public.clone(), slice.clone()],
    )
    .await;
    let (_, _, message) = exposed_message(&ns, "web").await;
    assert!(message.contains("endpoints of Service legacy"), "{message}");
    quiet(&agent).await;

    delete::<Service>(&ns, "web-public").await;
    exposed(&ns, "web", "True", "ForeignEndpointSlice", &[slice]).await;
    delete::<EndpointSlice>(&ns, "legacy-1").await;
    exposed(&ns, "web", "False", "AsExpected", &[]).await;
    wait_event(&ns, "web", "ExposureCleared", false).await;
    quiet(&agent).await;
}

/// `berth ARGS` scoped to the test namespace, as JSON.
async fn berth_json(ns: &TestNamespace, lease: &str, args: &[&str]) -> Value {
    let mut all = vec!["-n", ns.name.as_str(), "--agent-lease", lease];
    all.extend_from_slice(args);
    let (code, out, err) = crate::support::berth::run(None, &all).await;
    assert!(
        code == 0 || code == 2 || code == 3,
        "berth {args:?}: {code}\n{err}\n{out}"
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("berth {args:?}: {e}\n{out}\n{err}"))
}

#[tokio::test]
async fn exposure_orphaned_replica_sets_and_pods_on_the_granted_class_are_named() {
    let Granted {
        ns,
        bw,
        grants,
        class,
    } = setup_granted("exposure-orphan").await;
    let mut opts = AgentOpts::new(&ns.name, Some(&grants));
    opts.extra_args = vec!["--watch-bare-pods".into()];
    let lease = format!("{}/{}", ns.name, opts.lease_name);
    let agent = Agent::start(opts).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": bw, "replicas": 1})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    rolled_out(&ns.client, &ns.name, "web", 1).await;
    exposed(&ns, "web", "False", "AsExpected", &[]).await;
    let n = ns.name.as_str();
    let replica_sets: Api<ReplicaSet> = Api::namespaced(ns.client.clone(), n);
    let intruder = PatchParams {
        field_manager: Some("intruder".into()),
        ..Default::default()
    };

    // An orphaned ReplicaSet: relabelled so that its Deployment's selector
    // no longer matches, the Deployment controller lets it go (removes its
    // owner reference) and makes another; it keeps its pod running on the
    // granted class.
    let rs = replica_sets
        .list(&ListParams::default().labels("berth.dev/runtime=web"))
        .await
        .expect("replicasets")
        .items
        .into_iter()
        .next()
        .expect("the Runtime's ReplicaSet");
    let rs_name = rs.metadata.name.clone().expect("name");
    replica_sets
        .patch(
            &rs_name,
            &intruder,
            &Patch::Merge(
                &json!({"metadata": {"labels": {"app.kubernetes.io/component": "kept"}}}),
            ),
        )
        .await
        .expect("relabel");
    wait_for_value("the ReplicaSet orphaned", WAIT, || {
        let replica_sets = replica_sets.clone();
        let rs_name = rs_name.clone();
        async move {
            let rs = replica_sets.get(&rs_name).await.ok()?;
            rs.metadata
                .owner_references
                .unwrap_or_default()
                .iter()
                .all(|r| r.controller != Some(true))
                .then_some(())
        }
    })
    .await;
    let orphan_rs = format!("ReplicaSet/{n}/{rs_name}");
    exposed(
        &ns,
        "web",
        "True",
        "Orphaned",
        std::slice::from_ref(&orphan_rs),
    )
    .await;
    wait_event(&ns, "web", "Orphaned", true).await;

    // The console, with its own rights: Retained shows it as an orphan,
    // and `berth check` names it.
    let retained = berth_json(&ns, &lease, &["get", "retained", "-o", "json"]).await;
    let row = retained["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|r| r["kind"] == "ReplicaSet" && r["name"] == rs_name.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("Retained lists the orphan: {retained:#}"));
    assert!(
        row["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("orphan on granted class") && r.contains(&bw)),
        "{row:#}"
    );
    let check = berth_json(&ns, &lease, &["check", "-o", "json"]).await;
    let finding = check["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|f| f["kind"] == "orphan-on-granted-class")
        .cloned()
        .unwrap_or_else(|| panic!("berth check names the orphan: {check:#}"));
    assert!(
        finding["objects"]
            .as_array()
            .is_some_and(|o| o.iter().any(|x| *x == orphan_rs)),
        "{finding:#}"
    );
    assert!(
        finding["objects"]
            .as_array()
            .is_some_and(|o| o.iter().any(|x| *x == format!("RuntimeClass/{class}"))),
        "{finding:#}"
    );

    delete::<ReplicaSet>(&ns, &rs_name).await;
    exposed(&ns, "web", "False", "AsExpected", &[]).await;
    rolled_out(&ns.client, n, "web", 1).await;

    // An orphaned pod: without its `pod-template-hash` its ReplicaSet's
    // selector lets it go (and makes another); it runs on, on the granted
    // class, seen with `--watch-bare-pods`.
    let pod = server_pods(&ns, "web")
        .await
        .into_iter()
        .find(|p| p.metadata.deletion_timestamp.is_none())
        .expect("a server pod");
    let pod_name = pod.metadata.name.clone().expect("name");
    Api::<Pod>::namespaced(ns.client.clone(), n)
        .patch(
            &pod_name,
            &intruder,
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "remove", "path": "/metadata/labels/pod-template-hash"}
                ]))
                .expect("patch"),
            ),
        )
        .await
        .expect("remove pod-template-hash");
    let orphan_pod = format!("Pod/{n}/{pod_name}");
    exposed(
        &ns,
        "web",
        "True",
        "Orphaned",
        std::slice::from_ref(&orphan_pod),
    )
    .await;
    let retained = berth_json(&ns, &lease, &["get", "retained", "-o", "json"]).await;
    assert!(
        retained["items"]
            .as_array()
            .is_some_and(|items| items.iter().any(|r| r["kind"] == "Pod"
                && r["name"] == pod_name.as_str()
                && r["reason"]
                    .as_str()
                    .is_some_and(|x| x.starts_with("orphan")))),
        "{retained:#}"
    );
    // Its ReplicaSet replaced it: settled once that pod is Ready (the
    // Runtime's status says so), then nothing more is written.
    rolled_out(&ns.client, n, "web", 1).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    quiet(&agent).await;
    delete::<Pod>(&ns, &pod_name).await;
    exposed(&ns, "web", "False", "AsExpected", &[]).await;
}
