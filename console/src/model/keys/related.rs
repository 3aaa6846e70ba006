//! The `r` key and the relations screen's hops (issue 31): from a grant to
//! what it covers, from a pod back to its grant. A hop to a grant or a pod
//! opens its relations; to anything else, its details.

use super::super::{App, Effect, ObjKey, RowRef, Screen};
use crate::rows::relations::{Anchor, relations};
use crate::store::Kind;

/// `r`: the relations of the selected grant or pod, or of the object
/// whose details are shown.
pub(super) fn related(app: &mut App) -> Vec<Effect> {
    match app.screen().clone() {
        Screen::List(v) => match app.selected_ref(v) {
            Some(RowRef::Grant(name)) => grant(app, &name),
            Some(RowRef::Workload(Kind::Pod, key)) => app.open(Screen::Relations(Anchor::Pod(key))),
            _ => {
                app.ui.flash = Some("r: select a grant or a pod".into());
                Vec::new()
            }
        },
        Screen::Details(Kind::Pod, key) => app.open(Screen::Relations(Anchor::Pod(key))),
        Screen::Details(Kind::RuntimeGrant, (_, name)) => grant(app, &name),
        Screen::Relations(_) => hop_selected(app, false),
        _ => Vec::new(),
    }
}

fn grant(app: &mut App, name: &str) -> Vec<Effect> {
    match Anchor::grant(&app.data.store, name) {
        Some(a) => app.open(Screen::Relations(a)),
        None => {
            app.ui.flash = Some(format!("no RuntimeGrant {}", super::clean(name)));
            Vec::new()
        }
    }
}

/// Enter (or `d`, `details`) on a relations line: its relations for a grant
/// or a pod, else its details.
pub(super) fn hop_selected(app: &mut App, details: bool) -> Vec<Effect> {
    let Screen::Relations(anchor) = app.screen().clone() else {
        return Vec::new();
    };
    let lines = relations(&app.data.store, &anchor);
    let Some((kind, key)) = lines.get(app.ui.scroll).and_then(|l| l.target.clone()) else {
        return Vec::new();
    };
    hop(app, kind, key, details)
}

fn hop(app: &mut App, kind: Kind, key: ObjKey, details: bool) -> Vec<Effect> {
    let same = |a: &Anchor| app.screen() == &Screen::Relations(a.clone());
    match kind {
        Kind::RuntimeGrant if !details => match Anchor::grant(&app.data.store, &key.1) {
            Some(a) if !same(&a) => app.open(Screen::Relations(a)),
            Some(_) => Vec::new(),
            None => grant(app, &key.1),
        },
        Kind::Pod if !details && !same(&Anchor::Pod(key.clone())) => {
            app.open(Screen::Relations(Anchor::Pod(key)))
        }
        _ => app.open(Screen::Details(kind, key)),
    }
}
