//! berth as an operator installs it (issue 55, item 1): the agent's image
//! built by `assets/image/build.sh` (the static release build, the
//! `image::` tests' build), imported into the real node's containerd and
//! named by digest, installed with `helm install` from `assets/chart/berth`
//! into `berth-system` under Pod Security `restricted`, with the grants
//! Secret and default values (set: the image; the real node's toleration
//! and selector; the local controller-manager's user among the workload
//! policy's controllers, see `this_cluster_values`). No berth process runs
//! on the host but the console and this test. Then, on the real node:
//! - both agent pods become Ready and one holds the Lease;
//! - the API server calls the webhook through its Service (the agent's own
//!   ValidatingWebhookConfiguration names the Service, no URL): a Runtime
//!   asking for an ungranted profile is refused with berth's message;
//! - a granted Runtime rolls out on the node under its class;
//! - `berth get runtimes`, run here with the kubeconfig, shows it Ready;
//! - deleting the leader's pod (as `kubectl delete pod` does) hands the
//!   Lease to the other replica within the lease duration;
//! - the PodDisruptionBudget holds: with the node cordoned (a drain), the
//!   first eviction is allowed and the second, with one replica left, is
//!   refused.
//!
//! The chart's NetworkPolicy (off by default) is not exercised: the node's
//! bridge CNI enforces no NetworkPolicy (docs/local-cluster.md, "Real node").
//!
//! How a pod reaches the API server and the API server a Service with no
//! kube-proxy: docs/local-cluster.md ("Real node"). The test takes the real
//! node alone (`real_node::NODE`): the release's agent is cluster-wide and
//! its admission policies judge every namespace; it is uninstalled after.
//! The real-node cluster is one of its own (`harness::real_node_cluster`),
//! used only by the tests that take `NODE`, so no other test's agent meets
//! the release.

mod previous;
mod release;
mod upgrade;

use std::time::{Duration, Instant};

use berth_shared::api::Runtime;
use berth_tests::harness::{SharedCluster, TestNamespace, wait_for_value};
use berth_tests::localcluster::realnode::{LABEL_KEY, TAINT_KEY};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use crate::agent_support::{
    APPLICATION, binding_for_service, create_class, runtime_of, wait_condition_within,
};
use crate::real_node::{self, NODE, WAIT};
use release::{AGENT, NAMESPACE, Release};

/// The agent's image as the chart takes it.
pub(crate) struct Image {
    pub(crate) repository: String,
    pub(crate) tag: String,
    pub(crate) digest: String,
}

/// The local cluster's kube-controller-manager user (its admin
/// certificate's).
const LOCAL_CONTROLLER_MANAGER: &str = "berth-admin";

/// Container states that will not become Ready by waiting: the test stops
/// at once, with the kubelet's own message (a wrong digest gives
/// `ErrImagePull`: there is no registry to pull from).
const STUCK: [&str; 6] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "ErrImageNeverPull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
];

/// The agent's pods (not its canaries'), as the API server lists them.
async fn agent_pods(client: &Client) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default().labels(&format!("app.kubernetes.io/name={AGENT}")))
        .await
        .map(|l| l.items)
        .unwrap_or_default()
}

fn name_of(p: &Pod) -> String {
    p.metadata.name.clone().unwrap_or_default()
}

fn is_ready(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_none()
        && p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Panics with the kubelet's reason when an agent container is stuck.
fn fail_if_stuck(pods: &[Pod]) {
    for p in pods {
        let statuses = p
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref());
        for cs in statuses.into_iter().flatten() {
            if let Some(w) = cs.state.as_ref().and_then(|s| s.waiting.as_ref())
                && let Some(reason) = w.reason.as_deref()
                && STUCK.contains(&reason)
            {
                panic!(
                    "agent pod {} cannot start: {reason}: {}",
                    name_of(p),
                    w.message.as_deref().unwrap_or_default()
                );
            }
        }
    }
}

/// Waits until `n` agent pods are Ready on `node`; returns their names.
async fn ready_agents(client: &Client, node: &str, n: usize) -> Vec<String> {
    wait_for_value(&format!("{n} agent pods Ready on {node}"), WAIT, || async {
        let pods = agent_pods(client).await;
        fail_if_stuck(&pods);
        let ready: Vec<String> = pods
            .iter()
            .filter(|p| is_ready(p))
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
            .map(name_of)
            .collect();
        (ready.len() == n).then_some(ready)
    })
    .await
}

/// The Lease's holder and duration, once held by one of `among`.
async fn holder(client: &Client, among: &[String]) -> (String, i32) {
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    wait_for_value("the agent's Lease held by a Ready pod", WAIT, || async {
        let spec = leases.get(AGENT).await.ok()?.spec?;
        let who = spec.holder_identity?;
        among
            .contains(&who)
            .then(|| (who, spec.lease_duration_seconds.unwrap_or_default()))
    })
    .await
}

/// A client of `kubeconfig` that does not retry: kube's default client
/// retries a 429 up to 15 times over minutes (`Config::default_retry`),
/// and an eviction's 429 is the answer here, not a transient failure.
async fn client_without_retries(kubeconfig: &std::path::Path) -> Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    config.default_retry = false;
    Client::try_from(config).expect("client")
}

/// POST an Eviction of pod `name` (what `kubectl drain` sends).
async fn evict(client: &Client, name: &str) -> Result<String, kube::Error> {
    let body = json!({
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": NAMESPACE},
    });
    let req = http::Request::post(format!(
        "/api/v1/namespaces/{NAMESPACE}/pods/{name}/eviction"
    ))
    .header("content-type", "application/json")
    .body(serde_json::to_vec(&body).expect("json"))
    .expect("request");
    client.request_text(req).await
}

async fn pdb_status(client: &Client) -> Option<(i32, i32)> {
    let pdb = Api::<PodDisruptionBudget>::namespaced(client.clone(), NAMESPACE)
        .get(AGENT)
        .await
        .ok()?;
    let s = pdb.status?;
    Some((s.current_healthy, s.disruptions_allowed))
}

/// The image `image::` builds, imported into the real node by digest.
async fn imported_image(info: &berth_tests::localcluster::realnode::RealNodesInfo) -> Image {
    let built = tokio::task::spawn_blocking(crate::image::image)
        .await
        .expect("build the image");
    import(info, &built.archive, &built.reference)
}

/// The image in the OCI archive `archive` (named `reference` in it),
/// imported into the real node; by digest, as the chart takes it.
fn import(
    info: &berth_tests::localcluster::realnode::RealNodesInfo,
    archive: &std::path::Path,
    reference: &str,
) -> Image {
    let by_digest = info
        .import_image(archive)
        .unwrap_or_else(|e| panic!("importing {}: {e}", archive.display()));
    let (repository, digest) = by_digest.split_once('@').expect("by digest");
    let tag = reference
        .rsplit_once(':')
        .map(|(_, t)| t.to_string())
        .expect("tagged");
    Image {
        repository: repository.to_string(),
        tag,
        digest: digest.to_string(),
    }
}

/// The release namespace (restricted) with the grants Secret: `service`
/// of the test namespace granted `class` on `bounded-runc`.
async fn release_namespace(client: &Client, grants: &str) {
    TestNamespace::create(
        client.clone(),
        NAMESPACE.to_string(),
        &[
            ("pod-security.kubernetes.io/enforce", "restricted"),
            ("pod-security.kubernetes.io/enforce-version", "latest"),
        ],
    )
    .await;
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "berth-grants"},
        "stringData": {"grants.toml": grants},
    }))
    .expect("secret");
    Api::<Secret>::namespaced(client.clone(), NAMESPACE)
        .create(&PostParams::default(), &secret)
        .await
        .expect("the grants Secret");
}

/// Once Ready, each replica must be verifiable by the apiserver, which
/// routes a call to any Ready endpoint of the Service: a TLS client that
/// trusts exactly the stored caBundle handshakes with every Ready agent pod
/// (its IP is on the node's bridge, reachable from here) for the Service's
/// name. Read at once, not waited for: Ready means the CA is stored.
async fn every_ready_replica_verifies(client: &Client, agents: &[String]) {
    let config = Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .get(AGENT)
        .await
        .expect("the agent's ValidatingWebhookConfiguration, once a replica is Ready");
    let bundle = crate::admission::replicas::stored_bundle(&config);
    let service = format!("{AGENT}.{NAMESPACE}.svc");
    for name in agents {
        let pod = Api::<Pod>::namespaced(client.clone(), NAMESPACE)
            .get(name)
            .await
            .expect("agent pod");
        let ip: std::net::IpAddr = pod
            .status
            .and_then(|s| s.pod_ip)
            .and_then(|ip| ip.parse().ok())
            .expect("a Ready pod's IP");
        let server_name = tokio_rustls::rustls::pki_types::ServerName::try_from(service.clone())
            .expect("a DNS name");
        crate::admission::replicas::verifies(&bundle, (ip, WEBHOOK_PORT).into(), server_name)
            .await
            .unwrap_or_else(|e| {
                panic!("Ready agent {name} is not verifiable by the stored caBundle: {e}")
            });
    }
    eprintln!(
        "as_shipped: each of {} Ready replicas verifies against the stored caBundle ({} CAs)",
        agents.len(),
        bundle.matches("BEGIN CERTIFICATE").count()
    );
}

/// The agent's webhook port (the chart's `--webhook-listen=0.0.0.0:8443`).
const WEBHOOK_PORT: u16 = 8443;

/// The webhook, called by the API server through the Service: the agent's
/// configuration names the Service, and an ungranted profile is refused
/// with berth's reason. Until a replica serves, the API server answers
/// "failed calling webhook" (failurePolicy Fail): retried.
async fn webhook_refuses_through_the_service(ns: &TestNamespace, info_spec: serde_json::Value) {
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(ns.client.clone());
    let config = wait_for_value("the agent's ValidatingWebhookConfiguration", WAIT, || {
        let configs = configs.clone();
        async move {
            let c = configs.get_opt(AGENT).await.ok()??;
            let hook = c.webhooks.as_ref()?.first()?.clone();
            hook.client_config.ca_bundle.as_ref()?;
            Some(hook.client_config)
        }
    })
    .await;
    assert!(config.url.is_none(), "called by URL: {config:?}");
    let service = config.service.expect("a Service reference");
    assert_eq!(
        (
            service.namespace.as_str(),
            service.name.as_str(),
            service.port
        ),
        (NAMESPACE, AGENT, Some(443))
    );
    let mut spec = info_spec;
    spec["application"] = json!(APPLICATION);
    let rt: Runtime = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Runtime",
        "metadata": {"name": "ungranted", "namespace": ns.name},
        "spec": spec,
    }))
    .expect("runtime");
    let api: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    let message = wait_for_value("the webhook's answer through the Service", WAIT, || async {
        match api.create(&PostParams::default(), &rt).await {
            Ok(created) => panic!("an ungranted profile was admitted: {created:?}"),
            Err(kube::Error::Api(s)) if s.code == 403 => Some(s.message),
            // A Ready replica the apiserver cannot verify is what this
            // test caught first (a replica's CA lost when both started at
            // once, and readiness before the CA was published;
            // docs/admission.md): never waited out.
            Err(e) if e.to_string().contains("x509") => {
                panic!("the apiserver cannot verify a Ready replica: {e}")
            }
            // No replica serves yet (or its Service has no Ready endpoint).
            Err(e) if e.to_string().contains("failed calling webhook") => {
                eprintln!("as_shipped: not yet: {e}");
                None
            }
            Err(e) => panic!("creating a Runtime with an ungranted profile: {e}"),
        }
    })
    .await;
    assert!(
        message.contains("admission webhook \"runtimes.berth.dev\" denied the request"),
        "{message}"
    );
    assert!(
        message.contains("profile gvisor is not granted"),
        "{message}"
    );
}

/// Creates a granted Runtime through the release's webhook, once the
/// Lease is held: admitted at the first attempt (here and, since the
/// previous release is past that fix, in the upgrade test). Right after the install
/// a Ready standby may not have read the new leader's Lease yet; before it
/// refuses it reads the Lease again (docs/admission.md, "One grant set per
/// cluster"), so no retryable "grants are being reloaded, retry" reaches
/// the client. CI of 2026-12-06 met that refusal 30 ms after the holder
/// was seen, before the replica read the Lease on demand.
pub(crate) async fn create_granted(ns: &TestNamespace, name: &str, extra: serde_json::Value) {
    let api: Api<Runtime> = Api::namespaced(ns.client.clone(), &ns.name);
    let rt = runtime_of(ns, name, extra);
    if let Err(e) = api.create(&PostParams::default(), &rt).await {
        panic!("creating the granted Runtime {name} right after the install: {e}");
    }
}

#[tokio::test]
async fn as_shipped_chart_and_image_on_the_real_node() {
    let Some((cluster, info)) = real_node::real().await else {
        return;
    };
    if !crate::image::tools_present("as_shipped_chart_and_image_on_the_real_node") {
        return;
    }
    let started = Instant::now();
    let _exclusive = NODE.write().await;
    let client = cluster.admin_client().await;
    let node = info.nodes[0].name.clone();

    let image = imported_image(&info).await;
    eprintln!(
        "as_shipped: image {}:{}@{} ({:?})",
        image.repository,
        image.tag,
        image.digest,
        started.elapsed()
    );

    // The tenant's namespace, its class and its grant.
    let ns = real_node::namespace(cluster, "shipped").await;
    let class = format!("{}-bounded-runc", ns.name);
    create_class(&ns.client, &class, "bounded-runc").await;
    let alias = format!("{}-api", ns.name);
    let grants = berth_tests::grants_file::text(&[binding_for_service(
        &alias,
        &class,
        "bounded-runc",
        "api",
    )]);
    let _release = Release {
        kubeconfig: cluster.kubeconfig.clone(),
        node: node.clone(),
    };
    release_namespace(&client, &grants).await;
    let out = release::install(
        &cluster.kubeconfig,
        &image,
        &this_cluster_values(std::path::Path::new(&crate::chart::chart_arg())),
    )
    .await;
    assert!(out.contains("STATUS: deployed"), "{out}");

    // Ready on the real node, from the image by digest; one leads.
    let agents = ready_agents(&client, &node, 2).await;
    for name in &agents {
        let pod = Api::<Pod>::namespaced(client.clone(), NAMESPACE)
            .get(name)
            .await
            .expect("pod");
        let image_ref = pod.spec.expect("spec").containers[0]
            .image
            .clone()
            .unwrap_or_default();
        assert!(image_ref.ends_with(&image.digest), "{image_ref}");
    }
    every_ready_replica_verifies(&client, &agents).await;
    let (leader, lease_seconds) = holder(&client, &agents).await;
    eprintln!(
        "as_shipped: agents Ready {agents:?}, leader {leader} ({:?})",
        started.elapsed()
    );

    webhook_refuses_through_the_service(
        &ns,
        real_node::on_real_node(&info, "api", json!({"runtimeProfile": "gvisor"})),
    )
    .await;

    // A granted Runtime rolls out on the node, reconciled by the release.
    create_granted(
        &ns,
        "api",
        real_node::on_real_node(&info, "api", json!({"runtimeProfile": alias})),
    )
    .await;
    wait_condition_within(&ns, "api", "Ready", "True", None, WAIT).await;
    let pods = crate::agent_support::server_pods(&ns, "api").await;
    let spec = pods
        .first()
        .and_then(|p| p.spec.clone())
        .expect("the app's pod");
    assert_eq!(spec.node_name.as_deref(), Some(node.as_str()));
    assert_eq!(spec.runtime_class_name.as_deref(), Some(class.as_str()));

    // The console, from outside the cluster, shows it.
    let row = console_row(cluster, &ns.name).await;
    eprintln!("as_shipped: berth get runtimes: {row}");

    let failover = failover(&client, &node, &leader, lease_seconds).await;
    eprintln!(
        "as_shipped: failover in {failover:?} (lease {lease_seconds} s; {:?})",
        started.elapsed()
    );

    let evictor = client_without_retries(&cluster.kubeconfig).await;
    drain_is_held_by_the_pdb(&client, &evictor, &node).await;
    eprintln!("as_shipped: passed in {:?}", started.elapsed());
}

/// The values this cluster needs beyond the defaults of the chart at
/// `chart`, as an operator of it would set them: the real node's toleration and selector (it is
/// tainted), and the controller-manager's user added to the workload
/// policy's controllers (values.yaml: "Add the controller-manager's user
/// if it runs with another single credential"; here it runs as the
/// cluster's admin, `--use-service-account-credentials=false`), without
/// which the ReplicaSet controller could not create the granted pods.
fn this_cluster_values(chart: &std::path::Path) -> Vec<String> {
    let values: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(chart.join("values.yaml")).expect("values.yaml"),
    )
    .expect("values.yaml");
    let mut controllers: Vec<String> =
        yaml_serde::from_value(values["workloadPolicy"]["controllerUsernames"].clone())
            .expect("workloadPolicy.controllerUsernames");
    controllers.push(LOCAL_CONTROLLER_MANAGER.to_string());
    let set_json = |k: &str, v: serde_json::Value| ["--set-json".to_string(), format!("{k}={v}")];
    [
        set_json(
            "tolerations",
            json!([{"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]),
        ),
        set_json("nodeSelector", json!({LABEL_KEY: "true"})),
        set_json("workloadPolicy.controllerUsernames", json!(controllers)),
    ]
    .concat()
}

/// `berth -n NS get runtimes -o json`: the row of `api`, granted and Ready.
async fn console_row(cluster: &SharedCluster, ns: &str) -> serde_json::Value {
    let row = wait_for_value("berth get runtimes: api Ready", WAIT, || async {
        let doc = real_node::berth_get(cluster, ns, "runtimes").await;
        let row = doc["items"]
            .as_array()?
            .iter()
            .find(|i| i["name"] == "api")?
            .clone();
        (row["ready"] == 1 && row["desired"] == 1).then_some(row)
    })
    .await;
    assert_eq!(row["handler"], "bounded-runc", "{row}");
    assert_eq!(row["blocked"], false, "{row}");
    row
}

/// Deletes the leader's pod as `kubectl delete pod` does (the default
/// grace period) and waits, at most the lease's duration, for the other
/// replica to hold the Lease; returns how long it took.
async fn failover(client: &Client, node: &str, leader: &str, lease_seconds: i32) -> Duration {
    let deleted = Instant::now();
    Api::<Pod>::namespaced(client.clone(), NAMESPACE)
        .delete(leader, &DeleteParams::default())
        .await
        .expect("delete the leader's pod");
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    let within = Duration::from_secs(u64::try_from(lease_seconds).unwrap_or(60));
    let next = wait_for_value("the Lease taken by another replica", within, || async {
        let who = leases.get(AGENT).await.ok()?.spec?.holder_identity?;
        (who != leader && !who.is_empty()).then_some(who)
    })
    .await;
    let took = deleted.elapsed();
    let agents = ready_agents(client, node, 2).await;
    assert!(
        agents.contains(&next),
        "the new leader {next} is Ready: {agents:?}"
    );
    took
}

/// A drain with one replica left is refused: the node cordoned (the
/// replacement cannot schedule), the first agent pod's eviction is allowed
/// and the second's refused by the PodDisruptionBudget (429).
async fn drain_is_held_by_the_pdb(client: &Client, evictor: &Client, node: &str) {
    let agents = ready_agents(client, node, 2).await;
    wait_for_value("the PDB: 2 healthy, 1 disruption allowed", WAIT, || async {
        (pdb_status(client).await? == (2, 1)).then_some(())
    })
    .await;
    let cordon = json!({"spec": {"unschedulable": true}});
    Api::<Node>::all(client.clone())
        .patch(node, &PatchParams::default(), &Patch::Merge(&cordon))
        .await
        .expect("cordon");
    evict(evictor, &agents[0])
        .await
        .unwrap_or_else(|e| panic!("evicting {} with 2 healthy: {e}", agents[0]));
    wait_for_value("the PDB: 0 disruptions allowed", WAIT, || async {
        (pdb_status(client).await?.1 == 0).then_some(())
    })
    .await;
    match evict(evictor, &agents[1]).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 429, "{s:?}");
            assert!(s.message.contains("disruption budget"), "{s:?}");
            eprintln!("as_shipped: second eviction refused: {}", s.message);
        }
        other => panic!("evicting the last agent replica: {other:?}"),
    }
    let uncordon = json!({"spec": {"unschedulable": false}});
    Api::<Node>::all(client.clone())
        .patch(node, &PatchParams::default(), &Patch::Merge(&uncordon))
        .await
        .expect("uncordon");
    ready_agents(client, node, 2).await;
}
