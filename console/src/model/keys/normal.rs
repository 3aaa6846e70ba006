//! Normal mode: every key through the one key table
//! ([`crate::model::keymap::KEYS`]), moving, sorting, opening screens.

use crossterm::event::KeyEvent;

use super::super::keymap::{self, Action as KeyAction};
use super::super::{App, ClusterId, Effect, ListView, Located, Mode, RowRef, Scope, Screen};
use crate::store::Kind;

pub(super) fn normal_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    app.ui.flash = None;
    if app.ui.show_help {
        return super::help::help_key(app, key);
    }
    let Some((binding, index)) = keymap::lookup(&key, app.screen()) else {
        return Vec::new();
    };
    let page = app.ui.viewport.page.max(1) as i64;
    match binding.action {
        KeyAction::Quit => {
            app.ui.quit = true;
            return vec![Effect::Quit];
        }
        KeyAction::Help => {
            app.ui.show_help = true;
            app.ui.help_scroll = 0;
        }
        KeyAction::Command => {
            app.ui.mode = Mode::Command {
                input: String::new(),
                completion: None,
            }
        }
        KeyAction::Filter => app.ui.mode = Mode::Filter,
        KeyAction::Back => return back(app),
        KeyAction::Down => move_by(app, 1),
        KeyAction::Up => move_by(app, -1),
        KeyAction::HalfPageDown => move_by(app, (page / 2).max(1)),
        KeyAction::HalfPageUp => move_by(app, -(page / 2).max(1)),
        KeyAction::PageDown => move_by(app, page),
        KeyAction::PageUp => move_by(app, -page),
        KeyAction::First => move_by(app, i64::MIN / 2),
        KeyAction::Last => move_by(app, i64::MAX / 2),
        KeyAction::PrevColumn => move_column(app, -1),
        KeyAction::NextColumn => move_column(app, 1),
        KeyAction::Sort => sort_selected(app),
        KeyAction::NextView => return cycle_view(app, 1),
        KeyAction::PrevView => return cycle_view(app, -1),
        KeyAction::JumpView => {
            let v = ListView::TABS
                .get(index)
                .copied()
                .unwrap_or(ListView::Runtimes);
            return app.open(Screen::List(v));
        }
        KeyAction::Open => return drill_down(app),
        KeyAction::Details => return details(app),
        KeyAction::Explain => return explain(app),
        KeyAction::RetireToDefault => return super::review::retire(app, 'R'),
        KeyAction::Suspend => return super::review::retire(app, 'S'),
        KeyAction::Delete => return super::review::retire(app, 'D'),
        KeyAction::Prune => return super::review::retire(app, 'P'),
        KeyAction::Matrix => return app.open(Screen::Matrix),
        KeyAction::Related => return super::related::related(app),
    }
    Vec::new()
}

fn back(app: &mut App) -> Vec<Effect> {
    if let Some(v) = app.current_list()
        && !app.list(v).filter.is_empty()
    {
        app.ui.lists[v.index()].filter.clear();
        app.reapply(v);
        return Vec::new();
    }
    if app.ui.screens.len() > 1 {
        app.ui.screens.pop();
        app.ui.scroll = 0;
    }
    Vec::new()
}

fn move_by(app: &mut App, delta: i64) {
    if app.screen() == &Screen::Matrix {
        return move_in_matrix(app, delta, 0);
    }
    match app.current_list() {
        Some(v) => {
            let len = app.table(v).len() as i64;
            let l = &mut app.ui.lists[v.index()];
            let next = (l.selected as i64)
                .saturating_add(delta)
                .clamp(0, (len - 1).max(0));
            l.selected = next as usize;
        }
        None => {
            let max = app.ui.viewport.scroll_max.min(1_000_000) as i64;
            let next = (app.ui.scroll as i64).saturating_add(delta).clamp(0, max);
            app.ui.scroll = next as usize;
        }
    }
}

/// Moves the matrix's selected cell by `rows` classes (numbered across
/// the clusters, [`crate::rows::matrix::locate`]) and `cols` node groups
/// of the row's cluster, keeping its row on the page.
fn move_in_matrix(app: &mut App, rows: i64, cols: i64) {
    use crate::rows::matrix::{locate, matrices};
    let ms = matrices(app.clusters.iter().map(|c| (&c.id, &c.data.store)));
    let clamp = |v: usize, d: i64, n: usize| {
        (v as i64).saturating_add(d).clamp(0, (n as i64 - 1).max(0)) as usize
    };
    let total: usize = ms.iter().map(|(_, m)| m.classes.len()).sum();
    let (r, c) = app.ui.matrix_cell;
    let r = clamp(r, rows, total);
    let (k, local) = locate(&ms, r).unwrap_or((0, 0));
    let c = clamp(c, cols, ms.get(k).map_or(0, |(_, m)| m.groups.len()));
    app.ui.matrix_cell = (r, c);
    // The line of the row: each cluster before it takes its header, its
    // classes, its legend and node lists (in a fleet, with a title line and
    // a blank one); then this cluster's header.
    let fleet = usize::from(app.fleet());
    let before: usize = ms[..k.min(ms.len())]
        .iter()
        .map(|(_, m)| 2 * fleet + m.classes.len() + 3 + m.groups.len())
        .sum();
    let page = app.ui.viewport.page.max(1);
    let line = before + fleet + local + 1;
    if line < app.ui.scroll {
        app.ui.scroll = line.saturating_sub(1);
    } else if line >= app.ui.scroll + page {
        app.ui.scroll = line + 1 - page;
    }
}

fn move_column(app: &mut App, delta: i64) {
    if app.screen() == &Screen::Matrix {
        return move_in_matrix(app, 0, delta);
    }
    if let Some(v) = app.current_list() {
        let cols = app.table(v).columns() as i64;
        let l = &mut app.ui.lists[v.index()];
        l.column = (l.column as i64 + delta).clamp(0, (cols - 1).max(0)) as usize;
    }
}

fn sort_selected(app: &mut App) {
    if let Some(v) = app.current_list() {
        let l = &mut app.ui.lists[v.index()];
        l.sort = match l.sort {
            Some((c, desc)) if c == l.column => Some((c, !desc)),
            _ => Some((l.column, false)),
        };
        app.reapply(v);
    }
}

fn cycle_view(app: &mut App, delta: i64) -> Vec<Effect> {
    let tabs = ListView::TABS;
    let cur = app
        .current_list()
        .and_then(|v| tabs.iter().position(|t| *t == v))
        .unwrap_or(0) as i64;
    let next = (cur + delta).rem_euclid(tabs.len() as i64) as usize;
    app.open(Screen::List(tabs[next]))
}

fn drill_down(app: &mut App) -> Vec<Effect> {
    match app.screen().clone() {
        Screen::List(v) => match app.selected_ref(v) {
            Some(Located {
                cluster,
                row: RowRef::Runtime(key),
            }) => app.open(Screen::Rollout(cluster, key)),
            Some(Located {
                row: RowRef::Namespace(n),
                ..
            }) => app.switch_scope(Scope::Namespace(n)),
            // The RestartRequired indication leads to what the restart
            // would do, in the grant's cluster.
            Some(Located {
                cluster,
                row: RowRef::Grant(name),
            }) if restart_required(app, &cluster, &name) => app.open(Screen::Plan(cluster)),
            Some(Located { cluster, row }) => {
                let (kind, key) = row.object();
                app.open(Screen::Details(cluster, kind, key))
            }
            None => Vec::new(),
        },
        Screen::Rollout(cluster, key) => app.open(Screen::Details(cluster, Kind::Runtime, key)),
        Screen::Relations(..) => super::related::hop_selected(app, false),
        Screen::Matrix => open_cell(app),
        Screen::Details(..)
        | Screen::Plan(_)
        | Screen::Explain(..)
        | Screen::Findings
        | Screen::Attestation(..) => Vec::new(),
    }
}

/// Enter on the matrix: the selected cell's class on its group's first
/// node, in the row's cluster (a group's nodes share the canary's verdict:
/// it is part of what groups them).
fn open_cell(app: &mut App) -> Vec<Effect> {
    use crate::rows::matrix::{locate, matrices};
    let ms = matrices(app.clusters.iter().map(|c| (&c.id, &c.data.store)));
    let (r, c) = app.ui.matrix_cell;
    let Some((k, local)) = locate(&ms, r) else {
        return Vec::new();
    };
    let (cluster, m) = &ms[k];
    let class = m.classes.get(local).map(|h| h.class.clone());
    let node = m.groups.get(c).and_then(|g| g.nodes.first().cloned());
    match (class, node) {
        (Some(class), Some(node)) => app.open(Screen::Attestation(cluster.clone(), class, node)),
        _ => Vec::new(),
    }
}

/// Whether the grant row `name` of `cluster` says that cluster's agent's
/// file changed on disk.
fn restart_required(app: &App, cluster: &ClusterId, name: &str) -> bool {
    app.cluster(cluster).is_some_and(|c| {
        c.rows
            .grants
            .iter()
            .any(|g| g.name == name && g.restart_required)
    })
}

fn details(app: &mut App) -> Vec<Effect> {
    match app.screen().clone() {
        Screen::List(v) => match app.selected_ref(v) {
            Some(Located { cluster, row }) => {
                let (kind, key) = row.object();
                app.open(Screen::Details(cluster, kind, key))
            }
            None => Vec::new(),
        },
        Screen::Rollout(cluster, key) => app.open(Screen::Details(cluster, Kind::Runtime, key)),
        Screen::Relations(..) => super::related::hop_selected(app, true),
        Screen::Details(..)
        | Screen::Plan(_)
        | Screen::Matrix
        | Screen::Explain(..)
        | Screen::Findings
        | Screen::Attestation(..) => Vec::new(),
    }
}

/// `x`: the explanation of the selected Runtime, workload or pod (a
/// grant's row explains the Runtimes it lists on the Grants view's
/// details; here it says what `x` reads).
pub(super) fn explain(app: &mut App) -> Vec<Effect> {
    let target = match app.screen().clone() {
        Screen::List(v) => match app.selected_ref(v) {
            Some(Located {
                cluster,
                row: RowRef::Runtime(key),
            }) => Some((cluster, Kind::Runtime, key)),
            Some(Located {
                cluster,
                row: RowRef::Workload(kind, key),
            }) => Some((cluster, kind, key)),
            _ => None,
        },
        Screen::Rollout(cluster, key) => Some((cluster, Kind::Runtime, key)),
        _ => None,
    };
    match target {
        Some((cluster, kind, key)) => app.open(Screen::Explain(cluster, kind, key)),
        None => {
            app.ui.flash = Some(
                "x explains a Runtime, workload or pod: select one on Runtimes or Retained, or :explain KIND/NS/NAME"
                    .into(),
            );
            Vec::new()
        }
    }
}
