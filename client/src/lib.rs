//! The HTTP stack under every kube [`Client`] berth makes (the agent's,
//! the console's, `berth get`'s).
//!
//! It is kube's own ([`ClientBuilder::try_from`]: TLS from the kubeconfig,
//! the timeouts, server-error retries, auth, extra headers) with one
//! difference: its sockets set `TCP_NODELAY`. kube 5 leaves Nagle's
//! algorithm on (kube-rs issue 2056), so on every new connection the first
//! request, a small write right after the TLS handshake's last one, waits
//! for the apiserver's delayed ACK: ~40 ms on Linux, paid by each of the
//! console's first frames (a view's watches open new connections) and by
//! every new connection of the agent. Go's client, like kubectl, sets
//! `TCP_NODELAY` on every socket.
//!
//! Written here rather than patched into kube: kube builds its connector
//! inside `ClientBuilder::try_from` with no hook for it. What this stack
//! does not carry over from kube's: proxies (a config with `proxy_url` gets
//! kube's stack unchanged), the debug-level `HTTP` tracing span per request,
//! and `Client::valid_until` (berth never reads it).

use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::retry::RetryPolicy;
use kube::client::{Body, ClientBuilder, ConfigExt, DynBody};
use kube::{Client, Config};
use tower::retry::RetryLayer;
use tower::util::BoxService;
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};

/// Every connection reads into a buffer of this size. hyper's default
/// buffer adapts: it doubles while reads fill it, up to about 400 KB, and
/// its allocation never shrinks, so each long-lived watch connection kept
/// the largest buffer it ever needed (a list page's burst): 4.5 MB of a
/// restarted agent's 21 MB of live heap at 500 Runtimes (heaptrack, issue
/// 32). The apiserver's response heads are far smaller, and a TLS record
/// is at most 16 KB, so a bigger buffer saves few reads.
pub const READ_BUFFER_BYTES: usize = 16 * 1024;

/// The service under the [`Client`]: kube's own `GenericService` (which
/// kube does not export).
pub type Stack = BoxService<http::Request<Body>, http::Response<Box<DynBody>>, BoxError>;

/// A [`ClientBuilder`] for `config` whose connections set `TCP_NODELAY`;
/// add layers, then build.
pub fn builder(config: Config) -> Result<ClientBuilder<Stack>, kube::Error> {
    if config.proxy_url.is_some() {
        return ClientBuilder::try_from(config);
    }
    builder_with(config, connector())
}

/// A [`Client`] for `config` ([`builder`] without extra layers).
pub fn client(config: Config) -> Result<Client, kube::Error> {
    Ok(builder(config)?.build())
}

/// The TCP connector: any scheme (TLS is layered on top), `TCP_NODELAY`.
pub fn connector() -> HttpConnector {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http
}

/// kube's stack over `tcp` (separate so that a test can watch the sockets
/// it makes).
fn builder_with<C>(config: Config, tcp: C) -> Result<ClientBuilder<Stack>, kube::Error>
where
    C: Service<http::Uri> + Clone + Send + Sync + 'static,
    C::Response: hyper::rt::Read
        + hyper::rt::Write
        + hyper_util::client::legacy::connect::Connection
        + Send
        + Unpin
        + 'static,
    C::Future: Send + Unpin + 'static,
    C::Error: Into<BoxError>,
{
    let tls = config.rustls_https_connector_with_connector(tcp)?;
    let mut timed = TimeoutConnector::new(tls);
    timed.set_connect_timeout(config.connect_timeout);
    timed.set_read_timeout(config.read_timeout);
    timed.set_write_timeout(config.write_timeout);
    timed.set_reset_reader_on_write(config.reset_reader_on_write);
    let http: hyper_util::client::legacy::Client<_, Body> =
        hyper_util::client::legacy::Builder::new(TokioExecutor::new())
            .http1_read_buf_exact_size(READ_BUFFER_BYTES)
            .build(timed);

    let retry = config
        .default_retry
        .then(|| RetryLayer::new(RetryPolicy::server_retry()));
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(retry)
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(http)
        .map_response(|res| {
            res.map(|body| {
                Box::new(http_body_util::BodyExt::map_err(body, BoxError::from)) as Box<DynBody>
            })
        })
        .boxed();
    Ok(ClientBuilder::new(service, config.default_namespace))
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll};

    use hyper_util::rt::TokioIo;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// A connector that records, for every connection it makes, whether
    /// the socket has `TCP_NODELAY` (read back from the socket itself).
    #[derive(Clone)]
    struct Spy {
        tcp: HttpConnector,
        nodelay: Arc<Mutex<Vec<bool>>>,
    }

    type Connecting = Pin<Box<dyn Future<Output = Result<TokioIo<TcpStream>, BoxError>> + Send>>;

    impl Service<http::Uri> for Spy {
        type Response = TokioIo<TcpStream>;
        type Error = BoxError;
        type Future = Connecting;

        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
            self.tcp.poll_ready(cx).map_err(BoxError::from)
        }

        fn call(&mut self, uri: http::Uri) -> Connecting {
            let connecting = self.tcp.call(uri);
            let nodelay = self.nodelay.clone();
            Box::pin(async move {
                let io = connecting.await?;
                let on = io.inner().nodelay()?;
                nodelay.lock().map_err(|_| "poisoned")?.push(on);
                Ok(io)
            })
        }
    }

    /// An HTTP server answering every request on its connection with `{}`.
    async fn server() -> std::net::SocketAddr {
        server_of("{}".to_string()).await
    }

    /// An HTTP server answering every request on its connection with `body`.
    async fn server_of(body: String) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let body = body.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    while matches!(conn.read(&mut buf).await, Ok(n) if n > 0) {
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if conn.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    /// The `TCP_NODELAY` of every connection one request over `tcp` made.
    async fn nodelay_of(tcp: HttpConnector) -> Vec<bool> {
        let addr = server().await;
        let config = Config::new(format!("http://{addr}").parse().expect("uri"));
        let nodelay = Arc::new(Mutex::new(Vec::new()));
        let spy = Spy {
            tcp,
            nodelay: nodelay.clone(),
        };
        let client = builder_with(config, spy).expect("builder").build();
        let request = http::Request::get("/version")
            .body(Vec::new())
            .expect("request");
        assert_eq!(client.request_text(request).await.expect("answer"), "{}");
        nodelay.lock().expect("lock").clone()
    }

    /// A response many times the read buffer (a list page of a busy
    /// kind is hundreds of kilobytes) arrives whole, twice on one
    /// connection.
    #[tokio::test]
    async fn a_response_larger_than_the_read_buffer_arrives_whole() {
        let items: Vec<String> = (0..20_000).map(|i| format!("\"item-{i:06}\"")).collect();
        let body = format!("{{\"items\":[{}]}}", items.join(","));
        assert!(body.len() > 16 * READ_BUFFER_BYTES);
        let addr = server_of(body.clone()).await;
        let config = Config::new(format!("http://{addr}").parse().expect("uri"));
        let client = builder_with(config, connector()).expect("builder").build();
        for _ in 0..2 {
            let request = http::Request::get("/api/v1/pods")
                .body(Vec::new())
                .expect("request");
            assert_eq!(client.request_text(request).await.expect("answer"), body);
        }
    }

    #[tokio::test]
    async fn every_connection_sets_tcp_nodelay() {
        assert_eq!(nodelay_of(connector()).await, vec![true]);
    }

    /// The check reads the socket, not the connector's setting: kube's own
    /// connector (Nagle left on) fails it.
    #[tokio::test]
    async fn a_connector_without_nodelay_is_seen_as_such() {
        let mut kube_default = HttpConnector::new();
        kube_default.enforce_http(false);
        assert_eq!(nodelay_of(kube_default).await, vec![false]);
    }
}
