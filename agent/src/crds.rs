//! `berth-agent crds`: prints every berth CRD as one multi-document YAML
//! stream, generated from the API types so it always matches this binary.
//!
//! `berth-agent crds | kubectl apply --server-side -f -` installs them; the
//! committed copies under `assets/crds/` are the same text.

use std::io::{ErrorKind, Write};

/// Writes the CRD YAML to stdout.
pub fn run() -> color_eyre::Result<()> {
    let yaml = berth_shared::api::crds_yaml()?;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(yaml.as_bytes())
        .and_then(|()| stdout.flush())
    {
        // A reader that stops early (`| head`) is not an error worth a
        // backtrace.
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}
