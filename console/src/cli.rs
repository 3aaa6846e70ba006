//! Command line: kubectl-like connection flags, the TUI by default, and
//! `berth get …` for scripts.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use color_eyre::eyre::{Result, WrapErr, eyre};
use k8s_openapi::jiff::Timestamp;

use crate::get::{self, Format, What};
use crate::model::{DEFAULT_AGENT_LEASE, ObjKey, Scope};
use crate::retire::{self, Action};
use crate::run::{RunOptions, run};
use crate::watch::{ConnectOptions, connect, kubeconfig_contexts, load_available};

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
    fn action(self) -> Action {
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
    fn scope(&self) -> Option<Scope> {
        if self.all_namespaces {
            Some(Scope::All)
        } else {
            self.namespace.clone().map(Scope::Namespace)
        }
    }

    fn lease(&self) -> Result<ObjKey> {
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
    fn connect_options(&self) -> Result<ConnectOptions> {
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
    fn kubeconfig_options(&self) -> ConnectOptions {
        ConnectOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: None,
        }
    }
}

/// Parses the command line and runs.
pub fn main() -> Result<()> {
    without_huge_pages();
    color_eyre::install()?;
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .wrap_err("starting the async runtime")?;
    rt.block_on(async_main(cli)).map_err(clean_report)
}

/// Turns transparent huge pages off for this process, before its first
/// lists are parsed: see console/src/main.rs (the kernel zeroing 2 MB
/// pages was a third of a first frame's CPU). mimalloc is built not to ask
/// for them; this also covers hosts where THP is `always`. A kernel that
/// refuses the flag keeps its default: slower, nothing lost, so the error
/// is ignored.
pub fn without_huge_pages() {
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

/// Most characters of one printed error cause.
const ERROR_CHARS: usize = 2048;

/// The error as it will be printed, every cause sanitized: an API Status
/// message, a context name or a kubeconfig value is cluster or file text
/// and may carry escape sequences. The chain is kept as one line per cause.
pub fn clean_report(e: color_eyre::Report) -> color_eyre::Report {
    let causes: Vec<String> = e
        .chain()
        .map(|c| berth_shared::sanitize::line(&c.to_string(), ERROR_CHARS))
        .collect();
    let mut it = causes.into_iter().rev();
    let mut report = eyre!(it.next().unwrap_or_default());
    for c in it {
        report = report.wrap_err(c);
    }
    report
}

/// Runs the subcommand (or, without one, the console): each arm hands on
/// to the function of its subcommand.
async fn async_main(cli: Cli) -> Result<()> {
    let lease = cli.lease()?;
    match &cli.command {
        None => {
            let fleet = cli.fleet()?;
            run(RunOptions {
                connect: cli.kubeconfig_options(),
                contexts: fleet.contexts,
                same_grants: fleet.same_grants,
                scope: cli.scope(),
                read_only: cli.read_only,
                agent_lease: lease,
                mouse: cli.mouse,
                no_color: cli.no_color(std::env::var_os("NO_COLOR").as_deref()),
            })
            .await
        }
        Some(Command::Get {
            what,
            output,
            matrix,
        }) => get_main(&cli, &lease, *what, *output, *matrix).await,
        Some(Command::Retire {
            target,
            how,
            dry_run,
            yes,
        }) => {
            let opts = retire::cli::Options {
                action: how.action(),
                target: target.clone(),
                dry_run: *dry_run,
                yes: *yes,
                read_only: cli.read_only,
            };
            retire_main(&cli, opts).await
        }
        Some(Command::PlanGrants {
            file,
            pending: _,
            output,
        }) => plan_grants_main(&cli, &lease, file.as_deref(), *output).await,
        Some(Command::Explain { target, output }) => {
            let t = crate::rows::explain::parse_target(target, cli.namespace.as_deref())
                .ok_or_else(|| eyre!("explain takes NS/NAME or KIND/NS/NAME"))?;
            let e = crate::explain_cli::run(&cli.connect_options()?, &lease, &t).await?;
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(crate::explain_cli::render(&e, *output).as_bytes())?;
            Ok(())
        }
        Some(Command::Check { output, fail_on }) => {
            check_main(&cli, &lease, *output, *fail_on).await
        }
        Some(Command::Completions { shell }) => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            clap_complete::generate(*shell, &mut cmd, "berth", &mut std::io::stdout());
            Ok(())
        }
        Some(Command::Man) => {
            use clap::CommandFactory;
            use std::io::Write;
            let mut out = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut out)?;
            std::io::stdout().write_all(&out)?;
            Ok(())
        }
        Some(Command::PruneRevisions {
            target,
            class,
            dry_run,
            yes,
        }) => {
            let opts = retire::cli::Options {
                action: Action::Prune {
                    class: class.clone(),
                },
                target: target.clone(),
                dry_run: *dry_run,
                yes: *yes,
                read_only: cli.read_only,
            };
            retire_main(&cli, opts).await
        }
    }
}

/// `berth get`: one cluster's table, or the fleet's merged.
async fn get_main(
    cli: &Cli,
    lease: &ObjKey,
    what: What,
    output: Format,
    matrix: bool,
) -> Result<()> {
    if matrix && what != What::Handlers {
        return Err(eyre!("--matrix goes with `berth get handlers`"));
    }
    let what = if matrix { None } else { Some(what) };
    let fleet = cli.fleet()?;
    let (out, refused) = if fleet.contexts.len() > 1 {
        crate::fleet_cli::get(
            &cli.kubeconfig_options(),
            &fleet.contexts,
            cli.scope(),
            lease,
            what,
            output,
        )
        .await?
    } else {
        get_output(&cli.connect_options()?, cli.scope(), lease, what, output).await?
    };
    use std::io::Write;
    // Kinds (and clusters) that could not be read leave their rows
    // out; say so on stderr, so that the output stays parseable.
    for line in refused {
        eprintln!("{line}");
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    Ok(())
}

/// `berth plan-grants`: what a grants file would change, per cluster.
async fn plan_grants_main(
    cli: &Cli,
    lease: &ObjKey,
    file: Option<&std::path::Path>,
    output: Format,
) -> Result<()> {
    let fleet = cli.fleet()?;
    let (text, code) = if fleet.contexts.len() > 1 {
        let plans = crate::fleet_cli::plan(
            &cli.kubeconfig_options(),
            &fleet.contexts,
            cli.scope(),
            lease,
            file,
        )
        .await;
        (
            crate::fleet_cli::render_plans(&plans, output),
            crate::fleet_cli::plan_exit_code(&plans),
        )
    } else {
        let plan = crate::plan_grants::plan_file(&cli.connect_options()?, cli.scope(), lease, file)
            .await?;
        (crate::plan_grants::render(&plan, output), plan.exit_code)
    };
    print_and_exit_with(&text, code)
}

/// `berth check`: the findings, per cluster, and an exit code for CI.
async fn check_main(
    cli: &Cli,
    lease: &ObjKey,
    output: Format,
    fail_on: crate::check::FailOn,
) -> Result<()> {
    let fleet = cli.fleet()?;
    let (text, code) = if fleet.contexts.len() > 1 {
        let f = crate::fleet_cli::check(
            &cli.kubeconfig_options(),
            &fleet.contexts,
            cli.scope(),
            lease,
            &fleet.same_grants,
        )
        .await?;
        (
            crate::fleet_cli::render_check(&f, output),
            crate::fleet_cli::check_exit_code(&f, fail_on),
        )
    } else {
        let f = crate::check::check(&cli.connect_options()?, cli.scope(), lease).await?;
        (
            crate::check::render(&f, output),
            crate::check::exit_code(&f, fail_on),
        )
    };
    print_and_exit_with(&text, code)
}

/// Prints `text` to stdout (flushed: `exit` does not flush it), then
/// exits with `code` where it is not 0.
fn print_and_exit_with(text: &str, code: i32) -> Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    if code != 0 {
        std::process::exit(code);
    }
    Ok(())
}

/// Runs a scripted retirement on the terminal and exits with its code.
async fn retire_main(cli: &Cli, opts: retire::cli::Options) -> Result<()> {
    use std::io::IsTerminal;
    let options = cli.connect_options()?;
    let conn = if opts.read_only {
        None
    } else {
        Some(
            connect(&options)
                .await
                .wrap_err("connecting to the cluster")?,
        )
    };
    let interactive = std::io::stdin().is_terminal();
    let mut input = std::io::stdin().lock();
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let cluster = conn.as_ref().map(|c| c.cluster());
    let code = retire::cli::run(
        conn.as_ref().map(|c| &c.client).zip(cluster.as_ref()),
        &opts,
        interactive,
        &mut input,
        &mut out,
        &mut err,
    )
    .await?;
    use std::io::Write;
    out.flush()?;
    if code != 0 {
        std::process::exit(code);
    }
    Ok(())
}

/// Connects, lists what `what` needs once (every kind at once, paginated),
/// and formats it. A kind the apiserver refuses leaves its rows out and is
/// returned as a warning line; the rest is printed. `what` `None`: the
/// handler matrix (`get handlers --matrix`).
pub async fn get_output(
    opts: &ConnectOptions,
    scope: Option<Scope>,
    lease: &ObjKey,
    what: Option<What>,
    fmt: Format,
) -> Result<(String, Vec<String>)> {
    let conn = connect(opts).await.wrap_err("connecting to the cluster")?;
    let scope = scope.unwrap_or_else(|| Scope::Namespace(conn.default_namespace.clone()));
    let kinds = what.map_or_else(|| get::MATRIX_KINDS.to_vec(), What::kinds);
    let loaded = load_available(&conn, &scope, lease, &kinds)
        .await
        .wrap_err("reading from the cluster")?;
    let refused = loaded
        .refused
        .iter()
        .map(|(kind, e)| get::refused_line(*kind, e))
        .collect();
    let out = match what {
        Some(what) => get::format(what, &loaded.store, Timestamp::now(), fmt),
        None => get::format_matrix(&loaded.store, fmt),
    };
    Ok((out, refused))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

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

    #[test]
    fn printed_errors_are_sanitized_cause_by_cause() {
        let inner = eyre!("namespaces \"x\u{1b}]52;c;ZXZpbA==\u{7}\" is forbidden\u{202e}");
        let report = clean_report(inner.wrap_err("reading from the cluster\u{1b}[2J"));
        let causes: Vec<String> = report.chain().map(ToString::to_string).collect();
        assert_eq!(
            causes,
            [
                "reading from the cluster",
                "namespaces \"x\" is forbidden<U+202E>"
            ]
        );
        let printed = format!("{report:?}");
        assert!(
            !printed.contains('\u{1b}') && !printed.contains('\u{7}'),
            "{printed}"
        );
    }
}
