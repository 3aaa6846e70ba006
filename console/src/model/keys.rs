//! Key handling: normal mode through the one key table
//! ([`super::keymap::KEYS`]), the `:` command line with completion, the `/`
//! filter line, the typed confirmation of a review, and pasted text.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::keymap::{self, Action as KeyAction};
use super::{App, Effect, ListView, Mode, ObjKey, Object, ReviewState, RowRef, Scope, Screen};
use crate::retire::plan::confirms;
use crate::retire::{Action, RetireError};
use crate::store::Kind;

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
        "one Runtime's rollout: :rollout [NS/]NAME",
    ),
    (
        "ns",
        &["namespace"],
        ":ns picks from a list, :ns NAME, :ns all",
    ),
    ("ctx", &["context"], "switch kubeconfig context: :ctx NAME"),
    ("plan", &["pending"], "plan of the pending grants file"),
    ("help", &[], "show the keys"),
    ("q", &["quit", "q!"], "quit"),
];

/// Handles one key.
pub fn on_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    if key.kind == KeyEventKind::Release {
        return Vec::new();
    }
    app.dirty = true;
    // Ctrl-c quits from every mode, even while typing (in normal mode it is
    // also the key table's Quit binding, which is what help lists).
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
        return help_key(app, key);
    }
    let Some((binding, index)) = keymap::lookup(&key, app.screen()) else {
        return Vec::new();
    };
    let page = app.page.get().max(1) as i64;
    match binding.action {
        KeyAction::Quit => {
            app.quit = true;
            return vec![Effect::Quit];
        }
        KeyAction::Help => {
            app.show_help = true;
            app.help_scroll = 0;
        }
        KeyAction::Command => {
            app.mode = Mode::Command {
                input: String::new(),
                completion: None,
            }
        }
        KeyAction::Filter => app.mode = Mode::Filter,
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
        KeyAction::RetireToDefault => return retire(app, 'R'),
        KeyAction::Suspend => return retire(app, 'S'),
        KeyAction::Delete => return retire(app, 'D'),
        KeyAction::Prune => return retire(app, 'P'),
    }
    Vec::new()
}

/// While help is open: scroll keys scroll it (it may not fit, e.g. at
/// 80×24), `q` still quits, any other key closes it and is swallowed.
fn help_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    let page = app.page.get().max(1);
    let max = app.help_scroll_max.get();
    let action = keymap::lookup(&key, app.screen()).map(|(b, _)| b.action);
    let scroll = |app: &mut App, delta: i64| {
        app.help_scroll = (app.help_scroll as i64)
            .saturating_add(delta)
            .clamp(0, max.min(100_000) as i64) as usize;
    };
    match action {
        Some(KeyAction::Down) => scroll(app, 1),
        Some(KeyAction::Up) => scroll(app, -1),
        Some(KeyAction::PageDown | KeyAction::HalfPageDown) => scroll(app, page as i64),
        Some(KeyAction::PageUp | KeyAction::HalfPageUp) => scroll(app, -(page as i64)),
        Some(KeyAction::First) => app.help_scroll = 0,
        Some(KeyAction::Last) => app.help_scroll = max,
        Some(KeyAction::Quit) => {
            app.quit = true;
            return vec![Effect::Quit];
        }
        _ => app.show_help = false,
    }
    Vec::new()
}

fn back(app: &mut App) -> Vec<Effect> {
    if let Some(v) = app.current_list()
        && !app.list(v).filter.is_empty()
    {
        app.lists[v.index()].filter.clear();
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
            let l = &mut app.lists[v.index()];
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
        let l = &mut app.lists[v.index()];
        l.column = (l.column as i64 + delta).clamp(0, (cols - 1).max(0)) as usize;
    }
}

fn sort_selected(app: &mut App) {
    if let Some(v) = app.current_list() {
        let l = &mut app.lists[v.index()];
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
            Some(RowRef::Runtime(key)) => app.open(Screen::Rollout(key)),
            Some(RowRef::Namespace(n)) => switch_scope(app, Scope::Namespace(n)),
            // The RestartRequired indication leads to what the restart
            // would do.
            Some(RowRef::Grant(name)) if restart_required(app, &name) => app.open(Screen::Plan),
            Some(r) => {
                let (kind, key) = r.object();
                app.open(Screen::Details(kind, key))
            }
            None => Vec::new(),
        },
        Screen::Rollout(key) => app.open(Screen::Details(Kind::Runtime, key)),
        Screen::Details(..) | Screen::Plan => Vec::new(),
    }
}

/// Whether the grant row `name` says the agent's file changed on disk.
fn restart_required(app: &App, name: &str) -> bool {
    app.derived
        .grants
        .iter()
        .any(|g| g.name == name && g.restart_required)
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
        Screen::Details(..) | Screen::Plan => Vec::new(),
    }
}

fn filter_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    let Some(v) = app.current_list() else {
        app.mode = Mode::Normal;
        return Vec::new();
    };
    match key.code {
        KeyCode::Esc => {
            app.lists[v.index()].filter.clear();
            app.mode = Mode::Normal;
        }
        KeyCode::Enter => app.mode = Mode::Normal,
        KeyCode::Backspace => {
            app.lists[v.index()].filter.pop();
        }
        KeyCode::Char(c) if !c.is_control() => {
            if app.lists[v.index()].filter.chars().count() < 128 {
                app.lists[v.index()].filter.push(c);
            }
        }
        _ => return Vec::new(),
    }
    // The selection stays on its object while it still matches.
    app.reapply(v);
    Vec::new()
}

/// Most characters one paste adds (a paste is a name or two, not a file).
const PASTE_MAX: usize = 256;

/// Pasted text (bracketed paste) goes where typed text would: the `:` line,
/// the `/` filter or a review's typed confirmation; one line only, made
/// safe like any other text. Elsewhere it is ignored.
pub fn on_paste(app: &mut App, text: &str) -> Vec<Effect> {
    // A trailing newline comes with most copied names; never run on it.
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let text = clean(first.trim());
    if text.is_empty() {
        return Vec::new();
    }
    app.dirty = true;
    let append = |s: &mut String, limit: usize| {
        let room = limit.saturating_sub(s.chars().count());
        s.extend(text.chars().take(room.min(PASTE_MAX)));
    };
    if let Some(ReviewState::Ready { typed, .. }) = app.review.as_mut() {
        append(typed, 256);
        return Vec::new();
    }
    if app.review.is_some() {
        return Vec::new();
    }
    match &mut app.mode {
        Mode::Command { input, completion } => {
            append(input, 256);
            *completion = None;
        }
        Mode::Filter => {
            if let Some(v) = app.current_list() {
                append(&mut app.lists[v.index()].filter, 128);
                app.reapply(v);
            }
        }
        Mode::Normal => {}
    }
    Vec::new()
}

/// Text typed or pasted by the user, made safe to show.
use berth_shared::sanitize::short as clean;

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
        Some("plan") => app.open(Screen::Plan),
        Some("help") => {
            app.show_help = true;
            app.help_scroll = 0;
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
                    app.flash = Some(format!("no Runtime {}", clean(arg.unwrap_or("selected"))));
                    // Still watch Runtimes so the name can be found.
                    vec![app.watch_effect()]
                }
            }
        }
        Some("ns") => match arg {
            // Pick from the cluster's Namespace list.
            None => app.open(Screen::List(ListView::Namespaces)),
            Some("all" | "-A") => switch_scope(app, Scope::All),
            Some(n) => switch_scope(app, Scope::Namespace(n.to_string())),
        },
        Some("ctx") => {
            let Some(ctx) = arg else {
                app.flash = Some("usage: :ctx NAME".into());
                return Vec::new();
            };
            if !app.contexts.is_empty() && !app.contexts.iter().any(|c| c == ctx) {
                app.flash = Some(format!("no context {}", clean(ctx)));
                return Vec::new();
            }
            // Nothing changes until the new context answers: a context
            // that fails leaves the console on the old one, usable.
            app.switching = Some(ctx.to_string());
            vec![Effect::Connect {
                context: ctx.to_string(),
            }]
        }
        _ => {
            app.flash = Some(format!("unknown command: {}", clean(word)));
            Vec::new()
        }
    }
}

/// Watches another namespace (or all) with the same connection.
fn switch_scope(app: &mut App, scope: Scope) -> Vec<Effect> {
    app.scope = scope.clone();
    app.reset_data();
    if app.current_list() == Some(ListView::Namespaces) && app.screens.len() > 1 {
        app.screens.pop();
    }
    vec![Effect::Rescope(scope), app.watch_effect()]
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
                    clean(&review.plan.confirm_word)
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
