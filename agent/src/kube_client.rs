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
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use http::{Method, Request, Response};
use kube::client::ClientBuilder;
use kube::{Client, Config};

use crate::metrics::{Metrics, RequestLabels};

/// Whether writes other than Lease updates may be sent.
#[derive(Clone, Debug, Default)]
pub struct WriteGate(Arc<AtomicBool>);

impl WriteGate {
    /// Allows or forbids writes.
    pub fn set(&self, allowed: bool) {
        self.0.store(allowed, Ordering::SeqCst);
    }

    /// Whether writes are allowed.
    pub fn allowed(&self) -> bool {
        self.0.load(Ordering::SeqCst)
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

/// A client from the inferred configuration (in-cluster, or `KUBECONFIG`)
/// with the counting/gating layer.
pub async fn client(metrics: Arc<Metrics>, gate: WriteGate) -> Result<Client, kube::Error> {
    let config = Config::infer().await.map_err(kube::Error::InferConfig)?;
    let builder = ClientBuilder::try_from(config)?;
    Ok(builder.with_layer(&GateLayer { metrics, gate }).build())
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
