//! Acceptance (docs/architecture.md §5): the validating admission webhook for Runtimes.
//!
//! The API server sends every Runtime CREATE and UPDATE (also server-side
//! dry-runs) to the agent, which refuses a profile that is not granted for
//! the Runtime's identity — using the same pure `decide` function as the
//! controller — with a message naming the reason and the exact scope a
//! binding would need. Deletes are never sent.
//!
//! - [`review`]: AdmissionReview → decide → AdmissionResponse;
//! - [`server`]: axum over rustls, hot-swappable certificate;
//! - [`certs`]: self-signed CA + rotation, or operator-supplied files;
//! - [`config`]: the ValidatingWebhookConfiguration the agent owns;
//! - [`grant_set`]: one grant set per cluster (the leader's digest);
//! - [`lifecycle`]: start (CA published) → serve → maintain.
//!
//! Entry points: [`start`] then [`lifecycle::Started::serve`] (what `run` calls,
//! behind `--webhook-listen`), [`serve`] (both at once)
//! and the standalone `berth-agent webhook` command ([`run_command`]).

pub mod arg_error;
pub mod certs;
pub mod config;
pub mod grant_set;
pub mod lease_reader;
pub mod lifecycle;
pub mod lookup;
pub mod review;
mod runtime_view;
pub mod server;
mod serving_config;
mod verdict;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use berth_shared::decide::GrantBinding;
use kube::Client;

use arg_error::ArgError;
use config::{Target, WebhookConfigSpec};
pub use lifecycle::{serve, start};
pub use serving_config::{AdmissionConfig, AdmissionError, DEFAULT_REAPPLY_INTERVAL, TlsMode};

/// Parses `90d`, `12h`, `30m`, `45s` (or plain seconds).
pub fn parse_duration(s: &str) -> Result<Duration, ArgError> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| ArgError::NotANumber(s.to_string()))?;
    let mult = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return Err(ArgError::UnknownUnit(s.to_string(), unit.to_string())),
    };
    n.checked_mul(mult)
        .map(Duration::from_secs)
        .ok_or_else(|| ArgError::TooLarge(s.to_string()))
}

fn parse_label(s: &str) -> Result<(String, String), ArgError> {
    s.split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| ArgError::NotALabel(s.to_string()))
}

/// Webhook options shared by `run` (with `--webhook-listen`) and the
/// standalone `webhook` command.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AdmissionArgs {
    /// Generate a self-signed CA and serving certificate at start, inject
    /// the CA into the managed ValidatingWebhookConfiguration, and rotate
    /// before expiry (the default when no --tls-cert is given).
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key"])]
    pub self_signed: bool,
    /// PEM certificate chain to serve (cert-manager or files mode).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// How often --tls-cert/--tls-key are checked for new content.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub tls_reload_interval: Duration,
    /// Validity of each self-signed serving certificate; it is replaced at
    /// two thirds of it.
    #[arg(long, value_name = "DURATION", default_value = "30d", value_parser = parse_duration)]
    pub cert_validity: Duration,
    /// Extra subject alternative name of the self-signed certificate (repeatable).
    #[arg(long = "tls-san", value_name = "NAME")]
    pub tls_sans: Vec<String>,
    /// The API server reaches the webhook at this https URL (out-of-cluster
    /// agents); the agent manages the ValidatingWebhookConfiguration.
    #[arg(long, value_name = "URL", conflicts_with = "webhook_service")]
    pub webhook_url: Option<String>,
    /// The API server reaches the webhook through this Service
    /// (NAMESPACE/NAME[:PORT]); the agent manages the configuration.
    #[arg(long, value_name = "NS/NAME[:PORT]", value_parser = Target::parse_service)]
    pub webhook_service: Option<Target>,
    /// Name of the managed ValidatingWebhookConfiguration.
    #[arg(long, value_name = "NAME", default_value = config::DEFAULT_CONFIG_NAME)]
    pub webhook_config_name: String,
    /// Seconds the API server waits for the webhook (1–30).
    #[arg(long, value_name = "SECONDS", default_value_t = config::DEFAULT_TIMEOUT_SECONDS,
          value_parser = clap::value_parser!(i32).range(1..=30))]
    pub webhook_timeout_seconds: i32,
    /// Only review Runtimes in namespaces with this label (repeatable;
    /// kube-system is always excluded).
    #[arg(long = "webhook-namespace-label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub webhook_namespace_labels: Vec<(String, String)>,
}

impl AdmissionArgs {
    /// The configuration for a webhook listening on `listen`.
    pub fn to_config(&self, listen: SocketAddr) -> Result<AdmissionConfig, AdmissionError> {
        let target = match (&self.webhook_url, &self.webhook_service) {
            (Some(url), _) => {
                if config::url_host(url).is_none() {
                    return Err(AdmissionError::Usage(format!(
                        "--webhook-url {url:?}: expected https://HOST[:PORT][/PATH]"
                    )));
                }
                Some(Target::Url(url.clone()))
            }
            (None, Some(svc)) => Some(svc.clone()),
            (None, None) => None,
        };
        let webhook = target.map(|target| {
            let mut spec = WebhookConfigSpec::new(target);
            spec.name.clone_from(&self.webhook_config_name);
            spec.timeout_seconds = self.webhook_timeout_seconds;
            spec.namespace_labels = self
                .webhook_namespace_labels
                .iter()
                .cloned()
                .collect::<BTreeMap<_, _>>();
            spec
        });
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => TlsMode::Files {
                cert: cert.clone(),
                key: key.clone(),
                reload_interval: self.tls_reload_interval,
            },
            _ => TlsMode::SelfSigned {
                validity: self.cert_validity,
                extra_names: self.tls_sans.clone(),
            },
        };
        Ok(AdmissionConfig {
            listen,
            tls,
            webhook,
            reapply_interval: DEFAULT_REAPPLY_INTERVAL,
            cert_expiry: None,
        })
    }
}

/// `berth-agent webhook`: serves only the admission webhook (no
/// controller), for tests and for splitting the webhook from the controller.
#[derive(Debug, Clone, clap::Args)]
pub struct WebhookCommandArgs {
    #[command(flatten)]
    pub grants: crate::grants_config::GrantsFileArgs,
    /// HTTPS listen address.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:9443")]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub admission: AdmissionArgs,
    /// Follow the grants digest the leader of this Lease publishes
    /// (NAMESPACE/NAME, the agents' `--lease-namespace`/`--lease-name`):
    /// while this webhook's grants file is not the leader's, it refuses
    /// what depends on the grants ("grants are being reloaded, retry").
    /// Without it this webhook judges with its own file alone.
    #[arg(long, value_name = "NAMESPACE/NAME", value_parser = parse_lease)]
    pub follow_lease: Option<(String, String)>,
}

fn parse_lease(s: &str) -> Result<(String, String), ArgError> {
    s.split_once('/')
        .filter(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains('/'))
        .map(|(ns, name)| (ns.to_string(), name.to_string()))
        .ok_or_else(|| ArgError::NotALease(s.to_string()))
}

/// How often the standalone webhook reads the leader's Lease.
const FOLLOW_INTERVAL: Duration = Duration::from_secs(2);

async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

/// Runs the `webhook` command.
pub fn run_command(args: &WebhookCommandArgs) -> color_eyre::Result<()> {
    // The grants file first: an invalid file must stop the agent from starting.
    let loaded = args.grants.load()?;
    let bindings: Arc<[GrantBinding]> = review::grant_bindings(loaded.as_ref()).into();
    let own = grant_set::own_digest(loaded.as_ref());
    let config = args.admission.to_config(args.listen)?;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .json()
        .with_writer(std::io::stderr)
        .try_init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let client = Client::try_default().await?;
        let set = match &args.follow_lease {
            Some((namespace, name)) => {
                let set = grant_set::GrantSet::following(
                    own,
                    prometheus_client::metrics::gauge::Gauge::default(),
                );
                // One reader: followed every interval, and read again on
                // demand by an admission that finds the set unconfirmed.
                let reader = lease_reader::LeaseReader::new(client.clone(), namespace, name);
                set.read_lease_from(Box::new(reader.clone()));
                let follower = set.clone();
                tokio::spawn(async move {
                    lease_reader::follow(&reader, follower, FOLLOW_INTERVAL).await;
                });
                set
            }
            None => grant_set::GrantSet::alone(own),
        };
        serve(config, bindings, set, client, shutdown_signal()).await?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: WebhookCommandArgs,
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        assert_eq!(parse_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86400)));
        assert!(parse_duration("1w").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("99999999999999999999d").is_err());
    }

    #[test]
    fn command_line() {
        let cli = Cli::try_parse_from([
            "t",
            "--listen",
            "127.0.0.1:0",
            "--self-signed",
            "--webhook-url",
            "https://127.0.0.1:9443",
            "--cert-validity",
            "20s",
            "--webhook-namespace-label",
            "kubernetes.io/metadata.name=team-a",
        ])
        .expect("parse");
        let cfg = cli
            .args
            .admission
            .to_config(cli.args.listen)
            .expect("config");
        assert!(matches!(
            cfg.tls,
            TlsMode::SelfSigned { validity, .. } if validity == Duration::from_secs(20)
        ));
        let wh = cfg.webhook.expect("managed");
        assert_eq!(wh.name, "berth-agent");
        assert_eq!(
            wh.namespace_labels.get("kubernetes.io/metadata.name"),
            Some(&"team-a".to_string())
        );
        assert!(
            Cli::try_parse_from(["t", "--self-signed", "--tls-cert", "a", "--tls-key", "b"])
                .is_err()
        );
        assert!(Cli::try_parse_from(["t", "--tls-cert", "a"]).is_err());
        let cli = Cli::try_parse_from(["t", "--tls-cert", "a", "--tls-key", "b"]).expect("files");
        let cfg = cli.args.admission.to_config(cli.args.listen).expect("cfg");
        assert!(matches!(cfg.tls, TlsMode::Files { .. }));
        assert!(cfg.webhook.is_none());
    }
}
