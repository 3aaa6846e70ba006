//! `berth-agent crds`: prints every berth CRD as one multi-document YAML
//! stream, generated from the API types so it always matches this binary.
//!
//! `berth-agent crds | kubectl apply --server-side -f -` installs them; the
//! committed copies under `assets/crds/` are the same text.

use std::io::Write;

/// Writes the CRD YAML to stdout.
pub fn run() -> color_eyre::Result<()> {
    let yaml = berth_shared::api::crds_yaml()?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(yaml.as_bytes())?;
    stdout.flush()?;
    Ok(())
}
