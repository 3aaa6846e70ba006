//! Key handling: normal mode (vim motions, views, sort, drill-down), the
//! `:` command line with completion, and the `/` filter line.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{App, Effect, ListView, Mode, ObjKey, Object, ReviewState, RowRef, Scope, Screen};
use crate::model::store::Kind;
use crate::retire::plan::confirms;
use crate::retire::{Action, RetireError};

/// Every command of the `:` line, with aliases (the first is shown).
pub const COMMANDS: &[(&str, &[&str], &str)] = &[
    ("runtimes", &["rt", "runtime"], "Runtimes view"),
    ("grants", &["rtg", "grant", "runtimegrants"], "Grants view"),
    (
        "handlers",
        &["rc", "handler", "runtimeclasses"],
        "Handlers view",
    ),
    ("retained", &["ret"], "Retained workloads view"),
    (
        "rollout",
        &["ro"],
        "rollout of one Runtime: :rollout [NS/]NAME",
    ),
    ("ns", &["namespace"], "switch namespace: :ns NAME | :ns all"),
    ("ctx", &["context"], "switch kubeconfig context: :ctx NAME"),
    ("help", &[], "show the keys"),
    ("q", &["quit", "q!"], "quit"),
];

/// Keys of the normal mode, per screen, for the help view.
pub fn help_keys(screen: &Screen) -> Vec<(&'static str, &'static str)> {
    let mut v: Vec<(&str, &str)> = vec![
        ("j / ↓", "down"),
        ("k / ↑", "up"),
        ("g / Home", "first row"),
        ("G / End", "last row"),
        ("Ctrl-d / PgDn", "page down"),
        ("Ctrl-u / PgUp", "page up"),
    ];
    match screen {
        Screen::List(view) => {
            v.extend([
                ("h / ←", "previous column"),
                ("l / →", "next column"),
                ("s", "sort by the selected column (again: reverse)"),
                ("/", "filter rows"),
                ("d / y", "details: YAML and events of the row"),
            ]);
            v.push(match view {
                ListView::Runtimes => ("Enter", "rollout of the Runtime"),
                ListView::Grants => ("Enter", "details of the grant"),
                ListView::Handlers => ("Enter", "the class and every workload using it"),
                ListView::Retained => ("Enter", "details of the workload"),
            });
            if matches!(view, ListView::Runtimes | ListView::Retained) {
                v.extend([
                    ("R", "retire to the default runtime (review first)"),
                    ("S", "suspend the Runtime (review first)"),
                    ("D", "delete the Runtime (review, type the name)"),
                    (
                        "P",
                        "prune rollback ReplicaSets using the class (review, type the name)",
                    ),
                ]);
            }
            v.extend([
                ("Tab / Shift-Tab", "next / previous view"),
                ("1 2 3 4", "Runtimes, Grants, Handlers, Retained"),
            ]);
        }
        Screen::Rollout(_) => v.push(("d / y", "details of the Runtime")),
        Screen::Details(..) => {}
    }
    v.extend([
        (":", "command mode (Tab completes)"),
        ("?", "this help"),
        ("Esc", "back"),
        ("q / Ctrl-c", "quit"),
    ]);
    v
}

/// Handles one key.
pub fn on_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    if key.kind == KeyEventKind::Release {
        return Vec::new();
    }
    app.dirty = true;
    if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
        app.quit = true;
        return vec![Effect::Quit];
    }
    if app.review.is_some() {
        return review_key(app, key);
    }
    match app.mode.clone() {
        Mode::Command { input, completion } => command_key(app, key, input, completion),
        Mode::Filter => filter_key(app, key),
        Mode::Normal => normal_key(app, key),
    }
}

fn normal_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    app.flash = None;
    if app.show_help {
        // Any key closes the help; `q` still quits.
        app.show_help = false;
        if key.code != KeyCode::Char('q') {
            return Vec::new();
        }
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let page = app.page.get().max(1);
    match key.code {
        KeyCode::Char('q') => {
            app.quit = true;
            return vec![Effect::Quit];
        }
        KeyCode::Char('?') => app.show_help = true,
        KeyCode::Char(':') => {
            app.mode = Mode::Command {
                input: String::new(),
                completion: None,
            }
        }
        KeyCode::Char('/') if app.current_list().is_some() => app.mode = Mode::Filter,
        KeyCode::Esc => return back(app),
        KeyCode::Char('j') | KeyCode::Down => move_by(app, 1),
        KeyCode::Char('k') | KeyCode::Up => move_by(app, -1),
        KeyCode::Char('d') if ctrl => move_by(app, (page / 2).max(1) as i64),
        KeyCode::Char('u') if ctrl => move_by(app, -((page / 2).max(1) as i64)),
        KeyCode::Char('f') if ctrl => move_by(app, page as i64),
        KeyCode::Char('b') if ctrl => move_by(app, -(page as i64)),
        KeyCode::PageDown => move_by(app, page as i64),
        KeyCode::PageUp => move_by(app, -(page as i64)),
        KeyCode::Char('g') | KeyCode::Home => move_by(app, i64::MIN / 2),
        KeyCode::Char('G') | KeyCode::End => move_by(app, i64::MAX / 2),
        KeyCode::Char('h') | KeyCode::Left => move_column(app, -1),
        KeyCode::Char('l') | KeyCode::Right => move_column(app, 1),
        KeyCode::Char('s') => sort_selected(app),
        KeyCode::Tab => return cycle_view(app, 1),
        KeyCode::BackTab => return cycle_view(app, -1),
        KeyCode::Char(c @ '1'..='4') => {
            let i = (c as usize) - ('1' as usize);
            return app.open(Screen::List(ListView::ALL[i]));
        }
        KeyCode::Enter => return drill_down(app),
        KeyCode::Char('d' | 'y') => return details(app),
        KeyCode::Char(c @ ('R' | 'S' | 'D' | 'P')) => return retire(app, c),
        _ => {}
    }
    Vec::new()
}

fn back(app: &mut App) -> Vec<Effect> {
    if let Some(v) = app.current_list()
        && !app.list(v).filter.is_empty()
    {
        app.lists[v as usize].filter.clear();
        app.reapply(v);
        return Vec::new();
    }
    if app.screens.len() > 1 {
        app.screens.pop();
        app.scroll = 0;
    }
    Vec::new()
}

fn move_by(app: &mut App, delta: i64) {
    match app.current_list() {
        Some(v) => {
            let len = app.table(v).visible.len() as i64;
            let l = &mut app.lists[v as usize];
            let next = (l.selected as i64)
                .saturating_add(delta)
                .clamp(0, (len - 1).max(0));
            l.selected = next as usize;
        }
        None => {
            let max = app.scroll_max.get().min(1_000_000) as i64;
            let next = (app.scroll as i64).saturating_add(delta).clamp(0, max);
            app.scroll = next as usize;
        }
    }
}

fn move_column(app: &mut App, delta: i64) {
    if let Some(v) = app.current_list() {
        let cols = app.table(v).headers.len() as i64;
        let l = &mut app.lists[v as usize];
        l.column = (l.column as i64 + delta).clamp(0, (cols - 1).max(0)) as usize;
    }
}

fn sort_selected(app: &mut App) {
    if let Some(v) = app.current_list() {
        let l = &mut app.lists[v as usize];
        l.sort = match l.sort {
            Some((c, desc)) if c == l.column => Some((c, !desc)),
            _ => Some((l.column, false)),
        };
        app.reapply(v);
    }
}

fn cycle_view(app: &mut App, delta: i64) -> Vec<Effect> {
    let cur = app.current_list().unwrap_or(ListView::Runtimes) as i64;
    let n = ListView::ALL.len() as i64;
    let next = (cur + delta).rem_euclid(n) as usize;
    app.open(Screen::List(ListView::ALL[next]))
}

fn drill_down(app: &mut App) -> Vec<Effect> {
    match app.screen().clone() {
        Screen::List(v) => match app.selected_ref(v) {
            Some(RowRef::Runtime(key)) => app.open(Screen::Rollout(key)),
            Some(r) => {
                let (kind, key) = r.object();
                app.open(Screen::Details(kind, key))
            }
            None => Vec::new(),
        },
        Screen::Rollout(key) => app.open(Screen::Details(Kind::Runtime, key)),
        Screen::Details(..) => Vec::new(),
    }
}

fn details(app: &mut App) -> Vec<Effect> {
    match app.screen().clone() {
        Screen::List(v) => match app.selected_ref(v) {
            Some(r) => {
                let (kind, key) = r.object();
                app.open(Screen::Details(kind, key))
            }
            None => Vec::new(),
        },
        Screen::Rollout(key) => app.open(Screen::Details(Kind::Runtime, key)),
        Screen::Details(..) => Vec::new(),
    }
}

fn filter_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    let Some(v) = app.current_list() else {
        app.mode = Mode::Normal;
        return Vec::new();
    };
    match key.code {
        KeyCode::Esc => {
            app.lists[v as usize].filter.clear();
            app.mode = Mode::Normal;
        }
        KeyCode::Enter => app.mode = Mode::Normal,
        KeyCode::Backspace => {
            app.lists[v as usize].filter.pop();
        }
        KeyCode::Char(c) if !c.is_control() => {
            if app.lists[v as usize].filter.chars().count() < 128 {
                app.lists[v as usize].filter.push(c);
            }
        }
        _ => return Vec::new(),
    }
    app.lists[v as usize].selected = 0;
    app.reapply(v);
    Vec::new()
}

fn command_key(
    app: &mut App,
    key: KeyEvent,
    mut input: String,
    completion: Option<(Vec<String>, usize)>,
) -> Vec<Effect> {
    match key.code {
        KeyCode::Esc => {
            app.mode = Mode::Normal;
            Vec::new()
        }
        KeyCode::Enter => {
            app.mode = Mode::Normal;
            run_command(app, &input)
        }
        KeyCode::Tab | KeyCode::BackTab => {
            let (cands, idx) = match completion {
                Some((cands, idx)) if !cands.is_empty() => {
                    let n = cands.len();
                    let idx = if key.code == KeyCode::Tab {
                        (idx + 1) % n
                    } else {
                        (idx + n - 1) % n
                    };
                    (cands, idx)
                }
                _ => (complete(app, &input), 0),
            };
            if let Some(c) = cands.get(idx) {
                input = c.clone();
            }
            let completion = if cands.is_empty() {
                None
            } else {
                Some((cands, idx))
            };
            app.mode = Mode::Command { input, completion };
            Vec::new()
        }
        KeyCode::Backspace => {
            if input.pop().is_none() {
                app.mode = Mode::Normal;
            } else {
                app.mode = Mode::Command {
                    input,
                    completion: None,
                };
            }
            Vec::new()
        }
        KeyCode::Char(c) if !c.is_control() => {
            if input.chars().count() < 256 {
                input.push(c);
            }
            app.mode = Mode::Command {
                input,
                completion: None,
            };
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// Completion candidates for a partly typed command line: full lines.
pub fn complete(app: &App, input: &str) -> Vec<String> {
    let (word, rest) = match input.split_once(' ') {
        Some((w, r)) => (w, Some(r)),
        None => (input, None),
    };
    let Some(rest) = rest else {
        return COMMANDS
            .iter()
            .map(|(name, _, _)| *name)
            .filter(|name| name.starts_with(word))
            .map(|name| {
                if matches!(name, "rollout" | "ns" | "ctx") {
                    format!("{name} ")
                } else {
                    name.to_string()
                }
            })
            .collect();
    };
    let args: Vec<String> = match canonical(word) {
        Some("rollout") => runtime_names(app),
        Some("ns") => {
            let mut v = vec!["all".to_string()];
            v.extend(app.namespaces());
            v
        }
        Some("ctx") => app.contexts.clone(),
        _ => Vec::new(),
    };
    args.into_iter()
        .filter(|a| a.starts_with(rest))
        .map(|a| format!("{word} {a}"))
        .collect()
}

fn runtime_names(app: &App) -> Vec<String> {
    let single_ns = app
        .store
        .runtimes
        .keys()
        .map(|k| &k.0)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        <= 1;
    app.store
        .runtimes
        .keys()
        .map(|(ns, n)| {
            if single_ns {
                n.clone()
            } else {
                format!("{ns}/{n}")
            }
        })
        .collect()
}

fn canonical(word: &str) -> Option<&'static str> {
    COMMANDS
        .iter()
        .find(|(name, aliases, _)| *name == word || aliases.contains(&word))
        .map(|(name, _, _)| *name)
}

/// Runs one command line (without the colon).
pub fn run_command(app: &mut App, line: &str) -> Vec<Effect> {
    let mut parts = line.split_whitespace();
    let Some(word) = parts.next() else {
        return Vec::new();
    };
    let arg = parts.next();
    match canonical(word) {
        Some("runtimes") => app.open(Screen::List(ListView::Runtimes)),
        Some("grants") => app.open(Screen::List(ListView::Grants)),
        Some("handlers") => app.open(Screen::List(ListView::Handlers)),
        Some("retained") => app.open(Screen::List(ListView::Retained)),
        Some("help") => {
            app.show_help = true;
            Vec::new()
        }
        Some("q") => {
            app.quit = true;
            vec![Effect::Quit]
        }
        Some("rollout") => {
            let key = match arg {
                Some(a) => find_runtime(app, a),
                None => match app.current_list().and_then(|v| app.selected_ref(v)) {
                    Some(RowRef::Runtime(k)) => Some(k),
                    _ => None,
                },
            };
            match key {
                Some(k) => app.open(Screen::Rollout(k)),
                None => {
                    app.flash = Some(format!(
                        "no Runtime {}",
                        crate::views::clean(arg.unwrap_or("selected"))
                    ));
                    // Still watch Runtimes so the name can be found.
                    vec![Effect::Watch(vec![Kind::Runtime])]
                }
            }
        }
        Some("ns") => {
            let scope = match arg {
                None => {
                    app.flash = Some("usage: :ns NAME | :ns all".into());
                    return Vec::new();
                }
                Some("all" | "-A") => Scope::All,
                Some(n) => Scope::Namespace(n.to_string()),
            };
            app.scope = scope.clone();
            app.reset_data();
            vec![
                Effect::Reconnect {
                    context: app.context.clone(),
                    scope,
                },
                Effect::Watch(app.needed_kinds()),
            ]
        }
        Some("ctx") => {
            let Some(ctx) = arg else {
                app.flash = Some("usage: :ctx NAME".into());
                return Vec::new();
            };
            if !app.contexts.is_empty() && !app.contexts.iter().any(|c| c == ctx) {
                app.flash = Some(format!("no context {}", crate::views::clean(ctx)));
                return Vec::new();
            }
            app.context = ctx.to_string();
            app.reset_data();
            vec![
                Effect::Reconnect {
                    context: app.context.clone(),
                    scope: app.scope.clone(),
                },
                Effect::Watch(app.needed_kinds()),
            ]
        }
        _ => {
            app.flash = Some(format!("unknown command: {}", crate::views::clean(word)));
            Vec::new()
        }
    }
}

fn find_runtime(app: &App, arg: &str) -> Option<super::ObjKey> {
    if let Some((ns, n)) = arg.split_once('/') {
        let k = (ns.to_string(), n.to_string());
        return app.store.runtimes.contains_key(&k).then_some(k);
    }
    if let Scope::Namespace(ns) = &app.scope {
        let k = (ns.clone(), arg.to_string());
        if app.store.runtimes.contains_key(&k) {
            return Some(k);
        }
    }
    let mut matches = app.store.runtimes.keys().filter(|k| k.1 == arg);
    let first = matches.next()?.clone();
    matches.next().is_none().then_some(first)
}

/// `R`, `S`, `D`, `P` on a row: opens the review of that retirement.
fn retire(app: &mut App, key: char) -> Vec<Effect> {
    if app.read_only {
        app.flash = Some(RetireError::ReadOnly.to_string());
        return Vec::new();
    }
    let Some(view) = app.current_list() else {
        return Vec::new();
    };
    let Some(row) = app.selected_ref(view) else {
        app.flash = Some("no row selected".into());
        return Vec::new();
    };
    match retire_target(app, key, &row) {
        Ok((action, (namespace, name))) => {
            app.scroll = 0;
            app.review = Some(ReviewState::Loading {
                title: action.title(),
                target: format!("{namespace}/{name}"),
            });
            vec![Effect::Review {
                action,
                namespace,
                name,
            }]
        }
        Err(e) => {
            app.flash = Some(e);
            Vec::new()
        }
    }
}

fn meta(obj: &Object) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta> {
    Some(match obj {
        Object::Deployment(o) => &o.metadata,
        Object::ReplicaSet(o) => &o.metadata,
        Object::Pod(o) => &o.metadata,
        Object::Job(o) => &o.metadata,
        Object::CronJob(o) => &o.metadata,
        Object::StatefulSet(o) => &o.metadata,
        Object::DaemonSet(o) => &o.metadata,
        _ => return None,
    })
}

/// The action and its target (`Runtime` for R/S/D, `Deployment` for P)
/// for the selected row.
pub fn retire_target(app: &App, key: char, row: &RowRef) -> Result<(Action, ObjKey), String> {
    let workload = match row {
        RowRef::Workload(kind, k) => app.store.get(*kind, k),
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
                .map(|k| (action, k))
                .ok_or_else(|| "select a Runtime (or a workload a Runtime manages)".to_string())
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
                    return Ok((Action::Prune { class }, (ns, d)));
                }
                return Err("this ReplicaSet has no Deployment or no class".into());
            }
            let Some(k) = runtime else {
                return Err("select a Runtime or a rollback ReplicaSet".into());
            };
            let rt = app.store.runtimes.get(&k);
            let class = rt
                .and_then(|r| r.status.as_ref())
                .and_then(|s| s.profile.as_ref())
                .and_then(|p| p.class.clone())
                .ok_or_else(|| format!("no RuntimeClass known for Runtime {}/{}", k.0, k.1))?;
            let deployment = berth_shared::render::Names::for_runtime(&k.1).workload;
            Ok((Action::Prune { class }, (k.0, deployment)))
        }
    }
}

/// Keys while a review is open: type the confirmation, Enter, Esc.
fn review_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    let Some(state) = app.review.clone() else {
        return Vec::new();
    };
    match (state, key.code) {
        (ReviewState::Running { .. }, KeyCode::Esc) => {}
        (_, KeyCode::Esc) => {
            app.review = None;
            app.scroll = 0;
        }
        (ReviewState::Ready { review, typed }, KeyCode::Enter) => {
            if !review.can_execute() {
                app.review = None;
            } else if confirms(&review.plan, &typed) {
                app.review = Some(ReviewState::Running {
                    review: review.clone(),
                    typed,
                });
                return vec![Effect::Execute(review)];
            } else {
                app.flash = Some(format!(
                    "not confirmed: type {} and press Enter",
                    crate::views::clean(&review.plan.confirm_word)
                ));
            }
        }
        (ReviewState::Ready { review, mut typed }, KeyCode::Backspace) => {
            typed.pop();
            app.review = Some(ReviewState::Ready { review, typed });
        }
        (ReviewState::Ready { review, mut typed }, KeyCode::Char(c)) if !c.is_control() => {
            if typed.chars().count() < 256 {
                typed.push(c);
            }
            app.review = Some(ReviewState::Ready { review, typed });
        }
        (_, KeyCode::Down | KeyCode::PageDown) => scroll_review(app, 1),
        (_, KeyCode::Up | KeyCode::PageUp) => scroll_review(app, -1),
        _ => {}
    }
    Vec::new()
}

fn scroll_review(app: &mut App, delta: i64) {
    let max = app.scroll_max.get().min(1_000_000) as i64;
    app.scroll = (app.scroll as i64).saturating_add(delta).clamp(0, max) as usize;
}
