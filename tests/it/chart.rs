//! The Helm chart in `assets/chart/berth`, checked with the real `helm`
//! (built from its Go module by `tests/k8s/build.sh`, pinned in
//! `tests/k8s/versions.env`): `helm lint --strict`, `helm template` (with
//! default values it must give exactly the kustomize objects; other values
//! must reach the agent's real flags; the values schema refuses bad values),
//! and `helm install`/`upgrade`/`uninstall` into the local cluster under the
//! restricted Pod Security Standard.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Duration;

use berth_tests::harness::{TestNamespace, cluster, wait_for};
use berth_tests::localcluster::binaries::{Binaries, pinned_version};
use serde::Deserialize;
use yaml_serde::Value;

mod canaries;
mod protection;

fn assets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets")
}

fn chart() -> PathBuf {
    assets().join("chart/berth")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The helm binary from `tests/k8s/build.sh` (built once per machine).
fn helm_path() -> &'static Path {
    static HELM: OnceLock<PathBuf> = OnceLock::new();
    HELM.get_or_init(|| {
        let log_dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let bins = Binaries::resolve_test_tools(log_dir).unwrap_or_else(|e| {
            panic!("tests/k8s/build.sh (which builds helm) failed: {e}")
        });
        bins.path("helm")
            .unwrap_or_else(|_| {
                panic!(
                    "tests/k8s/build.sh named no helm binary (with BERTH_K8S_BIN_DIR set, put helm {} there)",
                    pinned_version("HELM_VERSION").unwrap_or("?")
                )
            })
            .to_path_buf()
    })
}

/// `helm ARGS` with its cache, config and data kept under the target
/// directory (nothing written to the user's home).
pub(crate) fn helm(args: &[&str]) -> Output {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("helm-home");
    Command::new(helm_path())
        .args(args)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env_remove("KUBECONFIG")
        .output()
        .expect("run helm")
}

/// The standard output of a command that must have succeeded.
pub(crate) fn stdout_of(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn chart_arg() -> String {
    chart().display().to_string()
}

/// The Kubernetes version of the local cluster, for `helm template`'s
/// capabilities (the chart requires one with ValidatingAdmissionPolicy).
fn kube_version() -> &'static str {
    pinned_version("KUBERNETES_VERSION").expect("KUBERNETES_VERSION in versions.env")
}

/// `helm template berth CHART -n berth-system EXTRA…`.
fn template(extra: &[&str]) -> Result<String, String> {
    let chart = chart_arg();
    let mut args = vec![
        "template",
        "berth",
        &chart,
        "--namespace",
        "berth-system",
        "--kube-version",
        kube_version(),
    ];
    args.extend_from_slice(extra);
    let out = helm(&args);
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn template_ok(extra: &[&str]) -> String {
    template(extra).unwrap_or_else(|e| panic!("helm template {extra:?} failed:\n{e}"))
}

type ObjectKey = (String, String, String);

/// kustomize and helm re-serialize YAML (e.g. `600.0` becomes `600`);
/// compare values, not spellings: integral floats become integers.
fn normalize(v: Value) -> Value {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => {
                Value::Number((f as i64).into())
            }
            _ => Value::Number(n),
        },
        Value::Sequence(items) => Value::Sequence(items.into_iter().map(normalize).collect()),
        Value::Mapping(m) => Value::Mapping(
            m.into_iter()
                .map(|(k, v)| (normalize(k), normalize(v)))
                .collect(),
        ),
        other => other,
    }
}

/// Every object of a multi-document YAML stream, by (kind, namespace, name).
fn objects(yaml: &str) -> BTreeMap<ObjectKey, Value> {
    let mut map = BTreeMap::new();
    for doc in yaml_serde::Deserializer::from_str(yaml) {
        let v = Value::deserialize(doc).expect("valid YAML");
        if v.is_null() {
            continue;
        }
        let s = |k: &str| {
            v.get("metadata")
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let kind = v
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let key = (kind, s("namespace"), s("name"));
        assert!(
            map.insert(key.clone(), normalize(v)).is_none(),
            "{key:?} twice"
        );
    }
    map
}

fn kinds(objs: &BTreeMap<ObjectKey, Value>) -> Vec<&str> {
    objs.keys().map(|(k, _, _)| k.as_str()).collect()
}

fn find<'a>(objs: &'a BTreeMap<ObjectKey, Value>, kind: &str) -> &'a Value {
    let mut it = objs.iter().filter(|((k, _, _), _)| k == kind);
    let (_, v) = it
        .next()
        .unwrap_or_else(|| panic!("no {kind} in the output"));
    assert!(it.next().is_none(), "more than one {kind}");
    v
}

/// The agent container of the rendered Deployment.
fn agent_container(objs: &BTreeMap<ObjectKey, Value>) -> &Value {
    &find(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
}

fn args_of(container: &Value) -> Vec<String> {
    container["args"]
        .as_sequence()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg").to_string())
        .collect()
}

/// The chart's CRDs are copies of `assets/crds/` (the chart cannot read
/// files outside itself): the same text, regenerated with
/// `BERTH_UPDATE_GOLDEN=1`.
#[test]
fn chart_crd_copies_match_assets() {
    let update = std::env::var_os("BERTH_UPDATE_GOLDEN").is_some();
    let mut drifted = Vec::new();
    for crd in [
        "runtimes.berth.dev.yaml",
        "runtimegrants.berth.dev.yaml",
        "pendinggrantsfiles.berth.dev.yaml",
    ] {
        let want = read(&assets().join("crds").join(crd));
        let path = chart().join("files/crds").join(crd);
        if std::fs::read_to_string(&path).unwrap_or_default() != want {
            if update {
                std::fs::write(&path, &want).expect("write chart CRD");
            } else {
                drifted.push(path.display().to_string());
            }
        }
    }
    assert!(
        drifted.is_empty(),
        "chart CRDs differ from assets/crds (regenerate with BERTH_UPDATE_GOLDEN=1): {drifted:?}"
    );
}

/// The helm binary is the pinned one, built from the pinned module.
#[test]
fn helm_is_the_pinned_version() {
    let want = pinned_version("HELM_VERSION").expect("HELM_VERSION in versions.env");
    let out = stdout_of("helm version", &helm(&["version", "--short"]));
    assert!(out.starts_with(want), "helm version {out:?}, pinned {want}");
    let go_mod = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("k8s/helm/go.mod"));
    assert!(
        go_mod.contains(&format!("require helm.sh/helm/v4 {want}\n")),
        "tests/k8s/helm/go.mod does not require helm.sh/helm/v4 {want}"
    );
}

#[test]
fn helm_lint_strict_passes_in_every_certificate_mode() {
    let chart = chart_arg();
    for extra in [
        &[][..],
        &["--set", "webhook.certificateMode=cert-manager"][..],
        &[
            "--set",
            "webhook.certificateMode=files",
            "--set",
            "webhook.files.secretName=agent-tls",
            "--set",
            "webhook.files.caBundle=Zm9v",
        ][..],
    ] {
        let mut args = vec!["lint", "--strict", "--namespace", "berth-system", &chart];
        args.extend_from_slice(extra);
        let out = stdout_of(&format!("helm {args:?}"), &helm(&args));
        assert!(
            out.contains("1 chart(s) linted, 0 chart(s) failed"),
            "{out}"
        );
    }
}

/// With default values (release `berth` in `berth-system`), the chart gives
/// exactly the objects of `kubectl kustomize assets/`, less the Namespace
/// and the sample grants Secret (the operator's), and for one difference
/// only: the CRDs carry `helm.sh/resource-policy: keep`, so that `helm
/// uninstall` does not delete every Runtime.
#[test]
fn helm_template_with_defaults_gives_the_kustomize_objects() {
    let (chart, kustomize) = same_objects(&[], &crate::assets::kustomize_assets());
    // No Pod permission and no Pod watch by default (issue 27, point 9).
    for objs in [&chart, &kustomize] {
        assert!(
            !objs.values().any(names_pods),
            "the default install gives the agent a Pod permission"
        );
        assert!(!args_of(agent_container(objs)).contains(&"--watch-bare-pods".to_string()));
    }
}

/// Whether a ClusterRole or Role names `pods`.
fn names_pods(obj: &Value) -> bool {
    obj["rules"].as_sequence().is_some_and(|rules| {
        rules.iter().any(|r| {
            r["resources"]
                .as_sequence()
                .is_some_and(|res| res.iter().any(|x| x.as_str() == Some("pods")))
        })
    })
}

/// `barePods.watch=true` gives exactly the objects of the kustomize overlay
/// of the base plus the component `assets/rbac/pods`: the
/// Pod list/watch ClusterRole, its binding, and `--watch-bare-pods`, a flag
/// the agent knows.
#[test]
fn helm_bare_pods_value_gives_the_kustomize_overlay() {
    let (chart, _) = same_objects(
        &["--set", "barePods.watch=true"],
        &crate::assets::kustomize_with_components("bare-pods", &["rbac/pods"]),
    );
    let role = chart
        .iter()
        .find(|((k, _, n), _)| k == "ClusterRole" && n == "berth-agent-pods")
        .map(|(_, v)| v)
        .expect("ClusterRole berth-agent-pods");
    assert_eq!(role["rules"][0]["resources"][0], "pods");
    assert_eq!(
        role["rules"][0]["verbs"],
        yaml_serde::to_value(["list", "watch"]).expect("yaml")
    );
    let args = args_of(agent_container(&chart));
    assert!(args.contains(&"--watch-bare-pods".to_string()), "{args:?}");
    assert_agent_accepts(&args);
}

/// Asserts that `helm template EXTRA` gives exactly the objects of
/// `kustomize` (see above); returns both.
fn same_objects(
    extra: &[&str],
    kustomize: &str,
) -> (BTreeMap<ObjectKey, Value>, BTreeMap<ObjectKey, Value>) {
    let mut chart_objects = objects(&template_ok(extra));
    for ((kind, _, name), obj) in chart_objects.iter_mut() {
        if kind != "CustomResourceDefinition" {
            continue;
        }
        let annotations = obj["metadata"]["annotations"]
            .as_mapping_mut()
            .unwrap_or_else(|| panic!("CRD {name} has no annotations"));
        assert_eq!(
            annotations.remove("helm.sh/resource-policy"),
            Some(Value::from("keep")),
            "CRD {name} is kept on uninstall"
        );
        if annotations.is_empty()
            && let Some(meta) = obj["metadata"].as_mapping_mut()
        {
            meta.remove("annotations");
        }
    }

    let mut kustomize_objects = objects(kustomize);
    kustomize_objects.retain(|(kind, _, _), _| kind != "Namespace" && kind != "Secret");

    let chart_keys: Vec<_> = chart_objects.keys().collect();
    let kustomize_keys: Vec<_> = kustomize_objects.keys().collect();
    assert_eq!(chart_keys, kustomize_keys, "same objects");
    let differing: Vec<String> = kustomize_objects
        .iter()
        .filter(|(key, want)| chart_objects.get(*key) != Some(*want))
        .map(|(key, want)| {
            format!(
                "{key:?}\n--- kustomize\n{}\n--- helm\n{}",
                yaml_serde::to_string(want).unwrap_or_default(),
                yaml_serde::to_string(&chart_objects.get(key)).unwrap_or_default()
            )
        })
        .collect();
    assert!(
        differing.is_empty(),
        "objects differ:\n{}",
        differing.join("\n")
    );
    (chart_objects, kustomize_objects)
}

/// Every `--flag` the chart passes to `berth-agent run` exists there: the
/// values map to real flags.
fn assert_agent_accepts(args: &[String]) {
    static HELP: OnceLock<String> = OnceLock::new();
    let help = HELP.get_or_init(|| {
        let bin =
            berth_tests::harness::workspace_binary("berth-agent", "berth-agent", "BERTH_AGENT_BIN");
        let out = Command::new(bin)
            .args(["run", "--help"])
            .output()
            .expect("berth-agent run --help");
        stdout_of("berth-agent run --help", &out)
    });
    let known: std::collections::BTreeSet<&str> = help
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--"))
        .collect();
    assert_eq!(args.first().map(String::as_str), Some("run"), "{args:?}");
    for arg in &args[1..] {
        let flag = arg.split('=').next().unwrap_or(arg);
        assert!(
            known.contains(flag),
            "the chart passes {flag}, which `berth-agent run --help` does not list"
        );
    }
}

#[test]
fn every_value_reaches_the_objects_and_the_agent_flags() {
    let digest = format!("sha256:{}", "ab".repeat(32));
    let values = format!(
        r#"
image:
  repository: registry.example/platform/berth-agent
  tag: "1.2.3"
  digest: "{digest}"
  pullPolicy: Always
  pullSecrets: [regcred]
replicas: 3
resources:
  requests: {{cpu: 100m, memory: 128Mi}}
  limits: {{cpu: "1", memory: 512Mi}}
grantsSecretName: platform-grants
watchNamespace: team-a
logFormat: text
labels: {{team: platform}}
annotations: {{owner: "platform@example"}}
podLabels: {{tier: control}}
podAnnotations: {{scrape: "true"}}
nodeSelector: {{node-role/infra: "true"}}
tolerations:
  - {{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}}
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions:
            - {{key: kubernetes.io/arch, operator: In, values: [amd64]}}
crds: {{install: false}}
runtimeGrantPolicy: {{install: false}}
workloadPolicy: {{install: false}}
"#
    );
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("chart-all-values.yaml");
    std::fs::write(&file, values).expect("write values");
    let objs = objects(&template_ok(&["-f", &file.display().to_string()]));

    assert!(
        !kinds(&objs).contains(&"CustomResourceDefinition"),
        "crds.install=false"
    );
    assert!(
        !kinds(&objs).contains(&"ValidatingAdmissionPolicy")
            && !kinds(&objs).contains(&"ValidatingAdmissionPolicyBinding")
            && !kinds(&objs).contains(&"ConfigMap"),
        "runtimeGrantPolicy.install=false, workloadPolicy.install=false: {:?}",
        kinds(&objs)
    );
    for (key, obj) in &objs {
        assert_eq!(obj["metadata"]["labels"]["team"], "platform", "{key:?}");
        assert_eq!(
            obj["metadata"]["annotations"]["owner"], "platform@example",
            "{key:?}"
        );
    }

    let deployment = find(&objs, "Deployment");
    assert_eq!(deployment["spec"]["replicas"], 3);
    // The chart's own labels still select the pods.
    assert_eq!(
        deployment["metadata"]["labels"]["app.kubernetes.io/name"],
        "berth-agent"
    );
    let pod = &deployment["spec"]["template"];
    assert_eq!(pod["metadata"]["labels"]["tier"], "control");
    assert_eq!(pod["metadata"]["labels"]["team"], "platform");
    assert_eq!(
        pod["metadata"]["labels"]["app.kubernetes.io/name"],
        "berth-agent"
    );
    assert_eq!(pod["metadata"]["annotations"]["scrape"], "true");
    assert_eq!(pod["spec"]["nodeSelector"]["node-role/infra"], "true");
    assert_eq!(pod["spec"]["tolerations"][0]["key"], "dedicated");
    assert_eq!(
        pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            [0]["matchExpressions"][0]["key"],
        "kubernetes.io/arch"
    );
    assert_eq!(pod["spec"]["imagePullSecrets"][0]["name"], "regcred");
    assert_eq!(
        pod["spec"]["volumes"][0]["secret"]["secretName"],
        "platform-grants"
    );

    let c = agent_container(&objs);
    assert_eq!(
        c["image"],
        Value::from(format!(
            "registry.example/platform/berth-agent:1.2.3@{digest}"
        ))
    );
    assert_eq!(c["imagePullPolicy"], "Always");
    assert_eq!(c["resources"]["requests"]["cpu"], "100m");
    assert_eq!(c["resources"]["limits"]["memory"], "512Mi");
    let args = args_of(c);
    for want in ["--namespace=team-a", "--log-format=text", "--self-signed"] {
        assert!(args.iter().any(|a| a == want), "{want} in {args:?}");
    }
    assert_agent_accepts(&args);
}

#[test]
fn another_release_name_gives_its_own_cluster_scoped_names() {
    let chart = chart_arg();
    let out = stdout_of(
        "helm template",
        &helm(&[
            "template",
            "edge",
            &chart,
            "--namespace",
            "ops",
            "--kube-version",
            kube_version(),
        ]),
    );
    let objs = objects(&out);
    let names: Vec<&str> = objs
        .keys()
        .filter(|(k, _, _)| k != "CustomResourceDefinition")
        .map(|(_, _, n)| n.as_str())
        .collect();
    assert!(
        names.iter().all(|n| n.starts_with("edge-berth-")),
        "{names:?}"
    );
    let args = args_of(agent_container(&objs));
    for want in [
        "--lease-name=edge-berth-agent",
        "--webhook-config-name=edge-berth-agent",
        "--webhook-service=$(POD_NAMESPACE)/edge-berth-agent:443",
    ] {
        assert!(args.iter().any(|a| a == want), "{want} in {args:?}");
    }
    assert_agent_accepts(&args);
    let role = &objs[&(
        "ClusterRole".to_string(),
        String::new(),
        "edge-berth-agent-admission".to_string(),
    )];
    assert_eq!(role["rules"][1]["resourceNames"][0], "edge-berth-agent");
    let params = find(&objs, "ConfigMap");
    assert_eq!(
        params["data"]["agentUsername"],
        "system:serviceaccount:ops:edge-berth-agent"
    );
}

/// The workload RuntimeClass policy: the agent's identity follows the
/// release, the exempt namespaces and controller identities reach the
/// binding and the policy, and `workloadPolicy.install=false` leaves both
/// out (the RuntimeGrant policy stays).
#[test]
fn workload_policy_values_reach_the_policy_and_binding() {
    let key = |kind: &str, name: &str| (kind.to_string(), String::new(), name.to_string());
    let objs = objects(&template_ok(&[
        "--set",
        "workloadPolicy.exemptNamespaces={kube-system,legacy}",
        "--set",
        "workloadPolicy.controllerUsernames={system:kube-controller-manager,ctl}",
    ]));
    let policy = &objs[&key("ValidatingAdmissionPolicy", "berth-granted-runtimeclasses")];
    let variables = policy["spec"]["variables"]
        .as_sequence()
        .expect("variables");
    let expression = |name: &str| {
        variables
            .iter()
            .find(|v| v["name"] == name)
            .and_then(|v| v["expression"].as_str())
            .unwrap_or_else(|| panic!("variable {name}"))
            .to_string()
    };
    assert_eq!(
        expression("agentUsername"),
        "'system:serviceaccount:berth-system:berth-agent'"
    );
    assert_eq!(
        expression("controllerUsernames"),
        "['system:kube-controller-manager', 'ctl']"
    );
    let binding = &objs[&key(
        "ValidatingAdmissionPolicyBinding",
        "berth-granted-runtimeclasses",
    )];
    let selector = &binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"];
    assert_eq!(selector[0]["key"], "berth.dev/runtime-class-policy");
    assert_eq!(selector[1]["key"], "kubernetes.io/metadata.name");
    assert_eq!(selector[1]["values"][1], "legacy");

    // No exempt namespace list: the label alone.
    let objs = objects(&template_ok(&[
        "--set-json",
        "workloadPolicy.exemptNamespaces=[]",
    ]));
    let binding = &objs[&key(
        "ValidatingAdmissionPolicyBinding",
        "berth-granted-runtimeclasses",
    )];
    let selector = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
        .as_sequence()
        .expect("matchExpressions");
    assert_eq!(selector.len(), 1, "{selector:?}");

    let objs = objects(&template_ok(&["--set", "workloadPolicy.install=false"]));
    assert!(!objs.contains_key(&key(
        "ValidatingAdmissionPolicy",
        "berth-granted-runtimeclasses"
    )));
    assert!(objs.contains_key(&key(
        "ValidatingAdmissionPolicy",
        "berth-runtimegrant-writers"
    )));
    // A quote would break out of the CEL string: the schema refuses it.
    assert!(
        template(&["--set", "workloadPolicy.controllerUsernames={it's}"]).is_err(),
        "a quote in a controller username"
    );
}

#[test]
fn cert_manager_and_files_modes_ship_the_webhook_configuration() {
    // cert-manager: an Issuer (none named), the Certificate, the webhook
    // configuration with the CA injected by cert-manager, the certificate
    // mounted, and no RBAC to manage the configuration.
    let objs = objects(&template_ok(&[
        "--set",
        "webhook.certificateMode=cert-manager",
    ]));
    let ks = kinds(&objs);
    for kind in ["Issuer", "Certificate", "ValidatingWebhookConfiguration"] {
        assert!(ks.contains(&kind), "{kind} in {ks:?}");
    }
    assert!(
        !objs.contains_key(&(
            "ClusterRole".into(),
            String::new(),
            "berth-agent-admission".into()
        )),
        "no webhook-configuration RBAC in cert-manager mode"
    );
    let cert = find(&objs, "Certificate");
    assert_eq!(cert["spec"]["secretName"], "berth-agent-webhook-tls");
    assert_eq!(cert["spec"]["dnsNames"][0], "berth-agent.berth-system.svc");
    let vwc = find(&objs, "ValidatingWebhookConfiguration");
    assert_eq!(
        vwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        "berth-system/berth-agent-webhook"
    );
    // The same settings as the shipped static configuration.
    let shipped = objects(&read(&assets().join("admission/webhook-static.yaml")));
    let shipped = find(&shipped, "ValidatingWebhookConfiguration");
    assert_eq!(vwc["webhooks"], shipped["webhooks"]);
    let c = agent_container(&objs);
    let args = args_of(c);
    assert!(args.contains(&"--tls-cert=/etc/berth/tls/tls.crt".to_string()));
    assert!(!args.iter().any(|a| a.starts_with("--webhook-service")));
    assert_agent_accepts(&args);

    // A named issuer: no Issuer of the chart's.
    let objs = objects(&template_ok(&[
        "--set",
        "webhook.certificateMode=cert-manager",
        "--set",
        "webhook.certManager.issuerRef.kind=ClusterIssuer",
        "--set",
        "webhook.certManager.issuerRef.name=corp-ca",
    ]));
    assert!(!kinds(&objs).contains(&"Issuer"));
    assert_eq!(
        find(&objs, "Certificate")["spec"]["issuerRef"]["name"],
        "corp-ca"
    );

    // files: the operator's Secret and CA.
    let objs = objects(&template_ok(&[
        "--set",
        "webhook.certificateMode=files",
        "--set",
        "webhook.files.secretName=agent-tls",
        "--set",
        "webhook.files.caBundle=Zm9v",
    ]));
    let vwc = find(&objs, "ValidatingWebhookConfiguration");
    assert_eq!(vwc["webhooks"][0]["clientConfig"]["caBundle"], "Zm9v");
    let volumes = &find(&objs, "Deployment")["spec"]["template"]["spec"]["volumes"];
    assert_eq!(volumes[1]["secret"]["secretName"], "agent-tls");
    assert!(!kinds(&objs).contains(&"Certificate"));
}

#[test]
fn the_values_schema_refuses_bad_values() {
    for (set, why) in [
        ("replicas=0", "replicas"),
        ("image.digest=latest", "digest"),
        ("image.tag=a b", "tag"),
        ("webhook.certificateMode=acme", "certificateMode"),
        ("logFormat=xml", "logFormat"),
        ("unknownKey=1", "unknownKey"),
        ("grantsSecretName=Not_A_Name", "grantsSecretName"),
        ("crds.install=maybe", "install"),
        ("webhook.certificateMode=files", "files"),
    ] {
        let err = template(&["--set", set])
            .err()
            .unwrap_or_else(|| panic!("--set {set} was accepted"));
        assert!(
            err.contains("schema") && err.contains(why),
            "--set {set}: the error names the schema and {why}:\n{err}"
        );
    }
}

/// Every optional part of the chart switched on, as `--set` arguments:
/// the agent's protections (a PriorityClass named `priority_class`), and
/// the monitoring parts when this chart has them (`prometheusRule`,
/// `dashboard`: the schema refuses a value the chart does not know).
fn every_optional_part(priority_class: &str) -> Vec<String> {
    let mut sets = vec![
        "podDisruptionBudget.enabled=true".to_string(),
        "networkPolicy.enabled=true".to_string(),
        "serviceMonitor.enabled=true".to_string(),
        format!("priorityClassName={priority_class}"),
    ];
    let values: Value =
        yaml_serde::from_str(&read(&chart().join("values.yaml"))).expect("values.yaml");
    for part in ["prometheusRule", "dashboard"] {
        if values.get(part).is_some() {
            sets.push(format!("{part}.enabled=true"));
        }
    }
    sets.into_iter()
        .flat_map(|s| ["--set".to_string(), s])
        .collect()
}

/// `helm install` for real: the release's namespaced objects in a namespace
/// that enforces the `restricted` Pod Security Standard, with every
/// optional part on (PodDisruptionBudget, NetworkPolicy, ServiceMonitor and
/// PrometheusRule on the test's minimal monitoring CRDs, a PriorityClass,
/// the dashboard), the agent Deployment rolling out on the kwok nodes
/// (helm's own --wait, then checked here), an upgrade, and an uninstall
/// that removes the cluster-scoped objects. The CRDs (shared by every test)
/// and the two admission policies (which would refuse the other tests'
/// writes) are left out of the release; with them in, every object passes
/// a strict server-side dry-run.
#[tokio::test]
async fn helm_install_rolls_out_under_restricted_pod_security() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Pod, Secret};
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use k8s_openapi::api::scheduling::v1::PriorityClass;
    use kube::api::{DeleteParams, DynamicObject, ListParams, PostParams};
    use kube::discovery::ApiResource;
    use kube::{Api, ResourceExt};

    let ns = TestNamespace::with_labels(
        "chart-inst",
        &[
            ("pod-security.kubernetes.io/enforce", "restricted"),
            ("pod-security.kubernetes.io/enforce-version", "latest"),
        ],
    )
    .await;
    berth_tests::harness::install_crds(&ns.client).await;
    protection::install_monitoring_crds(&ns.client).await;
    // A PriorityClass of the test's own (cluster-scoped; deleted below).
    let priority_class = format!("berth-it-{}", std::process::id());
    let classes: Api<PriorityClass> = Api::all(ns.client.clone());
    let class: PriorityClass = serde_json::from_value(serde_json::json!({
        "metadata": {"name": priority_class},
        "value": 1000,
        "description": "berth chart test"
    }))
    .expect("priority class");
    match classes.create(&PostParams::default(), &class).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("create PriorityClass: {e}"),
    }
    let optional = every_optional_part(&priority_class);

    // Everything the chart renders for this namespace, every optional part
    // on, passes a strict server-side dry-run (CRDs and policy included).
    let rendered = {
        let chart = chart_arg();
        let ns_name = ns.name.clone();
        let optional = optional.clone();
        tokio::task::spawn_blocking(move || {
            let mut args = vec![
                "template",
                "berth",
                &chart,
                "--namespace",
                &ns_name,
                "--kube-version",
                kube_version(),
                "--api-versions",
                "monitoring.coreos.com/v1/ServiceMonitor",
                "--api-versions",
                "monitoring.coreos.com/v1/PrometheusRule",
            ];
            args.extend(optional.iter().map(String::as_str));
            stdout_of("helm template", &helm(&args))
        })
        .await
        .expect("helm template")
    };
    let rendered_kinds: Vec<String> = objects(&rendered)
        .into_keys()
        .map(|(kind, _, _)| kind)
        .collect();
    for kind in ["PodDisruptionBudget", "NetworkPolicy", "ServiceMonitor"] {
        assert!(
            rendered_kinds.iter().any(|k| k == kind),
            "{kind} in {rendered_kinds:?}"
        );
    }
    let mut failures = Vec::new();
    for doc in yaml_serde::Deserializer::from_str(&rendered) {
        let v = Value::deserialize(doc).expect("yaml");
        if v.is_null() {
            continue;
        }
        let obj: DynamicObject = yaml_serde::from_value(v).expect("object");
        if let Err(e) = crate::assets::dry_run_create(&ns, &obj).await {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "refused:\n{}", failures.join("\n"));

    let grants: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "berth-grants"},
        "stringData": {"grants.toml": "schema_version = 1\nbindings = []\n"}
    }))
    .expect("secret");
    Api::<Secret>::namespaced(ns.client.clone(), &ns.name)
        .create(&PostParams::default(), &grants)
        .await
        .expect("grants Secret");

    let release = format!("it{}", std::process::id());
    let agent = format!("{release}-berth-agent");
    let kubeconfig = tokio::task::spawn_blocking(|| cluster().kubeconfig.display().to_string())
        .await
        .expect("cluster");
    let helm_in_cluster = |args: Vec<String>| {
        let kubeconfig = kubeconfig.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
                all.extend(["--kubeconfig", &kubeconfig]);
                let out = helm(&all);
                stdout_of(&format!("helm {args:?}"), &out)
            })
            .await
            .expect("helm")
        }
    };
    let common = |verb: &str| -> Vec<String> {
        let mut args: Vec<String> = [
            verb,
            &release,
            &chart_arg(),
            "--namespace",
            &ns.name,
            "--set",
            "crds.install=false",
            "--set",
            "runtimeGrantPolicy.install=false",
            "--set",
            "workloadPolicy.install=false",
            "--wait",
            "--timeout",
            "180s",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(optional.iter().cloned());
        args
    };

    helm_in_cluster(common("install")).await;
    let deployments: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    let ready = |n: i32| {
        let deployments = deployments.clone();
        let agent = agent.clone();
        async move {
            deployments
                .get_opt(&agent)
                .await
                .ok()
                .flatten()
                .and_then(|d| d.status)
                .is_some_and(|s| s.ready_replicas == Some(n) && s.updated_replicas == Some(n))
        }
    };
    wait_for(
        "the chart's agent Deployment to roll out under restricted Pod Security",
        Duration::from_secs(90),
        || ready(2),
    )
    .await;

    // The protections are in the cluster: the ServiceMonitor because helm
    // found its CRD in the cluster's discovery, and the agent's pods run
    // at the PriorityClass's priority (the API server resolved the name).
    let pdb = Api::<PodDisruptionBudget>::namespaced(ns.client.clone(), &ns.name)
        .get(&agent)
        .await
        .expect("the PodDisruptionBudget");
    assert_eq!(
        pdb.spec.and_then(|s| s.min_available),
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1))
    );
    Api::<NetworkPolicy>::namespaced(ns.client.clone(), &ns.name)
        .get(&agent)
        .await
        .expect("the NetworkPolicy");
    let monitors = ApiResource {
        group: "monitoring.coreos.com".into(),
        version: "v1".into(),
        api_version: "monitoring.coreos.com/v1".into(),
        kind: "ServiceMonitor".into(),
        plural: "servicemonitors".into(),
    };
    Api::<DynamicObject>::namespaced_with(ns.client.clone(), &ns.name, &monitors)
        .get(&agent)
        .await
        .expect("the ServiceMonitor (its CRD is installed)");
    let pods = Api::<Pod>::namespaced(ns.client.clone(), &ns.name)
        .list(&ListParams::default().labels(&format!("app.kubernetes.io/name={agent}")))
        .await
        .expect("pods");
    assert!(!pods.items.is_empty());
    for pod in &pods.items {
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(
            (spec.priority_class_name.as_deref(), spec.priority),
            (Some(priority_class.as_str()), Some(1000)),
            "pod {}",
            pod.name_any()
        );
    }

    let mut upgrade = common("upgrade");
    upgrade.extend(["--set".into(), "replicas=3".into()]);
    helm_in_cluster(upgrade).await;
    wait_for(
        "the upgraded agent Deployment (3 replicas)",
        Duration::from_secs(90),
        || ready(3),
    )
    .await;
    let status = helm_in_cluster(vec![
        "status".into(),
        release.clone(),
        "--namespace".into(),
        ns.name.clone(),
    ])
    .await;
    assert!(status.contains("STATUS: deployed"), "{status}");
    assert!(status.contains("REVISION: 2"), "{status}");

    let roles: Api<ClusterRole> = Api::all(ns.client.clone());
    assert!(roles.get_opt(&agent).await.expect("get").is_some());
    helm_in_cluster(vec![
        "uninstall".into(),
        release.clone(),
        "--namespace".into(),
        ns.name.clone(),
        "--wait".into(),
    ])
    .await;
    assert!(
        roles.get_opt(&agent).await.expect("get").is_none(),
        "uninstall removes the release's ClusterRole"
    );
    let _ = classes
        .delete(&priority_class, &DeleteParams::default())
        .await;
}
