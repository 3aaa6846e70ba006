//! The webhook's life: start (certificate, listener, the CA published),
//! then serve and maintain (rotate or reload the certificate, re-apply the
//! configuration) until shut down.
//!
//! Start and serve are two steps so that a caller can report ready exactly
//! when the apiserver can verify this replica: [`start`] returns only once
//! the listener is bound and the CA this replica serves with is stored in
//! the webhook configuration. Reporting ready on the bound port alone put a
//! replica behind the Service before its CA was published, and the
//! apiserver, routed to it, refused the call ("certificate signed by
//! unknown authority").

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use berth_shared::decide::GrantBinding;
use kube::Client;
use tokio::net::TcpListener;
use tokio_rustls::rustls::ServerConfig;

use super::certs::{self, SelfSignedCa, SelfSignedOptions, SwappableResolver};
use super::config::{self, WebhookConfigSpec};
use super::serving_config::{AdmissionConfig, AdmissionError, TlsMode};
use super::{grant_set, review, server};

/// A webhook started: bound, with its CA published; [`Started::serve`]
/// serves it.
pub struct Started {
    config: AdmissionConfig,
    ca: Option<SelfSignedCa>,
    resolver: Arc<SwappableResolver>,
    tls: ServerConfig,
    listener: TcpListener,
    router: axum::Router,
    client: Client,
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started")
            .field("listen", &self.config.listen)
            .finish_non_exhaustive()
    }
}

/// Serves the webhook until `shutdown` completes: [`start`], then
/// [`Started::serve`]. `bindings` are the loaded grants (see
/// [`review::grant_bindings`]); `grant_set` tells whether they are the
/// leader's.
pub async fn serve(
    config: AdmissionConfig,
    bindings: Arc<[GrantBinding]>,
    grant_set: grant_set::GrantSet,
    client: Client,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), AdmissionError> {
    start(config, bindings, grant_set, client)
        .await?
        .serve(shutdown)
        .await;
    Ok(())
}

/// Creates or loads the certificate, binds the listener and publishes the
/// CA (self-signed) or applies the configuration (files); returns when a
/// call routed here would verify.
pub async fn start(
    config: AdmissionConfig,
    bindings: Arc<[GrantBinding]>,
    grant_set: grant_set::GrantSet,
    client: Client,
) -> Result<Started, AdmissionError> {
    let mut ca = None;
    let resolver = match &config.tls {
        TlsMode::SelfSigned {
            validity,
            extra_names,
        } => {
            let Some(spec) = &config.webhook else {
                return Err(AdmissionError::Usage(
                    "a self-signed certificate needs a managed webhook configuration (--webhook-url or --webhook-service) to publish its CA".into(),
                ));
            };
            let mut names = spec.target.certificate_names();
            names.extend(extra_names.iter().cloned());
            let generated = SelfSignedCa::new(SelfSignedOptions {
                names,
                validity: *validity,
            })?;
            let resolver = Arc::new(SwappableResolver::new(generated.certified_key()));
            ca = Some(generated);
            resolver
        }
        TlsMode::Files { cert, key, .. } => {
            let (key, _) = certs::load_pem_files(cert, key)?;
            Arc::new(SwappableResolver::new(key))
        }
    };
    if let Some(gauge) = &config.cert_expiry {
        resolver.report_expiry(gauge.clone());
    }
    let tls = server::tls_config(resolver.clone())?;
    let listener =
        TcpListener::bind(config.listen)
            .await
            .map_err(|source| AdmissionError::Listen {
                addr: config.listen,
                source,
            })?;
    let local = listener.local_addr().unwrap_or(config.listen);

    // Publish the CA before the first call can arrive with it.
    if let Some(spec) = &config.webhook {
        apply_config(&client, spec, ca.as_ref())
            .await
            .map_err(|source| AdmissionError::Apply {
                name: spec.name.clone(),
                source,
            })?;
        tracing::info!(name = %spec.name, "webhook configuration applied");
    }

    let scope = config
        .webhook
        .as_ref()
        .map(|w| w.namespace_labels.clone())
        .unwrap_or_default();
    tracing::info!(address = %local, bindings = bindings.len(), "admission webhook serving");
    let router = server::router(
        bindings,
        grant_set,
        review::KubeLookup::new(client.clone()).with_scope(scope),
    );
    Ok(Started {
        config,
        ca,
        resolver,
        tls,
        listener,
        router,
        client,
    })
}

impl Started {
    /// Serves until `shutdown` completes, rotating (or reloading) the
    /// certificate and re-applying the configuration in the background.
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send) {
        let Started {
            config,
            ca,
            resolver,
            tls,
            listener,
            router,
            client,
        } = self;
        let background = maintain(config, ca, resolver, client);
        tokio::select! {
            () = server::serve_tls(listener, tls, router, shutdown) => {}
            () = background => {}
        }
        tracing::info!("admission webhook stopped");
    }
}

/// Self-signed: publish this agent's CAs next to those of other replicas;
/// files: apply without a caBundle (cert-manager's CA injector owns it).
async fn apply_config(
    client: &Client,
    spec: &WebhookConfigSpec,
    ca: Option<&SelfSignedCa>,
) -> Result<(), kube::Error> {
    match ca {
        Some(ca) => config::apply_merged(client, spec, &ca.own_cas()).await,
        None => config::apply(client, spec, None).await,
    }
}

fn until(t: SystemTime) -> Duration {
    t.duration_since(SystemTime::now()).unwrap_or_default()
}

/// Rotates the self-signed certificate or reloads the files, and re-applies
/// the configuration; never returns.
async fn maintain(
    config: AdmissionConfig,
    mut ca: Option<SelfSignedCa>,
    resolver: Arc<SwappableResolver>,
    client: Client,
) {
    let mut seen_files: Option<Vec<u8>> = None;
    let mut next_apply = SystemTime::now() + config.reapply_interval;
    loop {
        let mut wake = next_apply;
        if let Some(ca) = &ca {
            wake = wake.min(ca.rotate_at());
        }
        if let TlsMode::Files {
            reload_interval, ..
        } = &config.tls
        {
            wake = wake.min(SystemTime::now() + *reload_interval);
        }
        tokio::time::sleep(until(wake)).await;

        let mut changed_bundle = false;
        if let Some(ca) = ca.as_mut()
            && ca.rotate_at() <= SystemTime::now()
        {
            match ca.rotate() {
                Ok(()) => {
                    // The new chain verifies against the old CA too
                    // (cross-signed), so swapping first is safe.
                    resolver.set(ca.certified_key());
                    changed_bundle = true;
                    tracing::info!(
                        generation = ca.generation(),
                        ca = %ca.ca_name(),
                        "webhook serving certificate rotated"
                    );
                }
                Err(e) => tracing::error!(error = %e, "rotating the webhook certificate failed"),
            }
        }
        if let TlsMode::Files { cert, key, .. } = &config.tls {
            match certs::load_pem_files(cert, key) {
                Ok((key, bytes)) => {
                    if seen_files.as_ref().is_some_and(|s| *s != bytes) {
                        resolver.set(key);
                        tracing::info!(
                            "webhook certificate files changed; now serving the new certificate"
                        );
                    }
                    seen_files = Some(bytes);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "re-reading the webhook certificate failed; still serving the previous one")
                }
            }
        }
        if let Some(spec) = &config.webhook
            && (changed_bundle || next_apply <= SystemTime::now())
        {
            match apply_config(&client, spec, ca.as_ref()).await {
                Ok(()) => next_apply = SystemTime::now() + config.reapply_interval,
                Err(e) => {
                    tracing::warn!(name = %spec.name, error = %e, "applying the webhook configuration failed; retrying");
                    next_apply = SystemTime::now() + Duration::from_secs(5);
                }
            }
        } else if config.webhook.is_none() {
            next_apply = SystemTime::now() + config.reapply_interval;
        }
    }
}
