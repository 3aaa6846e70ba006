//! Telling a watcher that its watch is running again.
//!
//! kube's `watcher` resumes a broken watch by itself, from the last
//! resourceVersion it saw (no relist unless the apiserver answers 410
//! Gone), but it reports nothing when the new watch request succeeds: on a
//! quiet kind the console would say "reconnecting…" until the next change.
//! This transport layer sees every response: a successful `watch=true`
//! request counts as a start of the watch on that resource path, and the
//! watcher task of that path is woken ([`WatchStarts::subscribe`]).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use http::{Request, Response, Uri};
use tokio::sync::watch;

/// Watch starts per resource path (`/api/v1/pods`,
/// `/apis/berth.dev/v1alpha1/namespaces/x/runtimes`), shared by a client's
/// [`StartsLayer`] and the watcher tasks that use that client. A default
/// one that no client reports to never wakes anybody.
#[derive(Clone, Debug, Default)]
pub struct WatchStarts(Arc<Mutex<HashMap<String, watch::Sender<u64>>>>);

impl WatchStarts {
    /// A receiver whose value changes on every successful watch request
    /// for `path` from now on.
    pub fn subscribe(&self, path: &str) -> watch::Receiver<u64> {
        let mut map = berth_shared::sync::lock(&self.0);
        map.entry(path.to_string())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    fn started(&self, path: &str) {
        let map = berth_shared::sync::lock(&self.0);
        if let Some(tx) = map.get(path) {
            tx.send_modify(|n| *n = n.wrapping_add(1));
        }
    }
}

/// Whether a request is a watch (kube sends `watch=true`).
fn is_watch(uri: &Uri) -> bool {
    uri.query().is_some_and(|q| {
        q.split('&')
            .any(|pair| matches!(pair, "watch=true" | "watch=1"))
    })
}

/// The layer that reports watch starts to a [`WatchStarts`].
#[derive(Clone, Debug)]
pub struct StartsLayer(pub WatchStarts);

/// The service [`StartsLayer`] wraps around kube's stack.
#[derive(Clone, Debug)]
pub struct StartsService<S> {
    inner: S,
    starts: WatchStarts,
}

impl<S> tower_layer::Layer<S> for StartsLayer {
    type Service = StartsService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        StartsService {
            inner,
            starts: self.0.clone(),
        }
    }
}

impl<S, B, RB> tower_service::Service<Request<B>> for StartsService<S>
where
    S: tower_service::Service<Request<B>, Response = Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        // Only watches are tracked: everything else passes untouched.
        let watched = is_watch(req.uri()).then(|| req.uri().path().to_string());
        let starts = self.starts.clone();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let resp = fut.await?;
            if let Some(path) = watched
                && resp.status().is_success()
            {
                starts.started(&path);
            }
            Ok(resp)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_watch_requests_count() {
        let uri = |s: &str| s.parse::<Uri>().expect("uri");
        assert!(is_watch(&uri(
            "/api/v1/pods?&watch=true&timeoutSeconds=30&allowWatchBookmarks=true&resourceVersion=5"
        )));
        assert!(is_watch(&uri("/api/v1/pods?watch=1")));
        assert!(!is_watch(&uri("/api/v1/pods?limit=500")));
        assert!(!is_watch(&uri("/api/v1/pods?watch=false")));
        assert!(!is_watch(&uri("/api/v1/pods/watch")));
    }

    #[tokio::test]
    async fn a_start_wakes_the_subscribers_of_its_path_only() {
        let starts = WatchStarts::default();
        let mut pods = starts.subscribe("/api/v1/pods");
        let nodes = starts.subscribe("/api/v1/nodes");
        starts.started("/api/v1/pods");
        starts.started("/api/v1/unsubscribed");
        assert!(pods.has_changed().expect("open"));
        assert!(!nodes.has_changed().expect("open"));
        pods.borrow_and_update();
        assert!(!pods.has_changed().expect("open"));
        starts.started("/api/v1/nodes");
        assert!(nodes.has_changed().expect("open"));
    }
}
