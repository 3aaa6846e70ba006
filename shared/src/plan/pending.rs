//! The agent's pending grants file as a [`PendingGrantsFileSpec`] (what the
//! agent publishes) and back as a plan [`Candidate`] (what the console
//! plans), so both ends agree on one conversion.

use crate::api::{MAX_PENDING_PROBLEMS, PendingGrantsFileSpec, PendingProblem, PendingVerdict};
use crate::grants::{GrantsError, LoadedGrants};

use super::types::{PlanProblem, Stage};
use super::{Candidate, loader_problems};

/// The spec for the file on disk as the loader judged it (`sha256` is the
/// content's, when the bytes could be read; `loaded_sha256` the running
/// file's). `observed_at` is left for the caller.
pub fn pending_spec(
    loaded_sha256: Option<&str>,
    result: &Result<LoadedGrants, GrantsError>,
    sha256: Option<String>,
) -> PendingGrantsFileSpec {
    let mut spec = PendingGrantsFileSpec {
        loaded_sha256: loaded_sha256.map(str::to_string),
        sha256,
        ..PendingGrantsFileSpec::default()
    };
    match result {
        Ok(l) => {
            spec.verdict = PendingVerdict::Valid;
            spec.sha256 = Some(l.sha256.clone());
            spec.bindings = l.bindings.clone();
        }
        Err(e) => {
            spec.verdict = match e {
                GrantsError::Invalid { .. } | GrantsError::TooLarge { .. } => {
                    PendingVerdict::Invalid
                }
                _ => PendingVerdict::Unreadable,
            };
            spec.problems = loader_problems(e)
                .into_iter()
                .take(MAX_PENDING_PROBLEMS)
                .map(|p| PendingProblem {
                    rule: p.rule,
                    line: p.line,
                    column: p.column,
                    message: crate::sanitize::line(&p.message, 2048),
                })
                .collect();
        }
    }
    spec
}

/// The plan candidate an agent's published pending file stands for.
pub fn candidate_from_pending(source: String, spec: &PendingGrantsFileSpec) -> Candidate {
    let bindings = match spec.verdict {
        PendingVerdict::Valid => Ok(spec.bindings.clone()),
        PendingVerdict::Invalid | PendingVerdict::Unreadable => Err(spec
            .problems
            .iter()
            .map(|p| PlanProblem {
                stage: Stage::Load,
                rule: p.rule.clone(),
                binding: None,
                runtime_class: None,
                line: p.line,
                column: p.column,
                message: p.message.clone(),
            })
            .collect()),
    };
    Candidate {
        source,
        sha256: spec.sha256.clone(),
        bindings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_and_an_invalid_file_round_trip_through_the_spec() {
        let ok = LoadedGrants::from_unchecked_bytes(
            "g.toml",
            b"schema_version = 1\n[[bindings]]\nname = \"a\"\nproject = \"p\"\nenvironment = \"e\"\napplication = \"x\"\nservice = \"s\"\nruntime_class = \"gvisor\"\nhandler = \"runsc\"\n",
        );
        let spec = pending_spec(Some("old"), &ok, None);
        assert_eq!(spec.verdict, PendingVerdict::Valid);
        assert_eq!(spec.loaded_sha256.as_deref(), Some("old"));
        let c = candidate_from_pending("agent".into(), &spec);
        let bindings = c.bindings.expect("valid");
        assert_eq!(bindings.len(), 1);
        assert_eq!(bindings[0].runtime_class, "gvisor");

        let bad = LoadedGrants::from_unchecked_bytes("g.toml", b"schema_version = 2\n");
        let spec = pending_spec(None, &bad, Some("abc".into()));
        assert_eq!(spec.verdict, PendingVerdict::Invalid);
        assert_eq!(spec.sha256.as_deref(), Some("abc"));
        let c = candidate_from_pending("agent".into(), &spec);
        let problems = c.bindings.expect_err("invalid");
        assert!(
            problems.iter().any(|p| p.rule == "schema-version"),
            "{problems:?}"
        );
    }
}
