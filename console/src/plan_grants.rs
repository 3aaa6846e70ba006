//! `berth plan-grants FILE [-o table|json|yaml]`: what the agent would do
//! if restarted with FILE. Read-only, with the operator's own credentials.
//!
//! FILE is judged by the agent's own strict loader. The file-ownership
//! rules protect the agent's copy, not an operator's draft: a local file
//! that breaks them is still planned, and the broken rule is reported as a
//! warning. Exit codes: 0 no change, 2 safe changes, 3 disruptive
//! changes, 1 invalid file (see `docs/plan-grants.md`).

use std::io::Read as _;
use std::path::Path;

use berth_shared::api::PendingGrantsFile;
use berth_shared::grants::{self, GrantsError, LoadedGrants, MAX_FILE_BYTES};
use berth_shared::plan::{Candidate, Plan, candidate_from_pending, loader_problems};
use berth_shared::sanitize;

use crate::get::Format;
use crate::model::Scope;
use crate::rows::plan::{loaded_bindings, plan_from_store, plan_lines};
use crate::store::{ANALYSIS_KINDS, Kind};
use crate::watch::{ConnectOptions, connect, load};

/// Kinds the plan reads.
pub fn kinds() -> Vec<Kind> {
    let mut v = vec![Kind::Namespace, Kind::Runtime];
    v.extend_from_slice(ANALYSIS_KINDS);
    v
}

fn candidate_of(source: String, result: Result<LoadedGrants, GrantsError>) -> Candidate {
    match result {
        Ok(l) => Candidate {
            source,
            sha256: Some(l.sha256.clone()),
            bindings: Ok(l.bindings.clone()),
        },
        Err(e) => Candidate {
            source,
            sha256: None,
            bindings: Err(loader_problems(&e)),
        },
    }
}

/// Loads `path` as the agent would; file-safety refusals become warnings
/// and the content is then judged on its own. `Err` only when the bytes
/// cannot be read at all.
pub fn load_candidate(path: &Path) -> Result<(Candidate, Vec<String>), GrantsError> {
    let source = path.display().to_string();
    match grants::load(path) {
        Ok(l) => Ok((candidate_of(source, Ok(l)), Vec::new())),
        Err(e @ (GrantsError::Invalid { .. } | GrantsError::TooLarge { .. })) => {
            Ok((candidate_of(source, Err(e)), Vec::new()))
        }
        Err(unsafe_file) => {
            let warning = format!(
                "{unsafe_file} (the agent would refuse its copy if it broke this rule; the content is planned anyway)"
            );
            let bytes = read_limited(path)?;
            let sha = grants::sha256_hex(&bytes);
            let mut c = candidate_of(source, LoadedGrants::from_unchecked_bytes(path, &bytes));
            c.sha256.get_or_insert(sha);
            Ok((c, vec![warning]))
        }
    }
}

/// At most [`MAX_FILE_BYTES`] + 1 bytes, so the size rule still applies.
fn read_limited(path: &Path) -> Result<Vec<u8>, GrantsError> {
    let io = |action, source| GrantsError::Io {
        path: path.to_owned(),
        action,
        target: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(|e| io("open", e))?;
    let mut bytes = Vec::new();
    file.take(u64::try_from(MAX_FILE_BYTES + 1).unwrap_or(u64::MAX))
        .read_to_end(&mut bytes)
        .map_err(|e| io("read", e))?;
    Ok(bytes)
}

/// The plan in `fmt`.
pub fn render(plan: &Plan, fmt: Format) -> String {
    match fmt {
        Format::Table => {
            let mut s = plan_lines(plan).join("\n");
            s.push('\n');
            s
        }
        Format::Json | Format::Yaml => {
            let mut v = serde_json::to_value(plan).unwrap_or(serde_json::Value::Null);
            sanitize::json(&mut v, sanitize::MAX_VALUE_CHARS);
            fmt.document(&v)
        }
    }
}

/// The agent's published pending file as a candidate; without one, the
/// loaded bindings themselves (a restart would change nothing).
async fn pending_candidate(
    client: &kube::Client,
    store: &crate::store::Store,
    publisher: &str,
) -> color_eyre::Result<(Candidate, Vec<String>)> {
    use color_eyre::eyre::WrapErr as _;
    let api: kube::Api<PendingGrantsFile> = kube::Api::all(client.clone());
    let found = api
        .get_opt(publisher)
        .await
        .wrap_err("reading the agent's PendingGrantsFile")?;
    Ok(match found {
        Some(p) => (
            candidate_from_pending(format!("PendingGrantsFile/{publisher}"), &p.spec),
            Vec::new(),
        ),
        None => (
            Candidate {
                source: format!("PendingGrantsFile/{publisher}"),
                sha256: None,
                bindings: Ok(loaded_bindings(store, publisher)),
            },
            vec![format!(
                "no PendingGrantsFile {publisher}: the agent's grants file on disk is the one it loaded"
            )],
        ),
    })
}

/// Loads FILE (or, with `None`, the agent's pending file), reads the
/// cluster once and plans. Runtimes and workloads are read in `scope`
/// (every namespace unless `-n` is given: grants are cluster-wide); the
/// agent is the one whose Lease is `lease`.
pub async fn plan_file(
    opts: &ConnectOptions,
    scope: Option<Scope>,
    lease: &(String, String),
    path: Option<&Path>,
) -> color_eyre::Result<Plan> {
    use color_eyre::eyre::WrapErr as _;
    let local = path.map(load_candidate).transpose()?;
    // An invalid file is refused before the cluster matters.
    if let Some((candidate, warnings)) = local.as_ref().filter(|(c, _)| c.bindings.is_err()) {
        let mut plan = plan_from_store(&crate::store::Store::default(), &lease.1, candidate);
        plan.warnings.extend(warnings.iter().cloned());
        return Ok(plan);
    }
    let conn = connect(opts).await.wrap_err("connecting to the cluster")?;
    let scope = scope.unwrap_or(Scope::All);
    let store = load(&conn, &scope, lease, &kinds())
        .await
        .wrap_err("reading from the cluster")?;
    let (candidate, warnings) = match local {
        Some(l) => l,
        None => pending_candidate(&conn.client, &store, &lease.1).await?,
    };
    let mut plan = plan_from_store(&store, &lease.1, &candidate);
    plan.warnings.extend(warnings);
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    const VALID: &str = "schema_version = 1\n[[bindings]]\nname = \"a\"\nproject = \"p\"\nenvironment = \"e\"\napplication = \"x\"\nservice = \"s\"\nruntime_class = \"gvisor\"\nhandler = \"runsc\"\n";

    fn scratch(name: &str, text: &str, mode: u32) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("berth-plan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        path
    }

    #[test]
    fn a_draft_breaking_ownership_rules_is_planned_with_a_warning() {
        // Group- and world-writable: the agent would refuse its own copy.
        let path = scratch("draft.toml", VALID, 0o666);
        let (c, warnings) = load_candidate(&path).expect("readable");
        let _ = std::fs::remove_file(&path);
        assert_eq!(c.bindings.expect("valid content").len(), 1);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("planned anyway"), "{warnings:?}");
        assert!(c.sha256.is_some());
    }

    #[test]
    fn invalid_content_is_the_loaders_problems_and_a_missing_file_an_error() {
        let path = scratch("bad.toml", "schema_version = 2\n", 0o600);
        let (c, _) = load_candidate(&path).expect("readable");
        let _ = std::fs::remove_file(&path);
        let problems = c.bindings.expect_err("invalid");
        assert!(
            problems.iter().any(|p| p.rule == "schema-version"),
            "{problems:?}"
        );
        assert!(load_candidate(Path::new("/nonexistent/berth/grants.toml")).is_err());
    }

    #[test]
    fn json_and_yaml_are_the_same_sanitized_document() {
        let plan = crate::rows::plan::plan_from_store(
            &crate::store::Store::default(),
            "berth-agent",
            &Candidate {
                source: "x\u{1b}]52;c;ZXZpbA==\u{7}.toml".into(),
                sha256: None,
                bindings: Ok(Vec::new()),
            },
        );
        let j: serde_json::Value =
            serde_json::from_str(&render(&plan, Format::Json)).expect("json");
        let y: serde_json::Value =
            yaml_serde::from_str(&render(&plan, Format::Yaml)).expect("yaml");
        assert_eq!(j, y);
        assert_eq!(j["outcome"], "NoChange");
        let table = render(&plan, Format::Table);
        assert!(
            !table.contains('\u{1b}') && !table.contains('\u{7}'),
            "{table}"
        );
        assert!(!j.to_string().contains('\u{1b}'));
    }
}
