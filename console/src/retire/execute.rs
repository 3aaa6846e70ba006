//! Carrying out a confirmed review with the user's own credentials, then
//! recording it: an Event naming the action and the user.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::{Api, Client};

use super::plan::Plan;
use super::review::{RetireError, Review, send};

/// The component named in the Events.
pub const COMPONENT: &str = "berth-console";

/// What happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// One line for the user.
    pub message: String,
    /// Recording the Event failed (the change itself went through).
    pub event_error: Option<String>,
}

/// Sends the reviewed change for real and records the Event. A review
/// whose dry-run was refused, or with nothing to change, is not sent.
pub async fn execute(client: &Client, review: &Review) -> Result<Outcome, RetireError> {
    if !review.plan.has_change() {
        return Err(RetireError::Invalid(format!(
            "nothing to do: {}",
            review.plan.nothing.clone().unwrap_or_default()
        )));
    }
    if !review.verdict.accepted() {
        return Err(RetireError::Invalid(format!(
            "the dry-run was refused, nothing sent: {}",
            review.verdict.text()
        )));
    }
    send(client, &review.plan.change, false).await?;
    let event_error = record(client, &review.plan, &review.user)
        .await
        .err()
        .map(|e| e.to_string());
    Ok(Outcome {
        message: format!(
            "done: {} {}",
            review.plan.action.title(),
            review.plan.target()
        ),
        event_error,
    })
}

/// The Event for a carried-out plan.
pub fn event(plan: &Plan, user: &str, now: Timestamp) -> Event {
    let t = &plan.event_on;
    Event {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}.berth-", truncate(&t.name, 200))),
            namespace: Some(t.namespace.clone()),
            ..Default::default()
        },
        involved_object: ObjectReference {
            api_version: Some(t.api_version.clone()),
            kind: Some(t.kind.clone()),
            name: Some(t.name.clone()),
            namespace: Some(t.namespace.clone()),
            uid: (!t.uid.is_empty()).then(|| t.uid.clone()),
            ..Default::default()
        },
        reason: Some(plan.action.reason().to_string()),
        message: Some(plan.event_note(user)),
        type_: Some("Normal".into()),
        action: Some(plan.action.reason().to_string()),
        source: Some(EventSource {
            component: Some(COMPONENT.into()),
            host: None,
        }),
        reporting_component: Some(COMPONENT.into()),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        count: Some(1),
        ..Default::default()
    }
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// Creates the Event in the target's namespace.
pub async fn record(client: &Client, plan: &Plan, user: &str) -> Result<(), RetireError> {
    let api: Api<Event> = Api::namespaced(client.clone(), &plan.event_on.namespace);
    api.create(&PostParams::default(), &event(plan, user, Timestamp::now()))
        .await
        .map(|_| ())
        .map_err(|e| super::review::api_error(e, "recording the Event"))
}
