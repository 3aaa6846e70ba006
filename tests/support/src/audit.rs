//! Reading the local cluster's audit log (`berth-localcluster up --audit`):
//! who wrote what, when, as the apiserver saw it. The agent names its
//! replica in its User-Agent (`berth-agent/VERSION (IDENTITY)`).

use std::path::Path;

use serde::Deserialize;

/// One completed write request.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// get, create, update, patch, delete, …
    pub verb: String,
    /// The client's User-Agent.
    #[serde(default)]
    pub user_agent: String,
    /// The object written.
    #[serde(default)]
    pub object_ref: Option<ObjectRef>,
    /// The response (code).
    #[serde(default)]
    pub response_status: Option<Status>,
    /// When the apiserver received the request (RFC 3339, micro-seconds).
    pub request_received_timestamp: String,
    /// The stage (`ResponseComplete` for finished requests).
    pub stage: String,
}

/// What a request was about.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ObjectRef {
    /// The resource plural.
    #[serde(default)]
    pub resource: String,
    /// The namespace.
    #[serde(default)]
    pub namespace: String,
    /// The name.
    #[serde(default)]
    pub name: String,
    /// The subresource (`status`).
    #[serde(default)]
    pub subresource: String,
}

/// A response status.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Status {
    /// The HTTP code.
    #[serde(default)]
    pub code: u16,
}

impl Event {
    /// The replica identity in a `berth-agent/VERSION (IDENTITY)` agent.
    pub fn agent_identity(&self) -> Option<&str> {
        let rest = self.user_agent.strip_prefix("berth-agent/")?;
        let (_, tail) = rest.split_once(" (")?;
        tail.strip_suffix(')')
    }

    /// Whether the request succeeded (2xx).
    pub fn succeeded(&self) -> bool {
        self.response_status
            .as_ref()
            .is_some_and(|s| (200..300).contains(&s.code))
    }

    /// The resource written.
    pub fn resource(&self) -> &str {
        self.object_ref.as_ref().map_or("", |o| o.resource.as_str())
    }
}

/// Every completed write in the log (lines that do not parse are skipped:
/// the last one may be half written).
pub fn read(path: &Path) -> Vec<Event> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Event>(l).ok())
        .filter(|e| e.stage == "ResponseComplete")
        .filter(|e| !matches!(e.verb.as_str(), "get" | "list" | "watch"))
        .collect()
}

/// Reads of berth's own resources (`list`, `watch`; the policy logs no
/// other reads) whose User-Agent starts with `agent_prefix`, as
/// (verb, resource, stage): a watch is logged when its response starts
/// (`ResponseStarted`) and again when it ends.
pub fn reads_by(path: &Path, agent_prefix: &str) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Event>(l).ok())
        .filter(|e| matches!(e.verb.as_str(), "list" | "watch"))
        .filter(|e| e.user_agent.starts_with(agent_prefix))
        .map(|e| (e.verb.clone(), e.resource().to_string(), e.stage.clone()))
        .collect()
}

/// A write by an agent replica while it did not hold the lease.
#[derive(Clone, Debug)]
pub struct Violation {
    /// The replica.
    pub identity: String,
    /// The write.
    pub what: String,
    /// When the apiserver received it.
    pub at: String,
    /// Who held the lease then, and since when.
    pub holder: String,
}

/// How agent writes stand against the lease history.
#[derive(Clone, Debug, Default)]
pub struct Judged {
    /// Received while another replica was the lease's holder (its
    /// successful lease write came first), or before anyone held it: two
    /// writers. Must be none.
    pub non_leader: Vec<Violation>,
    /// Received from the holder more than a lease duration after its last
    /// lease write, while nobody else had taken the lease: the holder's
    /// lease had lapsed (a renewal or the request itself was late, e.g. on
    /// a starved machine) but no other writer existed. Reported, not a
    /// split brain: a takeover would have been a lease write before it.
    pub lapsed_holder: Vec<Violation>,
}

/// Writes by agent replicas (other than to the lease `lease` in
/// `namespace`), judged against the lease's history ([`Judged`]).
/// Timestamps are the apiserver's, so no client clock enters the
/// judgement.
pub fn judge_writes(events: &[Event], namespace: &str, lease: &str, lease_seconds: f64) -> Judged {
    let mut sorted: Vec<&Event> = events
        .iter()
        .filter(|e| e.agent_identity().is_some())
        .collect();
    sorted.sort_by(|a, b| {
        a.request_received_timestamp
            .cmp(&b.request_received_timestamp)
    });
    let is_lease = |e: &Event| {
        e.object_ref
            .as_ref()
            .is_some_and(|o| o.resource == "leases" && o.namespace == namespace && o.name == lease)
    };
    let mut holder: Option<(String, String)> = None;
    let mut out = Judged::default();
    for e in sorted {
        let Some(id) = e.agent_identity() else {
            continue;
        };
        if is_lease(e) {
            if e.succeeded() {
                holder = Some((id.to_string(), e.request_received_timestamp.clone()));
            }
            continue;
        }
        // Another agent's namespace (shared cluster): not this lease's.
        if e.object_ref
            .as_ref()
            .is_some_and(|o| !o.namespace.is_empty() && o.namespace != namespace)
        {
            continue;
        }
        let is_holder = holder.as_ref().is_some_and(|(h, _)| h == id);
        let fresh = holder.as_ref().is_some_and(|(_, since)| {
            seconds_between(since, &e.request_received_timestamp) < lease_seconds
        });
        if !is_holder || !fresh {
            let o = e.object_ref.clone().unwrap_or_default();
            let list = if is_holder {
                &mut out.lapsed_holder
            } else {
                &mut out.non_leader
            };
            list.push(Violation {
                identity: id.to_string(),
                what: format!(
                    "{} {}/{}/{} {}",
                    e.verb, o.resource, o.namespace, o.name, o.subresource
                ),
                at: e.request_received_timestamp.clone(),
                holder: holder
                    .as_ref()
                    .map(|(h, t)| format!("{h} (last lease write {t})"))
                    .unwrap_or_else(|| "nobody".into()),
            });
        }
    }
    out
}

fn seconds_between(a: &str, b: &str) -> f64 {
    let parse = |s: &str| s.parse::<k8s_openapi::jiff::Timestamp>().ok();
    match (parse(a), parse(b)) {
        (Some(a), Some(b)) => (b - a)
            .total(k8s_openapi::jiff::Unit::Second)
            .unwrap_or(f64::MAX),
        _ => f64::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ua: &str, resource: &str, name: &str, at: &str, code: u16) -> Event {
        Event {
            verb: "update".into(),
            user_agent: ua.into(),
            object_ref: Some(ObjectRef {
                resource: resource.into(),
                namespace: "ns".into(),
                name: name.into(),
                subresource: String::new(),
            }),
            response_status: Some(Status { code }),
            request_received_timestamp: at.into(),
            stage: "ResponseComplete".into(),
        }
    }

    #[test]
    fn writes_are_judged_against_the_lease_history() {
        let a = "berth-agent/0.1.0 (a)";
        let b = "berth-agent/0.1.0 (b)";
        let events = vec![
            ev(a, "leases", "l", "2026-01-01T00:00:00.000000Z", 200),
            ev(a, "deployments", "web", "2026-01-01T00:00:01.000000Z", 200),
            // b's failed takeover does not make b the leader …
            ev(b, "leases", "l", "2026-01-01T00:00:02.000000Z", 409),
            ev(b, "configmaps", "x", "2026-01-01T00:00:02.500000Z", 201),
            // … its successful one does; a's later write is a violation.
            ev(b, "leases", "l", "2026-01-01T00:00:09.000000Z", 200),
            ev(a, "deployments", "web", "2026-01-01T00:00:09.100000Z", 200),
            ev(b, "deployments", "web", "2026-01-01T00:00:10.000000Z", 200),
            // b late: a write 5 s after its last renewal (lease 4 s), and
            // nobody else wrote the lease in between.
            ev(b, "deployments", "web", "2026-01-01T00:00:14.000000Z", 200),
            // Other clients are not judged.
            ev(
                "kube-controller-manager/v1.34",
                "pods",
                "p",
                "2026-01-01T00:00:03Z",
                201,
            ),
        ];
        let judged = judge_writes(&events, "ns", "l", 4.0);
        let who = |v: &[Violation]| -> Vec<(String, String)> {
            v.iter()
                .map(|v| (v.identity.clone(), v.at.clone()))
                .collect()
        };
        let at = |id: &str, t: &str| (id.to_string(), t.to_string());
        assert_eq!(
            who(&judged.non_leader),
            vec![
                at("b", "2026-01-01T00:00:02.500000Z"),
                at("a", "2026-01-01T00:00:09.100000Z"),
            ],
            "writes while another replica (or nobody) held the lease"
        );
        assert_eq!(
            who(&judged.lapsed_holder),
            vec![at("b", "2026-01-01T00:00:14.000000Z")],
            "b's lease lapsed, nobody took it: reported apart"
        );
    }
}
