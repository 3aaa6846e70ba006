//! The command line as clap reads it: the kubectl-like connection flags
//! every subcommand shares, the subcommands and their own flags, and what
//! the flags mean once read (the scope, the agent's Lease, the fleet of
//! contexts, the one cluster a command acts on). Apart from what the
//! subcommands do so that the whole interface (which `berth man` and the
//! completions print) reads in one file.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use color_eyre::eyre::{Result, WrapErr, eyre};

use crate::get::{Format, What};
use crate::model::{DEFAULT_AGENT_LEASE, ObjKey, Scope};
use crate::retire::Action;
use crate::watch::{ConnectOptions, kubeconfig_contexts};

/// berth's console: live views of Runtimes, grants, handlers, retained
/// workloads and rollouts.
#[derive(Debug, Parser)]
#[command(
    name = "berth",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("BERTH_GIT_COMMIT"), ")"),
    about
)]
pub struct Cli {
    /// Path to the kubeconfig (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use; several, comma-separated (`a,b,c`),
    /// show them as one fleet. `NAME=LABEL` declares the contexts of one
    /// label to run the same grants file (see --fleet-grants-same).
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// Every context of the kubeconfig, as one fleet.
    #[arg(long, global = true, conflicts_with = "context")]
    pub all_contexts: bool,
    /// Contexts (comma-separated) whose agents are meant to run the same
    /// grants file: a grants-file digest that differs among them is a
    /// finding. Repeatable, one group each.
    #[arg(long, global = true, value_name = "A,B,…")]
    pub fleet_grants_same: Vec<String>,
    /// The namespace (default: the context's).
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long, global = true, conflicts_with = "namespace")]
    pub all_namespaces: bool,
    /// Never offer changes (retirement actions stay disabled).
    #[arg(long, global = true)]
    pub read_only: bool,
    /// Capture the mouse (the wheel scrolls); off by default so that the
    /// terminal's own text selection keeps working.
    #[arg(long, global = true)]
    pub mouse: bool,
    /// No colours (emphasis stays). A non-empty NO_COLOR variable does the
    /// same.
    #[arg(long, global = true)]
    pub no_color: bool,
    /// The agent's leader-election Lease, NAMESPACE/NAME.
    #[arg(long, global = true, default_value_t = format!("{}/{}", DEFAULT_AGENT_LEASE.0, DEFAULT_AGENT_LEASE.1))]
    pub agent_lease: String,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands (none = the TUI).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the rows of a view, for scripts.
    Get {
        /// What to print.
        #[arg(value_enum)]
        what: What,
        /// Output format.
        #[arg(short = 'o', long, value_enum, default_value_t = Format::Table)]
        output: Format,
        /// With `handlers`: the handler matrix, RuntimeClasses × groups of
        /// nodes that give the same answer.
        #[arg(long)]
        matrix: bool,
    },
    /// Retire a Runtime: review (spec diff, pod-template effect, server-side
    /// dry-run), confirm, change, record an Event.
    Retire {
        /// The Runtime, NAMESPACE/NAME.
        target: String,
        #[command(flatten)]
        how: RetireHow,
        /// Review and dry-run only; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Confirm without asking.
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Delete a Deployment's old, scaled-to-zero ReplicaSets that reference
    /// a RuntimeClass (never the current one), after a review.
    PruneRevisions {
        /// The Deployment, NAMESPACE/NAME.
        target: String,
        /// The RuntimeClass the rollback revisions must no longer need.
        #[arg(long)]
        class: String,
        /// Review and dry-run only; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Confirm without asking.
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Plan a grants file: what the agent would grant, revoke, roll and
    /// retain if restarted with it (read-only). Exit 0 no change, 2 safe
    /// changes, 3 a running workload loses its grant or a rollout would
    /// stall, 1 invalid file.
    PlanGrants {
        /// The candidate grants file.
        #[arg(required_unless_present = "pending", conflicts_with = "pending")]
        file: Option<PathBuf>,
        /// Plan the agent's pending file (its PendingGrantsFile: the file on
        /// its disk that differs from the one it loaded) instead.
        #[arg(long)]
        pending: bool,
        /// Output format.
        #[arg(short = 'o', long, value_enum, default_value_t = Format::Table)]
        output: Format,
    },
    /// Explain the agent's decision for a Runtime (NS/NAME) or a workload
    /// or pod naming a RuntimeClass (KIND/NS/NAME): identity, binding,
    /// class, handlers, placement, admission (server-side dry-run) and the
    /// resulting conditions.
    Explain {
        /// NS/NAME (a Runtime) or KIND/NS/NAME (deployment, pod, …).
        target: String,
        /// Output format.
        #[arg(short = 'o', long, value_enum, default_value_t = Format::Table)]
        output: Format,
    },
    /// List findings, worst first (docs/findings.md). Exit 0 nothing at or
    /// above --fail-on, 2 the worst is a warning, 3 an error, 1 the check
    /// could not run.
    Check {
        /// Output format.
        #[arg(short = 'o', long, value_enum, default_value_t = Format::Table)]
        output: Format,
        /// The lowest severity that makes the exit code non-zero.
        #[arg(long, value_enum, default_value_t = crate::check::FailOn::Error)]
        fail_on: crate::check::FailOn,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff).
    Man,
}

/// Which retirement (exactly one).
#[derive(Debug, Clone, Copy, clap::Args)]
#[group(required = true, multiple = false)]
pub struct RetireHow {
    /// Clear spec.runtimeProfile: pods roll onto the default runtime.
    #[arg(long)]
    pub to_default: bool,
    /// Set spec.suspend: true (Deployment to 0, CronJobs suspended).
    #[arg(long)]
    pub suspend: bool,
    /// Delete the Runtime (garbage collection removes its objects).
    #[arg(long)]
    pub delete: bool,
}

impl RetireHow {
    pub(super) fn action(self) -> Action {
        if self.to_default {
            Action::ToDefault
        } else if self.suspend {
            Action::Suspend
        } else {
            Action::Delete
        }
    }
}

impl Cli {
    pub(super) fn scope(&self) -> Option<Scope> {
        if self.all_namespaces {
            Some(Scope::All)
        } else {
            self.namespace.clone().map(Scope::Namespace)
        }
    }

    pub(super) fn lease(&self) -> Result<ObjKey> {
        let (ns, name) = self
            .agent_lease
            .split_once('/')
            .ok_or_else(|| eyre!("--agent-lease must be NAMESPACE/NAME"))?;
        Ok((ns.to_string(), name.to_string()))
    }

    /// `--no-color`, or `NO_COLOR` set to anything non-empty
    /// (<https://no-color.org>).
    pub fn no_color(&self, no_color_env: Option<&std::ffi::OsStr>) -> bool {
        self.no_color || no_color_env.is_some_and(|v| !v.is_empty())
    }

    /// The fleet the flags name: the contexts (none: the kubeconfig's
    /// current one) and the groups declared to run one grants file.
    pub fn fleet(&self) -> Result<crate::fleet_cli::Fleet> {
        let mut fleet = match &self.context {
            Some(list) => crate::fleet_cli::Fleet::parse(list)?,
            None if self.all_contexts => crate::fleet_cli::Fleet {
                contexts: kubeconfig_contexts(self.kubeconfig.as_deref())
                    .wrap_err("reading the kubeconfig's contexts")?,
                same_grants: Vec::new(),
            },
            None => crate::fleet_cli::Fleet::default(),
        };
        for group in &self.fleet_grants_same {
            let group = crate::model::session::context_list(group);
            if let Some(c) = group.iter().find(|c| !fleet.contexts.contains(c)) {
                return Err(eyre!(
                    "--fleet-grants-same names {c}, which is not one of the contexts shown ({})",
                    fleet.contexts.join(",")
                ));
            }
            fleet.same_grants.push(group);
        }
        Ok(fleet)
    }

    /// The connection flags of a command that acts on one cluster: one
    /// context at most.
    pub(super) fn connect_options(&self) -> Result<ConnectOptions> {
        let fleet = self.fleet()?;
        if fleet.contexts.len() > 1 {
            return Err(eyre!(
                "this command acts on one cluster: give one --context (got {})",
                fleet.contexts.join(",")
            ));
        }
        Ok(ConnectOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: fleet.contexts.into_iter().next(),
        })
    }

    /// The kubeconfig alone (the contexts come from [`Cli::fleet`]).
    pub(super) fn kubeconfig_options(&self) -> ConnectOptions {
        ConnectOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mouse_is_opt_in_and_no_color_has_a_flag_and_a_variable() {
        let cli = Cli::try_parse_from(["berth"]).expect("parse");
        assert!(!cli.mouse);
        assert!(!cli.no_color(None));
        assert!(!cli.no_color(Some(std::ffi::OsStr::new(""))));
        assert!(cli.no_color(Some(std::ffi::OsStr::new("1"))));
        let cli = Cli::try_parse_from(["berth", "--mouse", "--no-color"]).expect("parse");
        assert!(cli.mouse && cli.no_color(None));
        // Global: also after a subcommand.
        let cli = Cli::try_parse_from(["berth", "get", "runtimes", "--no-color"]).expect("parse");
        assert!(cli.no_color);
    }
}
