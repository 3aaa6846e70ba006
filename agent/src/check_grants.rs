//! `berth-agent check-grants PATH [-o table|json]`: validate a grants file
//! with exactly the code `run` uses, and print the bindings or every error.
//!
//! Exit status: 0 valid, 1 invalid (or unreadable/unsafe), 2 usage error
//! (from clap).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use berth_shared::grants::{self, FileForm, GrantsError, LoadedGrants};
use serde::Serialize;

/// Arguments of `check-grants`.
#[derive(Debug, clap::Args)]
pub struct CheckGrantsArgs {
    /// The grants file to check, under the same file-safety and content rules
    /// as `run --grants-file`.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
}

/// How the result is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// A table of bindings, or the errors, for people.
    Table,
    /// One JSON document on stdout, valid or not, for scripts.
    Json,
}

/// What to print and where, and whether the file is valid.
#[derive(Debug, PartialEq, Eq)]
struct Report {
    stdout: String,
    stderr: String,
    valid: bool,
}

/// Run the subcommand; exits the process with status 1 when the file is invalid.
pub fn run(args: &CheckGrantsArgs) -> color_eyre::Result<()> {
    // The same loader `run --grants-file` uses (grants_config::load_configured).
    let result = grants::load(&args.path);
    let report = render(&args.path, &result, args.output);
    {
        let mut out = std::io::stdout().lock();
        out.write_all(report.stdout.as_bytes())?;
        out.flush()?;
    }
    if !report.stderr.is_empty() {
        let mut err = std::io::stderr().lock();
        err.write_all(report.stderr.as_bytes())?;
        err.flush()?;
    }
    if !report.valid {
        std::process::exit(1);
    }
    Ok(())
}

#[derive(Serialize)]
struct JsonValid<'a> {
    valid: bool,
    path: String,
    resolved_path: String,
    sha256: &'a str,
    bindings: Vec<FileForm<'a>>,
}

#[derive(Serialize)]
struct JsonInvalid {
    valid: bool,
    path: String,
    errors: Vec<berth_shared::grants::Diagnostic>,
}

fn render(path: &Path, result: &Result<LoadedGrants, GrantsError>, output: OutputFormat) -> Report {
    match (output, result) {
        (OutputFormat::Table, Ok(loaded)) => Report {
            stdout: table(loaded),
            stderr: String::new(),
            valid: true,
        },
        (OutputFormat::Table, Err(e)) => Report {
            stdout: String::new(),
            stderr: format!("{e}\n"),
            valid: false,
        },
        (OutputFormat::Json, Ok(loaded)) => Report {
            stdout: json(&JsonValid {
                valid: true,
                path: lossy(path),
                resolved_path: lossy(&loaded.resolved_path),
                sha256: &loaded.sha256,
                bindings: loaded.bindings.iter().map(FileForm).collect(),
            }),
            stderr: String::new(),
            valid: true,
        },
        (OutputFormat::Json, Err(e)) => Report {
            stdout: json(&JsonInvalid {
                valid: false,
                path: lossy(path),
                errors: e.diagnostics(),
            }),
            stderr: String::new(),
            valid: false,
        },
    }
}

fn lossy(path: &Path) -> String {
    // Diagnostics already sanitize paths; here the path is the operator's own
    // argument, and JSON escapes control characters.
    path.to_string_lossy().into_owned()
}

fn json<T: Serialize>(value: &T) -> String {
    match serde_json::to_string_pretty(value) {
        Ok(s) => s + "\n",
        // Plain data structs: serialization cannot fail; keep a valid document anyway.
        Err(_) => "{\"valid\": false}\n".to_owned(),
    }
}

/// The bindings as an aligned table plus a summary line. Values passed the
/// format rules (lowercase letters, digits, '-', '.'), so they are safe to print.
fn table(loaded: &LoadedGrants) -> String {
    const HEADERS: [&str; 7] = [
        "NAME",
        "PROJECT",
        "ENVIRONMENT",
        "APPLICATION",
        "SERVICE",
        "RUNTIME CLASS",
        "HANDLER",
    ];
    let rows: Vec<[&str; 7]> = loaded
        .bindings
        .iter()
        .map(|b| b.file_fields().map(|(_, value)| value))
        .collect();
    let mut widths = HEADERS.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: &[&str; 7]| -> String {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        s.push('\n');
        s
    };
    let mut out = String::new();
    if rows.is_empty() {
        out.push_str("no bindings: no service is granted any runtime class\n");
    } else {
        out.push_str(&line(&HEADERS));
        for row in &rows {
            out.push_str(&line(row));
        }
    }
    let n = rows.len();
    out.push_str(&format!(
        "\nvalid: {n} binding{}, sha256 {}\n",
        if n == 1 { "" } else { "s" },
        loaded.sha256
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "schema_version = 1\n[[bindings]]\nname = \"bounded-worker\"\nproject = \"demo\"\n\
        environment = \"production\"\napplication = \"analytics\"\nservice = \"worker\"\n\
        runtime_class = \"bounded-worker\"\nhandler = \"bounded-runc\"\n";

    #[test]
    fn table_lists_bindings() {
        let loaded = LoadedGrants::from_unchecked_bytes("g.toml", VALID.as_bytes()).expect("valid");
        let r = render(Path::new("g.toml"), &Ok(loaded), OutputFormat::Table);
        assert!(r.valid);
        assert!(r.stderr.is_empty());
        let mut lines = r.stdout.lines();
        let header = lines.next().expect("header");
        assert!(
            header.starts_with("NAME            PROJECT  ENVIRONMENT"),
            "{header}"
        );
        let row = lines.next().expect("row");
        assert!(
            row.starts_with("bounded-worker  demo     production   analytics    worker   bounded-worker  bounded-runc"),
            "{row}"
        );
        assert!(r.stdout.contains("valid: 1 binding, sha256 "));
    }

    #[test]
    fn errors_go_to_stderr_with_rules_and_positions() {
        let bad = VALID
            .replace("\"demo\"", "\"Demo\"")
            .replace("\"worker\"", "\"*\"");
        let err =
            LoadedGrants::from_unchecked_bytes("g.toml", bad.as_bytes()).expect_err("invalid");
        let r = render(Path::new("g.toml"), &Err(err), OutputFormat::Table);
        assert!(!r.valid);
        assert!(r.stdout.is_empty());
        assert!(
            r.stderr.contains("g.toml:4:11: [identity-format]"),
            "{}",
            r.stderr
        );
        assert!(
            r.stderr.contains("g.toml:7:11: [identity-format]"),
            "{}",
            r.stderr
        );
    }

    #[test]
    fn json_both_ways() {
        let loaded = LoadedGrants::from_unchecked_bytes("g.toml", VALID.as_bytes()).expect("valid");
        let r = render(Path::new("g.toml"), &Ok(loaded), OutputFormat::Json);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
        assert_eq!(v["valid"], true);
        assert_eq!(v["bindings"][0]["runtime_class"], "bounded-worker");
        assert_eq!(v["sha256"].as_str().map(str::len), Some(64));

        let err =
            LoadedGrants::from_unchecked_bytes("g.toml", b"schema_version = 2\nbindings = []\n")
                .expect_err("invalid");
        let r = render(Path::new("g.toml"), &Err(err), OutputFormat::Json);
        assert!(!r.valid);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
        assert_eq!(v["valid"], false);
        assert_eq!(v["errors"][0]["rule"], "schema-version");
        assert_eq!(v["errors"][0]["line"], 1);
        assert_eq!(v["errors"][0]["column"], 18);
    }

    #[test]
    fn empty_file_of_bindings() {
        let loaded =
            LoadedGrants::from_unchecked_bytes("g.toml", b"schema_version = 1\nbindings = []\n")
                .expect("valid");
        let r = render(Path::new("g.toml"), &Ok(loaded), OutputFormat::Table);
        assert!(r.stdout.starts_with("no bindings"));
    }
}
