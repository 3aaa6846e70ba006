//! HTTPS for the webhook: axum routes served over rustls by hyper-util,
//! one task per connection, the certificate chosen per handshake by a
//! [`SwappableResolver`] (so rotation needs no restart).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use berth_shared::decide::GrantBinding;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use kube::core::DynamicObject;
use kube::core::admission::AdmissionReview;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;

use super::certs::{self, SwappableResolver};
use super::config::WEBHOOK_PATH;
use super::grant_set::GrantSet;
use super::review::{self, Lookup};

/// A TLS handshake that takes longer than this is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long in-flight requests may finish after shutdown is asked for.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest accepted AdmissionReview (the API server's own request limit is 3 MiB).
const BODY_LIMIT: usize = 4 * 1024 * 1024;

struct AppState<L> {
    bindings: Arc<[GrantBinding]>,
    grant_set: GrantSet,
    lookup: L,
}

async fn validate<L: Lookup + 'static>(
    State(state): State<Arc<AppState<L>>>,
    Json(body): Json<AdmissionReview<DynamicObject>>,
) -> Json<AdmissionReview<DynamicObject>> {
    // Asked per request: the leader (and so its digest) can change at any
    // time; an unconfirmed replica reads the Lease again before it refuses.
    let agreement = state.grant_set.confirmed().await;
    Json(review::handle(body, &state.bindings, &state.lookup, &agreement).await)
}

/// The webhook's routes: `POST /validate/runtimes` and `GET /healthz`.
pub fn router<L: Lookup + 'static>(
    bindings: Arc<[GrantBinding]>,
    grant_set: GrantSet,
    lookup: L,
) -> Router {
    let state = Arc::new(AppState {
        bindings,
        grant_set,
        lookup,
    });
    Router::new()
        .route(WEBHOOK_PATH, post(validate::<L>))
        .route("/healthz", get(|| async { "ok" }))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

/// The rustls configuration serving whatever `resolver` holds.
pub fn tls_config(resolver: Arc<SwappableResolver>) -> Result<ServerConfig, certs::CertError> {
    let mut config = ServerConfig::builder_with_provider(certs::provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Serves `router` over TLS on `listener` until `shutdown` completes, then
/// lets in-flight requests finish (bounded).
pub async fn serve_tls(
    listener: TcpListener,
    tls: ServerConfig,
    router: Router,
    shutdown: impl Future<Output = ()> + Send,
) {
    let acceptor = TlsAcceptor::from(Arc::new(tls));
    let graceful = GracefulShutdown::new();
    let builder = Builder::new(TokioExecutor::new());
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer): (tokio::net::TcpStream, SocketAddr) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    tracing::warn!(error = %e, "accepting a webhook connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(router.clone());
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let conn = builder.serve_connection(TokioIo::new(tls), service);
            if let Err(e) = watcher.watch(conn.into_owned()).await {
                tracing::debug!(%peer, error = %e, "webhook connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("webhook connections still open after the drain timeout");
    }
}
