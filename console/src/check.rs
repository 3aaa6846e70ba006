//! `berth check [-o table|json|yaml] [--fail-on warning|error|never]`: the
//! findings for CI and cron (docs/findings.md). Reads the cluster once
//! with the operator's credentials; kinds it may not list become
//! `unreadable` findings. Exit codes: 0 nothing at or above `--fail-on`,
//! 2 the worst such finding is a warning, 3 an error finding, 1 the check
//! could not run.

use berth_shared::findings::{Finding, Severity, worst};
use berth_shared::sanitize;
use clap::ValueEnum;
use color_eyre::eyre::WrapErr as _;
use k8s_openapi::jiff::Timestamp;

use crate::get::{Format, table_text};
use crate::model::Scope;
use crate::rows::findings::{FindingRow, findings_of, kinds};
use crate::rows::table::TableData;
use crate::store::ObjKey;
use crate::watch::{ConnectOptions, connect, load_available};

/// From which severity on `berth check` fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Any warning or error.
    Warning,
    /// Errors only.
    #[default]
    Error,
    /// Never (exit 0 whenever the check ran).
    Never,
}

/// The exit code for `findings` under `fail_on`.
pub fn exit_code(findings: &[Finding], fail_on: FailOn) -> i32 {
    let threshold = match fail_on {
        FailOn::Warning => Severity::Warning,
        FailOn::Error => Severity::Error,
        FailOn::Never => return 0,
    };
    match worst(findings) {
        Some(s) if s >= threshold && s == Severity::Error => 3,
        Some(s) if s >= threshold => 2,
        _ => 0,
    }
}

/// The findings in `fmt`, sanitized.
pub fn render(findings: &[Finding], fmt: Format) -> String {
    let rows: Vec<FindingRow> = findings.iter().map(FindingRow::of).collect();
    match fmt {
        Format::Table => {
            if rows.is_empty() {
                return "no findings\n".into();
            }
            table_text(&TableData::of(&rows))
        }
        Format::Json | Format::Yaml => {
            let mut v = serde_json::json!({
                "kind": "FindingList",
                "worst": worst(findings).map(Severity::word),
                "items": rows,
            });
            sanitize::json(&mut v, sanitize::MAX_VALUE_CHARS);
            if fmt == Format::Json {
                let mut s = serde_json::to_string_pretty(&v)
                    .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
                s.push('\n');
                s
            } else {
                yaml_serde::to_string(&v).unwrap_or_else(|e| format!("error: {e}\n"))
            }
        }
    }
}

/// Reads the cluster once and computes the findings (every namespace
/// unless a scope is given).
pub async fn check(
    opts: &ConnectOptions,
    scope: Option<Scope>,
    lease: &ObjKey,
) -> color_eyre::Result<Vec<Finding>> {
    let conn = connect(opts).await.wrap_err("connecting to the cluster")?;
    let scope = scope.unwrap_or(Scope::All);
    let loaded = load_available(&conn, &scope, lease, &kinds())
        .await
        .wrap_err("reading from the cluster")?;
    Ok(findings_of(
        &loaded.store,
        lease,
        Timestamp::now(),
        &loaded.refused,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn exit_codes_follow_the_worst_finding() {
        let app = fixtures::app();
        let lease = ("berth-system".to_string(), "berth-agent".to_string());
        let f = findings_of(&app.clusters[0].data.store, &lease, fixtures::now(), &[]);
        // The fixture has a revoked grant with retained workloads.
        assert!(
            f.iter()
                .any(|f| f.kind == berth_shared::findings::FindingKind::RetainedAfterRevocation),
            "{f:#?}"
        );
        assert_eq!(exit_code(&f, FailOn::Error), 3);
        assert_eq!(exit_code(&f, FailOn::Warning), 3);
        assert_eq!(exit_code(&f, FailOn::Never), 0);
        assert_eq!(exit_code(&[], FailOn::Warning), 0);
        let warnings: Vec<Finding> = f
            .into_iter()
            .filter(|f| f.severity == Severity::Warning)
            .collect();
        if !warnings.is_empty() {
            assert_eq!(exit_code(&warnings, FailOn::Warning), 2);
            assert_eq!(exit_code(&warnings, FailOn::Error), 0);
        }
    }

    #[test]
    fn output_is_sanitized_and_parses_back() {
        let f = vec![Finding {
            kind: berth_shared::findings::FindingKind::Unreadable,
            severity: Severity::Warning,
            objects: vec!["Pod".into()],
            message: "pods \u{1b}]52;c;ZXZpbA==\u{7} forbidden".into(),
            fix: "x".into(),
        }];
        let table = render(&f, Format::Table);
        assert!(
            !table.contains('\u{1b}') && !table.contains('\u{7}'),
            "{table}"
        );
        let j: serde_json::Value = serde_json::from_str(&render(&f, Format::Json)).expect("json");
        let y: serde_json::Value = yaml_serde::from_str(&render(&f, Format::Yaml)).expect("yaml");
        assert_eq!(j, y);
        assert_eq!(j["worst"], "warning");
        assert_eq!(j["items"][0]["kind"], "unreadable");
        assert!(!j.to_string().contains('\u{1b}'));
    }
}
