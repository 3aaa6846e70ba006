//! The `:` command line: typing, Tab completion, running a command.

use crossterm::event::{KeyCode, KeyEvent};

use super::super::commands::{COMMANDS, canonical};
use super::super::{App, Effect, ListView, Mode, ObjKey, RowRef, Scope, Screen};
use super::clean;

pub(super) fn command_key(
    app: &mut App,
    key: KeyEvent,
    mut input: String,
    completion: Option<(Vec<String>, usize)>,
) -> Vec<Effect> {
    match key.code {
        KeyCode::Esc => {
            app.ui.mode = Mode::Normal;
            Vec::new()
        }
        KeyCode::Enter => {
            app.ui.mode = Mode::Normal;
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
            app.ui.mode = Mode::Command { input, completion };
            Vec::new()
        }
        KeyCode::Backspace => {
            if input.pop().is_none() {
                app.ui.mode = Mode::Normal;
            } else {
                app.ui.mode = Mode::Command {
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
            app.ui.mode = Mode::Command {
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
        Some("ctx") => app.session.contexts.clone(),
        _ => Vec::new(),
    };
    args.into_iter()
        .filter(|a| a.starts_with(rest))
        .map(|a| format!("{word} {a}"))
        .collect()
}

fn runtime_names(app: &App) -> Vec<String> {
    let single_ns = app
        .data
        .store
        .runtimes
        .keys()
        .map(|k| &k.0)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        <= 1;
    app.data
        .store
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
        Some("matrix") => app.open(Screen::Matrix),
        Some("findings") => app.open(Screen::Findings),
        Some("explain") => {
            let default_ns = match &app.session.scope {
                Scope::Namespace(n) => Some(n.clone()),
                Scope::All => None,
            };
            match arg.and_then(|a| crate::rows::explain::parse_target(a, default_ns.as_deref())) {
                Some(t) => app.open(Screen::Explain(t.kind, t.key)),
                None => super::normal::explain(app),
            }
        }
        Some("help") => {
            app.ui.show_help = true;
            app.ui.help_scroll = 0;
            Vec::new()
        }
        Some("q") => {
            app.ui.quit = true;
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
                    app.ui.flash = Some(format!("no Runtime {}", clean(arg.unwrap_or("selected"))));
                    // Still watch Runtimes so the name can be found.
                    vec![app.watch_effect()]
                }
            }
        }
        Some("ns") => match arg {
            // Pick from the cluster's Namespace list.
            None => app.open(Screen::List(ListView::Namespaces)),
            Some("all" | "-A") => app.switch_scope(Scope::All),
            Some(n) => app.switch_scope(Scope::Namespace(n.to_string())),
        },
        Some("ctx") => {
            let Some(ctx) = arg else {
                app.ui.flash = Some("usage: :ctx NAME".into());
                return Vec::new();
            };
            if !app.session.contexts.is_empty() && !app.session.contexts.iter().any(|c| c == ctx) {
                app.ui.flash = Some(format!("no context {}", clean(ctx)));
                return Vec::new();
            }
            app.switch_context(ctx)
        }
        _ => {
            app.ui.flash = Some(format!("unknown command: {}", clean(word)));
            Vec::new()
        }
    }
}

fn find_runtime(app: &App, arg: &str) -> Option<ObjKey> {
    if let Some((ns, n)) = arg.split_once('/') {
        let k = (ns.to_string(), n.to_string());
        return app.data.store.runtimes.contains_key(&k).then_some(k);
    }
    if let Scope::Namespace(ns) = &app.session.scope {
        let k = (ns.clone(), arg.to_string());
        if app.data.store.runtimes.contains_key(&k) {
            return Some(k);
        }
    }
    let mut matches = app.data.store.runtimes.keys().filter(|k| k.1 == arg);
    let first = matches.next()?.clone();
    matches.next().is_none().then_some(first)
}
