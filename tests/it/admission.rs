//! Acceptance on a real control plane (issue 6): the API server calls the
//! agent's webhook (`berth-agent webhook`, self-signed, on loopback) for
//! every Runtime create/update, including server-side dry-runs; and the
//! shipped ValidatingAdmissionPolicy keeps everyone but the agent from
//! writing RuntimeGrants.
//!
//! Every webhook started here only reviews namespaces carrying its own
//! `berth.dev/it-webhook` label, and the policy binding only matches
//! RuntimeGrants with its own label, so tests running in parallel on the
//! shared cluster never see each other's admission.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use berth_shared::api::{Runtime, RuntimeGrant};
use berth_tests::harness::{
    TestNamespace, cluster, create_runtime_class, install_crds, restricted_client, wait_for,
};
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use serde_json::{Value, json};

const AGENT_USER: &str = "system:serviceaccount:berth-system:berth-agent";
const WEBHOOK_LABEL: &str = "berth.dev/it-webhook";

static COUNTER: AtomicU32 = AtomicU32::new(0);

pub(crate) fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    )
}

// ---------------------------------------------------------------- agent ---

async fn agent_binary() -> PathBuf {
    tokio::task::spawn_blocking(|| {
        berth_tests::harness::workspace_binary("berth-agent", "berth-agent", "BERTH_AGENT_BIN")
    })
    .await
    .expect("build thread")
}

/// A grants file under a 0700 directory in the target dir (the loader
/// refuses /tmp and anything group/other-writable).
pub(crate) fn grants_file(id: &str, bindings: &[(&str, &str, &str)]) -> PathBuf {
    let with_service: Vec<_> = bindings
        .iter()
        .map(|&(name, class, handler)| (name, class, handler, "worker"))
        .collect();
    grants_file_with(id, &with_service)
}

/// [`grants_file`] with a service per binding (`name, class, handler, service`).
pub(crate) fn grants_file_with(id: &str, bindings: &[(&str, &str, &str, &str)]) -> PathBuf {
    let base = berth_tests::harness::profile_dir()
        .parent()
        .expect("target")
        .join("berth-it");
    // Directories of earlier test processes that are gone.
    if let Ok(entries) = std::fs::read_dir(&base) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("admission-")
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let dir = base.join(format!("admission-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir grants dir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod 0700");
    let mut text = String::from("schema_version = 1\n");
    if bindings.is_empty() {
        text.push_str("bindings = []\n");
    }
    for (name, class, handler, service) in bindings {
        text.push_str(&format!(
            "[[bindings]]\nname = \"{name}\"\nproject = \"demo\"\nenvironment = \"production\"\n\
             application = \"analytics\"\nservice = \"{service}\"\nruntime_class = \"{class}\"\nhandler = \"{handler}\"\n"
        ));
    }
    let path = dir.join(format!("{id}.toml"));
    std::fs::write(&path, text).expect("write grants");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path
}

/// One running `berth-agent webhook` process.
pub(crate) struct Webhook {
    child: tokio::process::Child,
    config_name: String,
    log: PathBuf,
}

pub(crate) struct WebhookOptions<'a> {
    /// The value of the namespace label it reviews.
    pub selector: &'a str,
    pub grants: &'a Path,
    pub cert_validity: &'a str,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

impl Webhook {
    /// Starts the webhook, waits until the API server really calls it (an
    /// ungranted dry-run create in `probe_ns` is refused).
    pub(crate) async fn start(client: &Client, probe_ns: &str, opts: &WebhookOptions<'_>) -> Self {
        let bin = agent_binary().await;
        let port = free_port();
        let config_name = format!("berth-it-{}", opts.selector);
        let log = cluster()
            .dir
            .join(format!("webhook-{}-{port}.log", opts.selector));
        let log_file = std::fs::File::create(&log).expect("log file");
        let url = format!("https://127.0.0.1:{port}");
        let child = tokio::process::Command::new(bin)
            .arg("webhook")
            .arg("--grants-file")
            .arg(opts.grants)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--self-signed", "--webhook-url", &url])
            .args(["--webhook-config-name", &config_name])
            .args([
                "--webhook-namespace-label",
                &format!("{WEBHOOK_LABEL}={}", opts.selector),
            ])
            .args(["--cert-validity", opts.cert_validity])
            .env("KUBECONFIG", &cluster().kubeconfig)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .kill_on_drop(true)
            .spawn()
            .expect("spawn berth-agent webhook");
        let mut hook = Webhook {
            child,
            config_name,
            log,
        };
        let api = runtimes(client, probe_ns);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = hook.child.try_wait() {
                panic!(
                    "berth-agent webhook exited ({status}):\n{}",
                    hook.log_text()
                );
            }
            match api
                .create(
                    &dry_run(),
                    &runtime("probe", Some("probe-not-granted"), false),
                )
                .await
            {
                Err(kube::Error::Api(s)) if s.message.contains("NotGranted") => break,
                _ if Instant::now() > deadline => {
                    panic!("webhook never became reachable:\n{}", hook.log_text())
                }
                _ => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
        hook
    }

    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops the process (the configuration stays: fail closed).
    async fn stop(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }

    /// Stops it and removes its configuration.
    pub(crate) async fn remove(mut self, client: &Client) {
        self.stop().await;
        let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        let _ = api
            .delete(&self.config_name, &DeleteParams::default())
            .await;
    }
}

// ------------------------------------------------------------- fixtures ---

pub(crate) fn dry_run() -> PostParams {
    PostParams {
        dry_run: true,
        ..Default::default()
    }
}

pub(crate) fn runtimes(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &ApiResource::erase::<Runtime>(&()))
}

pub(crate) fn runtime(name: &str, profile: Option<&str>, suspend: bool) -> DynamicObject {
    runtime_for(name, "worker", profile, suspend)
}

pub(crate) fn runtime_for(
    name: &str,
    service: &str,
    profile: Option<&str>,
    suspend: bool,
) -> DynamicObject {
    let mut v = json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Runtime",
        "metadata": {"name": name},
        "spec": {
            "application": "analytics",
            "service": service,
            "image": {"repository": "registry.example/analytics/worker", "tag": "1.2.3"},
            "replicas": 1,
            "suspend": suspend,
        }
    });
    if let Some(p) = profile {
        v["spec"]["runtimeProfile"] = json!(p);
    }
    serde_json::from_value(v).expect("runtime")
}

pub(crate) async fn delete_classes(client: &Client, names: &[&str]) {
    let api: Api<RuntimeClass> = Api::all(client.clone());
    for n in names {
        let _ = api.delete(n, &DeleteParams::default()).await;
    }
}

/// A namespace with identity labels, reviewed by the webhook `selector`.
pub(crate) async fn namespace(prefix: &str, selector: &str, identity: bool) -> TestNamespace {
    let mut labels = vec![(WEBHOOK_LABEL, selector)];
    if identity {
        labels.push(("berth.dev/project", "demo"));
        labels.push(("berth.dev/environment", "production"));
    }
    let ns = TestNamespace::with_labels(prefix, &labels).await;
    install_crds(&ns.client).await;
    ns
}

/// The refusal's message; panics when the request was admitted.
pub(crate) fn refusal<T: std::fmt::Debug>(
    result: Result<T, kube::Error>,
    what: &str,
) -> (u16, String) {
    match result {
        Err(kube::Error::Api(s)) => (s.code, s.message.clone()),
        Err(e) => panic!("{what}: unexpected error {e}"),
        Ok(v) => panic!("{what}: admitted, expected a refusal: {v:?}"),
    }
}

const SCOPE: &str = "project = \"demo\", environment = \"production\", application = \"analytics\", service = \"worker\"";

// ---------------------------------------------------------------- tests ---

#[tokio::test]
async fn refuses_ungranted_profiles_and_dry_run_plans_the_same() {
    let id = unique("acc");
    let ns = namespace("adm-acc", &id, true).await;
    let bare = namespace("adm-acc-bare", &id, false).await;
    let client = ns.client.clone();
    let (bounded, mismatch, missing) = (
        format!("{id}-bounded"),
        format!("{id}-mismatch"),
        format!("{id}-missing"),
    );
    create_runtime_class(&client, &bounded, "bounded-runc").await;
    create_runtime_class(&client, &mismatch, "runc").await;
    let grants = grants_file(
        &id,
        &[
            ("bounded-worker", &bounded, "bounded-runc"),
            ("mismatch", &mismatch, "bounded-runc"),
            ("missing", &missing, "bounded-runc"),
        ],
    );
    let hook = Webhook::start(
        &client,
        &ns.name,
        &WebhookOptions {
            selector: &id,
            grants: &grants,
            cert_validity: "30d",
        },
    )
    .await;
    let api = runtimes(&client, &ns.name);

    // Denied create, with the reason and the exact scope in the error.
    let (code, msg) = refusal(
        api.create(
            &PostParams::default(),
            &runtime("denied", Some("gvisor"), false),
        )
        .await,
        "ungranted create",
    );
    assert_eq!(code, 403, "{msg}");
    assert!(
        msg.contains("admission webhook \"runtimes.berth.dev\" denied the request"),
        "{msg}"
    );
    assert!(msg.contains("NotGranted"), "{msg}");
    assert!(msg.contains("profile gvisor is not granted"), "{msg}");
    assert!(
        msg.contains(&format!("name = \"gvisor\", {SCOPE}")),
        "{msg}"
    );
    assert!(api.get_opt("denied").await.expect("get").is_none());

    // The alias exists, but for another service: refused, naming this scope.
    let (_, msg) = refusal(
        api.create(
            &PostParams::default(),
            &runtime_for("other-service", "api", Some("bounded-worker"), false),
        )
        .await,
        "other identity",
    );
    assert!(msg.contains("exists but not for"), "{msg}");
    assert!(msg.contains("service = \"api\""), "{msg}");

    // Class problems.
    let (_, msg) = refusal(
        api.create(
            &PostParams::default(),
            &runtime("mm", Some("mismatch"), false),
        )
        .await,
        "handler mismatch",
    );
    assert!(msg.contains("HandlerMismatch"), "{msg}");
    assert!(
        msg.contains("names handler runc, but the grant expects bounded-runc"),
        "{msg}"
    );
    let (_, msg) = refusal(
        api.create(
            &PostParams::default(),
            &runtime("ms", Some("missing"), false),
        )
        .await,
        "class missing",
    );
    assert!(msg.contains("ClassMissing"), "{msg}");
    assert!(
        msg.contains(&format!("RuntimeClass {missing} does not exist")),
        "{msg}"
    );

    // A namespace without identity labels.
    let (_, msg) = refusal(
        runtimes(&client, &bare.name)
            .create(
                &PostParams::default(),
                &runtime("bare", Some("bounded-worker"), false),
            )
            .await,
        "no identity labels",
    );
    assert!(msg.contains("IdentityIncomplete"), "{msg}");
    assert!(msg.contains("berth.dev/project"), "{msg}");

    // Server-side dry-run: the same verdicts, and nothing changes.
    let (_, msg) = refusal(
        api.create(&dry_run(), &runtime("dry-denied", Some("gvisor"), false))
            .await,
        "dry-run ungranted create",
    );
    assert!(msg.contains("NotGranted") && msg.contains(SCOPE), "{msg}");
    api.create(
        &dry_run(),
        &runtime("dry-granted", Some("bounded-worker"), false),
    )
    .await
    .expect("dry-run granted create is admitted");
    assert!(api.get_opt("dry-granted").await.expect("get").is_none());
    assert!(api.get_opt("dry-denied").await.expect("get").is_none());

    // Allowed create (granted), and a profile-less one once it is gone
    // (one Runtime per identity: see agent_identity.rs).
    api.create(
        &PostParams::default(),
        &runtime("granted", Some("bounded-worker"), false),
    )
    .await
    .expect("granted profile is admitted");
    api.delete("granted", &DeleteParams::default())
        .await
        .expect("delete granted");
    api.create(&PostParams::default(), &runtime("plain", None, false))
        .await
        .expect("no profile is admitted");

    // …also for an apply (what `kubectl apply --dry-run=server` sends).
    let before = api.get("plain").await.expect("get plain");
    let apply_dry = PatchParams {
        dry_run: true,
        ..PatchParams::apply("berth-it").force()
    };
    let mut change = runtime("plain", Some("gvisor"), false);
    change.metadata.namespace = Some(ns.name.clone());
    let (_, msg) = refusal(
        api.patch("plain", &apply_dry, &Patch::Apply(&change)).await,
        "dry-run apply of an ungranted profile",
    );
    assert!(msg.contains("NotGranted"), "{msg}");
    let granted_change = runtime("plain", Some("bounded-worker"), false);
    let planned = api
        .patch("plain", &apply_dry, &Patch::Apply(&granted_change))
        .await
        .expect("dry-run apply of a granted profile");
    assert_eq!(planned.data["spec"]["runtimeProfile"], "bounded-worker");
    let after = api.get("plain").await.expect("get plain");
    assert_eq!(
        before.metadata.resource_version, after.metadata.resource_version,
        "a dry-run changed the object"
    );
    assert!(after.data["spec"].get("runtimeProfile").is_none());

    hook.remove(&client).await;
    delete_classes(&client, &[&bounded, &mismatch]).await;
}

#[tokio::test]
async fn retiring_a_revoked_profile_is_always_accepted() {
    let id = unique("rev");
    let ns = namespace("adm-rev", &id, true).await;
    let client = ns.client.clone();
    let class = format!("{id}-bounded");
    create_runtime_class(&client, &class, "bounded-runc").await;
    // One alias and service per Runtime: none of them is a copy of another.
    let names = ["clear-me", "suspend-me", "change-me"];
    let bindings: Vec<_> = names
        .iter()
        .map(|n| (*n, class.as_str(), "bounded-runc", *n))
        .collect();
    let with_grant = grants_file_with(&id, &bindings);
    let hook = Webhook::start(
        &client,
        &ns.name,
        &WebhookOptions {
            selector: &id,
            grants: &with_grant,
            cert_validity: "30d",
        },
    )
    .await;
    let api = runtimes(&client, &ns.name);
    for name in names {
        api.create(
            &PostParams::default(),
            &runtime_for(name, name, Some(name), false),
        )
        .await
        .expect("granted create");
        // What the controller records after granting it.
        api.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"profile": {
                "alias": name, "class": class, "handler": "bounded-runc", "state": "Granted"
            }}})),
        )
        .await
        .expect("status");
    }
    hook.remove(&client).await;

    // The agent restarts with the binding gone.
    let id2 = format!("{id}-gone");
    let without = grants_file(&id2, &[("something-else", &class, "bounded-runc")]);
    let hook = Webhook::start(
        &client,
        &ns.name,
        &WebhookOptions {
            selector: &id,
            grants: &without,
            cert_validity: "30d",
        },
    )
    .await;

    // Any other change is refused as revoked…
    let (_, msg) = refusal(
        api.patch(
            "change-me",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": {"tag": "1.2.4"}}})),
        )
        .await,
        "image change with a revoked grant",
    );
    assert!(msg.contains("Revoked"), "{msg}");
    assert!(
        msg.contains("clearing spec.runtimeProfile or setting spec.suspend: true"),
        "{msg}"
    );
    // …metadata-only changes are not (nothing new is requested)…
    api.patch(
        "change-me",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"team": "data"}}})),
    )
    .await
    .expect("a label change is admitted");
    // …and retiring the dependency is always accepted.
    let cleared = api
        .patch(
            "clear-me",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"runtimeProfile": null}})),
        )
        .await
        .expect("clearing the profile is admitted");
    assert!(cleared.data["spec"].get("runtimeProfile").is_none());
    let suspended = api
        .patch(
            "suspend-me",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": true}})),
        )
        .await
        .expect("suspending is admitted");
    assert_eq!(suspended.data["spec"]["suspend"], Value::Bool(true));
    // Deleting too (never sent to the webhook).
    api.delete("change-me", &DeleteParams::default())
        .await
        .expect("delete");

    hook.remove(&client).await;
    delete_classes(&client, &[&class]).await;
}

#[tokio::test]
async fn agent_stopped_fails_closed_but_deletes_work() {
    let id = unique("down");
    let ns = namespace("adm-down", &id, true).await;
    let client = ns.client.clone();
    let grants = grants_file(&id, &[]);
    let mut hook = Webhook::start(
        &client,
        &ns.name,
        &WebhookOptions {
            selector: &id,
            grants: &grants,
            cert_validity: "30d",
        },
    )
    .await;
    let api = runtimes(&client, &ns.name);
    api.create(&PostParams::default(), &runtime("existing", None, false))
        .await
        .expect("create while the agent runs");

    hook.stop().await;

    // Create and update fail closed — even ones that would be allowed.
    let (code, msg) = refusal(
        api.create(&PostParams::default(), &runtime("new", None, false))
            .await,
        "create with the agent down",
    );
    assert!(code >= 500, "{code}: {msg}");
    assert!(
        msg.contains("failed calling webhook \"runtimes.berth.dev\""),
        "{msg}"
    );
    let (_, msg) = refusal(
        api.patch(
            "existing",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await,
        "update with the agent down",
    );
    assert!(msg.contains("failed calling webhook"), "{msg}");
    let (_, msg) = refusal(
        api.create(&dry_run(), &runtime("new", None, false)).await,
        "dry-run with the agent down",
    );
    assert!(msg.contains("failed calling webhook"), "{msg}");
    assert!(api.get_opt("new").await.expect("get").is_none());

    // Deletes are never sent to the webhook.
    api.delete("existing", &DeleteParams::default())
        .await
        .expect("delete with the agent down");
    wait_for("Runtime deleted", Duration::from_secs(30), || {
        let api = api.clone();
        async move { matches!(api.get_opt("existing").await, Ok(None)) }
    })
    .await;

    hook.remove(&client).await;
}

#[tokio::test]
async fn webhook_keeps_serving_across_certificate_rotation() {
    let id = unique("rot");
    let ns = namespace("adm-rot", &id, true).await;
    let client = ns.client.clone();
    let class = format!("{id}-bounded");
    create_runtime_class(&client, &class, "bounded-runc").await;
    let grants = grants_file(&id, &[("bounded-worker", &class, "bounded-runc")]);
    // A 9 s certificate is replaced every 6 s.
    let hook = Webhook::start(
        &client,
        &ns.name,
        &WebhookOptions {
            selector: &id,
            grants: &grants,
            cert_validity: "9s",
        },
    )
    .await;
    let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let bundle = |v: ValidatingWebhookConfiguration| {
        v.webhooks
            .and_then(|w| w.into_iter().next())
            .and_then(|w| w.client_config.ca_bundle)
            .map(|b| b.0)
            .unwrap_or_default()
    };
    let api = runtimes(&client, &ns.name);
    let mut bundles = vec![bundle(vwcs.get(&hook.config_name).await.expect("vwc"))];
    let started = Instant::now();
    let mut calls = 0;
    while started.elapsed() < Duration::from_secs(22) {
        api.create(
            &dry_run(),
            &runtime("rot-ok", Some("bounded-worker"), false),
        )
        .await
        .unwrap_or_else(|e| {
            panic!(
                "granted dry-run failed after {:?}: {e}\n{}",
                started.elapsed(),
                hook.log_text()
            )
        });
        let (_, msg) = refusal(
            api.create(&dry_run(), &runtime("rot-no", Some("gvisor"), false))
                .await,
            "ungranted dry-run during rotation",
        );
        assert!(
            msg.contains("NotGranted"),
            "after {:?}: {msg}\n{}",
            started.elapsed(),
            hook.log_text()
        );
        calls += 2;
        let now = bundle(vwcs.get(&hook.config_name).await.expect("vwc"));
        if bundles.last() != Some(&now) {
            bundles.push(now);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(
        bundles.len() >= 3,
        "expected at least two rotations in 22 s, saw {} CA bundles\n{}",
        bundles.len(),
        hook.log_text()
    );
    assert!(
        hook.log_text()
            .matches("webhook serving certificate rotated")
            .count()
            >= 2,
        "{}",
        hook.log_text()
    );
    eprintln!(
        "{calls} admission calls across {} CA bundles",
        bundles.len()
    );
    hook.remove(&client).await;
    delete_classes(&client, &[&class]).await;
}

// ------------------------------------------------ RuntimeGrant protection ---

/// A client acting as the agent's ServiceAccount (admin impersonation).
async fn agent_client() -> Client {
    let kc = Kubeconfig::read_from(&cluster().kubeconfig).expect("kubeconfig");
    let mut config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    config.auth_info.impersonate = Some(AGENT_USER.into());
    config.auth_info.impersonate_groups = Some(vec![
        "system:serviceaccounts".into(),
        "system:serviceaccounts:berth-system".into(),
        "system:authenticated".into(),
    ]);
    Client::try_from(config).expect("agent client")
}

fn yaml_documents(text: &str) -> Vec<Value> {
    use serde::Deserialize as _;
    serde_yaml::Deserializer::from_str(text)
        .filter_map(|doc| {
            let v = serde_yaml::Value::deserialize(doc).expect("valid YAML");
            (!v.is_null()).then(|| serde_json::to_value(v).expect("JSON"))
        })
        .collect()
}

fn grant(name: &str, label: &str) -> RuntimeGrant {
    serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "RuntimeGrant",
        "metadata": {"name": name, "labels": {"berth.dev/it-vap": label}},
        "spec": {
            "project": "demo", "environment": "production",
            "application": "analytics", "service": "worker",
            "runtimeClass": "bounded-worker", "handler": "bounded-runc"
        }
    }))
    .expect("grant")
}

#[tokio::test]
async fn only_the_agent_writes_runtime_grants() {
    let id = unique("vap");
    let ns = TestNamespace::new("adm-vap").await;
    let admin = ns.client.clone();
    install_crds(&admin).await;

    // The shipped policy, binding and parameter — renamed for this test, the
    // parameter in the test namespace, and the binding narrowed to
    // RuntimeGrants carrying this test's label.
    let docs = yaml_documents(include_str!(
        "../../assets/admission/runtimegrant-policy.yaml"
    ));
    let find = |kind: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .cloned()
            .unwrap_or_else(|| panic!("{kind} in runtimegrant-policy.yaml"))
    };
    let mut policy: ValidatingAdmissionPolicy =
        serde_json::from_value(find("ValidatingAdmissionPolicy")).expect("policy");
    let mut binding: ValidatingAdmissionPolicyBinding =
        serde_json::from_value(find("ValidatingAdmissionPolicyBinding")).expect("binding");
    let mut params: ConfigMap = serde_json::from_value(find("ConfigMap")).expect("params");
    assert_eq!(
        params
            .data
            .as_ref()
            .and_then(|d| d.get("agentUsername"))
            .map(String::as_str),
        Some(AGENT_USER)
    );
    policy.metadata.name = Some(id.clone());
    params.metadata.namespace = Some(ns.name.clone());
    let binding_spec = binding.spec.as_mut().expect("binding spec");
    binding.metadata.name = Some(id.clone());
    binding_spec.policy_name = Some(id.clone());
    let param_ref = binding_spec.param_ref.as_mut().expect("paramRef");
    param_ref.namespace = Some(ns.name.clone());
    binding_spec.match_resources = Some(
        serde_json::from_value(json!({
            "objectSelector": {"matchLabels": {"berth.dev/it-vap": id}}
        }))
        .expect("matchResources"),
    );

    let pp = PostParams::default();
    Api::<ConfigMap>::namespaced(admin.clone(), &ns.name)
        .create(&pp, &params)
        .await
        .expect("params");
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(admin.clone());
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(admin.clone());
    policies.create(&pp, &policy).await.expect("policy");
    bindings.create(&pp, &binding).await.expect("binding");

    // Both identities get full RBAC on RuntimeGrants: only the policy stops one.
    let role_name = format!("berth-it-{id}");
    let role = ClusterRole {
        metadata: ObjectMeta {
            name: Some(role_name.clone()),
            ..Default::default()
        },
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec!["berth.dev".into()]),
            resources: Some(vec![
                "runtimegrants".into(),
                "runtimegrants/status".into(),
                "pendinggrantsfiles".into(),
            ]),
            verbs: [
                "get", "list", "watch", "create", "update", "patch", "delete",
            ]
            .map(String::from)
            .to_vec(),
            ..Default::default()
        }]),
        ..Default::default()
    };
    Api::<ClusterRole>::all(admin.clone())
        .create(&pp, &role)
        .await
        .expect("role");
    let crb = ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(role_name.clone()),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: role_name.clone(),
        },
        subjects: Some(vec![
            Subject {
                kind: "User".into(),
                name: "berth-restricted".into(),
                api_group: Some("rbac.authorization.k8s.io".into()),
                ..Default::default()
            },
            Subject {
                kind: "ServiceAccount".into(),
                name: "berth-agent".into(),
                namespace: Some("berth-system".into()),
                ..Default::default()
            },
        ]),
    };
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&pp, &crb)
        .await
        .expect("role binding");

    let agent: Api<RuntimeGrant> = Api::all(agent_client().await);
    let restricted: Api<RuntimeGrant> = Api::all(restricted_client().await);
    let as_admin: Api<RuntimeGrant> = Api::all(admin.clone());

    // Wait until RBAC and the policy are both in force: the restricted user
    // is refused by the policy (not by RBAC, not admitted).
    let probe = format!("{id}-probe");
    let deadline = Instant::now() + Duration::from_secs(60);
    let policy_message = loop {
        match restricted.create(&pp, &grant(&probe, &id)).await {
            Err(kube::Error::Api(s)) if s.message.contains("ValidatingAdmissionPolicy") => {
                break s;
            }
            Ok(_) => {
                let _ = agent.delete(&probe, &DeleteParams::default()).await;
            }
            Err(_) => {}
        }
        assert!(Instant::now() < deadline, "the policy never took effect");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(policy_message.code, 403, "{policy_message:?}");
    assert!(
        policy_message
            .message
            .contains("RuntimeGrants are written only by the berth agent (system:serviceaccount:berth-system:berth-agent); berth-restricted may not CREATE them"),
        "{}",
        policy_message.message
    );

    // The agent creates, updates, writes status and deletes.
    let name = format!("{id}-a");
    agent
        .create(&pp, &grant(&name, &id))
        .await
        .expect("agent creates a RuntimeGrant");
    agent
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"berth.dev/note": "x"}}})),
        )
        .await
        .expect("agent updates");
    agent
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"classPresent": true}})),
        )
        .await
        .expect("agent writes status");

    // Nobody else may: not the restricted user (with RBAC), not cluster-admin.
    for (who, api) in [("berth-restricted", &restricted), ("admin", &as_admin)] {
        let (code, msg) = refusal(
            api.create(&pp, &grant(&format!("{id}-{who}"), &id)).await,
            &format!("{who} create"),
        );
        assert_eq!(code, 403, "{who}: {msg}");
        let (_, msg) = refusal(
            api.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"handler": "runc"}})),
            )
            .await,
            &format!("{who} update"),
        );
        assert!(msg.contains("may not UPDATE"), "{who}: {msg}");
        let (_, msg) = refusal(
            api.patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"classPresent": false}})),
            )
            .await,
            &format!("{who} status"),
        );
        assert!(
            msg.contains("written only by the berth agent"),
            "{who}: {msg}"
        );
        let (_, msg) = refusal(
            api.delete(&name, &DeleteParams::default()).await,
            &format!("{who} delete"),
        );
        assert!(msg.contains("may not DELETE"), "{who}: {msg}");
    }
    let live = agent.get(&name).await.expect("still there");
    assert_eq!(live.spec.handler, "bounded-runc");

    agent
        .delete(&name, &DeleteParams::default())
        .await
        .expect("agent deletes");

    // The agent's pending grants file is protected the same way.
    let pending = |name: &str| -> berth_shared::api::PendingGrantsFile {
        serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1",
            "kind": "PendingGrantsFile",
            "metadata": {"name": name, "labels": {"berth.dev/it-vap": id}},
            "spec": {"verdict": "Valid"}
        }))
        .expect("pending")
    };
    let agent_p: Api<berth_shared::api::PendingGrantsFile> = Api::all(agent_client().await);
    let pname = format!("{id}-p");
    agent_p
        .create(&pp, &pending(&pname))
        .await
        .expect("agent creates a PendingGrantsFile");
    for (who, client) in [
        ("berth-restricted", restricted_client().await),
        ("admin", admin.clone()),
    ] {
        let api: Api<berth_shared::api::PendingGrantsFile> = Api::all(client);
        let (code, msg) = refusal(
            api.create(&pp, &pending(&format!("{id}-p{who}"))).await,
            &format!("{who} create pending"),
        );
        assert_eq!(code, 403, "{who}: {msg}");
        let (_, msg) = refusal(
            api.patch(
                &pname,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"verdict": "Invalid"}})),
            )
            .await,
            &format!("{who} update pending"),
        );
        assert!(msg.contains("may not UPDATE"), "{who}: {msg}");
        let (_, msg) = refusal(
            api.delete(&pname, &DeleteParams::default()).await,
            &format!("{who} delete pending"),
        );
        assert!(msg.contains("may not DELETE"), "{who}: {msg}");
    }
    agent_p
        .delete(&pname, &DeleteParams::default())
        .await
        .expect("agent deletes its PendingGrantsFile");

    // Clean up (the binding first: it is what protects the objects).
    let _ = bindings.delete(&id, &DeleteParams::default()).await;
    let _ = policies.delete(&id, &DeleteParams::default()).await;
    let _ = Api::<ClusterRoleBinding>::all(admin.clone())
        .delete(&role_name, &DeleteParams::default())
        .await;
    let _ = Api::<ClusterRole>::all(admin.clone())
        .delete(&role_name, &DeleteParams::default())
        .await;
}
