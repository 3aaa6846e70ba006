//! Operations endpoints: `/health/live`, `/health/ready`, `/health/leader`
//! and `/metrics` (Prometheus text format).
//!
//! Two readiness questions, deliberately kept apart:
//! - `/health/ready` (the kubelet's readiness probe, and so the endpoints
//!   of the Service in front of the webhook): this replica can answer
//!   admission requests — grants loaded and the admission webhook serving
//!   when configured. It does not depend on leadership: every replica
//!   serves the webhook from its own grants file, so a standby is ready,
//!   and so is a new leader while its caches sync (taking it out of the
//!   Service then would leave the webhook with one endpoint, or none, at
//!   each failover; a rolling update with maxUnavailable 0 could not
//!   finish if only the leader were ready).
//! - `/health/leader`: this replica leads and its caches are synced, i.e.
//!   it is the one reconciling and writing.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::metrics::Metrics;

/// Readiness, flipped by `run`.
#[derive(Clone, Debug, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    /// Marks ready (or not).
    pub fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::SeqCst);
    }
    /// Whether ready.
    pub fn get(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

#[derive(Clone)]
struct AppState {
    ready: Readiness,
    leader: Readiness,
    metrics: Arc<Metrics>,
}

async fn live() -> &'static str {
    "ok\n"
}

async fn ready(State(s): State<AppState>) -> impl IntoResponse {
    if s.ready.get() {
        (StatusCode::OK, "ready\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
    }
}

async fn leader(State(s): State<AppState>) -> impl IntoResponse {
    if s.leader.get() {
        (StatusCode::OK, "leader\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "standby\n")
    }
}

async fn metrics(State(s): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.metrics.encode(),
    )
}

/// The router.
pub fn router(ready_flag: Readiness, leader_flag: Readiness, m: Arc<Metrics>) -> Router {
    Router::new()
        .route("/health/live", get(live))
        .route("/health/ready", get(ready))
        .route("/health/leader", get(leader))
        .route("/metrics", get(metrics))
        .with_state(AppState {
            ready: ready_flag,
            leader: leader_flag,
            metrics: m,
        })
}

/// Binds `addr` and serves until `shutdown` resolves.
pub async fn serve(
    addr: SocketAddr,
    ready_flag: Readiness,
    leader_flag: Readiness,
    m: Arc<Metrics>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "serving /health/live, /health/ready, /metrics");
    axum::serve(listener, router(ready_flag, leader_flag, m))
        .with_graceful_shutdown(shutdown)
        .await
}
