//! `berth-agent run`: the in-cluster agent.
//!
//! Start-up order matters: the grants file is loaded first, before any
//! Kubernetes client exists (an invalid file stops the agent); then the
//! client, the operations endpoints, (with `--webhook-listen`) the
//! admission webhook on every replica, leader election; only the leader
//! starts the controller, the grants publisher and the canaries. Losing
//! the lease closes the write gate at once and exits non-zero;
//! SIGTERM/SIGINT stop gracefully and release the lease.
//!
//! Here: the entry point (logging, the grants file, the async runtime);
//! [`args`]: the flags and the lease timing they give; [`agent`]: the
//! agent once started, step by step.

mod agent;
mod args;

use std::sync::Arc;

use color_eyre::eyre::WrapErr;

pub use self::args::{LogFormat, RunArgs};
use crate::controller::context;
use crate::otel;

/// Logs to stderr; with `OTEL_EXPORTER_OTLP_ENDPOINT`, spans also go to an
/// OTLP collector (`crate::otel`) until the returned guard is dropped.
fn init_logging(format: LogFormat) -> otel::Guard {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("info,kube=warn,tower=warn,hyper=warn")
    });
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    // JSON: each line carries the fields of every span it is in ("spans"),
    // e.g. a reconcile's Runtime namespace, name, generation and outcome.
    let fmt = match format {
        LogFormat::Json => fmt
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .boxed(),
        LogFormat::Text => fmt.boxed(),
    };
    otel::init(tracing_subscriber::registry().with(filter).with(fmt))
}

/// Entry point of the `run` subcommand.
pub fn run(args: RunArgs) -> color_eyre::Result<()> {
    // Held until the agent returns: dropping it flushes exported spans.
    let _traces = init_logging(args.log_format);
    // Checked before anything starts: a timing that cannot work is a usage error.
    args.lease_timing().wrap_err("leader election")?;
    // Grants first: an invalid file stops the agent before any client exists.
    let loaded = args
        .grants
        .load()
        .wrap_err("the grants file is invalid; the agent does not start")?;
    match &loaded {
        Some(l) => {
            tracing::info!(path = %l.path.display(), bindings = l.bindings.len(), sha256 = %l.sha256, "grants file loaded")
        }
        None => tracing::warn!("no grants file configured: no service is granted any RuntimeClass"),
    }
    let grants = Arc::new(context::Grants::new(loaded));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .wrap_err("starting the async runtime")?;
    runtime.block_on(agent::run_async(args, grants))
}
