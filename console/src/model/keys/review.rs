//! Retirement: `R`, `S`, `D`, `P` open a review; while it is open, keys
//! type the confirmation, Enter carries it out, Esc closes it.

use crossterm::event::{KeyCode, KeyEvent};

use super::super::{App, ClusterId, Effect, Located, ObjKey, Object, ReviewState, RowRef};
// Text typed or pasted by the user, made safe to show.
use crate::retire::{Action, RetireError, confirmation, confirms};
use crate::store::WORKLOAD_KINDS;
use berth_shared::sanitize::short as clean;

/// `R`, `S`, `D`, `P` on a row: opens the review of that retirement.
pub(super) fn retire(app: &mut App, key: char) -> Vec<Effect> {
    if app.session.read_only {
        app.ui.flash = Some(RetireError::ReadOnly.to_string());
        return Vec::new();
    }
    let Some(view) = app.current_list() else {
        return Vec::new();
    };
    let Some(row) = app.selected_ref(view) else {
        app.ui.flash = Some("no row selected".into());
        return Vec::new();
    };
    match retire_target(app, key, &row) {
        Ok(Retirement {
            cluster,
            action,
            target: (namespace, name),
        }) => {
            app.ui.scroll = 0;
            app.ui.reviews += 1;
            let id = app.ui.reviews;
            app.ui.review = Some(ReviewState::Loading {
                id,
                cluster: cluster.clone(),
                title: action.title(),
                target: format!("{namespace}/{name}"),
            });
            vec![Effect::Review {
                id,
                cluster,
                action,
                namespace,
                name,
            }]
        }
        Err(e) => {
            app.ui.flash = Some(e.to_string());
            Vec::new()
        }
    }
}

fn meta(obj: &Object) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta> {
    WORKLOAD_KINDS.contains(&obj.kind()).then(|| obj.meta())
}

/// A retirement to review: the action, its target (a Runtime for R/S/D, a
/// Deployment for P) and the cluster of the row it was asked on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retirement {
    pub cluster: ClusterId,
    pub action: Action,
    pub target: ObjKey,
}

/// Why the selected row has no retirement target (shown as a flash).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("select a Runtime (or a workload a Runtime manages)")]
    NoRuntime,
    #[error("this ReplicaSet has no Deployment or no class")]
    ReplicaSetWithoutDeploymentOrClass,
    #[error("select a Runtime or a rollback ReplicaSet")]
    NothingToPrune,
    #[error("no RuntimeClass known for Runtime {namespace}/{name}")]
    NoClassKnown { namespace: String, name: String },
    #[error("cluster {0} is no longer shown")]
    ClusterGone(ClusterId),
}

/// The action and its target (`Runtime` for R/S/D, `Deployment` for P)
/// for the selected row, in the row's cluster: what is read to find the
/// target is that cluster's store, and the cluster goes with the target.
pub fn retire_target(app: &App, key: char, located: &Located) -> Result<Retirement, TargetError> {
    let cluster = located.cluster.clone();
    let store = &app
        .cluster(&cluster)
        .ok_or_else(|| TargetError::ClusterGone(cluster.clone()))?
        .data
        .store;
    let row = &located.row;
    let workload = match row {
        RowRef::Workload(kind, k) => store.get(*kind, k),
        _ => None,
    };
    let runtime_of_workload = || {
        let m = workload.as_ref().and_then(meta)?;
        let rt = m
            .labels
            .as_ref()?
            .get(berth_shared::render::labels::RUNTIME_LABEL)?;
        Some((m.namespace.clone().unwrap_or_default(), rt.clone()))
    };
    let runtime = match row {
        RowRef::Runtime(k) => Some(k.clone()),
        RowRef::Workload(..) => runtime_of_workload(),
        _ => None,
    };
    match key {
        'R' | 'S' | 'D' => {
            let action = match key {
                'R' => Action::ToDefault,
                'S' => Action::Suspend,
                _ => Action::Delete,
            };
            runtime
                .map(|target| Retirement {
                    cluster,
                    action,
                    target,
                })
                .ok_or(TargetError::NoRuntime)
        }
        _ => {
            // Prune: the Deployment and the class its rollback revisions use.
            if let Some(Object::ReplicaSet(rs)) = &workload {
                let owner = rs
                    .metadata
                    .owner_references
                    .as_ref()
                    .and_then(|o| o.iter().find(|r| r.kind == "Deployment"))
                    .map(|r| r.name.clone());
                let class = rs
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.as_ref())
                    .and_then(|t| t.spec.as_ref())
                    .and_then(|s| s.runtime_class_name.clone());
                if let (Some(d), Some(class)) = (owner, class) {
                    let ns = rs.metadata.namespace.clone().unwrap_or_default();
                    return Ok(Retirement {
                        cluster,
                        action: Action::Prune { class },
                        target: (ns, d),
                    });
                }
                return Err(TargetError::ReplicaSetWithoutDeploymentOrClass);
            }
            let Some(k) = runtime else {
                return Err(TargetError::NothingToPrune);
            };
            let rt = store.runtimes.get(&k);
            let class = rt
                .and_then(|r| r.status.as_ref())
                .and_then(|s| s.profile.as_ref())
                .and_then(|p| p.class.clone())
                .ok_or_else(|| TargetError::NoClassKnown {
                    namespace: k.0.clone(),
                    name: k.1.clone(),
                })?;
            let deployment = berth_shared::render::Names::for_runtime(&k.1).workload;
            Ok(Retirement {
                cluster,
                action: Action::Prune { class },
                target: (k.0, deployment),
            })
        }
    }
}

/// Keys while a review is open: type the confirmation, Enter, Esc.
pub(super) fn review_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    let Some(state) = app.ui.review.clone() else {
        return Vec::new();
    };
    match (state, key.code) {
        (ReviewState::Running { .. }, KeyCode::Esc) => {}
        (_, KeyCode::Esc) => {
            app.ui.review = None;
            app.ui.scroll = 0;
        }
        (ReviewState::Ready { review, typed }, KeyCode::Enter) => {
            if !review.can_execute() {
                app.ui.review = None;
            } else if confirms(&review, app.fleet(), &typed) {
                app.ui.review = Some(ReviewState::Running {
                    review: review.clone(),
                    typed,
                });
                return vec![Effect::Execute {
                    generation: app.session.generation,
                    review,
                }];
            } else {
                let word = confirmation(&review, app.fleet()).unwrap_or_else(|| "yes".into());
                app.ui.flash = Some(format!(
                    "not confirmed: type {} and press Enter",
                    clean(&word)
                ));
            }
        }
        (ReviewState::Ready { review, mut typed }, KeyCode::Backspace) => {
            typed.pop();
            app.ui.review = Some(ReviewState::Ready { review, typed });
        }
        (ReviewState::Ready { review, mut typed }, KeyCode::Char(c)) if !c.is_control() => {
            if typed.chars().count() < 256 {
                typed.push(c);
            }
            app.ui.review = Some(ReviewState::Ready { review, typed });
        }
        (_, KeyCode::Down | KeyCode::PageDown) => scroll_review(app, 1),
        (_, KeyCode::Up | KeyCode::PageUp) => scroll_review(app, -1),
        _ => {}
    }
    Vec::new()
}

fn scroll_review(app: &mut App, delta: i64) {
    let max = app.ui.viewport.scroll_max.min(1_000_000) as i64;
    app.ui.scroll = (app.ui.scroll as i64).saturating_add(delta).clamp(0, max) as usize;
}
