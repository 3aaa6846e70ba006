//! `berth explain` and the `x` key: the agent's own decision for a
//! Runtime, workload or pod, from the console's store (pure; `crate::explain_cli` does
//! the reads and the server-side dry-run). The steps come from
//! `berth_shared::explain`, which calls the agent's functions.

use berth_shared::analysis::{Placement, Workload};
use berth_shared::explain::{
    Admission, Explanation, RuntimeFacts, WorkloadFacts, explain_runtime, explain_workload,
};
use berth_shared::render::labels::{APPLICATION_LABEL, SERVICE_LABEL};
use berth_shared::sanitize;
use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::api::node::v1::RuntimeClass;

use super::handlers::{bindings, node_infos};
use crate::store::{Kind, ObjKey, Store};

/// What the bindings are called in the steps' objects.
const SOURCE: &str = "RuntimeGrant";

/// A parsed target: `NS/NAME` (a Runtime) or `KIND/NS/NAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The kind.
    pub kind: Kind,
    /// Namespace and name.
    pub key: ObjKey,
}

/// Kinds explain understands.
pub const KINDS: &[Kind] = &[
    Kind::Runtime,
    Kind::Deployment,
    Kind::ReplicaSet,
    Kind::StatefulSet,
    Kind::DaemonSet,
    Kind::Job,
    Kind::CronJob,
    Kind::Pod,
];

/// Parses `NS/NAME` (a Runtime), `KIND/NS/NAME` or, with a default
/// namespace, `NAME` and `KIND/NAME`. Kinds are matched case-insensitively
/// (`deployment`, `deploy`, `pod`, `rt`, …).
pub fn parse_target(s: &str, default_ns: Option<&str>) -> Option<Target> {
    let parts: Vec<&str> = s.split('/').collect();
    let (kind, ns, name) = match parts.as_slice() {
        [name] => (Kind::Runtime, default_ns?, *name),
        [a, b] => match kind_of(a) {
            Some(k) if default_ns.is_some() && !k.eq(&Kind::Runtime) => (k, default_ns?, *b),
            _ => (Kind::Runtime, *a, *b),
        },
        [k, ns, name] => (kind_of(k)?, *ns, *name),
        _ => return None,
    };
    (!ns.is_empty() && !name.is_empty()).then(|| Target {
        kind,
        key: (ns.to_string(), name.to_string()),
    })
}

fn kind_of(s: &str) -> Option<Kind> {
    Some(match s.to_ascii_lowercase().as_str() {
        "runtime" | "runtimes" | "rt" => Kind::Runtime,
        "deployment" | "deployments" | "deploy" => Kind::Deployment,
        "replicaset" | "replicasets" | "rs" => Kind::ReplicaSet,
        "statefulset" | "statefulsets" | "sts" => Kind::StatefulSet,
        "daemonset" | "daemonsets" | "ds" => Kind::DaemonSet,
        "job" | "jobs" => Kind::Job,
        "cronjob" | "cronjobs" | "cj" => Kind::CronJob,
        "pod" | "pods" | "po" => Kind::Pod,
        _ => return None,
    })
}

/// The kinds the console's Explain screen watches besides the target's
/// own: the Runtimes (a managed workload is explained through its
/// Runtime), the identity labels, the grants, the classes and the nodes.
pub fn screen_kinds() -> Vec<Kind> {
    vec![
        Kind::Namespace,
        Kind::Runtime,
        Kind::RuntimeGrant,
        Kind::RuntimeClass,
        Kind::Node,
    ]
}

/// The kinds explaining reads.
pub fn kinds() -> Vec<Kind> {
    let mut v = vec![Kind::Namespace, Kind::Runtime, Kind::RuntimeGrant];
    v.extend([Kind::RuntimeClass, Kind::Node]);
    v.extend_from_slice(&KINDS[1..]);
    v
}

fn namespace_labels(store: &Store, ns: &str) -> Option<std::collections::BTreeMap<String, String>> {
    store
        .namespaces
        .get(&(String::new(), ns.to_string()))
        .map(|n| n.metadata.labels.clone().unwrap_or_default())
}

fn classes(store: &Store) -> Vec<RuntimeClass> {
    store.classes.values().map(|c| c.as_ref().clone()).collect()
}

/// The workload at `target`, as the analysis sees it.
fn workload_of(store: &Store, t: &Target) -> Option<Workload> {
    let k = &t.key;
    Some(match t.kind {
        Kind::Deployment => store.deployments.get(k)?.workload(),
        Kind::ReplicaSet => store.replicasets.get(k)?.workload(None),
        Kind::StatefulSet => Workload::from_stateful_set(store.statefulsets.get(k)?),
        Kind::DaemonSet => Workload::from_daemon_set(store.daemonsets.get(k)?),
        Kind::Job => Workload::from_job(store.jobs.get(k)?),
        Kind::CronJob => Workload::from_cron_job(store.cronjobs.get(k)?),
        Kind::Pod => store.pods.get(k)?.workload(),
        _ => return None,
    })
}

/// The Runtime a berth-managed workload belongs to: the one in its
/// namespace with its application and service labels.
fn runtime_of(store: &Store, w: &Workload) -> Option<ObjKey> {
    if !w.managed_by_berth {
        return None;
    }
    let app = w.labels.get(APPLICATION_LABEL)?;
    let svc = w.labels.get(SERVICE_LABEL)?;
    store
        .runtimes
        .iter()
        .find(|((ns, _), rt)| {
            *ns == w.namespace && rt.spec.application == *app && rt.spec.service == *svc
        })
        .map(|(k, _)| k.clone())
}

/// Explains `target` from `store`. `spec` is the full pod spec of a
/// workload's template (or a pod's) when the caller read it: the store
/// keeps templates without their scheduling fields, so without it every
/// node counts as a place the pods may land on. `None` when the target is
/// not in the store.
pub fn explain(
    store: &Store,
    target: &Target,
    spec: Option<&PodSpec>,
    admission: Option<&Admission>,
) -> Option<Explanation> {
    let bindings = bindings(store);
    let classes = classes(store);
    let nodes = node_infos(store);
    let runtime_key = match target.kind {
        Kind::Runtime => Some(target.key.clone()),
        _ => None,
    };
    let workload = match target.kind {
        Kind::Runtime => None,
        _ => Some(workload_of(store, target)?),
    };
    let runtime_key = runtime_key.or_else(|| workload.as_ref().and_then(|w| runtime_of(store, w)));
    if let Some(key) = runtime_key {
        let rt = store.runtimes.get(&key)?;
        let labels = namespace_labels(store, &key.0);
        // The grant the Runtime asks for (a RuntimeGrant is named by its
        // alias) and what its canaries saw.
        let attestation = rt
            .spec
            .runtime_profile
            .as_deref()
            .and_then(|alias| store.grants.get(&(String::new(), alias.to_string())))
            .and_then(|g| g.status.as_ref())
            .and_then(|s| s.attestation.as_ref());
        let mut e = explain_runtime(&RuntimeFacts {
            runtime: rt,
            namespace_labels: labels.as_ref(),
            bindings: &bindings,
            binding_source: SOURCE,
            classes: &classes,
            nodes: &nodes,
            admission,
            attestation,
            now: Some(k8s_openapi::jiff::Timestamp::now()),
        });
        if let Some(w) = &workload {
            e.subject = format!("{} (managed by {})", w.key(), e.subject);
        }
        return Some(e);
    }
    let w = workload?;
    let labels = namespace_labels(store, &w.namespace);
    let placement = Placement {
        node_selector: spec.and_then(|s| s.node_selector.as_ref()),
        affinity: spec.and_then(|s| s.affinity.as_ref()),
        tolerations: spec.and_then(|s| s.tolerations.as_deref()).unwrap_or(&[]),
    };
    let node_name = match target.kind {
        Kind::Pod => store.pods.get(&target.key).and_then(|p| p.node_name()),
        _ => None,
    };
    Some(explain_workload(&WorkloadFacts {
        workload: &w,
        placement,
        node_name,
        namespace_labels: labels.as_ref(),
        bindings: &bindings,
        binding_source: SOURCE,
        classes: &classes,
        nodes: &nodes,
        admission,
    }))
}

/// The explanation as sanitized text lines (the table output and the
/// console's view).
pub fn lines(e: &Explanation) -> Vec<String> {
    e.lines()
        .iter()
        .map(|l| sanitize::line(l, sanitize::MAX_VALUE_CHARS))
        .collect()
}

/// The explanation as one JSON value, every string sanitized.
pub fn json(e: &Explanation) -> serde_json::Value {
    let mut v = serde_json::to_value(e).unwrap_or(serde_json::Value::Null);
    sanitize::json(&mut v, sanitize::MAX_VALUE_CHARS);
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("kind".into(), "Explanation".into());
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use berth_shared::explain::{StepKind, Verdict};

    fn target(kind: Kind, ns: &str, name: &str) -> Target {
        Target {
            kind,
            key: (ns.into(), name.into()),
        }
    }

    #[test]
    fn targets_parse() {
        assert_eq!(
            parse_target("demo/web", None),
            Some(target(Kind::Runtime, "demo", "web"))
        );
        assert_eq!(
            parse_target("deploy/demo/web", None),
            Some(target(Kind::Deployment, "demo", "web"))
        );
        assert_eq!(
            parse_target("Pod/demo/web-1", None),
            Some(target(Kind::Pod, "demo", "web-1"))
        );
        assert_eq!(
            parse_target("web", Some("demo")),
            Some(target(Kind::Runtime, "demo", "web"))
        );
        assert_eq!(
            parse_target("pod/x", Some("demo")),
            Some(target(Kind::Pod, "demo", "x"))
        );
        assert_eq!(parse_target("web", None), None);
        assert_eq!(parse_target("a/b/c/d", None), None);
        assert_eq!(parse_target("bogus/demo/x", None), None);
        assert_eq!(parse_target("demo/", None), None);
    }

    #[test]
    fn the_revoked_runtime_is_explained_as_the_agent_decided() {
        let app = fixtures::app();
        let store = &app.clusters[0].data.store;
        let e =
            explain(store, &target(Kind::Runtime, "demo", "worker"), None, None).expect("known");
        assert_eq!(e.decision, "Revoked");
        let f = e.first_failure().expect("a failing step");
        assert_eq!(f.step, StepKind::Binding);
        // The agent's status agrees with explain.
        let c = e.step(StepKind::Conditions).expect("conditions");
        assert!(
            c.details.iter().any(|d| d == "the agent's status agrees"),
            "{:#?}",
            c.details
        );
        // The fixture's namespace `demo` carries project=shop/prod while
        // its grants name demo/production: web's stored status (Granted)
        // is not what the agent would decide now, and explain says so
        // field by field.
        let e = explain(store, &target(Kind::Runtime, "demo", "web"), None, None).expect("known");
        assert_eq!(e.decision, "Revoked", "{:#?}", e.steps);
        let b = e.step(StepKind::Binding).expect("binding");
        assert!(
            b.details
                .iter()
                .any(|d| d == r#"project: binding says "demo", this has "shop""#),
            "{:#?}",
            b.details
        );
        let c = e.step(StepKind::Conditions).expect("conditions");
        assert!(
            c.details
                .iter()
                .any(|d| d.starts_with("the agent's status differs")),
            "{:#?}",
            c.details
        );
        // A managed Deployment is explained through its Runtime.
        let e = explain(
            store,
            &target(Kind::Deployment, "demo", "worker"),
            None,
            None,
        )
        .expect("known");
        assert_eq!(e.decision, "Revoked");
        assert!(
            e.subject
                .starts_with("Deployment/demo/worker (managed by Runtime/demo/worker")
        );
        // Unknown: None.
        assert!(explain(store, &target(Kind::Runtime, "demo", "nope"), None, None).is_none());
    }

    #[test]
    fn a_pod_outside_berth_is_explained_by_the_retained_analysis() {
        let app = fixtures::app();
        let e = explain(
            &app.clusters[0].data.store,
            &target(Kind::Pod, "legacy", "legacy-batch"),
            None,
            None,
        )
        .expect("known");
        assert_eq!(e.decision, "Retained");
        assert_eq!(
            e.step(StepKind::Conditions).map(|s| s.verdict),
            Some(Verdict::Fail)
        );
    }

    #[test]
    fn lines_and_json_are_sanitized() {
        let app = fixtures::app();
        let mut e = explain(
            &app.clusters[0].data.store,
            &target(Kind::Runtime, "demo", "worker"),
            None,
            None,
        )
        .expect("known");
        e.message = "evil\u{1b}]52;c;ZXZpbA==\u{7}\u{202e}".into();
        for l in lines(&e) {
            assert!(sanitize::is_clean(&l), "{l:?}");
        }
        let j = json(&e).to_string();
        assert!(!j.contains('\u{1b}') && !j.contains('\u{202e}'), "{j}");
        assert_eq!(json(&e)["kind"], "Explanation");
    }
}
