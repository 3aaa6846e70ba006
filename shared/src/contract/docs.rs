//! The contract table as Markdown, for docs/drift-and-events.md (a unit
//! test keeps the page equal to this output).

use std::fmt::Write;

use super::allowlist::{TOLERATED, UNGOVERNED};
use super::table::{Allowed, GOVERNED, Scope};

fn scope(s: Scope) -> String {
    match s {
        Scope::Kind(k) => k.as_str().to_string(),
        Scope::PodTemplate => "pod template".to_string(),
        Scope::Every => "every managed object".to_string(),
    }
}

/// A path for people: the pointer without its escapes, in a code span.
fn path(p: &str) -> String {
    format!("`{}`", p.replace("~1", "/").replace("~0", "~"))
}

fn allowed(a: Allowed) -> String {
    match a {
        Allowed::Any => "any".to_string(),
        Allowed::Value(v) => format!("`{v}`"),
        Allowed::DefaultPullPolicy => "the default for the image".to_string(),
        Allowed::SameAs(field) => format!("the value of `{field}`"),
    }
}

/// Escapes `|` (a column separator) in a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The three tables: governed, tolerated, not governed.
pub fn markdown() -> String {
    let mut out = String::new();
    out.push_str(
        "Governed parts (a row nested in another only names the rule; \
         `pod template` is `spec.template` of the Deployment and \
         `spec.jobTemplate.spec.template` of each CronJob):\n\n\
         | object | part | rule | why | example of a foreign change that is removed |\n\
         |---|---|---|---|---|\n",
    );
    for row in GOVERNED {
        let _ = writeln!(
            out,
            "| {} | {} | `{}` | {} | `{}` |",
            scope(row.scope),
            path(row.path),
            row.rule.as_str(),
            cell(row.why),
            cell(row.attack),
        );
    }
    out.push_str(
        "\nTolerated inside a governed part (only where berth renders no value \
         for the field; where it renders one, the value is the rendered one):\n\n\
         | object | field | value | why |\n|---|---|---|---|\n",
    );
    for row in TOLERATED {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            scope(row.scope),
            path(row.path),
            cell(&allowed(row.allowed)),
            cell(row.why),
        );
    }
    out.push_str("\nNot governed:\n\n| object | what | why |\n|---|---|---|\n");
    for row in UNGOVERNED {
        let what = if row.path.is_empty() {
            "the whole object".to_string()
        } else {
            path(row.path)
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            scope(row.scope),
            cell(&what),
            cell(row.why)
        );
    }
    out
}
