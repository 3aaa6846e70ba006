//! What each subcommand does once the flags are read: connect (to one
//! cluster, or to each of a fleet), read or change, print, and exit with
//! the subcommand's code. Apart from the flags ([`super::flags`]) so that
//! the interface and the work behind it can each be read on its own.

use color_eyre::eyre::{Result, WrapErr, eyre};
use k8s_openapi::jiff::Timestamp;

use super::flags::{Cli, Command};
use crate::get::{self, Format, What};
use crate::model::{ObjKey, Scope};
use crate::retire::{self, Action};
use crate::run::{RunOptions, run};
use crate::watch::{ConnectOptions, connect, load_available};

/// Runs the subcommand (or, without one, the console): each arm hands on
/// to the function of its subcommand.
pub(super) async fn async_main(cli: Cli) -> Result<()> {
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
