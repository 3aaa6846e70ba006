//! The ValidatingWebhookConfiguration the agent owns in self-signed mode,
//! applied with server-side apply under its own field manager.
//!
//! - one webhook, `runtimes.berth.dev`, for `runtimes` in `berth.dev`, on
//!   CREATE and UPDATE only (deletes are never sent, so they can never be
//!   blocked);
//! - `failurePolicy: Fail` (a security control fails closed), a short
//!   timeout, `sideEffects: None` (so server-side dry-runs are reviewed too);
//! - a namespaceSelector that never catches `kube-system`, optionally
//!   narrowed by extra labels.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    RuleWithOperations, ServiceReference, ValidatingWebhook, ValidatingWebhookConfiguration,
    WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::{Api, Client};

use super::arg_error::ArgError;

/// Default name of the ValidatingWebhookConfiguration.
pub const DEFAULT_CONFIG_NAME: &str = "berth-agent";
/// The webhook's name (must be fully qualified).
pub const WEBHOOK_NAME: &str = "runtimes.berth.dev";
/// The path the webhook is served on.
pub const WEBHOOK_PATH: &str = "/validate/runtimes";
/// The field manager of the agent's writes to the configuration.
pub const FIELD_MANAGER: &str = "berth-agent-admission";
/// Default timeout the API server waits for the webhook.
pub const DEFAULT_TIMEOUT_SECONDS: i32 = 5;
/// The namespace label the API server sets on every Namespace.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Where the API server reaches the webhook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// An `https://host:port` URL (out-of-cluster agents, tests); the
    /// webhook path is appended when the URL has none.
    Url(String),
    /// A Service in the cluster.
    Service {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its port.
        port: i32,
    },
}

impl Target {
    /// Parses `NAMESPACE/NAME[:PORT]` (port 443 when omitted).
    pub fn parse_service(s: &str) -> Result<Self, ArgError> {
        let (namespace, rest) = s
            .split_once('/')
            .ok_or_else(|| ArgError::NotAService(s.to_string()))?;
        let (name, port) = match rest.split_once(':') {
            Some((name, port)) => (
                name,
                port.parse::<i32>().map_err(|source| ArgError::BadPort {
                    value: s.to_string(),
                    source,
                })?,
            ),
            None => (rest, 443),
        };
        if namespace.is_empty() || name.is_empty() {
            return Err(ArgError::NotAService(s.to_string()));
        }
        Ok(Target::Service {
            namespace: namespace.into(),
            name: name.into(),
            port,
        })
    }

    /// The names the serving certificate must carry for this target.
    pub fn certificate_names(&self) -> Vec<String> {
        match self {
            Target::Url(url) => url_host(url).into_iter().collect(),
            Target::Service {
                namespace, name, ..
            } => vec![
                format!("{name}.{namespace}.svc"),
                format!("{name}.{namespace}.svc.cluster.local"),
                format!("{name}.{namespace}"),
            ],
        }
    }

    fn client_config(&self, ca_bundle: Option<&str>) -> WebhookClientConfig {
        let ca_bundle = ca_bundle.map(|pem| ByteString(pem.as_bytes().to_vec()));
        match self {
            Target::Url(url) => WebhookClientConfig {
                url: Some(with_path(url)),
                ca_bundle,
                service: None,
            },
            Target::Service {
                namespace,
                name,
                port,
            } => WebhookClientConfig {
                service: Some(ServiceReference {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    path: Some(WEBHOOK_PATH.into()),
                    port: Some(*port),
                }),
                ca_bundle,
                url: None,
            },
        }
    }
}

/// The host of an `https://host[:port][/path]` URL (IPv6 brackets removed).
pub fn url_host(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://")?;
    let authority = rest.split('/').next()?;
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    (!host.is_empty()).then(|| host.to_string())
}

fn with_path(url: &str) -> String {
    let after_scheme = url.strip_prefix("https://").unwrap_or(url);
    match after_scheme.find('/') {
        Some(i) if after_scheme.len() > i + 1 => url.to_string(),
        Some(_) => format!("{}{}", url.trim_end_matches('/'), WEBHOOK_PATH),
        None => format!("{url}{WEBHOOK_PATH}"),
    }
}

/// What the managed configuration looks like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookConfigSpec {
    /// The ValidatingWebhookConfiguration's name.
    pub name: String,
    /// Where the API server calls.
    pub target: Target,
    /// Seconds the API server waits (1–30).
    pub timeout_seconds: i32,
    /// Extra namespace labels a namespace must carry to be reviewed (empty:
    /// every namespace but kube-system).
    pub namespace_labels: BTreeMap<String, String>,
}

impl WebhookConfigSpec {
    /// The defaults for `target`.
    pub fn new(target: Target) -> Self {
        Self {
            name: DEFAULT_CONFIG_NAME.into(),
            target,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            namespace_labels: BTreeMap::new(),
        }
    }
}

/// The desired configuration, with `ca_bundle` (PEM) when the agent
/// supplies the CA.
pub fn desired(
    spec: &WebhookConfigSpec,
    ca_bundle: Option<&str>,
) -> ValidatingWebhookConfiguration {
    let webhook = ValidatingWebhook {
        name: WEBHOOK_NAME.into(),
        admission_review_versions: vec!["v1".into()],
        client_config: spec.target.client_config(ca_bundle),
        failure_policy: Some("Fail".into()),
        match_policy: Some("Equivalent".into()),
        side_effects: "None".into(),
        timeout_seconds: Some(spec.timeout_seconds.clamp(1, 30)),
        rules: Some(vec![RuleWithOperations {
            api_groups: Some(vec![berth_shared::api::GROUP.into()]),
            api_versions: Some(vec!["*".into()]),
            operations: Some(vec!["CREATE".into(), "UPDATE".into()]),
            resources: Some(vec!["runtimes".into()]),
            scope: Some("Namespaced".into()),
        }]),
        namespace_selector: Some(LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: NAMESPACE_NAME_LABEL.into(),
                operator: "NotIn".into(),
                values: Some(vec!["kube-system".into()]),
            }]),
            match_labels: (!spec.namespace_labels.is_empty())
                .then(|| spec.namespace_labels.clone()),
        }),
        object_selector: Some(LabelSelector::default()),
        match_conditions: None,
    };
    ValidatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(spec.name.clone()),
            labels: Some(BTreeMap::from([
                (
                    berth_shared::api::meta::MANAGED_BY_LABEL.to_string(),
                    berth_shared::api::meta::MANAGED_BY_AGENT.to_string(),
                ),
                ("app.kubernetes.io/part-of".to_string(), "berth".to_string()),
            ])),
            ..Default::default()
        },
        webhooks: Some(vec![webhook]),
    }
}

/// Applies the configuration (server-side apply, forced: the agent owns it).
pub async fn apply(
    client: &Client,
    spec: &WebhookConfigSpec,
    ca_bundle: Option<&str>,
) -> Result<(), kube::Error> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mut obj = desired(spec, ca_bundle);
    obj.metadata.managed_fields = None;
    let patch = serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": obj.metadata,
        "webhooks": obj.webhooks,
    });
    api.patch(
        &spec.name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .map(|_| ())
}

/// Most writes [`apply_merged`] tries: every round that conflicts means
/// another replica's write landed, so a handful of replicas starting at once
/// all get through well within it.
const MERGE_ATTEMPTS: u32 = 12;

/// Applies the configuration with a caBundle merged from the published one
/// and `own_cas` (see [`super::certs::merge_bundle`]), so that several
/// replicas with their own CAs can share one configuration.
///
/// Every write is conditional on what was read, so no replica's CA is ever
/// lost to another's stale read: an existing configuration is applied with
/// the resourceVersion read (a conflict means re-read and merge again), and
/// a missing one is first created empty with a plain create, which fails
/// when another replica created it meanwhile (server-side apply would create
/// it unconditionally, and two replicas starting at once would each publish
/// only their own CA). Returns once the apiserver stores a bundle holding
/// every CA of `own_cas` (merge_bundle always keeps this agent's own).
pub async fn apply_merged(
    client: &Client,
    spec: &WebhookConfigSpec,
    own_cas: &[String],
) -> Result<(), kube::Error> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mut attempt = 0;
    loop {
        attempt += 1;
        let Some(live) = api.get_opt(&spec.name).await? else {
            let empty = ValidatingWebhookConfiguration {
                metadata: ObjectMeta {
                    name: Some(spec.name.clone()),
                    ..Default::default()
                },
                webhooks: None,
            };
            let params = kube::api::PostParams {
                field_manager: Some(FIELD_MANAGER.to_string()),
                ..Default::default()
            };
            match api.create(&params, &empty).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(e) => return Err(e),
            }
            continue;
        };
        let bundle = super::certs::merge_bundle(
            stored_bundle(&live).as_deref(),
            own_cas,
            std::time::SystemTime::now(),
        );
        let obj = desired(spec, Some(&bundle));
        let mut metadata = obj.metadata;
        metadata.resource_version = live.metadata.resource_version;
        let patch = serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": metadata,
            "webhooks": obj.webhooks,
        });
        match api
            .patch(
                &spec.name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&patch),
            )
            .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 && attempt < MERGE_ATTEMPTS => {}
            Err(e) => return Err(e),
        }
    }
}

/// The caBundle the apiserver stores for berth's webhook (PEM).
fn stored_bundle(live: &ValidatingWebhookConfiguration) -> Option<String> {
    live.webhooks
        .as_ref()?
        .iter()
        .find(|w| w.name == WEBHOOK_NAME)?
        .client_config
        .ca_bundle
        .as_ref()
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desired_configuration_is_strict() {
        let spec = WebhookConfigSpec::new(Target::Url("https://127.0.0.1:8443".into()));
        let vwc = desired(&spec, Some("PEM"));
        let wh = &vwc.webhooks.as_ref().expect("webhooks")[0];
        assert_eq!(wh.name, "runtimes.berth.dev");
        assert_eq!(wh.failure_policy.as_deref(), Some("Fail"));
        assert_eq!(wh.side_effects, "None");
        assert_eq!(wh.timeout_seconds, Some(5));
        let rule = &wh.rules.as_ref().expect("rules")[0];
        assert_eq!(
            rule.resources.as_deref(),
            Some(&["runtimes".to_string()][..])
        );
        assert_eq!(
            rule.operations.as_deref(),
            Some(&["CREATE".to_string(), "UPDATE".to_string()][..])
        );
        let sel = wh.namespace_selector.as_ref().expect("selector");
        let expr = &sel.match_expressions.as_ref().expect("expressions")[0];
        assert_eq!(expr.key, "kubernetes.io/metadata.name");
        assert_eq!(expr.operator, "NotIn");
        assert_eq!(
            expr.values.as_deref(),
            Some(&["kube-system".to_string()][..])
        );
        assert_eq!(
            wh.client_config.url.as_deref(),
            Some("https://127.0.0.1:8443/validate/runtimes")
        );
        assert_eq!(
            wh.client_config.ca_bundle.as_ref().map(|b| b.0.as_slice()),
            Some(&b"PEM"[..])
        );
    }

    #[test]
    fn targets() {
        assert_eq!(
            Target::parse_service("berth-system/berth-agent"),
            Ok(Target::Service {
                namespace: "berth-system".into(),
                name: "berth-agent".into(),
                port: 443
            })
        );
        assert!(Target::parse_service("nope").is_err());
        assert!(Target::parse_service("a/b:x").is_err());
        let svc = Target::parse_service("ns/web:8443").expect("svc");
        assert_eq!(svc.certificate_names()[0], "web.ns.svc");
        assert_eq!(url_host("https://127.0.0.1:9443"), Some("127.0.0.1".into()));
        assert_eq!(url_host("https://[::1]:9443/x"), Some("::1".into()));
        assert_eq!(
            url_host("https://hook.example/x"),
            Some("hook.example".into())
        );
        assert_eq!(with_path("https://h:1/"), "https://h:1/validate/runtimes");
        assert_eq!(with_path("https://h:1/custom"), "https://h:1/custom");
    }
}
