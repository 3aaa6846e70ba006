//! The `:` command line: typing, Tab completion, running a command.

use crossterm::event::{KeyCode, KeyEvent};

use super::super::commands::{COMMANDS, canonical};
use super::super::session::context_list;
use super::super::{
    App, ClusterId, Effect, ListView, Located, Mode, ObjKey, RowRef, Scope, Screen,
};
// Text typed or pasted by the user, made safe to show.
use berth_shared::sanitize::short as clean;

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
        // `a,b,c`: the last of the list is completed.
        Some("ctx") => {
            let (done, _) = rest.rsplit_once(',').map_or(("", rest), |(d, p)| (d, p));
            let done = if done.is_empty() {
                String::new()
            } else {
                format!("{done},")
            };
            app.session
                .contexts
                .iter()
                .map(|c| format!("{done}{c}"))
                .collect()
        }
        _ => Vec::new(),
    };
    args.into_iter()
        .filter(|a| a.starts_with(rest))
        .map(|a| format!("{word} {a}"))
        .collect()
}

/// The Runtimes `:rollout` completes: `NAME` within one namespace,
/// `NS/NAME` across several, `NS/NAME@CLUSTER` in a fleet.
fn runtime_names(app: &App) -> Vec<String> {
    let keys = || {
        app.clusters
            .iter()
            .flat_map(|c| c.data.store.runtimes.keys().map(move |k| (c, k)))
    };
    let single_ns = keys()
        .map(|(_, k)| &k.0)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        <= 1;
    let fleet = app.fleet();
    keys()
        .map(|(c, (ns, n))| {
            let name = if single_ns && !fleet {
                n.clone()
            } else {
                format!("{ns}/{n}")
            };
            if fleet {
                format!("{name}@{}", c.id.context())
            } else {
                name
            }
        })
        .collect()
}

/// `TEXT@CLUSTER`, split (object names cannot hold `@`; a context name
/// may, so the first `@` ends the object).
fn at_cluster(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once('@') {
        Some((what, cluster)) => (what, Some(cluster)),
        None => (arg, None),
    }
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
        Some("matrix") => app.open(Screen::Matrix),
        Some("findings") => app.open(Screen::Findings),
        Some("explain") => explain_command(app, arg),
        Some("plan") => {
            let selected = app.current_list().and_then(|v| app.selected_ref(v));
            let cluster = match (arg, app.single(), selected) {
                (Some(name), ..) => pick_cluster(app, Some(name), |_| true),
                (None, Some(one), _) => Ok(one.id.clone()),
                (None, None, Some(Located { cluster, .. })) => Ok(cluster),
                (None, None, None) => Err("name the cluster: :plan CLUSTER".to_string()),
            };
            match cluster {
                Ok(c) => app.open(Screen::Plan(c)),
                Err(e) => {
                    app.ui.flash = Some(e);
                    Vec::new()
                }
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
        Some("rollout") => rollout_command(app, arg),
        Some("ns") => match arg {
            // Pick from the cluster's Namespace list.
            None => app.open(Screen::List(ListView::Namespaces)),
            Some("all" | "-A") => app.switch_scope(Scope::All),
            Some(n) => app.switch_scope(Scope::Namespace(n.to_string())),
        },
        Some("ctx") => ctx_command(app, line),
        _ => {
            app.ui.flash = Some(format!("unknown command: {}", clean(word)));
            Vec::new()
        }
    }
}

/// `:explain [KIND/][NS/]NAME[@CLUSTER]`: the selected row's explanation
/// without an argument, else the named object's in the cluster holding it.
fn explain_command(app: &mut App, arg: Option<&str>) -> Vec<Effect> {
    let default_ns = match &app.session.scope {
        Scope::Namespace(n) => Some(n.clone()),
        Scope::All => None,
    };
    let Some(arg) = arg else {
        return super::normal::explain(app);
    };
    let (what, cluster) = at_cluster(arg);
    let Some(t) = crate::rows::explain::parse_target(what, default_ns.as_deref()) else {
        return super::normal::explain(app);
    };
    match pick_cluster(app, cluster, |c| c.data.store.get(t.kind, &t.key).is_some()) {
        Ok(c) => app.open(Screen::Explain(c, t.kind, t.key)),
        Err(e) => {
            app.ui.flash = Some(format!("explain {}: {e}", clean(arg)));
            Vec::new()
        }
    }
}

/// `:rollout [NS/]NAME`: the named (or selected) Runtime's rollout.
fn rollout_command(app: &mut App, arg: Option<&str>) -> Vec<Effect> {
    let found = match arg {
        Some(a) => find_runtime(app, a),
        None => match app.current_list().and_then(|v| app.selected_ref(v)) {
            Some(Located {
                cluster,
                row: RowRef::Runtime(k),
            }) => Ok((cluster, k)),
            _ => Err("select a Runtime, or :rollout [NS/]NAME".to_string()),
        },
    };
    match found {
        Ok((c, k)) => app.open(Screen::Rollout(c, k)),
        Err(e) => {
            app.ui.flash = Some(format!(
                "no Runtime {}: {e}",
                clean(arg.unwrap_or("selected"))
            ));
            // Still watch Runtimes so the name can be found.
            app.watch_effects()
        }
    }
}

/// `:ctx NAME[,NAME…]`: switch to these kubeconfig contexts (known ones
/// only, each once).
fn ctx_command(app: &mut App, line: &str) -> Vec<Effect> {
    // The rest of the line: `a, b` is a list too.
    let rest = line
        .trim_start()
        .split_once(char::is_whitespace)
        .map(|(_, r)| r.trim());
    let Some(list) = rest.filter(|r| !r.is_empty()) else {
        app.ui.flash = Some("usage: :ctx NAME[,NAME…]".into());
        return Vec::new();
    };
    let mut asked = Vec::new();
    for c in context_list(list) {
        if !app.session.contexts.is_empty() && !app.session.contexts.contains(&c) {
            app.ui.flash = Some(format!("no context {}", clean(&c)));
            return Vec::new();
        }
        if !asked.contains(&c) {
            asked.push(c);
        }
    }
    if asked.is_empty() {
        app.ui.flash = Some("usage: :ctx NAME[,NAME…]".into());
        return Vec::new();
    }
    app.switch_contexts(asked)
}

/// The cluster a command names (`@CLUSTER`), or else the one cluster
/// where `has` holds; a fleet where several (or none) do must be told.
fn pick_cluster(
    app: &App,
    named: Option<&str>,
    has: impl Fn(&super::super::Cluster) -> bool,
) -> Result<ClusterId, String> {
    if let Some(name) = named {
        return app
            .clusters
            .iter()
            .find(|c| c.id.context() == name || c.id.shown() == name)
            .map(|c| c.id.clone())
            .ok_or_else(|| format!("no cluster {} is shown", clean(name)));
    }
    if let Some(one) = app.single() {
        return Ok(one.id.clone());
    }
    let with: Vec<&ClusterId> = app
        .clusters
        .iter()
        .filter(|c| has(c))
        .map(|c| &c.id)
        .collect();
    match with.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err("in no cluster shown".into()),
        several => Err(format!(
            "in clusters {}: add @CLUSTER",
            several
                .iter()
                .map(|c| c.shown())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// `[NS/]NAME[@CLUSTER]`: the Runtime and its cluster.
fn find_runtime(app: &App, arg: &str) -> Result<(ClusterId, ObjKey), String> {
    let (what, named) = at_cluster(arg);
    let scope_ns = match &app.session.scope {
        Scope::Namespace(ns) => Some(ns.clone()),
        Scope::All => None,
    };
    // The key this name means in one cluster's store.
    let key_in = |c: &super::super::Cluster| -> Option<ObjKey> {
        let runtimes = &c.data.store.runtimes;
        if let Some((ns, n)) = what.split_once('/') {
            let k = (ns.to_string(), n.to_string());
            return runtimes.contains_key(&k).then_some(k);
        }
        if let Some(ns) = &scope_ns {
            let k = (ns.clone(), what.to_string());
            if runtimes.contains_key(&k) {
                return Some(k);
            }
        }
        let mut matches = runtimes.keys().filter(|k| k.1 == what);
        let first = matches.next()?.clone();
        matches.next().is_none().then_some(first)
    };
    let cluster = pick_cluster(app, named, |c| key_in(c).is_some())?;
    let c = app.cluster(&cluster).ok_or("not shown")?;
    key_in(c)
        .map(|k| (cluster, k))
        .ok_or_else(|| "not found".to_string())
}
