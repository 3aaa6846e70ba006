//! No Pod permissions by default (issue 27, point 9). The shipped RBAC
//! gives the agent no right on Pods (checked by impersonation, as a
//! SubjectAccessReview for its ServiceAccount); an agent running with
//! exactly that RBAC becomes ready, reconciles, and says on its
//! RuntimeGrants that bare pods were not checked instead of leaving them out
//! silently; it may list and watch EndpointSlices (the exposure check)
//! and nothing more. With the opt-in component (`assets/rbac/pods`) and
//! `--watch-bare-pods` it counts a bare pod as a retained workload.

use std::time::Duration;

use berth_shared::api::RuntimeGrant;
use berth_tests::harness::{TestNamespace, wait_for_value};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::json;

use crate::agent_lifecycle::{agent_kubeconfig, delete_rbac, install_shipped_rbac};
use crate::agent_support::{
    Agent, AgentOpts, binding, create_runtime, setup, wait_condition, write_grants,
};

const WAIT: Duration = Duration::from_secs(120);

/// Whether the API server lets the test's agent ServiceAccount `verb`
/// `resource` (group `group`) in `namespace` (`None`: cluster-wide).
async fn can(
    ns: &TestNamespace,
    verb: &str,
    group: &str,
    resource: &str,
    namespace: Option<&str>,
) -> bool {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(format!("system:serviceaccount:{}:berth-agent", ns.name)),
            groups: Some(vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{}", ns.name),
                "system:authenticated".into(),
            ]),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                group: Some(group.into()),
                resource: Some(resource.into()),
                namespace: namespace.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<SubjectAccessReview>::all(ns.client.clone())
        .create(&PostParams::default(), &review)
        .await
        .expect("SubjectAccessReview")
        .status
        .is_some_and(|s| s.allowed)
}

/// The opt-in component's ClusterRole and binding, for the test's
/// ServiceAccount (names prefixed with the namespace).
async fn install_pods_component(ns: &TestNamespace) -> (Vec<String>, Vec<String>) {
    let text = include_str!("../../assets/rbac/pods/agent-pods.yaml");
    let (mut roles, mut bindings) = (Vec::new(), Vec::new());
    for doc in yaml_serde::Deserializer::from_str(text) {
        let mut v: serde_json::Value =
            serde::Deserialize::deserialize(doc).expect("agent-pods.yaml");
        let name = format!(
            "{}-{}",
            ns.name,
            v["metadata"]["name"].as_str().expect("name")
        );
        v["metadata"]["name"] = json!(name);
        match v["kind"].as_str() {
            Some("ClusterRole") => {
                let r: ClusterRole = serde_json::from_value(v).expect("role");
                Api::<ClusterRole>::all(ns.client.clone())
                    .create(&PostParams::default(), &r)
                    .await
                    .expect("create role");
                roles.push(name);
            }
            Some("ClusterRoleBinding") => {
                v["roleRef"]["name"] = json!(format!(
                    "{}-{}",
                    ns.name,
                    v["roleRef"]["name"].as_str().expect("roleRef")
                ));
                v["subjects"][0]["namespace"] = json!(ns.name);
                let b: ClusterRoleBinding = serde_json::from_value(v).expect("binding");
                Api::<ClusterRoleBinding>::all(ns.client.clone())
                    .create(&PostParams::default(), &b)
                    .await
                    .expect("create binding");
                bindings.push(name);
            }
            other => panic!("unexpected kind {other:?} in agent-pods.yaml"),
        }
    }
    (roles, bindings)
}

/// A bare pod and an unmanaged Deployment, both naming `class`: retained
/// workloads of its handler (neither is covered by a grant).
async fn plant_workloads(ns: &TestNamespace, class: &str) {
    let spec = json!({"runtimeClassName": class, "containers": [{"name": "a", "image": "x"}]});
    let pod: Pod =
        serde_json::from_value(json!({"metadata": {"name": "bare"}, "spec": spec})).expect("pod");
    Api::<Pod>::namespaced(ns.client.clone(), &ns.name)
        .create(&PostParams::default(), &pod)
        .await
        .expect("bare pod");
    let dep: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "legacy"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "legacy"}},
            "template": {"metadata": {"labels": {"app": "legacy"}}, "spec": spec}}
    }))
    .expect("deployment");
    Api::<Deployment>::namespaced(ns.client.clone(), &ns.name)
        .create(&PostParams::default(), &dep)
        .await
        .expect("legacy deployment");
}

fn bare_pods_checked(status: &berth_shared::api::RuntimeGrantStatus) -> Option<&Condition> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == "BarePodsChecked")
}

/// Waits until the grant lists the Deployment `legacy` as retained (the
/// analysis has run over the workloads), and returns its status.
async fn grant_status(ns: &TestNamespace, alias: &str) -> berth_shared::api::RuntimeGrantStatus {
    let api: Api<RuntimeGrant> = Api::all(ns.client.clone());
    wait_for_value("RuntimeGrant status with retained workloads", WAIT, || {
        let api = api.clone();
        async move {
            let s = api.get_opt(alias).await.ok()??.status?;
            (s.retained.iter().any(|w| w.name == "legacy") && bare_pods_checked(&s).is_some())
                .then_some(s)
        }
    })
    .await
}

#[tokio::test]
async fn agent_pods_none_by_default_and_the_grant_says_bare_pods_were_not_checked() {
    let (ns, class) = setup("agent-nopods").await;
    let alias = format!("{}-bw", ns.name);
    let grants = write_grants(&[binding(&alias, &class, "bounded-runc")]);
    let (roles, bindings) = install_shipped_rbac(&ns.client, &ns.name, |_| {}).await;

    // Control first: the authorizer sees the shipped binding (it may list
    // Deployments), so the refusals below are about Pods, not a binding
    // not seen yet.
    berth_tests::harness::wait_for("the shipped RBAC is in effect", WAIT, || {
        let ns = &ns;
        async move { can(ns, "list", "apps", "deployments", None).await }
    })
    .await;
    // Impersonation: the agent's ServiceAccount may not read Pods, anywhere.
    for (verb, namespace) in [
        ("list", None),
        ("watch", None),
        ("get", None),
        ("list", Some(ns.name.as_str())),
        ("watch", Some(ns.name.as_str())),
    ] {
        assert!(
            !can(&ns, verb, "", "pods", namespace).await,
            "the shipped RBAC lets the agent {verb} pods in {namespace:?}"
        );
    }

    // The exposure check's EndpointSlice watch (issue 52): list and
    // watch, nothing more.
    for (verb, allowed) in [
        ("list", true),
        ("watch", true),
        ("get", false),
        ("create", false),
        ("patch", false),
        ("delete", false),
    ] {
        assert_eq!(
            can(&ns, verb, "discovery.k8s.io", "endpointslices", None).await,
            allowed,
            "the shipped RBAC and {verb} on endpointslices"
        );
    }

    plant_workloads(&ns, &class).await;
    let kubeconfig = agent_kubeconfig(&ns, &grants).await;
    let mut opts = AgentOpts::new(&ns.name, Some(&grants));
    opts.kubeconfig = Some(kubeconfig);
    let agent = Agent::start(opts).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": alias, "replicas": 1})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;

    let status = grant_status(&ns, &alias).await;
    let c = bare_pods_checked(&status).expect("BarePodsChecked");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "NoPodAccess")
    );
    assert!(
        c.message
            .contains("bare pods not checked (agent has no Pod access)"),
        "{}",
        c.message
    );
    assert!(
        status.retained.iter().all(|w| w.kind != "Pod"),
        "{:?}",
        status.retained
    );
    let log = agent.log_text();
    assert!(
        !log.to_lowercase().contains("forbidden"),
        "the agent asked for something its RBAC does not give:\n{log}"
    );
    drop(agent);
    delete_rbac(&ns.client, roles, bindings).await;
}

#[tokio::test]
async fn agent_pods_opt_in_component_and_flag_count_bare_pods() {
    let (ns, class) = setup("agent-pods").await;
    let alias = format!("{}-bw", ns.name);
    let grants = write_grants(&[binding(&alias, &class, "bounded-runc")]);
    let (mut roles, mut bindings) = install_shipped_rbac(&ns.client, &ns.name, |_| {}).await;
    let (r, b) = install_pods_component(&ns).await;
    roles.extend(r);
    bindings.extend(b);
    // The authorizer sees a new binding after its informer does.
    berth_tests::harness::wait_for(
        "the component lets the agent list and watch pods",
        WAIT,
        || {
            let ns = &ns;
            async move {
                can(ns, "list", "", "pods", None).await && can(ns, "watch", "", "pods", None).await
            }
        },
    )
    .await;
    // Still never written.
    assert!(!can(&ns, "delete", "", "pods", Some(ns.name.as_str())).await);
    assert!(!can(&ns, "get", "", "pods", Some(ns.name.as_str())).await);

    plant_workloads(&ns, &class).await;
    let kubeconfig = agent_kubeconfig(&ns, &grants).await;
    let mut opts = AgentOpts::new(&ns.name, Some(&grants));
    opts.kubeconfig = Some(kubeconfig);
    opts.extra_args = vec!["--watch-bare-pods".into()];
    let agent = Agent::start(opts).await;
    create_runtime(&ns, "web", json!({"runtimeProfile": alias, "replicas": 1})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;

    let api: Api<RuntimeGrant> = Api::all(ns.client.clone());
    let status = wait_for_value("the bare pod retained", WAIT, || {
        let api = api.clone();
        let alias = alias.clone();
        async move {
            let s = api.get_opt(&alias).await.ok()??.status?;
            s.retained
                .iter()
                .any(|w| w.kind == "Pod" && w.name == "bare")
                .then_some(s)
        }
    })
    .await;
    let c = bare_pods_checked(&status).expect("BarePodsChecked");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "PodsWatched")
    );
    let log = agent.log_text();
    assert!(!log.to_lowercase().contains("forbidden"), "{log}");
    drop(agent);
    let _ = Api::<Pod>::namespaced(ns.client.clone(), &ns.name)
        .delete("bare", &DeleteParams::default())
        .await;
    delete_rbac(&ns.client, roles, bindings).await;
}
