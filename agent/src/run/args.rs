//! The options of `berth-agent run`, and the lease timing they give.

use std::net::SocketAddr;
use std::time::Duration;

use crate::admission;
use crate::controller;
use crate::grants_config::GrantsFileArgs;
use crate::lease_timing;

/// Log output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One JSON object per line.
    Json,
    /// Human-readable text.
    Text,
}

/// Options of `berth-agent run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub grants: GrantsFileArgs,
    /// Address of /health/live, /health/ready and /metrics.
    #[arg(long, env = "BERTH_HTTP_ADDR", default_value = "0.0.0.0:8080")]
    pub http_addr: SocketAddr,
    /// Namespace of the leader-election Lease.
    #[arg(long, env = "BERTH_LEASE_NAMESPACE", default_value = "berth-system")]
    pub lease_namespace: String,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "berth-agent")]
    pub lease_name: String,
    /// This agent's identity in the Lease (default: POD_NAME, else host name + pid).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// Seconds a lease is valid without renewal: how long a standby waits
    /// before taking over from a leader that stopped renewing (client-go's
    /// leaseDuration; see docs/install.md "Leader election").
    #[arg(long, env = "BERTH_LEASE_DURATION_SECONDS", default_value_t = lease_timing::DEFAULT_LEASE_DURATION_SECONDS)]
    pub lease_duration_seconds: u64,
    /// Seconds the leader keeps trying to renew before it stops writing and
    /// exits (client-go's renewDeadline; default: two thirds of the lease
    /// duration). Must be shorter than the lease duration.
    #[arg(long, env = "BERTH_LEASE_RENEW_DEADLINE_SECONDS")]
    pub lease_renew_deadline_seconds: Option<u64>,
    /// Seconds between renewals, and between a standby's looks at the
    /// Lease (client-go's retryPeriod). Must be shorter than the renew
    /// deadline.
    #[arg(long, alias = "lease-renew-seconds", env = "BERTH_LEASE_RETRY_PERIOD_SECONDS", default_value_t = lease_timing::DEFAULT_RETRY_PERIOD_SECONDS)]
    pub lease_retry_period_seconds: u64,
    /// Seconds between full reconciles of a settled Runtime.
    #[arg(long, default_value_t = 300)]
    pub resync_seconds: u64,
    /// Runtimes reconciled at the same time: bounds the agent's concurrent
    /// writes. Each reconcile applies its objects in two phases (ConfigMap,
    /// ServiceAccount and Service, then the Deployment and the rest), the
    /// objects of a phase concurrently.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// Seconds a cache's first list may go without receiving anything
    /// before the leader gives up the lease and exits non-zero (to be
    /// restarted with fresh watches). A list still receiving objects is
    /// waited for, however long the cluster takes to send it.
    #[arg(long, default_value_t = 60)]
    pub cache_sync_timeout_seconds: u64,
    /// Seconds between looks at the grants file on disk (RestartRequired,
    /// the PendingGrantsFile). RuntimeGrants are published when what they
    /// read changes, and at least every six intervals as a backstop.
    #[arg(long, default_value_t = 10)]
    pub grants_interval_seconds: u64,
    /// Log format.
    #[arg(long, value_enum, default_value = "json", env = "BERTH_LOG_FORMAT")]
    pub log_format: LogFormat,
    /// Reconcile only Runtimes in this namespace (default: every namespace).
    #[arg(long, env = "BERTH_WATCH_NAMESPACE")]
    pub namespace: Option<String>,
    /// Also list and watch Pods, so that bare pods (pods without a
    /// controller) using a RuntimeClass count as retained workloads of its
    /// handler. Off by default: without it the agent reads no Pod and needs
    /// no Pod permission (the RBAC overlay `assets/rbac/pods` or the chart
    /// value `barePods.watch` grants list/watch); RuntimeGrants then say
    /// that bare pods were not checked.
    #[arg(long, env = "BERTH_WATCH_BARE_PODS")]
    pub watch_bare_pods: bool,
    /// Fill the caches with streaming lists (watches with
    /// `sendInitialEvents`: the apiserver's WatchList feature) instead of
    /// paged lists, so that no list page is parsed whole (docs/bench-runs.md
    /// "How the memory grows"). `auto` probes the apiserver once at start
    /// and falls back to paged lists where it does not serve them; a bare
    /// `--streaming-lists` means `true`.
    #[arg(
        long,
        env = "BERTH_STREAMING_LISTS",
        value_enum,
        default_value = "auto",
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub streaming_lists: controller::cache::list_strategy::StreamingLists,
    /// Serve the validating admission webhook (HTTPS) on this address.
    #[arg(long, value_name = "ADDR")]
    pub webhook_listen: Option<SocketAddr>,
    #[command(flatten)]
    pub admission: admission::AdmissionArgs,
    #[command(flatten)]
    pub canaries: crate::canary::Flags,
}

/// The leader-election timing the flags give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LeaseTiming {
    pub(super) duration: Duration,
    pub(super) renew_deadline: Duration,
    pub(super) retry: Duration,
}

impl RunArgs {
    /// The three leader-election durations, checked against each other.
    pub(super) fn lease_timing(&self) -> Result<LeaseTiming, lease_timing::TimingError> {
        let duration = Duration::from_secs(self.lease_duration_seconds.max(2));
        let renew_deadline = self.lease_renew_deadline_seconds.map_or_else(
            || lease_timing::default_renew_deadline(duration),
            Duration::from_secs,
        );
        let retry = Duration::from_secs(self.lease_retry_period_seconds.max(1));
        lease_timing::validate(duration, renew_deadline, retry)?;
        Ok(LeaseTiming {
            duration,
            renew_deadline,
            retry,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: RunArgs,
    }

    #[test]
    fn bare_pods_are_opt_in() {
        // Only meaningful when the variable is not set around the test run.
        if std::env::var_os("BERTH_WATCH_BARE_PODS").is_some() {
            return;
        }
        let off = Cli::try_parse_from(["t"]).expect("parse");
        assert!(!off.args.watch_bare_pods);
        let on = Cli::try_parse_from(["t", "--watch-bare-pods"]).expect("parse");
        assert!(on.args.watch_bare_pods);
    }

    #[test]
    fn lease_timing_defaults_flags_and_refusals() {
        let parse = |extra: &[&str]| {
            let mut argv = vec!["t"];
            argv.extend_from_slice(extra);
            Cli::try_parse_from(argv)
                .expect("parse")
                .args
                .lease_timing()
        };
        let s = Duration::from_secs;
        // Only meaningful when the variables are not set around the test run.
        if std::env::vars().all(|(k, _)| !k.starts_with("BERTH_LEASE_")) {
            assert_eq!(
                parse(&[]).expect("defaults"),
                LeaseTiming {
                    duration: s(60),
                    renew_deadline: s(40),
                    retry: s(5)
                }
            );
        }
        // client-go's numbers; the old flag name still names the retry period.
        assert_eq!(
            parse(&[
                "--lease-duration-seconds=15",
                "--lease-renew-deadline-seconds=10",
                "--lease-renew-seconds=2"
            ])
            .expect("client-go's"),
            LeaseTiming {
                duration: s(15),
                renew_deadline: s(10),
                retry: s(2)
            }
        );
        // A short lease alone gets two thirds of it as its deadline.
        let short = parse(&[
            "--lease-duration-seconds=4",
            "--lease-retry-period-seconds=1",
        ])
        .expect("short");
        assert!(
            short.renew_deadline > s(2) && short.renew_deadline < s(3),
            "{short:?}"
        );
        assert!(
            parse(&[
                "--lease-duration-seconds=30",
                "--lease-renew-deadline-seconds=30"
            ])
            .is_err()
        );
        assert!(
            parse(&[
                "--lease-renew-deadline-seconds=5",
                "--lease-retry-period-seconds=5"
            ])
            .is_err()
        );
    }
}
