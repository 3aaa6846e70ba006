//! `berth retire NAMESPACE/NAME --to-default|--suspend|--delete` and
//! `berth prune-revisions NAMESPACE/DEPLOYMENT --class CLASS`: the same
//! review as the console, printed; then a confirmation read from the
//! terminal (or `--yes`). Without a terminal and without `--yes` they
//! refuse.

use std::io::{BufRead, Write};

use kube::Client;

use super::review::{RetireError, parse_target, review};
use super::{Action, Verdict, confirms, execute::execute, lines, prompt};
use crate::store::ClusterId;

/// Options of one scripted retirement.
#[derive(Clone, Debug)]
pub struct Options {
    pub action: Action,
    /// `NAMESPACE/NAME`.
    pub target: String,
    pub dry_run: bool,
    pub yes: bool,
    pub read_only: bool,
}

/// Runs one retirement command. Writes the review and the outcome to
/// `out` and refusals to `err`, reads the confirmation from `input` when `interactive`. Returns
/// the exit code (0 done or dry-run accepted, 1 refused or aborted).
pub async fn run(
    client: Option<(&Client, &ClusterId)>,
    opts: &Options,
    interactive: bool,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<i32> {
    if opts.read_only {
        writeln!(err, "berth: {}", RetireError::ReadOnly)?;
        return Ok(1);
    }
    let (ns, name) = match parse_target(&opts.target) {
        Ok(t) => t,
        Err(e) => {
            writeln!(err, "berth: {e}")?;
            return Ok(1);
        }
    };
    let Some((client, cluster)) = client else {
        writeln!(err, "berth: not connected")?;
        return Ok(1);
    };
    let rev = match review(client, cluster, &opts.action, &ns, &name).await {
        Ok(r) => r,
        Err(e) => {
            writeln!(err, "berth: {e}")?;
            return Ok(1);
        }
    };
    for (_, l) in lines(&rev) {
        writeln!(out, "{l}")?;
    }
    writeln!(out)?;
    if opts.dry_run {
        writeln!(out, "dry-run: nothing was changed")?;
        return Ok(if matches!(rev.verdict, Verdict::Refused(_)) {
            1
        } else {
            0
        });
    }
    if let Some(why) = &rev.plan.nothing {
        writeln!(out, "nothing to do: {why}")?;
        return Ok(0);
    }
    if !rev.can_execute() {
        writeln!(
            err,
            "berth: refusing: the server-side dry-run was refused; nothing was changed"
        )?;
        return Ok(1);
    }
    if !opts.yes {
        if !interactive {
            writeln!(
                err,
                "berth: refusing: no terminal to confirm on; pass --yes to confirm non-interactively (nothing was changed)"
            )?;
            return Ok(1);
        }
        // One cluster by construction (`--context` names one): the name
        // or yes, as before.
        write!(out, "{}", prompt(&rev, false))?;
        out.flush()?;
        let mut typed = String::new();
        input.read_line(&mut typed)?;
        if !confirms(&rev, false, &typed) {
            writeln!(err, "aborted: nothing was changed")?;
            return Ok(1);
        }
    }
    match execute(client, &rev).await {
        Ok(o) => {
            writeln!(out, "{}", o.message)?;
            match o.event_error {
                None => writeln!(
                    out,
                    "recorded: Event {} on {} {} naming {}",
                    rev.plan.action.reason(),
                    rev.plan.event_on.kind,
                    rev.plan.target_of_event(),
                    rev.user
                )?,
                Some(e) => writeln!(err, "warning: the Event could not be recorded: {e}")?,
            }
            Ok(0)
        }
        Err(e) => {
            writeln!(err, "berth: {e}")?;
            Ok(1)
        }
    }
}
