//! Why applying a managed object failed: the object, the step that failed
//! and the typed cause. The step and cause together give
//! [`ApplyError::reason`] (the `Degraded` reason, so the Warning Event's
//! reason, and the `reason` label of `berth_agent_apply_errors_total`); the
//! message names the object the way the `Degraded` condition shows it
//! (`Kind/name: cause`).

use std::fmt;

use berth_shared::api::reasons;

/// One failure of the apply step, for one object.
#[derive(Debug, thiserror::Error)]
#[error("{object}: {}{source}", step.prefix())]
pub struct ApplyError {
    /// `Kind/name`.
    pub object: String,
    /// The step that failed.
    pub step: Step,
    /// What went wrong.
    #[source]
    pub source: Cause,
}

/// The step of the apply that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Reading the object (not in the cache, or fresh before a replace).
    Read,
    /// The server-side apply of the rendered object.
    Apply,
    /// The merge patch removing what the production contract forbids.
    Correct,
    /// The replace of the desired fields after an apply left drift.
    Replace,
    /// Handing the replica count over to the HorizontalPodAutoscaler.
    Handover,
    /// Deleting an owned object no longer desired.
    Delete,
}

impl Step {
    /// What the message says before the cause (only the handover names
    /// its step: the others show in the cause).
    fn prefix(self) -> &'static str {
        match self {
            Step::Handover => "replica handover: ",
            _ => "",
        }
    }

    fn reason(self) -> &'static str {
        match self {
            Step::Read => reasons::READ_FAILED,
            Step::Apply => reasons::APPLY_FAILED,
            Step::Correct => reasons::CORRECTION_FAILED,
            Step::Replace => reasons::REPLACE_FAILED,
            Step::Handover => reasons::HANDOVER_FAILED,
            Step::Delete => reasons::DELETE_FAILED,
        }
    }
}

/// The cause of an [`ApplyError`].
#[derive(Debug, thiserror::Error)]
pub enum Cause {
    /// The API refused or failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// An object could not be turned into JSON or back (a bug, or an
    /// object the apiserver returned that its type cannot hold).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The object stopped being this Runtime's between read and write.
    #[error("no longer owned by this Runtime")]
    NotOwned,
}

impl ApplyError {
    /// `object`'s `step` failed for `source`.
    pub fn new(object: impl Into<String>, step: Step, source: impl Into<Cause>) -> Self {
        ApplyError {
            object: object.into(),
            step,
            source: source.into(),
        }
    }

    /// The stable reason (one of `reasons::APPLY_FAILURES`): the
    /// `Degraded` reason, the Event reason, a log field and metric label.
    /// The step's, unless the cause is not the API's.
    pub fn reason(&self) -> &'static str {
        match self.source {
            Cause::Api(_) => self.step.reason(),
            Cause::Json(_) => reasons::ENCODE_FAILED,
            Cause::NotOwned => reasons::OWNERSHIP_LOST,
        }
    }

    /// Whether the apiserver could not be reached or asked to be retried
    /// (no connection, a connection cut, a timeout, 429 or 503): a fact
    /// about the path to the apiserver, not about the Runtime. Its
    /// reconcile retries without writing `Degraded` (an apiserver restart
    /// must not leave a Warning Event on every Runtime it interrupted).
    pub fn is_unavailable(&self) -> bool {
        match &self.source {
            Cause::Api(kube::Error::Api(status)) => matches!(status.code, 429 | 503),
            Cause::Api(
                kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_),
            ) => true,
            _ => false,
        }
    }

    /// The object's kind (a metric label: names would be unbounded).
    pub fn kind(&self) -> &str {
        self.object.split('/').next().unwrap_or_default()
    }
}

/// Every failure of one apply step, shown joined by `; `.
#[derive(Debug, Default)]
pub struct ApplyErrors(pub Vec<ApplyError>);

impl fmt::Display for ApplyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ApplyErrors {}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16) -> Cause {
        Cause::Api(kube::Error::Api(
            kube::core::Status::failure(&format!("failed with {code}"), "Reason")
                .with_code(code)
                .boxed(),
        ))
    }

    #[test]
    fn messages_name_the_object_and_steps_their_reason() {
        let json = || Cause::Json(serde_json::from_str::<u8>("x").expect_err("not json"));
        let cases: Vec<(ApplyError, &str, &str)> = vec![
            (
                ApplyError::new("ConfigMap/web", Step::Read, api(403)),
                reasons::READ_FAILED,
                "ConfigMap/web: ",
            ),
            (
                ApplyError::new("Service/web", Step::Apply, api(422)),
                reasons::APPLY_FAILED,
                "Service/web: ",
            ),
            (
                ApplyError::new("Deployment/web", Step::Correct, api(409)),
                reasons::CORRECTION_FAILED,
                "Deployment/web: ",
            ),
            (
                ApplyError::new("Service/web", Step::Replace, api(409)),
                reasons::REPLACE_FAILED,
                "Service/web: ",
            ),
            (
                ApplyError::new("Deployment/web", Step::Handover, api(409)),
                reasons::HANDOVER_FAILED,
                "Deployment/web: replica handover: ",
            ),
            (
                ApplyError::new("Job/web-job-a", Step::Delete, api(403)),
                reasons::DELETE_FAILED,
                "Job/web-job-a: ",
            ),
            (
                ApplyError::new("Job/web-job-a", Step::Apply, json()),
                reasons::ENCODE_FAILED,
                "Job/web-job-a: ",
            ),
            (
                ApplyError::new("Service/web", Step::Replace, Cause::NotOwned),
                reasons::OWNERSHIP_LOST,
                "Service/web: no longer owned by this Runtime",
            ),
        ];
        let mut seen: Vec<&str> = Vec::new();
        for (e, reason, prefix) in cases {
            assert_eq!(e.reason(), reason);
            seen.push(reason);
            assert_eq!(e.kind(), prefix.split('/').next().unwrap_or_default());
            let msg = e.to_string();
            assert!(msg.starts_with(prefix), "{msg}");
            // The cause stays typed, reachable as the error's source.
            let source = std::error::Error::source(&e).expect("a source");
            assert!(msg.ends_with(&source.to_string()), "{msg}");
        }
        // Every reason status knows is reachable.
        seen.sort_unstable();
        let mut all = reasons::APPLY_FAILURES.to_vec();
        all.sort_unstable();
        assert_eq!(seen, all);
    }

    #[test]
    fn only_an_unreachable_or_busy_apiserver_is_unavailable() {
        let refused = || {
            Cause::Api(kube::Error::Service(Box::new(std::io::Error::from(
                std::io::ErrorKind::ConnectionRefused,
            ))))
        };
        let unavailable = [
            ApplyError::new("Deployment/web", Step::Apply, refused()),
            ApplyError::new("Deployment/web", Step::Read, api(503)),
            ApplyError::new("Service/web", Step::Replace, api(429)),
        ];
        for e in unavailable {
            assert!(e.is_unavailable(), "{e}");
        }
        // What the apiserver answered about the object is the Runtime's
        // fact, and so is an object berth cannot encode or no longer owns.
        let facts = [
            ApplyError::new("Deployment/web", Step::Apply, api(422)),
            ApplyError::new("Deployment/web", Step::Apply, api(500)),
            ApplyError::new("Deployment/web", Step::Correct, api(409)),
            ApplyError::new("Job/web-job-a", Step::Delete, api(403)),
            ApplyError::new("Service/web", Step::Replace, Cause::NotOwned),
            ApplyError::new(
                "Job/web-job-a",
                Step::Apply,
                Cause::Json(serde_json::from_str::<u8>("x").expect_err("not json")),
            ),
        ];
        for e in facts {
            assert!(!e.is_unavailable(), "{e}");
        }
    }

    #[test]
    fn errors_join_with_semicolons() {
        let errors = ApplyErrors(vec![
            ApplyError::new("A/a", Step::Replace, Cause::NotOwned),
            ApplyError::new("B/b", Step::Replace, Cause::NotOwned),
        ]);
        assert_eq!(
            errors.to_string(),
            "A/a: no longer owned by this Runtime; B/b: no longer owned by this Runtime"
        );
        assert_eq!(ApplyErrors::default().to_string(), "");
    }
}
