//! Optional OTLP trace export: the reconcile spans (and every other span)
//! sent to an OpenTelemetry collector over OTLP's HTTP/protobuf transport,
//! enabled by the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) variable, read by the exporter
//! with the other `OTEL_*` settings (`OTEL_SERVICE_NAME`, headers,
//! timeout). Unset, no layer is installed and nothing is exported: the
//! spans cost what they cost for the logs.
//!
//! Built only with the cargo feature `otlp` (off by default: it adds the
//! OpenTelemetry SDK, prost and reqwest to the build). Without it, a set
//! endpoint is reported once and ignored.

/// The variables that turn export on.
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
];

/// Whether an OTLP endpoint is configured.
pub fn configured() -> bool {
    ENDPOINT_VARS
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// Why export could not start.
#[cfg(feature = "otlp")]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The exporter refused its configuration.
    #[error("OTLP trace exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
}

#[cfg(feature = "otlp")]
mod enabled {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing_subscriber::Layer;
    use tracing_subscriber::registry::LookupSpan;

    use super::Error;

    /// The tracing layer exporting spans, and its provider (to flush).
    /// `endpoint`: the traces URL; `None`, from OTEL_* (the agent's case).
    pub fn layer<S>(endpoint: Option<&str>) -> Result<(impl Layer<S>, SdkTracerProvider), Error>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        use opentelemetry_otlp::WithExportConfig;
        // Endpoint, headers, timeout and protocol come from OTEL_* here.
        let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_http();
        if let Some(url) = endpoint {
            exporter = exporter.with_endpoint(url);
        }
        let exporter = exporter.build()?;
        let mut resource = Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name("berth-agent");
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        let tracer = provider.tracer("berth-agent");
        Ok((tracing_opentelemetry::layer().with_tracer(tracer), provider))
    }
}

/// Keeps the exporter until the agent exits; dropping it flushes the spans
/// still queued.
pub struct Guard(#[cfg(feature = "otlp")] Option<opentelemetry_sdk::trace::SdkTracerProvider>);

#[cfg(feature = "otlp")]
impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("berth-agent: flushing OTLP traces failed: {e}");
        }
    }
}

/// Installs `subscriber` as the global default, with the OTLP layer on top
/// when an endpoint is configured (and the feature built).
pub fn init<S>(subscriber: S) -> Guard
where
    S: tracing::Subscriber
        + for<'a> tracing_subscriber::registry::LookupSpan<'a>
        + Send
        + Sync
        + 'static,
{
    use tracing_subscriber::util::SubscriberInitExt;
    #[cfg(feature = "otlp")]
    {
        use tracing_subscriber::layer::SubscriberExt;
        if configured() {
            match enabled::layer(None) {
                Ok((layer, provider)) => {
                    let _ = subscriber.with(layer).try_init();
                    tracing::info!("exporting traces over OTLP (HTTP/protobuf)");
                    return Guard(Some(provider));
                }
                Err(e) => {
                    let _ = subscriber.try_init();
                    tracing::error!(error = %e, "OTLP trace export is off");
                    return Guard(None);
                }
            }
        }
        let _ = subscriber.try_init();
        Guard(None)
    }
    #[cfg(not(feature = "otlp"))]
    {
        let _ = subscriber.try_init();
        if configured() {
            tracing::warn!(
                "OTEL_EXPORTER_OTLP_ENDPOINT is set, but this berth-agent was built without the otlp feature: no traces are exported"
            );
        }
        Guard()
    }
}

#[cfg(all(test, feature = "otlp"))]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::mpsc;

    use tracing_subscriber::layer::SubscriberExt;

    /// A one-purpose OTLP/HTTP receiver: every request's path and body.
    fn receiver() -> (String, mpsc::Receiver<(String, Vec<u8>)>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                    let mut stream = stream;
                    loop {
                        let mut request = String::new();
                        if reader.read_line(&mut request).unwrap_or(0) == 0 {
                            return;
                        }
                        let path = request.split(' ').nth(1).unwrap_or_default().to_string();
                        let mut length = 0;
                        loop {
                            let mut header = String::new();
                            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                                return;
                            }
                            let header = header.trim_end();
                            if header.is_empty() {
                                break;
                            }
                            if let Some((k, v)) = header.split_once(':')
                                && k.eq_ignore_ascii_case("content-length")
                            {
                                length = v.trim().parse().unwrap_or(0);
                            }
                        }
                        let mut body = vec![0; length];
                        if reader.read_exact(&mut body).is_err() {
                            return;
                        }
                        let _ = tx.send((path, body));
                        let _ = stream.write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
                        );
                    }
                });
            }
        });
        (format!("http://{addr}/v1/traces"), rx)
    }

    /// A reconcile-shaped span, its outcome recorded at the end, reaches an
    /// OTLP/HTTP receiver as protobuf carrying its name and every field.
    #[test]
    fn spans_are_exported_with_their_fields_over_otlp_http() {
        let (url, received) = receiver();
        let (layer, provider) = super::enabled::layer(Some(&url)).expect("exporter");
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!(
                "reconcile",
                namespace = "shop",
                runtime = "web-otlp",
                generation = 7_i64,
                outcome = tracing::field::Empty,
            );
            let _entered = span.enter();
            tracing::info!("inside");
            span.record("outcome", "blocked");
        });
        provider.force_flush().expect("flush");
        let (path, body) = received
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("an export request");
        assert_eq!(path, "/v1/traces");
        let has = |s: &str| body.windows(s.len()).any(|w| w == s.as_bytes());
        for want in [
            "reconcile",
            "namespace",
            "shop",
            "runtime",
            "web-otlp",
            "generation",
            "outcome",
            "blocked",
            "berth-agent",
        ] {
            assert!(has(want), "{want} in the exported protobuf");
        }
        let _ = provider.shutdown();
    }
}
