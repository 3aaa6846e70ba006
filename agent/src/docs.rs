//! Shell completions and the man page, generated from the clap definition so
//! they never drift from the real flags; the metrics table, generated from
//! the metrics registry.

use std::io::Write;

use color_eyre::eyre::WrapErr;

/// Writes the completion script for `shell` to stdout.
pub fn completions(mut cmd: clap::Command, shell: clap_complete::Shell) -> color_eyre::Result<()> {
    let name = cmd.get_name().to_string();
    clap_complete::generate(shell, &mut cmd, name, &mut std::io::stdout());
    Ok(())
}

/// Writes the roff man page to stdout.
pub fn man_page(cmd: clap::Command) -> color_eyre::Result<()> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut out)
        .wrap_err("rendering the man page")?;
    std::io::stdout()
        .write_all(&out)
        .wrap_err("writing the man page")
}

/// Writes the metrics table of `docs/metrics.md` to stdout.
pub fn metrics_table() -> color_eyre::Result<()> {
    let metrics = crate::metrics::Metrics::new();
    std::io::stdout()
        .write_all(crate::metrics::markdown(metrics.docs()).as_bytes())
        .wrap_err("writing the metrics table")
}
