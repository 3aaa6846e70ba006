//! The pure half of a retirement: from what was read (the Runtime, its
//! Deployment, ReplicaSets, CronJobs and pods — all already sanitized) to
//! the exact change, its spec diff and its effect on the pod templates as
//! berth-shared's `render` computes them. No I/O.
//!
//! Here: the plan's types and what both plans use; [`runtime`] plans
//! retiring, suspending or deleting a Runtime, [`prune`] pruning rollback
//! ReplicaSets, [`diff`] the spec diff.

mod diff;
mod prune;
mod runtime;

use berth_shared::api::{API_VERSION, Runtime};
use berth_shared::decide::Identity;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};

pub use diff::{DiffLine, context_diff, diff_lines};
pub use prune::{plan_prune, runtime_owner};
pub use runtime::{identity_of, plan_runtime};

/// Annotation naming who retired a Runtime.
pub const RETIRED_BY_ANNOTATION: &str = "berth.dev/retired-by";
/// Annotation with the time (RFC 3339) a Runtime was retired.
pub const RETIRED_AT_ANNOTATION: &str = "berth.dev/retired-at";
/// Shown for "no runtimeClassName": the cluster's default runtime.
pub const DEFAULT_RUNTIME: &str = "(default)";

/// One retirement action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Clear `spec.runtimeProfile`: pods roll onto the default runtime.
    ToDefault,
    /// `spec.suspend: true`: Deployment to 0, CronJobs suspended.
    Suspend,
    /// Delete the Runtime (garbage collection removes its objects).
    Delete,
    /// Delete a Deployment's old, scaled-to-zero ReplicaSets that
    /// reference `class`.
    Prune {
        /// The RuntimeClass.
        class: String,
    },
}

impl Action {
    /// Short verb for messages and the review title.
    pub fn title(&self) -> String {
        match self {
            Action::ToDefault => "retire to the default runtime".into(),
            Action::Suspend => "suspend".into(),
            Action::Delete => "delete the Runtime".into(),
            Action::Prune { class } => format!("prune rollback revisions using {}", clean(class)),
        }
    }

    /// Whether it removes objects (the name must be typed to confirm).
    pub fn destructive(&self) -> bool {
        matches!(self, Action::Delete | Action::Prune { .. })
    }

    /// The Event reason recorded for it.
    pub fn reason(&self) -> &'static str {
        match self {
            Action::ToDefault => "RetiredToDefault",
            Action::Suspend => "RetiredBySuspend",
            Action::Delete => "RetiredByDelete",
            Action::Prune { .. } => "RevisionsPruned",
        }
    }

    /// What the permission check asks for: `(group, resource, verb)`.
    pub fn access(&self) -> (&'static str, &'static str, &'static str) {
        match self {
            Action::ToDefault | Action::Suspend => ("berth.dev", "runtimes", "patch"),
            Action::Delete => ("berth.dev", "runtimes", "delete"),
            Action::Prune { .. } => ("apps", "replicasets", "delete"),
        }
    }

    /// The kind of the object named on the command line.
    pub fn target_kind(&self) -> &'static str {
        match self {
            Action::Prune { .. } => "Deployment",
            _ => "Runtime",
        }
    }
}

/// A reference to the object an Event is recorded on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventTarget {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// What is sent to the API server (dry-run first, then for real).
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A JSON merge patch of the Runtime, conditional on its
    /// resourceVersion (a concurrent change is a conflict, not a surprise).
    PatchRuntime {
        namespace: String,
        name: String,
        patch: serde_json::Value,
    },
    /// Delete the Runtime, preconditioned on uid and resourceVersion.
    DeleteRuntime {
        namespace: String,
        name: String,
        uid: String,
        resource_version: String,
    },
    /// Delete these ReplicaSets (name, uid, resourceVersion).
    DeleteReplicaSets {
        namespace: String,
        sets: Vec<(String, String, String)>,
    },
    /// Nothing to send (already done).
    Nothing,
}

/// A planned retirement: everything the review shows, and the change.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub action: Action,
    /// Kind of the target (`Runtime` or `Deployment`).
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    /// The spec change.
    pub diff: Vec<DiffLine>,
    /// The effect on the rendered pod templates and running pods.
    pub effects: Vec<String>,
    /// Pods that roll or stop (names).
    pub pods: Vec<String>,
    /// Why nothing needs doing, if so.
    pub nothing: Option<String>,
    pub change: Change,
    /// Where the Event goes.
    pub event_on: EventTarget,
    /// What must be typed to confirm.
    pub confirm_word: String,
}

impl Plan {
    /// The object as `NAMESPACE/NAME`.
    pub fn target(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The Event's object as `NAMESPACE/NAME` (sanitized).
    pub fn target_of_event(&self) -> String {
        format!(
            "{}/{}",
            clean(&self.event_on.namespace),
            clean(&self.event_on.name)
        )
    }

    /// Whether there is anything to send.
    pub fn has_change(&self) -> bool {
        self.change != Change::Nothing
    }

    /// The Event note: the action, the object and the user.
    pub fn event_note(&self, user: &str) -> String {
        let mut note = format!(
            "{} {} by {} (berth console)",
            self.action.title(),
            self.target(),
            clean(user)
        );
        if let Change::DeleteReplicaSets { sets, .. } = &self.change {
            let names: Vec<&str> = sets.iter().map(|s| s.0.as_str()).collect();
            note.push_str(&format!(": deleted ReplicaSet(s) {}", names.join(", ")));
        }
        note.truncate(1000);
        note
    }
}

/// Why a plan could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Invalid(String),
}

/// What was read about a Runtime besides the Runtime itself.
#[derive(Clone, Debug, Default)]
pub struct RuntimeContext {
    /// The identity (status or Namespace labels); `None` if unknown.
    pub identity: Option<Identity>,
    /// The live Deployment of the Runtime, if readable.
    pub deployment: Option<Deployment>,
    /// The Runtime's running pods (server and jobs), if readable.
    pub pods: Vec<Pod>,
    /// The Runtime's one-time Jobs, if readable.
    pub jobs: Vec<Job>,
}

use berth_shared::sanitize::short as clean;

fn or_default(class: Option<&str>) -> String {
    class
        .filter(|c| !c.is_empty())
        .map(clean)
        .unwrap_or_else(|| DEFAULT_RUNTIME.to_string())
}

fn template_class(t: Option<&PodTemplateSpec>) -> Option<String> {
    t.and_then(|t| t.spec.as_ref())
        .and_then(|s| s.runtime_class_name.clone())
        .filter(|c| !c.is_empty())
}

fn runtime_event_target(rt: &Runtime) -> EventTarget {
    EventTarget {
        api_version: API_VERSION.to_string(),
        kind: "Runtime".to_string(),
        namespace: rt.metadata.namespace.clone().unwrap_or_default(),
        name: rt.metadata.name.clone().unwrap_or_default(),
        uid: rt.metadata.uid.clone().unwrap_or_default(),
    }
}

/// Whether `typed` confirms `plan` (the name for destructive actions,
/// `yes`/`y` otherwise).
pub fn confirms(plan: &Plan, typed: &str) -> bool {
    let typed = typed.trim();
    if plan.action.destructive() {
        !typed.is_empty() && typed == plan.confirm_word
    } else {
        matches!(typed, "y" | "yes" | "Y" | "YES" | "Yes")
    }
}
