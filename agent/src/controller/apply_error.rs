//! Why applying a managed object failed, typed with its source: the
//! variant says which step failed ([`ApplyError::reason`]: the `Degraded`
//! reason, so the Warning Event's reason, and the `reason` label of
//! `berth_agent_apply_errors_total`), the message names the object the way
//! the `Degraded` condition shows it (`Kind/name: cause`).

use std::fmt;

use berth_shared::api::reasons;

/// One failure of the apply step, for one object.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Reading the object (not in the cache, or fresh before a replace).
    #[error("{object}: {source}")]
    Read {
        /// `Kind/name`.
        object: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The server-side apply of the rendered object.
    #[error("{object}: {source}")]
    Apply {
        /// `Kind/name`.
        object: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The merge patch removing what the production contract forbids.
    #[error("{object}: {source}")]
    Correct {
        /// `Kind/name`.
        object: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The replace of the desired fields after an apply left drift.
    #[error("{object}: {source}")]
    Replace {
        /// `Kind/name`.
        object: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Handing the replica count over to the HorizontalPodAutoscaler.
    #[error("{object}: replica handover: {source}")]
    Handover {
        /// `Kind/name`.
        object: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Deleting an owned object no longer desired.
    #[error("{object}: {source}")]
    Delete {
        /// `Kind/name`.
        object: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// An object could not be turned into JSON or back (a bug, or an
    /// object the apiserver returned that its type cannot hold).
    #[error("{object}: {source}")]
    Json {
        /// `Kind/name`.
        object: String,
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },
    /// The object stopped being this Runtime's between read and write.
    #[error("{object}: no longer owned by this Runtime")]
    NotOwned {
        /// `Kind/name`.
        object: String,
    },
}

impl ApplyError {
    /// The variant's stable reason (one of `reasons::APPLY_FAILURES`): the
    /// `Degraded` reason, the Event reason, a log field and metric label.
    pub fn reason(&self) -> &'static str {
        match self {
            ApplyError::Read { .. } => reasons::READ_FAILED,
            ApplyError::Apply { .. } => reasons::APPLY_FAILED,
            ApplyError::Correct { .. } => reasons::CORRECTION_FAILED,
            ApplyError::Replace { .. } => reasons::REPLACE_FAILED,
            ApplyError::Handover { .. } => reasons::HANDOVER_FAILED,
            ApplyError::Delete { .. } => reasons::DELETE_FAILED,
            ApplyError::Json { .. } => reasons::ENCODE_FAILED,
            ApplyError::NotOwned { .. } => reasons::OWNERSHIP_LOST,
        }
    }

    /// The object's `Kind/name`.
    pub fn object(&self) -> &str {
        match self {
            ApplyError::Read { object, .. }
            | ApplyError::Apply { object, .. }
            | ApplyError::Correct { object, .. }
            | ApplyError::Replace { object, .. }
            | ApplyError::Handover { object, .. }
            | ApplyError::Delete { object, .. }
            | ApplyError::Json { object, .. }
            | ApplyError::NotOwned { object } => object,
        }
    }

    /// The object's kind (a metric label: names would be unbounded).
    pub fn kind(&self) -> &str {
        self.object().split('/').next().unwrap_or_default()
    }

    /// The same failure for another object label (a helper that does not
    /// know the object's label reports with an empty one).
    pub fn for_object(self, label: &str) -> Self {
        let object = label.to_string();
        match self {
            ApplyError::Read { source, .. } => ApplyError::Read { object, source },
            ApplyError::Apply { source, .. } => ApplyError::Apply { object, source },
            ApplyError::Correct { source, .. } => ApplyError::Correct { object, source },
            ApplyError::Replace { source, .. } => ApplyError::Replace { object, source },
            ApplyError::Handover { source, .. } => ApplyError::Handover { object, source },
            ApplyError::Delete { source, .. } => ApplyError::Delete { object, source },
            ApplyError::Json { source, .. } => ApplyError::Json { object, source },
            ApplyError::NotOwned { .. } => ApplyError::NotOwned { object },
        }
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

    fn api(code: u16) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(&format!("failed with {code}"), "Reason")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn messages_name_the_object_and_variants_their_step() {
        let json = serde_json::from_str::<u8>("x").expect_err("not json");
        let cases: Vec<(ApplyError, &str, &str)> = vec![
            (
                ApplyError::Read {
                    object: "ConfigMap/web".into(),
                    source: api(403),
                },
                reasons::READ_FAILED,
                "ConfigMap/web: ",
            ),
            (
                ApplyError::Apply {
                    object: "Service/web".into(),
                    source: api(422),
                },
                reasons::APPLY_FAILED,
                "Service/web: ",
            ),
            (
                ApplyError::Correct {
                    object: "Deployment/web".into(),
                    source: api(409),
                },
                reasons::CORRECTION_FAILED,
                "Deployment/web: ",
            ),
            (
                ApplyError::Replace {
                    object: "Service/web".into(),
                    source: api(409),
                },
                reasons::REPLACE_FAILED,
                "Service/web: ",
            ),
            (
                ApplyError::Handover {
                    object: "Deployment/web".into(),
                    source: api(409),
                },
                reasons::HANDOVER_FAILED,
                "Deployment/web: replica handover: ",
            ),
            (
                ApplyError::Delete {
                    object: "Job/web-job-a".into(),
                    source: api(403),
                },
                reasons::DELETE_FAILED,
                "Job/web-job-a: ",
            ),
            (
                ApplyError::Json {
                    object: "Job/web-job-a".into(),
                    source: json,
                },
                reasons::ENCODE_FAILED,
                "Job/web-job-a: ",
            ),
            (
                ApplyError::NotOwned {
                    object: "Service/web".into(),
                },
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
            let relabelled = e.for_object("X/y");
            assert_eq!(relabelled.reason(), reason);
            assert!(relabelled.to_string().starts_with("X/y: "), "{relabelled}");
        }
        // Every variant has its own reason, and every reason status knows.
        seen.sort_unstable();
        let mut all = reasons::APPLY_FAILURES.to_vec();
        all.sort_unstable();
        assert_eq!(seen, all);
    }

    #[test]
    fn errors_join_with_semicolons() {
        let errors = ApplyErrors(vec![
            ApplyError::NotOwned {
                object: "A/a".into(),
            },
            ApplyError::NotOwned {
                object: "B/b".into(),
            },
        ]);
        assert_eq!(
            errors.to_string(),
            "A/a: no longer owned by this Runtime; B/b: no longer owned by this Runtime"
        );
        assert_eq!(ApplyErrors::default().to_string(), "");
    }
}
