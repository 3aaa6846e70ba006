//! Related objects (issue 31): from a grant to its class, the Runtimes
//! that hold it, their workloads, their pods and those pods' nodes; from a
//! pod back to the grant that covers it, or why none does. Pure, over the
//! store: the screen that shows it watches exactly what it reads (see
//! `model::screen`), each hop one scoped watch — the class by name, the
//! identity's workloads and pods by label selector, a pod by name — and
//! never a cluster-wide relist.

use berth_shared::analysis::{self, RetainReason};
use berth_shared::api::RuntimeGrant;
use berth_shared::decide::{ENVIRONMENT_LABEL, PROJECT_LABEL};
use berth_shared::render::labels::{APPLICATION_LABEL, RUNTIME_LABEL, SERVICE_LABEL};
use berth_shared::render::names::label_value;

use super::handlers::bindings;
use super::table::RowTone;
use crate::store::meta::SlimMeta;
use crate::store::slim::SlimPod;
use crate::store::{Kind, ObjKey, Store};

/// What a relations screen starts from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Anchor {
    /// A RuntimeGrant, with what its watches need (taken from the grant
    /// when the screen opens, so the screen's watches are a pure function
    /// of the screen).
    Grant {
        name: String,
        /// Its RuntimeClass.
        class: String,
        /// The label selector of its identity's workloads and pods.
        selector: String,
    },
    /// A Pod.
    Pod(ObjKey),
}

impl Anchor {
    /// The anchor of the grant `name` as the store knows it.
    pub fn grant(store: &Store, name: &str) -> Option<Anchor> {
        let g = store.grants.get(&(String::new(), name.to_string()))?;
        Some(Anchor::Grant {
            name: name.to_string(),
            class: g.spec.runtime_class.clone(),
            selector: identity_selector(g),
        })
    }

    /// `grant NAME` or `pod NS/NAME`.
    pub fn label(&self) -> String {
        match self {
            Anchor::Grant { name, .. } => format!("grant {name}"),
            Anchor::Pod((ns, n)) => format!("pod {ns}/{n}"),
        }
    }
}

/// `project=…,environment=…,application=…,service=…` (berth's labels,
/// with the values as the renderer writes them).
pub fn identity_selector(g: &RuntimeGrant) -> String {
    [
        (PROJECT_LABEL, &g.spec.identity.project),
        (ENVIRONMENT_LABEL, &g.spec.identity.environment),
        (APPLICATION_LABEL, &g.spec.identity.application),
        (SERVICE_LABEL, &g.spec.identity.service),
    ]
    .iter()
    .map(|(k, v)| format!("{k}={}", label_value(v)))
    .collect::<Vec<_>>()
    .join(",")
}

/// One line of a relations screen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Related {
    /// Indentation: 0 the anchor, 1 what it points at, …
    pub depth: usize,
    /// `grant`, `class`, `runtime`, `workload`, `pod`, `node`.
    pub relation: &'static str,
    /// The object, when the line is one (Enter goes there).
    pub target: Option<(Kind, ObjKey)>,
    /// What it is, in a few words.
    pub state: String,
    pub tone: RowTone,
}

impl Related {
    fn obj(depth: usize, relation: &'static str, kind: Kind, key: ObjKey, state: String) -> Self {
        Related {
            depth,
            relation,
            target: Some((kind, key)),
            state,
            tone: RowTone::Normal,
        }
    }

    fn tone(mut self, t: RowTone) -> Self {
        self.tone = t;
        self
    }

    /// `namespace/name` (or `name` for a cluster-scoped object), or the
    /// state alone for a line that is no object.
    pub fn name(&self) -> String {
        match &self.target {
            Some((_, (ns, n))) if ns.is_empty() => n.clone(),
            Some((_, (ns, n))) => format!("{ns}/{n}"),
            None => String::new(),
        }
    }
}

/// The lines of the relations screen of `anchor`.
pub fn relations(store: &Store, anchor: &Anchor) -> Vec<Related> {
    match anchor {
        Anchor::Grant { name, class, .. } => grant_relations(store, name, class),
        Anchor::Pod(key) => pod_relations(store, key),
    }
}

fn label<'a>(labels: Option<&'a std::collections::BTreeMap<String, String>>, k: &str) -> &'a str {
    labels
        .and_then(|l| l.get(k))
        .map(String::as_str)
        .unwrap_or_default()
}

/// A grant's screen: the grant, its class, the Runtimes holding it (each
/// with its workloads and pods), then the nodes those pods run on.
fn grant_relations(store: &Store, name: &str, class: &str) -> Vec<Related> {
    let key = (String::new(), name.to_string());
    let Some(grant) = store.grants.get(&key) else {
        return vec![
            Related::obj(0, "grant", Kind::RuntimeGrant, key, "not found".into())
                .tone(RowTone::Problem),
        ];
    };
    let mut out = vec![
        grant_line(grant, key, class),
        class_line(store, grant, class),
    ];
    let holders = holders(store, grant, name);
    if holders.is_empty() {
        out.push(Related {
            depth: 1,
            relation: "runtime",
            target: None,
            state: "no Runtime holds this grant".into(),
            tone: RowTone::Warn,
        });
    }
    // Pods per node, over every holder: one line per node at the end.
    let mut nodes: std::collections::BTreeMap<String, usize> = Default::default();
    for rk in holders {
        runtime_lines(store, rk, class, &mut nodes, &mut out);
    }
    for (n, pods) in nodes {
        out.push(Related::obj(
            1,
            "node",
            Kind::Node,
            (String::new(), n),
            format!("{pods} pod(s)"),
        ));
    }
    out
}

/// The anchor: the grant's identity and class, warned when retired.
fn grant_line(grant: &RuntimeGrant, key: ObjKey, class: &str) -> Related {
    let retired = super::handlers::is_retired(grant);
    Related::obj(
        0,
        "grant",
        Kind::RuntimeGrant,
        key,
        format!(
            "{}/{}/{}/{} → {class}{}",
            grant.spec.identity.project,
            grant.spec.identity.environment,
            grant.spec.identity.application,
            grant.spec.identity.service,
            if retired { " (retired)" } else { "" }
        ),
    )
    .tone(if retired {
        RowTone::Warn
    } else {
        RowTone::Normal
    })
}

/// The grant's class: its handler, a problem when missing or another
/// handler than the grant's.
fn class_line(store: &Store, grant: &RuntimeGrant, class: &str) -> Related {
    let class_key = (String::new(), class.to_string());
    match store.classes.get(&class_key) {
        Some(c) if c.handler == grant.spec.handler => Related::obj(
            1,
            "class",
            Kind::RuntimeClass,
            class_key,
            format!("handler {}", c.handler),
        ),
        Some(c) => Related::obj(
            1,
            "class",
            Kind::RuntimeClass,
            class_key,
            format!(
                "handler {} (the grant expects {})",
                c.handler, grant.spec.handler
            ),
        )
        .tone(RowTone::Problem),
        None => Related::obj(1, "class", Kind::RuntimeClass, class_key, "missing".into())
            .tone(RowTone::Problem),
    }
}

/// The Runtimes holding the grant: naming it, with the grant's identity
/// (as their status reports it), plus any the agent lists on the grant.
fn holders(store: &Store, grant: &RuntimeGrant, name: &str) -> Vec<ObjKey> {
    let listed: Vec<ObjKey> = grant
        .status
        .as_ref()
        .map(|s| {
            s.runtimes
                .iter()
                .map(|r| (r.namespace.clone(), r.name.clone()))
                .collect()
        })
        .unwrap_or_default();
    store
        .runtimes
        .iter()
        .filter(|(k, rt)| {
            let id = rt.status.as_ref().and_then(|s| s.identity.as_ref());
            let same = id.is_none_or(|id| {
                id.project.as_deref() == Some(grant.spec.identity.project.as_str())
                    && id.environment.as_deref() == Some(grant.spec.identity.environment.as_str())
                    && id.application.as_deref() == Some(grant.spec.identity.application.as_str())
                    && id.service.as_deref() == Some(grant.spec.identity.service.as_str())
            });
            (rt.spec.runtime_profile.as_deref() == Some(name) && same) || listed.contains(k)
        })
        .map(|(k, _)| k.clone())
        .collect()
}

/// One holder: its rollout, then its workloads and pods (counting the
/// pods per node into `nodes`).
fn runtime_lines(
    store: &Store,
    rk: ObjKey,
    class: &str,
    nodes: &mut std::collections::BTreeMap<String, usize>,
    out: &mut Vec<Related>,
) {
    let state = store
        .runtimes
        .get(&rk)
        .and_then(|r| r.status.as_ref())
        .and_then(|s| s.rollout.as_ref())
        .map(|r| format!("{:?} {}/{}", r.phase, r.ready, r.desired))
        .unwrap_or_else(|| "no status yet".into());
    out.push(Related::obj(1, "runtime", Kind::Runtime, rk.clone(), state));
    let (ns, rname) = &rk;
    // The Runtime's own: its label, or (what the agent also sets) its
    // controller owner reference.
    let ours_by = |n: &ObjKey, owned: bool, runtime: Option<&str>| {
        &n.0 == ns && (owned || runtime.unwrap_or_default() == label_value(rname))
    };
    let ours = |n: &ObjKey, meta: &kube::api::ObjectMeta| {
        let owned = meta
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.controller == Some(true) && o.kind == "Runtime" && o.name == *rname);
        ours_by(n, owned, Some(label(meta.labels.as_ref(), RUNTIME_LABEL)))
    };
    // The same for the kinds the store keeps slim.
    let ours_slim = |n: &ObjKey, meta: &SlimMeta| {
        let owned = meta
            .owners
            .iter()
            .any(|o| o.controller && o.kind == "Runtime" && o.name == *rname);
        ours_by(n, owned, meta.label(RUNTIME_LABEL))
    };
    for (k, d) in &store.deployments {
        if ours_slim(k, &d.metadata) {
            let s = d.status.as_ref();
            let state = format!(
                "{}/{} ready",
                s.and_then(|s| s.ready_replicas).unwrap_or(0),
                d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0)
            );
            out.push(Related::obj(
                2,
                "workload",
                Kind::Deployment,
                k.clone(),
                state,
            ));
        }
    }
    for (k, j) in &store.jobs {
        if ours(k, &j.metadata) {
            out.push(Related::obj(
                2,
                "workload",
                Kind::Job,
                k.clone(),
                "Job".into(),
            ));
        }
    }
    for (k, c) in &store.cronjobs {
        if ours(k, &c.metadata) {
            out.push(Related::obj(
                2,
                "workload",
                Kind::CronJob,
                k.clone(),
                "CronJob".into(),
            ));
        }
    }
    for (k, p) in &store.pods {
        if ours_slim(k, &p.metadata) {
            out.push(pod_line(p, k, class, nodes));
        }
    }
}

/// A holder's pod: its phase and node, warned when not on the class.
fn pod_line(
    p: &SlimPod,
    k: &ObjKey,
    class: &str,
    nodes: &mut std::collections::BTreeMap<String, usize>,
) -> Related {
    let node = p.node_name().unwrap_or("-");
    if let Some(n) = p.node_name() {
        *nodes.entry(n.to_string()).or_default() += 1;
    }
    let on_class = p.runtime_class_name() == Some(class);
    Related::obj(
        2,
        "pod",
        Kind::Pod,
        k.clone(),
        format!(
            "{} on {node}{}",
            p.phase().unwrap_or("Pending"),
            if on_class { "" } else { " (not on the class)" }
        ),
    )
    .tone(if on_class {
        RowTone::Normal
    } else {
        RowTone::Warn
    })
}

fn pod_relations(store: &Store, key: &ObjKey) -> Vec<Related> {
    let Some(pod) = store.pods.get(key) else {
        return vec![Related::obj(
            0,
            "pod",
            Kind::Pod,
            key.clone(),
            "not found (yet)".into(),
        )];
    };
    let w = pod.workload();
    let mut out = vec![Related::obj(
        0,
        "pod",
        Kind::Pod,
        key.clone(),
        format!(
            "{} on {}, class {}",
            pod.phase().unwrap_or("Pending"),
            pod.node_name().unwrap_or("-"),
            pod.runtime_class_name().unwrap_or("(default runtime)")
        ),
    )];
    if let Some(n) = pod.node_name() {
        out.push(Related::obj(
            1,
            "node",
            Kind::Node,
            (String::new(), n.to_string()),
            String::new(),
        ));
    }
    let runtime = pod.metadata.label(RUNTIME_LABEL).unwrap_or_default();
    if w.managed_by_berth && !runtime.is_empty() {
        out.push(Related::obj(
            1,
            "runtime",
            Kind::Runtime,
            (key.0.clone(), runtime.to_string()),
            String::new(),
        ));
    }
    let grants = bindings(store);
    if w.runtime_class.is_none() {
        out.push(Related {
            depth: 1,
            relation: "grant",
            target: None,
            state: "none needed: the pod runs on the default runtime".into(),
            tone: RowTone::Normal,
        });
    } else if analysis::covered_by_grant(&w, &grants) && !w.is_orphan() {
        // The alias is the grant's name (covered_by_grant matched it).
        let alias = w.runtime_profile.clone().unwrap_or_default();
        out.push(Related::obj(
            1,
            "grant",
            Kind::RuntimeGrant,
            (String::new(), alias),
            "covers this pod".into(),
        ));
    } else {
        let why = analysis::retained(std::slice::from_ref(&w), &grants, None)
            .into_iter()
            .next()
            .map(|r| match r.reason {
                RetainReason::GrantGone { alias } => format!("grant {alias} is gone"),
                RetainReason::NotGranted => "berth's, never granted".into(),
                RetainReason::Orphaned { .. } => {
                    "an orphan: berth's labels, no controller, outside the contract".into()
                }
                RetainReason::OutsideBerth { granted_as } if granted_as.is_empty() => {
                    "runs its class outside berth; no grant names the class".into()
                }
                RetainReason::OutsideBerth { granted_as } => format!(
                    "runs its class outside berth, bypassing grant {}",
                    granted_as.join(", ")
                ),
            })
            .unwrap_or_default();
        out.push(Related {
            depth: 1,
            relation: "grant",
            target: None,
            state: format!("no grant covers it: {why} (see Retained)"),
            tone: RowTone::Problem,
        });
    }
    out
}

#[cfg(test)]
#[path = "relations_tests.rs"]
mod tests;
