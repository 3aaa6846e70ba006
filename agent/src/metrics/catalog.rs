//! The registry with its documentation: every metric is registered through
//! [`Catalog::add`], which also records its exposition name, type, labels
//! and meaning. `berth-agent metrics-doc` prints that record as the table
//! of `docs/metrics.md` (a unit test keeps the committed page equal to it,
//! and an integration test compares it with a live `/metrics` scrape).

use prometheus_client::registry::{Metric, Registry};

/// The prefix of every metric name.
pub const PREFIX: &str = "berth_agent";

/// A metric's type, as `# TYPE` says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A counter (`_total` is appended to its name).
    Counter,
    /// A gauge.
    Gauge,
    /// A histogram (`_bucket`, `_sum`, `_count` series).
    Histogram,
}

impl Kind {
    /// The `# TYPE` word.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One documented metric.
#[derive(Clone, Debug)]
pub struct MetricDoc {
    /// The exposition name (`berth_agent_writes_total`).
    pub name: String,
    /// Its type.
    pub kind: Kind,
    /// Its label names (without a histogram's `le`).
    pub labels: &'static [&'static str],
    /// The `# HELP` text.
    pub help: &'static str,
}

/// The registry and what was registered in it.
#[derive(Debug, Default)]
pub struct Catalog {
    /// The registry `/metrics` encodes.
    pub registry: Registry,
    /// Every metric registered, in registration order.
    pub docs: Vec<MetricDoc>,
}

impl Catalog {
    /// An empty catalog whose registry prefixes every name.
    pub fn new() -> Self {
        Self {
            registry: Registry::with_prefix(PREFIX),
            docs: Vec::new(),
        }
    }

    /// Registers `metric` as `berth_agent_<name>` and records its doc;
    /// returns the metric (a handle sharing its value).
    pub fn add<M: Metric + Clone>(
        &mut self,
        name: &str,
        kind: Kind,
        labels: &'static [&'static str],
        help: &'static str,
        metric: M,
    ) -> M {
        self.registry.register(name, help, metric.clone());
        let suffix = if kind == Kind::Counter { "_total" } else { "" };
        self.docs.push(MetricDoc {
            name: format!("{PREFIX}_{name}{suffix}"),
            kind,
            labels,
            help,
        });
        metric
    }
}

/// The Markdown table of `docs/metrics.md`, between its markers.
pub fn markdown(docs: &[MetricDoc]) -> String {
    let mut out = String::from("| name | type | labels | meaning |\n|---|---|---|---|\n");
    for d in docs {
        let labels = if d.labels.is_empty() {
            "—".to_string()
        } else {
            d.labels
                .iter()
                .map(|l| format!("`{l}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            d.name,
            d.kind.as_str(),
            labels,
            d.help.replace('|', "\\|")
        ));
    }
    out
}
