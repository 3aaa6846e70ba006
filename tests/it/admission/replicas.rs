//! Several webhook replicas share one configuration, each with its own
//! self-signed CA (as the chart's two agent replicas do). The apiserver may
//! route a call to any of them, so the bundle it stores must verify every
//! replica from the moment that replica says it serves.
//!
//! The adversary is the other replicas: started at once, each reads the
//! configuration and writes it back with its own CA merged in. A write that
//! is not conditional on what was read (a server-side apply that creates
//! the object, or one without the resourceVersion read) lets one replica's
//! stale read erase another's CA; the apiserver then refuses calls routed
//! to that replica with "certificate signed by unknown authority", which is
//! how the first as-shipped run on the real node failed.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_tests::bench::process::free_port;
use berth_tests::harness::cluster;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::Api;
use kube::api::DeleteParams;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

use crate::support::webhook::*;

/// One replica: its process, port and log.
struct Replica {
    child: tokio::process::Child,
    port: u16,
    log: std::path::PathBuf,
}

impl Replica {
    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// Starts `berth-agent webhook` on `port`, publishing `url` (the same for
/// every replica, as a Service is) into `config_name`.
fn spawn_replica(bin: &Path, grants: &Path, config_name: &str, url: &str, port: u16) -> Replica {
    let log = cluster().dir.join(format!("{config_name}-{port}.log"));
    let child = spawn_webhook(
        bin,
        &WebhookProcess {
            grants,
            port,
            url,
            config_name,
            // Reviews only namespaces carrying this label: nobody's.
            selector: config_name,
            extra: &[],
        },
        std::fs::File::create(&log).expect("log file"),
    );
    Replica { child, port, log }
}

/// Whether a TLS client trusting exactly `bundle` (what the apiserver
/// stores) verifies the certificate served at `addr` for `name`, as the
/// apiserver would.
pub(crate) async fn verifies(
    bundle: &str,
    addr: SocketAddr,
    name: ServerName<'static>,
) -> Result<(), String> {
    let mut roots = RootCertStore::empty();
    for der in CertificateDer::pem_slice_iter(bundle.as_bytes()) {
        let der = der.map_err(|e| format!("stored bundle: {e}"))?;
        roots.add(der).map_err(|e| format!("stored bundle: {e}"))?;
    }
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map(|_| ())
        .map_err(|e| format!("handshake: {e}"))
}

/// The caBundle the apiserver stores for the configuration's first webhook.
pub(crate) fn stored_bundle(config: &ValidatingWebhookConfiguration) -> String {
    config
        .webhooks
        .as_ref()
        .and_then(|w| w.first())
        .and_then(|w| w.client_config.ca_bundle.as_ref())
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn replicas_starting_at_once_are_each_verifiable_once_serving() {
    const REPLICAS: usize = 4;
    let id = unique("replicas");
    let client = berth_tests::harness::admin_client().await;
    let config_name = format!("berth-it-{id}");
    let grants = grants_file(&id, &[("bounded-worker", "bounded", "bounded-runc")]);
    let bin = tokio::task::spawn_blocking(|| {
        berth_tests::harness::workspace_binary("berth-agent", "berth-agent", "BERTH_AGENT_BIN")
    })
    .await
    .expect("build thread");
    let ports: Vec<u16> = (0..REPLICAS).map(|_| free_port()).collect();
    let url = format!("https://127.0.0.1:{}", ports[0]);
    // All at once: no replica waits for another.
    let mut replicas: Vec<Replica> = ports
        .iter()
        .map(|&port| spawn_replica(&bin, &grants, &config_name, &url, port))
        .collect();

    // "serving" is logged once the replica's CA is stored (lifecycle::start).
    let deadline = Instant::now() + Duration::from_secs(60);
    for r in &mut replicas {
        loop {
            if r.log_text().contains("admission webhook serving") {
                break;
            }
            if let Ok(Some(status)) = r.child.try_wait() {
                panic!("replica on {} exited ({status}):\n{}", r.port, r.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "replica on {} never served:\n{}",
                r.port,
                r.log_text()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // What the apiserver stores, read once every replica serves, and
    // before any periodic re-apply (60 s) could have repaired a lost CA.
    let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let stored = vwcs.get(&config_name).await.expect("configuration");
    let bundle = stored_bundle(&stored);
    let cas = bundle.matches("BEGIN CERTIFICATE").count();
    let mut failures = Vec::new();
    for r in &replicas {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, r.port));
        let name = ServerName::IpAddress(Ipv4Addr::LOCALHOST.into());
        if let Err(e) = verifies(&bundle, addr, name).await {
            failures.push(format!("replica on {}: {e}\n{}", r.port, r.log_text()));
        }
    }
    eprintln!("{REPLICAS} replicas started at once; the stored bundle holds {cas} CAs");
    for r in &mut replicas {
        let _ = r.child.start_kill();
        let _ = r.child.wait().await;
    }
    let _ = vwcs.delete(&config_name, &DeleteParams::default()).await;
    assert!(
        failures.is_empty(),
        "the stored bundle ({cas} CAs) does not verify every serving replica:\n{}",
        failures.join("\n")
    );
    assert_eq!(cas, REPLICAS, "one CA per replica, none lost, none extra");
}
