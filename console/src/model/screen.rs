//! What is on screen: the list views ([`ListView`]) and the screens of the
//! navigation stack ([`Screen`]), with the kinds and watches each needs in
//! the namespace [`Scope`].

use crate::rows::matrix::MATRIX_KINDS;
use crate::rows::relations::Anchor;
use crate::store::{ANALYSIS_KINDS, ClusterId, Kind, ObjKey, WORKLOAD_KINDS};

use super::watches::WatchKey;

/// Which namespaces are watched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every namespace (`-A`).
    All,
    /// One namespace.
    Namespace(String),
}

impl Scope {
    /// `all` or the namespace name.
    pub fn label(&self) -> &str {
        match self {
            Scope::All => "all",
            Scope::Namespace(n) => n,
        }
    }
}

/// The list views: four tabs and the namespace picker of `:ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ListView {
    Runtimes,
    Grants,
    Handlers,
    Retained,
    Namespaces,
}

impl ListView {
    /// Every list view.
    pub const ALL: [ListView; 5] = [
        ListView::Runtimes,
        ListView::Grants,
        ListView::Handlers,
        ListView::Retained,
        ListView::Namespaces,
    ];

    /// The views with a tab, in tab order (`1`–`4`).
    pub const TABS: [ListView; 4] = [
        ListView::Runtimes,
        ListView::Grants,
        ListView::Handlers,
        ListView::Retained,
    ];

    /// The title.
    pub fn title(self) -> &'static str {
        match self {
            ListView::Runtimes => "Runtimes",
            ListView::Grants => "Grants",
            ListView::Handlers => "Handlers",
            ListView::Retained => "Retained",
            ListView::Namespaces => "Namespaces",
        }
    }

    /// Whether the rows are status the agent writes (stale without it).
    pub fn agent_status(self) -> bool {
        matches!(self, ListView::Runtimes | ListView::Grants)
    }

    /// Index into per-view arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The kinds its rows are built from: a change of any other kind
    /// leaves them as they are.
    pub fn inputs(self) -> &'static [Kind] {
        match self {
            ListView::Runtimes => &[Kind::Runtime],
            // Namespaces: the warning about shared project/environment.
            ListView::Grants => &[Kind::RuntimeGrant, Kind::Namespace],
            ListView::Handlers | ListView::Retained => ANALYSIS_KINDS,
            ListView::Namespaces => &[Kind::Namespace],
        }
    }

    /// Whether its rows are rebuilt even while it is not shown: one row per
    /// object, cheap, and read by the tab bar and the status bar. Handlers
    /// and Retained run the analysis over every workload and are rebuilt
    /// only on screen.
    pub fn always_live(self) -> bool {
        matches!(self, ListView::Runtimes | ListView::Grants)
    }
}

/// One screen of the navigation stack. A screen about one object, or one
/// agent, names its cluster: it reads that cluster's store, watches there
/// only, and what it leads to stays there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Screen {
    /// A table, merged over the clusters.
    List(ListView),
    /// The live rollout of one Runtime.
    Rollout(ClusterId, ObjKey),
    /// YAML and events of one object.
    Details(ClusterId, Kind, ObjKey),
    /// The plan of one cluster's agent's pending grants file (`:plan`).
    Plan(ClusterId),
    /// The handler matrix: classes × node groups (`:matrix`, `m`), each
    /// cluster's.
    Matrix,
    /// What a grant or a pod is related to (`r`).
    Relations(ClusterId, Anchor),
    /// Why one Runtime, workload or pod is granted or blocked (`x`).
    Explain(ClusterId, Kind, ObjKey),
    /// What needs attention (`:findings`), in every cluster and across
    /// them.
    Findings,
    /// One (class, node) cell of the handler matrix: what the class's
    /// canary saw on the node and the node's failing sandboxes of the class
    /// (Enter on a matrix cell).
    Attestation(ClusterId, String, String),
}

impl Screen {
    /// The cluster this screen belongs to; `None` for the screens that
    /// show every cluster.
    pub fn cluster(&self) -> Option<&ClusterId> {
        match self {
            Screen::Rollout(c, _)
            | Screen::Details(c, ..)
            | Screen::Plan(c)
            | Screen::Relations(c, _)
            | Screen::Explain(c, ..)
            | Screen::Attestation(c, ..) => Some(c),
            Screen::List(_) | Screen::Matrix | Screen::Findings => None,
        }
    }

    /// The kinds this screen needs watched.
    pub fn kinds(&self) -> Vec<Kind> {
        match self {
            Screen::List(ListView::Runtimes) => vec![Kind::Runtime],
            Screen::List(ListView::Grants) => vec![Kind::RuntimeGrant],
            Screen::List(ListView::Namespaces) => vec![Kind::Namespace],
            Screen::List(ListView::Handlers | ListView::Retained) => ANALYSIS_KINDS.to_vec(),
            Screen::Rollout(..) => vec![
                Kind::Runtime,
                Kind::Deployment,
                Kind::ReplicaSet,
                Kind::Pod,
                Kind::Event,
            ],
            Screen::Details(_, kind, _) => {
                let mut v = vec![*kind, Kind::Event];
                if *kind == Kind::RuntimeClass {
                    v.extend_from_slice(WORKLOAD_KINDS);
                }
                v
            }
            Screen::Plan(_) => {
                let mut v = vec![Kind::PendingGrantsFile, Kind::Runtime, Kind::Namespace];
                v.extend_from_slice(ANALYSIS_KINDS);
                v
            }
            Screen::Matrix => MATRIX_KINDS.to_vec(),
            Screen::Relations(_, Anchor::Grant { .. }) => vec![
                Kind::RuntimeGrant,
                Kind::RuntimeClass,
                Kind::Runtime,
                Kind::Deployment,
                Kind::Job,
                Kind::CronJob,
                Kind::Pod,
            ],
            Screen::Relations(_, Anchor::Pod(_)) => {
                vec![Kind::Pod, Kind::RuntimeGrant, Kind::Runtime]
            }
            Screen::Explain(_, kind, _) => {
                let mut v = crate::rows::explain::screen_kinds();
                if !v.contains(kind) {
                    v.push(*kind);
                }
                v
            }
            Screen::Findings => crate::rows::findings::kinds(),
            Screen::Attestation(..) => vec![
                Kind::RuntimeGrant,
                Kind::RuntimeClass,
                Kind::Pod,
                Kind::Event,
            ],
        }
    }
}

impl Screen {
    /// The watches this screen needs in `scope`: the whole kinds of
    /// [`Screen::kinds`], except that a Rollout and a Details screen watch
    /// only their object (see [`super::watches`]).
    pub fn watches(&self, scope: &Scope) -> Vec<WatchKey> {
        match self {
            Screen::Rollout(_, (ns, name)) => {
                // The agent's selector of the Runtime's server pods: on its
                // Deployment, copied to the ReplicaSets and their Pods.
                let labels = berth_shared::render::labels::selector(name)
                    .into_iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",");
                let mut v = vec![WatchKey::all(Kind::Runtime)];
                for kind in [Kind::Deployment, Kind::ReplicaSet, Kind::Pod] {
                    v.push(WatchKey::select(kind, ns, &labels, ""));
                }
                // Events about any of them: no selector names a set of
                // objects, so the namespace's (the whole kind when the
                // console watches only that namespace anyway).
                v.push(match scope {
                    Scope::Namespace(n) if n == ns => WatchKey::all(Kind::Event),
                    _ => WatchKey::select(Kind::Event, ns, "", ""),
                });
                v
            }
            // Watched by a fixed name already (the agent's).
            Screen::Details(_, kind @ (Kind::Lease | Kind::PendingGrantsFile), _) => {
                vec![WatchKey::all(*kind)]
            }
            Screen::Details(_, kind, (ns, name)) => {
                let mut v = vec![WatchKey::select(
                    *kind,
                    ns,
                    "",
                    &format!("metadata.name={name}"),
                )];
                // Events live in the object's namespace; the Details screen
                // shows none for cluster-scoped objects.
                if kind.namespaced() {
                    v.push(WatchKey::select(
                        Kind::Event,
                        ns,
                        "",
                        &format!(
                            "involvedObject.kind={},involvedObject.name={name}",
                            kind.label()
                        ),
                    ));
                }
                // The class's handler row reads every workload.
                if *kind == Kind::RuntimeClass {
                    v.extend(WORKLOAD_KINDS.iter().map(|k| WatchKey::all(*k)));
                }
                v
            }
            Screen::Relations(_, anchor) => relation_watches(anchor, scope),
            // The node's Pods and the Warning events about Pods, in every
            // namespace the operator may read: the canaries run in the
            // agent's namespace, the class's workloads anywhere.
            Screen::Attestation(_, class, node) => vec![
                WatchKey::all(Kind::RuntimeGrant),
                WatchKey::select(
                    Kind::RuntimeClass,
                    "",
                    "",
                    &format!("metadata.name={class}"),
                ),
                WatchKey::select(Kind::Pod, "", "", &format!("spec.nodeName={node}")),
                WatchKey::select(Kind::Event, "", "", "involvedObject.kind=Pod,type=Warning"),
            ],
            other => other.kinds().into_iter().map(WatchKey::all).collect(),
        }
    }
}

/// A relations screen's watches: one scoped watch per hop, never a whole
/// kind beyond the Runtimes and Grants every screen has anyway. A grant's
/// class by name; its identity's workloads and pods by berth's labels (in
/// the console's namespace, or every namespace under `-A`); a pod by name.
/// Nodes are not watched: a node line opens its Details, which watches it
/// by name.
fn relation_watches(anchor: &Anchor, scope: &Scope) -> Vec<WatchKey> {
    let mut v = vec![
        WatchKey::all(Kind::RuntimeGrant),
        WatchKey::all(Kind::Runtime),
    ];
    match anchor {
        Anchor::Grant {
            class, selector, ..
        } => {
            v.push(WatchKey::select(
                Kind::RuntimeClass,
                "",
                "",
                &format!("metadata.name={class}"),
            ));
            let ns = match scope {
                Scope::All => "",
                Scope::Namespace(n) => n,
            };
            for kind in [Kind::Deployment, Kind::Job, Kind::CronJob, Kind::Pod] {
                v.push(WatchKey::select(kind, ns, selector, ""));
            }
        }
        Anchor::Pod((ns, name)) => v.push(WatchKey::select(
            Kind::Pod,
            ns,
            "",
            &format!("metadata.name={name}"),
        )),
    }
    v
}
