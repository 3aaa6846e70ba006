//! Attestation by canary Jobs (issue 53, docs/architecture.md §5): proof,
//! not a node's word, that each granted handler starts a sandbox of the
//! kind it claims on every node that reports it.
//!
//! - [`probe`]: `berth-agent canary`, what runs inside a canary's pod;
//! - [`scheduler`]: the leader's loop that reads the canary Jobs of its
//!   namespace, publishes the verdicts and starts the
//!   canaries that are due (pure: `berth_shared::attest`);
//! - the verdicts it publishes, `crate::signals::attestations`, shared
//!   with the Runtime reconcile (`HandlerReady`) and the grants publisher
//!   (`status.attestation`).
//!
//! The agent needs no Pod permission for any of it: a canary's Job says
//! which check failed (its pod failure policy), and the agent creates and
//! reads Jobs only.

pub mod probe;
pub mod scheduler;

use berth_shared::attest::Policy;
use berth_shared::attest::job::DEFAULT_DEADLINE_SECONDS;

/// Whether canaries run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Switch {
    /// They run (with `--canary-image`).
    On,
    /// They do not; every grant says so.
    Off,
}

/// The canary options of `berth-agent run`.
#[derive(Debug, Clone, clap::Args)]
pub struct Flags {
    /// Attest each granted handler with canary Jobs (on), or not (off:
    /// every RuntimeGrant then says canaries are off, and its nodes are
    /// unverified).
    #[arg(
        long = "canaries",
        env = "BERTH_CANARIES",
        value_enum,
        default_value = "on"
    )]
    pub canaries: Switch,
    /// The image canaries run: the agent's own (its entrypoint is
    /// `berth-agent`). Without it canaries are off, and say so.
    #[arg(long, env = "BERTH_CANARY_IMAGE")]
    pub canary_image: Option<String>,
    /// The namespace of the canary Jobs: the agent's own.
    #[arg(long, env = "BERTH_CANARY_NAMESPACE", default_value = "berth-system")]
    pub canary_namespace: String,
    /// Seconds between two canaries of one class on one node (a change of
    /// the class, the node or the grant runs one at once).
    #[arg(long, env = "BERTH_CANARY_PERIOD_SECONDS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(10..=86_400))]
    pub canary_period_seconds: u64,
    /// Most canary Jobs unfinished at once.
    #[arg(long, env = "BERTH_CANARY_MAX_ACTIVE", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub canary_max_active: u16,
    /// Seconds a canary's pod may take from its start to its end; a
    /// sandbox not created by then is reported as such.
    #[arg(long, env = "BERTH_CANARY_DEADLINE_SECONDS", default_value_t = DEFAULT_DEADLINE_SECONDS.unsigned_abs(), value_parser = clap::value_parser!(u64).range(10..=3600))]
    pub canary_deadline_seconds: u64,
    /// Most canary Jobs created in any hour, cluster-wide, or `unlimited`.
    /// When every (class, node) pair does not fit in it at the period,
    /// each pair's period is stretched alike (docs/attestation.md).
    #[arg(long, env = "BERTH_CANARY_BUDGET_PER_HOUR", default_value = "360")]
    pub canary_budget_per_hour: Budget,
    /// For the benchmark only, never in production: run canaries on
    /// simulated (kwok) nodes too, whose "verified" proves nothing (kwok
    /// marks a Job's pods Succeeded without running them). It lets the
    /// benchmark measure what canaries cost at a size one real node cannot
    /// carry. No environment variable and no chart value set it.
    #[arg(long, hide = true)]
    pub canary_attest_simulated_nodes_for_benchmark: bool,
}

/// `--canary-budget-per-hour`: a number of launches (1 to 1,000,000) or
/// `unlimited`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget(pub Option<u32>);

/// A budget that is neither a number from 1 to 1,000,000 nor `unlimited`.
#[derive(Debug, thiserror::Error)]
#[error(
    "a canary budget is a number of canary Jobs an hour from 1 to 1000000, or `unlimited` (got {0:?})"
)]
pub struct BadBudget(String);

impl std::str::FromStr for Budget {
    type Err = BadBudget;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "unlimited" {
            return Ok(Budget(None));
        }
        match s.parse::<u32>() {
            Ok(n) if (1..=1_000_000).contains(&n) => Ok(Budget(Some(n))),
            _ => Err(BadBudget(s.to_string())),
        }
    }
}

impl Flags {
    /// The policy the flags give: off (with why) or on.
    pub fn policy(&self) -> Policy {
        let off = match (self.canaries, &self.canary_image) {
            (Switch::Off, _) => Some("the agent runs with --canaries=off".to_string()),
            (Switch::On, None) => Some(
                "no canary image: start the agent with --canary-image (the agent's own image)"
                    .to_string(),
            ),
            (Switch::On, Some(_)) => None,
        };
        let secs = |s: u64| i64::try_from(s).unwrap_or(i64::MAX);
        Policy {
            off,
            image: self.canary_image.clone().unwrap_or_default(),
            period_seconds: secs(self.canary_period_seconds),
            max_active: usize::from(self.canary_max_active),
            deadline_seconds: secs(self.canary_deadline_seconds),
            budget_per_hour: self.canary_budget_per_hour.0,
        }
    }
}
