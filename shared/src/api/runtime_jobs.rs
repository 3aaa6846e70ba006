//! A Runtime's one-time jobs and schedules (`spec.jobs[]`,
//! `spec.schedules[]`, docs/runtime-semantics.md): what a team may set for
//! each, checked by the schema; the Jobs and CronJobs themselves are the
//! production contract's (`crate::render`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::patterns;
use super::schema;

/// A one-time job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSpec {
    /// Unique among the Runtime's jobs; part of the Job's name.
    #[schemars(regex(pattern = patterns::DNS_LABEL), length(min = 1, max = 63))]
    pub name: String,
    /// Overrides the image's entrypoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::arg_list")]
    pub command: Vec<String>,
    /// Arguments to the entrypoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::arg_list")]
    pub args: Vec<String>,
    /// Retries before the Job is marked failed (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 10))]
    pub backoff_limit: Option<i32>,
    /// Seconds the Job may run in total (default 3600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub active_deadline_seconds: Option<i64>,
}

/// A scheduled job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleSpec {
    /// Unique among the Runtime's schedules; part of the CronJob's name.
    #[schemars(regex(pattern = patterns::DNS_LABEL), length(min = 1, max = 63))]
    pub name: String,
    /// Cron expression (five fields) or a macro such as `@daily`.
    #[schemars(regex(pattern = patterns::CRON_SCHEDULE), length(min = 1, max = 100))]
    pub schedule: String,
    /// IANA time zone of the schedule (default: the controller's, usually UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = patterns::TIME_ZONE), length(min = 1, max = 64))]
    pub time_zone: Option<String>,
    /// What to do when a run is still going at the next tick (default Forbid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_policy: Option<ConcurrencyPolicy>,
    /// Overrides the image's entrypoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::arg_list")]
    pub command: Vec<String>,
    /// Arguments to the entrypoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::arg_list")]
    pub args: Vec<String>,
    /// Retries of one run before it is marked failed (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 10))]
    pub backoff_limit: Option<i32>,
    /// Seconds one run may take in total (default 3600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub active_deadline_seconds: Option<i64>,
}

/// CronJob concurrency policies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConcurrencyPolicy {
    Allow,
    #[default]
    Forbid,
    Replace,
}

impl ConcurrencyPolicy {
    /// The CronJob `spec.concurrencyPolicy` string.
    pub fn as_str(self) -> &'static str {
        match self {
            ConcurrencyPolicy::Allow => "Allow",
            ConcurrencyPolicy::Forbid => "Forbid",
            ConcurrencyPolicy::Replace => "Replace",
        }
    }
}
