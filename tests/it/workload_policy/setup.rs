//! The fixture of the workload policy tests: namespaces, classes, a grant,
//! the adversaries' RBAC, a workload that predates the policy, the shipped
//! policy narrowed to this test, and object builders for every kind.

use std::time::Duration;

use berth_tests::harness::{self, TestNamespace, cluster, install_crds, restricted_client};
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Pod, PodTemplate, ServiceAccount};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use serde::Deserialize as _;
use serde_json::{Value, json};

use crate::support::webhook::{AGENT_USER, refusal, unique};

pub(super) const WAIT: Duration = Duration::from_secs(120);
/// Narrows the binding to this test's namespaces and RuntimeGrants.
pub(super) const LABEL: &str = "berth.dev/it-wlp";
/// The operator's exemption label (the shipped binding's selector).
pub(super) const EXEMPT: &str = "berth.dev/runtime-class-policy";
/// The local cluster's kube-controller-manager user.
pub(super) const LOCAL_CONTROLLER_MANAGER: &str = "berth-admin";
pub(super) const SHIPPED: &str =
    include_str!("../../../assets/admission/workload-runtimeclass-policy.yaml");

pub(super) fn shipped(kind: &str) -> Value {
    yaml_serde::Deserializer::from_str(SHIPPED)
        .map(|d| {
            serde_json::to_value(yaml_serde::Value::deserialize(d).expect("yaml")).expect("json")
        })
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("{kind} in workload-runtimeclass-policy.yaml"))
}

/// A client impersonating `user` in `groups` (admin impersonation).
pub(super) async fn impersonating(user: &str, groups: &[&str]) -> Client {
    let kc = Kubeconfig::read_from(&cluster().kubeconfig).expect("kubeconfig");
    let mut config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    config.auth_info.impersonate = Some(user.into());
    config.auth_info.impersonate_groups = Some(groups.iter().map(|g| g.to_string()).collect());
    Client::try_from(config).expect("impersonating client")
}

/// The kinds the policy guards, with a builder for an object of each that
/// names `class` (or none).
pub(super) const KINDS: &[&str] = &[
    "Pod",
    "PodTemplate",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
];

pub(super) fn resource(kind: &str) -> ApiResource {
    match kind {
        "Pod" => ApiResource::erase::<Pod>(&()),
        "PodTemplate" => ApiResource::erase::<PodTemplate>(&()),
        "Deployment" => ApiResource::erase::<Deployment>(&()),
        "ReplicaSet" => ApiResource::erase::<ReplicaSet>(&()),
        "StatefulSet" => ApiResource::erase::<StatefulSet>(&()),
        "DaemonSet" => ApiResource::erase::<DaemonSet>(&()),
        "Job" => ApiResource::erase::<Job>(&()),
        "CronJob" => ApiResource::erase::<CronJob>(&()),
        other => panic!("unknown kind {other}"),
    }
}

pub(super) fn pod_spec(class: Option<&str>, restart: &str) -> Value {
    let mut spec = json!({
        "restartPolicy": restart,
        "containers": [{"name": "c", "image": "registry.invalid/it/app:1"}]
    });
    if let Some(c) = class {
        spec["runtimeClassName"] = json!(c);
    }
    spec
}

pub(super) fn workload(kind: &str, name: &str, class: Option<&str>) -> DynamicObject {
    let labels = json!({"app": name});
    let template =
        |restart: &str| json!({"metadata": {"labels": labels}, "spec": pod_spec(class, restart)});
    let selector = json!({"matchLabels": labels});
    let ar = resource(kind);
    let body = match kind {
        "Pod" => json!({"spec": pod_spec(class, "Always")}),
        "PodTemplate" => json!({"template": template("Always")}),
        "Deployment" | "ReplicaSet" | "DaemonSet" => {
            json!({"spec": {"selector": selector, "template": template("Always")}})
        }
        "StatefulSet" => {
            json!({"spec": {"serviceName": name, "selector": selector, "template": template("Always")}})
        }
        "Job" => json!({"spec": {"template": template("Never")}}),
        "CronJob" => json!({"spec": {"schedule": "0 0 1 1 *",
            "jobTemplate": {"spec": {"template": template("Never")}}}}),
        other => panic!("unknown kind {other}"),
    };
    let mut v = body;
    v["apiVersion"] = json!(ar.api_version);
    v["kind"] = json!(kind);
    v["metadata"] = json!({"name": name, "labels": labels});
    serde_json::from_value(v).expect("object")
}

pub(super) async fn create(
    client: &Client,
    ns: &str,
    obj: &DynamicObject,
    dry_run: bool,
) -> Result<DynamicObject, kube::Error> {
    let kind = &obj.types.as_ref().expect("types").kind;
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource(kind));
    let pp = PostParams {
        dry_run,
        ..Default::default()
    };
    api.create(&pp, obj).await
}

pub(super) fn patch_params(dry_run: bool) -> PatchParams {
    PatchParams {
        dry_run,
        ..Default::default()
    }
}

/// Refused by this policy (403) as a granted class, for `what`: the
/// message names `class`, its RuntimeGrant and the runtimeProfile to ask
/// for instead.
pub(super) fn assert_refused<T: std::fmt::Debug>(
    result: Result<T, kube::Error>,
    what: &str,
    class: &str,
    grant: &str,
) {
    let msg = assert_refused_saying(
        result,
        what,
        &format!("RuntimeClass {class} is granted through berth (RuntimeGrant {grant})"),
    );
    assert!(
        msg.contains(&format!("spec.runtimeProfile: {grant}")),
        "{what}: {msg}"
    );
}

/// Refused (403) with a message that says `says`, for `what`; the message,
/// for what else it must say.
pub(super) fn assert_refused_saying<T: std::fmt::Debug>(
    result: Result<T, kube::Error>,
    what: &str,
    says: &str,
) -> String {
    let (code, msg) = refusal(result, what);
    assert_eq!(code, 403, "{what}: {msg}");
    assert!(msg.contains(says), "{what}: {msg}");
    msg
}

pub(super) fn admitted<T>(result: Result<T, kube::Error>, what: &str) -> T {
    result.unwrap_or_else(|e| panic!("{what}: refused: {e}"))
}

pub(super) struct Setup {
    pub id: String,
    pub ns: TestNamespace,
    pub exempt: TestNamespace,
    pub granted: String,
    pub ungranted: String,
    pub grant: String,
    /// The granted class's handler.
    pub handler: String,
}

impl Setup {
    pub async fn cleanup(&self) {
        let admin = &self.ns.client;
        let dp = DeleteParams::default();
        let _ = Api::<ValidatingAdmissionPolicyBinding>::all(admin.clone())
            .delete(&self.id, &dp)
            .await;
        let _ = Api::<ValidatingAdmissionPolicy>::all(admin.clone())
            .delete(&self.id, &dp)
            .await;
        let grants = Api::<DynamicObject>::all_with(admin.clone(), &grant_resource());
        let _ = grants.delete(&self.grant, &dp).await;
        for class in [&self.granted, &self.ungranted] {
            let _ = Api::<RuntimeClass>::all(admin.clone())
                .delete(class, &dp)
                .await;
        }
    }
}

pub(super) fn grant_resource() -> ApiResource {
    ApiResource::erase::<berth_shared::api::RuntimeGrant>(&())
}

/// Namespaces, classes, a grant, the adversaries' RBAC, a workload that
/// predates the policy, then the policy (waited for until in force).
pub(super) async fn setup() -> Setup {
    let id = unique("wlp");
    let ns = TestNamespace::with_labels("wlp", &[(LABEL, id.as_str())]).await;
    let exempt =
        TestNamespace::with_labels("wlp-ex", &[(LABEL, id.as_str()), (EXEMPT, "exempt")]).await;
    let admin = ns.client.clone();
    install_crds(&admin).await;
    let pp = PostParams::default();

    let granted = format!("{id}-granted");
    let ungranted = format!("{id}-free");
    // Each class its own handler, unique to the test: the policy judges a
    // RuntimeClass by its handler too (a second class on the granted
    // handler is refused), and RuntimeClasses are cluster-wide.
    let handler = format!("{id}-h");
    for (class, h) in [
        (&granted, handler.clone()),
        (&ungranted, format!("{id}-free-h")),
    ] {
        let rc: RuntimeClass =
            serde_json::from_value(json!({"metadata": {"name": class}, "handler": h}))
                .expect("class");
        Api::<RuntimeClass>::all(admin.clone())
            .create(&pp, &rc)
            .await
            .expect("RuntimeClass");
    }
    let grant = format!("{id}-bw");
    let rg: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "RuntimeGrant",
        "metadata": {"name": grant, "labels": {LABEL: id}},
        "spec": {"project": "demo", "environment": "production", "application": "analytics",
            "service": "worker", "runtimeClass": granted, "handler": handler}
    }))
    .expect("grant");
    Api::<DynamicObject>::all_with(admin.clone(), &grant_resource())
        .create(&pp, &rg)
        .await
        .expect("RuntimeGrant");

    // Every workload verb for the restricted user, an intruder
    // ServiceAccount and the agent's ServiceAccount, in both namespaces.
    for n in [&ns, &exempt] {
        workload_rbac(&admin, &n.name, &ns.name).await;
    }
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "intruder"}})).expect("sa");
    Api::<ServiceAccount>::namespaced(admin.clone(), &ns.name)
        .create(&pp, &sa)
        .await
        .expect("intruder ServiceAccount");

    // Before the policy: a workload berth does not manage, on the class
    // that is (now) granted. The controllers give it its pod.
    let mut legacy = workload("Deployment", "legacy", Some(&granted));
    legacy.data["spec"]["replicas"] = json!(1);
    // Burstable, so that a resize keeps its QoS class (which the apiserver
    // requires) and only the policy can refuse it.
    legacy.data["spec"]["template"]["spec"]["containers"][0]["resources"] = json!({
        "requests": {"cpu": "100m", "memory": "64Mi"},
        "limits": {"cpu": "200m", "memory": "64Mi"}});
    create(&admin, &ns.name, &legacy, false)
        .await
        .expect("legacy Deployment before the policy");
    wait_pods(&ns, "legacy", &granted, 1).await;

    install_policy(&admin, &id, AGENT_USER, json!({"matchLabels": {LABEL: id}})).await;

    // In force (and RBAC too) when the restricted user's dry-run of a Pod
    // on the granted class is refused by the policy.
    let restricted = restricted_client().await;
    let probe = workload("Pod", "probe", Some(&granted));
    harness::wait_for("the policy to take effect", WAIT, || {
        let (restricted, probe, ns) = (restricted.clone(), probe.clone(), ns.name.clone());
        async move {
            matches!(create(&restricted, &ns, &probe, true).await,
                Err(kube::Error::Api(s)) if s.message.contains("granted through berth"))
        }
    })
    .await;
    let typed = Api::<ValidatingAdmissionPolicy>::all(admin.clone())
        .get(&id)
        .await
        .expect("policy");
    eprintln!("policy status: {:?}", typed.status);

    Setup {
        id,
        ns,
        exempt,
        granted,
        ungranted,
        grant,
        handler,
    }
}

/// Waits until `app`'s pods (created by the controllers) number `n`, all
/// on `class`.
pub(super) async fn wait_pods(ns: &TestNamespace, app: &str, class: &str, n: usize) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let lp = ListParams::default().labels(&format!("app={app}"));
    harness::wait_for_value(&format!("{n} pods of {app}"), WAIT, || {
        let (pods, lp) = (pods.clone(), lp.clone());
        async move {
            let list = pods.list(&lp).await.ok()?.items;
            let live: Vec<Pod> = list
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .collect();
            (live.len() == n
                && live.iter().all(|p| {
                    p.spec
                        .as_ref()
                        .and_then(|s| s.runtime_class_name.as_deref())
                        == Some(class)
                }))
            .then_some(live)
        }
    })
    .await
}

/// The shipped policy and binding, renamed `id`, with `agent` as the
/// agent's user, the local controller-manager added to the controllers,
/// the binding narrowed to namespaces labelled `LABEL=id` and to the
/// RuntimeGrants `params` selects.
pub(super) async fn install_policy(admin: &Client, id: &str, agent: &str, params: Value) {
    install_policy_excluding(admin, id, agent, params, json!([])).await;
}

/// [`install_policy`], the binding also excluding `exclude` (its
/// `matchResources.excludeResourceRules`).
pub(super) async fn install_policy_excluding(
    admin: &Client,
    id: &str,
    agent: &str,
    params: Value,
    exclude: Value,
) {
    let pp = PostParams::default();
    let mut policy = shipped("ValidatingAdmissionPolicy");
    policy["metadata"]["name"] = json!(id);
    let vars = policy["spec"]["variables"]
        .as_array_mut()
        .expect("variables");
    let controllers = vars
        .iter_mut()
        .find(|v| v["name"] == "controllerUsernames")
        .expect("controllerUsernames");
    let list = controllers["expression"]
        .as_str()
        .expect("expression")
        .to_string();
    controllers["expression"] = json!(format!("{list} + ['{LOCAL_CONTROLLER_MANAGER}']"));
    let agent_var = vars
        .iter_mut()
        .find(|v| v["name"] == "agentUsername")
        .expect("agentUsername");
    assert_eq!(agent_var["expression"], json!(format!("'{AGENT_USER}'")));
    agent_var["expression"] = json!(format!("'{agent}'"));
    let mut binding = shipped("ValidatingAdmissionPolicyBinding");
    binding["metadata"]["name"] = json!(id);
    binding["spec"]["policyName"] = json!(id);
    assert_eq!(binding["spec"]["paramRef"]["selector"], json!({}));
    binding["spec"]["paramRef"]["selector"] = params;
    binding["spec"]["matchResources"]["namespaceSelector"]["matchLabels"] = json!({LABEL: id});
    binding["spec"]["matchResources"]["excludeResourceRules"] = exclude;
    let policy: ValidatingAdmissionPolicy = serde_json::from_value(policy).expect("policy");
    let binding: ValidatingAdmissionPolicyBinding =
        serde_json::from_value(binding).expect("binding");
    Api::<ValidatingAdmissionPolicy>::all(admin.clone())
        .create(&pp, &policy)
        .await
        .expect("policy");
    Api::<ValidatingAdmissionPolicyBinding>::all(admin.clone())
        .create(&pp, &binding)
        .await
        .expect("binding");
}

/// Deletes the policy and binding named `id` (the binding first).
pub(super) async fn remove_policy(admin: &Client, id: &str) {
    let dp = DeleteParams::default();
    let _ = Api::<ValidatingAdmissionPolicyBinding>::all(admin.clone())
        .delete(id, &dp)
        .await;
    let _ = Api::<ValidatingAdmissionPolicy>::all(admin.clone())
        .delete(id, &dp)
        .await;
}

/// Every workload verb in `namespace` for the restricted user, the
/// ServiceAccount `intruder` of `intruder_ns`, and the agent's
/// ServiceAccount.
pub(super) async fn workload_rbac(admin: &Client, namespace: &str, intruder_ns: &str) {
    let pp = PostParams::default();
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "workloads"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods", "pods/ephemeralcontainers", "pods/resize", "podtemplates"],
             "verbs": ["get", "list", "create", "update", "patch", "delete"]},
            {"apiGroups": ["apps"], "resources": ["deployments", "replicasets", "statefulsets",
                "daemonsets", "deployments/scale"],
             "verbs": ["get", "list", "create", "update", "patch", "delete"]},
            {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"],
             "verbs": ["get", "list", "create", "update", "patch", "delete"]}
        ]
    }))
    .expect("role");
    Api::<Role>::namespaced(admin.clone(), namespace)
        .create(&pp, &role)
        .await
        .expect("role");
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "workloads"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "workloads"},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "berth-restricted"},
            {"kind": "ServiceAccount", "name": "intruder", "namespace": intruder_ns},
            {"kind": "ServiceAccount", "name": "berth-agent", "namespace": "berth-system"}
        ]
    }))
    .expect("binding");
    Api::<RoleBinding>::namespaced(admin.clone(), namespace)
        .create(&pp, &binding)
        .await
        .expect("role binding");
}

/// A namespace where the agent runs on a grant of its class, under the
/// shipped policy (every RuntimeGrant a parameter; only this namespace
/// checked), with the restricted user's workload RBAC there. The test
/// agent sends as the admin, so the policy is told that user is the agent
/// (as the local controller-manager is).
pub(super) struct UnderPolicy {
    pub id: String,
    pub ns: TestNamespace,
    pub class: String,
    /// The grant's alias (the Runtime's `runtimeProfile`).
    pub grant: String,
    pub agent: crate::agent_support::Agent,
    pub restricted: Client,
}

impl UnderPolicy {
    /// Starts it, and waits until the policy is in force.
    pub(super) async fn start(prefix: &str) -> Self {
        use crate::agent_support::{Agent, AgentOpts, binding, write_grants};
        use k8s_openapi::api::core::v1::Namespace;
        use kube::api::Patch;

        let id = unique(prefix);
        let (ns, class) = crate::agent_support::setup(prefix).await;
        let admin = ns.client.clone();
        Api::<Namespace>::all(admin.clone())
            .patch(
                &ns.name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {LABEL: id}}})),
            )
            .await
            .expect("label the namespace");
        workload_rbac(&admin, &ns.name, &ns.name).await;
        let grant = format!("{}-bw", ns.name);
        let grants = write_grants(&[binding(&grant, &class, "bounded-runc")]);
        let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
        // RuntimeClasses are cluster-scoped, so the namespace selector does
        // not narrow them: with every RuntimeGrant a parameter, this
        // binding would refuse every parallel test's class on a granted
        // handler (CI saw it refuse another test's setup). The RuntimeClass
        // rule is tested with a handler of its own
        // (`resize_ownership_and_a_second_class_on_the_handler_are_refused`).
        let no_classes = json!([{"apiGroups": ["node.k8s.io"], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["runtimeclasses"]}]);
        install_policy_excluding(&admin, &id, LOCAL_CONTROLLER_MANAGER, json!({}), no_classes)
            .await;
        let s = UnderPolicy {
            id,
            ns,
            class,
            grant,
            agent,
            restricted: restricted_client().await,
        };
        harness::wait_for(
            "the policy in force with the agent's RuntimeGrant",
            WAIT,
            || s.refuses_now(),
        )
        .await;
        s
    }

    /// Whether the policy now refuses the restricted user a Deployment on
    /// the class.
    pub(super) async fn refuses_now(&self) -> bool {
        policy_refuses(&self.restricted, &self.ns.name, &self.class).await
    }
}

/// Whether the policy refuses `restricted` a Deployment on `class` in
/// `ns` (a dry run).
pub(super) async fn policy_refuses(restricted: &Client, ns: &str, class: &str) -> bool {
    let probe = workload("Deployment", "probe", Some(class));
    matches!(create(restricted, ns, &probe, true).await,
        Err(kube::Error::Api(s)) if s.message.contains("granted through berth"))
}
