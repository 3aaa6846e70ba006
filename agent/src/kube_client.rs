//! The agent's Kubernetes client: kube's default stack with one extra
//! transport layer that
//!
//! - counts every request by method and resource (`berth_agent_api_requests`,
//!   which is how the integration tests prove that an idle reconcile sends no
//!   write), and
//! - refuses every write except to Leases while this process is not the
//!   leader, so losing the lease stops writes at once, whatever task is
//!   mid-reconcile.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use http::{Method, Request, Response};
use kube::{Client, Config};
use tokio::time::Instant;

use crate::metrics::{Metrics, RequestLabels};

/// Whether writes other than Lease updates may be sent: until an instant
/// on this process's monotonic clock, which the elector moves forward on
/// every successful renewal. The gate closes by itself when that instant
/// passes, so a hung renewal or a frozen (SIGSTOPped) process cannot keep
/// writing after a standby may have taken over; no task has to notice.
#[derive(Clone, Debug, Default)]
pub struct WriteGate(Arc<Mutex<Option<Instant>>>);

impl WriteGate {
    /// Forbids writes (allowing them is always bounded: [`WriteGate::allow_until`]).
    pub fn close(&self) {
        *berth_shared::sync::lock(&self.0) = None;
    }

    /// Allows writes until `until`.
    pub fn allow_until(&self, until: Instant) {
        *berth_shared::sync::lock(&self.0) = Some(until);
    }

    /// Until when writes are allowed (`None`: closed).
    pub fn until(&self) -> Option<Instant> {
        *berth_shared::sync::lock(&self.0)
    }

    /// Whether writes are allowed now.
    pub fn allowed(&self) -> bool {
        berth_shared::sync::lock(&self.0).is_some_and(|until| Instant::now() < until)
    }
}

/// The error a refused write fails with.
#[derive(Debug, thiserror::Error)]
#[error("write refused: this agent is not the leader")]
pub struct NotLeader;

/// The counting/gating layer.
#[derive(Clone, Debug)]
pub struct GateLayer {
    metrics: Arc<Metrics>,
    gate: WriteGate,
}

/// The service [`GateLayer`] wraps around kube's stack.
#[derive(Clone, Debug)]
pub struct GateService<S> {
    inner: S,
    metrics: Arc<Metrics>,
    gate: WriteGate,
}

impl<S> tower_layer::Layer<S> for GateLayer {
    type Service = GateService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        GateService {
            inner,
            metrics: self.metrics.clone(),
            gate: self.gate.clone(),
        }
    }
}

/// The resource plural of an API path: the segment after the version (or
/// after `namespaces/<ns>`).
pub fn resource_of(path: &str) -> String {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // /api/v1/... or /apis/<group>/<version>/...
    let rest: &[&str] = match segs.first() {
        Some(&"api") => segs.get(2..).unwrap_or_default(),
        Some(&"apis") => segs.get(3..).unwrap_or_default(),
        _ => return "other".to_string(),
    };
    let rest = match rest {
        ["namespaces", _, tail @ ..] if !tail.is_empty() => tail,
        other => other,
    };
    rest.first().map_or("other", |s| s).to_string()
}

fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<S, B, RB> tower_service::Service<Request<B>> for GateService<S>
where
    S: tower_service::Service<Request<B>, Response = Response<RB>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = Response<RB>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let resource = resource_of(req.uri().path());
        let method = req.method().clone();
        self.metrics
            .requests
            .get_or_create(&RequestLabels {
                method: method.to_string(),
                resource: resource.clone(),
            })
            .inc();
        if is_write(&method) && !ungated(&resource) && !self.gate.allowed() {
            return Box::pin(async { Err(Box::new(NotLeader) as BoxError) });
        }
        let fut = self.inner.call(req);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}

/// Writes a standby may send: its Lease (to campaign) and the admission
/// webhook's own configuration (every replica serves the webhook and merges
/// its CA into the bundle). Everything a reconcile writes stays gated.
fn ungated(resource: &str) -> bool {
    matches!(resource, "leases" | "validatingwebhookconfigurations")
}

/// How long one read from the apiserver may wait for bytes. kube 5 sets no
/// read timeout and speaks HTTP/1.1 (no HTTP/2 pings, which is how
/// client-go notices dead connections): a connection that goes silent (a
/// NAT or load-balancer entry dropped, a peer that vanished, a stalled
/// path) hangs its request forever. When that request is a cache's initial
/// list or its watch, the cache never syncs while the lease, renewed over
/// fresh connections, stays held: the "leader holds the lease, caches
/// never sync" stall. Shorter than the cache-sync timeout (60 s), so the
/// request is retried before that safety net restarts the agent. Every
/// watch is closed by the server well before this (see
/// [`WATCH_TIMEOUT_SECONDS`]).
pub const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(40);

/// `timeoutSeconds` of every watch: the server ends it cleanly this often,
/// inside [`READ_TIMEOUT`] even on a quiet kind, and the watcher resumes
/// from its last resourceVersion (no relist).
pub const WATCH_TIMEOUT_SECONDS: u32 = 30;

/// A client from the inferred configuration (in-cluster, or `KUBECONFIG`)
/// with the counting/gating layer. Requests carry `User-Agent:
/// berth-agent/VERSION (IDENTITY)`, so the apiserver's audit log tells
/// which replica sent each write.
pub async fn client(
    metrics: Arc<Metrics>,
    gate: WriteGate,
    identity: &str,
) -> Result<Client, kube::Error> {
    let mut config = Config::infer().await.map_err(kube::Error::InferConfig)?;
    config.read_timeout = Some(READ_TIMEOUT);
    if let Ok(agent) = http::HeaderValue::from_str(&user_agent(identity)) {
        config.headers.push((http::header::USER_AGENT, agent));
    }
    let builder = berth_client::builder(config)?;
    Ok(builder.with_layer(&GateLayer { metrics, gate }).build())
}

/// The User-Agent of this replica (an identity that is no valid header
/// value is left out rather than refusing to start).
pub fn user_agent(identity: &str) -> String {
    let clean: String = identity
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .collect();
    format!("berth-agent/{} ({clean})", env!("CARGO_PKG_VERSION"))
}

#[cfg(test)]
mod tests {
    use super::resource_of;

    #[test]
    fn resources_from_paths() {
        assert_eq!(
            resource_of("/api/v1/namespaces/a/configmaps/x"),
            "configmaps"
        );
        assert_eq!(
            resource_of("/apis/apps/v1/namespaces/a/deployments"),
            "deployments"
        );
        assert_eq!(
            resource_of("/apis/coordination.k8s.io/v1/namespaces/a/leases/l"),
            "leases"
        );
        assert_eq!(resource_of("/api/v1/nodes"), "nodes");
        assert_eq!(resource_of("/api/v1/namespaces"), "namespaces");
        assert_eq!(resource_of("/api/v1/namespaces/x"), "namespaces");
        assert_eq!(
            resource_of("/apis/berth.dev/v1alpha1/runtimegrants/g/status"),
            "runtimegrants"
        );
        assert_eq!(resource_of("/version"), "other");
    }
}
