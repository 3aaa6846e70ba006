//! The `r` key and the relations screen's hops (issue 31): from a grant to
//! what it covers, from a pod back to its grant. A hop to a grant or a pod
//! opens its relations; to anything else, its details.

use super::super::{App, ClusterId, Effect, Located, ObjKey, RowRef, Screen};
use crate::rows::relations::{Anchor, relations};
use crate::store::Kind;

/// `r`: the relations of the selected grant or pod, or of the object
/// whose details are shown.
pub(super) fn related(app: &mut App) -> Vec<Effect> {
    match app.screen().clone() {
        Screen::List(v) => match app.selected_ref(v) {
            Some(Located {
                cluster,
                row: RowRef::Grant(name),
            }) => grant(app, cluster, &name),
            Some(Located {
                cluster,
                row: RowRef::Workload(Kind::Pod, key),
            }) => app.open(Screen::Relations(cluster, Anchor::Pod(key))),
            _ => {
                app.ui.flash = Some("r: select a grant or a pod".into());
                Vec::new()
            }
        },
        Screen::Details(cluster, Kind::Pod, key) => {
            app.open(Screen::Relations(cluster, Anchor::Pod(key)))
        }
        Screen::Details(cluster, Kind::RuntimeGrant, (_, name)) => grant(app, cluster, &name),
        Screen::Relations(..) => hop_selected(app, false),
        _ => Vec::new(),
    }
}

/// The anchor of grant `name` in `cluster`'s store.
fn anchor_of(app: &App, cluster: &ClusterId, name: &str) -> Option<Anchor> {
    Anchor::grant(&app.cluster(cluster)?.data.store, name)
}

fn grant(app: &mut App, cluster: ClusterId, name: &str) -> Vec<Effect> {
    match anchor_of(app, &cluster, name) {
        Some(a) => app.open(Screen::Relations(cluster, a)),
        None => {
            app.ui.flash = Some(format!(
                "no RuntimeGrant {}",
                berth_shared::sanitize::short(name)
            ));
            Vec::new()
        }
    }
}

/// Enter (or `d`, `details`) on a relations line: its relations for a grant
/// or a pod, else its details; in the screen's cluster.
pub(super) fn hop_selected(app: &mut App, details: bool) -> Vec<Effect> {
    let Screen::Relations(cluster, anchor) = app.screen().clone() else {
        return Vec::new();
    };
    let Some(c) = app.cluster(&cluster) else {
        return Vec::new();
    };
    let lines = relations(&c.data.store, &anchor);
    let Some((kind, key)) = lines.get(app.ui.scroll).and_then(|l| l.target.clone()) else {
        return Vec::new();
    };
    hop(app, cluster, kind, key, details)
}

fn hop(app: &mut App, cluster: ClusterId, kind: Kind, key: ObjKey, details: bool) -> Vec<Effect> {
    let same = |a: &Anchor| app.screen() == &Screen::Relations(cluster.clone(), a.clone());
    match kind {
        Kind::RuntimeGrant if !details => match anchor_of(app, &cluster, &key.1) {
            Some(a) if !same(&a) => app.open(Screen::Relations(cluster, a)),
            Some(_) => Vec::new(),
            None => grant(app, cluster, &key.1),
        },
        Kind::Pod if !details && !same(&Anchor::Pod(key.clone())) => {
            app.open(Screen::Relations(cluster, Anchor::Pod(key)))
        }
        _ => app.open(Screen::Details(cluster, kind, key)),
    }
}
