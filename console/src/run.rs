//! The interactive app: one task owns the [`App`] and applies messages from
//! the input thread, the ticker, the watchers and connection attempts; it
//! redraws only when something changed, key presses first and at once,
//! watch events coalesced into at most ~20 frames a second
//! ([`crate::frames`]). Nothing that talks to the cluster
//! runs on this task: a `:ctx` switch connects in its own task and the
//! console stays usable on the old context meanwhile — unless the new
//! context's credential plugin may prompt, in which case the TUI is
//! suspended and the plugin gets the terminal.

use std::time::{Duration, Instant};

use color_eyre::eyre::{Result, WrapErr};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use tokio::sync::mpsc::{Sender, UnboundedSender, channel, unbounded_channel};

use crate::frames::FrameLimiter;
use crate::model::{App, Effect, Msg, ObjKey, Scope, update};
use crate::retire;
use crate::tui::Tui;
use crate::views;
use crate::watch::{
    self, ConnectOptions, Connection, WatchStarts, Watchers, connect, connect_checked,
    prompts_on_terminal,
};

/// Options of the interactive app.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub connect: ConnectOptions,
    /// `None` = the context's namespace.
    pub scope: Option<Scope>,
    pub read_only: bool,
    pub agent_lease: ObjKey,
    /// Capture the mouse (wheel scrolls); off by default so that the
    /// terminal's own text selection works.
    pub mouse: bool,
    /// Draw without colours.
    pub no_color: bool,
}

/// Most messages applied before a redraw (a relist of thousands of objects
/// is drawn once, not per object).
const BATCH: usize = 4096;

/// Watch events queued between the watchers and the app: when it is full
/// the watchers wait (the apiserver holds the rest), so memory stays
/// bounded however fast the cluster changes and no event is lost.
const WATCH_QUEUE: usize = 1024;

/// The connection in use: retirements run with its client, its watchers
/// feed the app.
struct Session {
    client: Client,
    starts: WatchStarts,
    watchers: Watchers,
    tx: Sender<Msg>,
}

impl Session {
    fn new(
        client: Client,
        starts: WatchStarts,
        app: &App,
        scope: Scope,
        tx: Sender<Msg>,
    ) -> Session {
        let watchers = Watchers::new(
            client.clone(),
            starts.clone(),
            scope,
            app.agent_lease.clone(),
            app.generation,
            tx.clone(),
        );
        Session {
            client,
            starts,
            watchers,
            tx,
        }
    }

    /// Watches `scope` from now on (after the app reset its data).
    fn rescope(&mut self, app: &App, scope: Scope) {
        self.watchers.stop();
        *self = Session::new(
            self.client.clone(),
            self.starts.clone(),
            app,
            scope,
            self.tx.clone(),
        );
    }

    /// Adopts a connection made for `:ctx`, if the app still wants it.
    fn adopt(&mut self, app: &mut App, context: String, conn: Connection) {
        if app.switching.as_deref() != Some(context.as_str()) {
            return;
        }
        let effects = update(
            app,
            Msg::Switched {
                context,
                contexts: conn.contexts.clone(),
            },
        );
        self.watchers.stop();
        *self = Session::new(
            conn.client,
            conn.starts,
            app,
            app.scope.clone(),
            self.tx.clone(),
        );
        for e in effects {
            if let Effect::Watch(keys) = e {
                self.watchers.sync(&keys);
            }
        }
    }
}

/// Runs the TUI until the user quits.
pub async fn run(opts: RunOptions) -> Result<()> {
    let conn = connect(&opts.connect)
        .await
        .wrap_err("connecting to the cluster")?;
    let scope = opts
        .scope
        .clone()
        .unwrap_or_else(|| Scope::Namespace(conn.default_namespace.clone()));
    let mut app = App::new(conn.context.clone(), scope.clone(), Timestamp::now());
    app.contexts = conn.contexts.clone();
    app.read_only = opts.read_only;
    app.agent_lease = opts.agent_lease.clone();
    app.no_color = opts.no_color;

    // Keys, ticks and answers to the user's requests: few, never held back.
    let (tx, mut rx) = unbounded_channel::<Msg>();
    // Watch events: many, bounded (see WATCH_QUEUE).
    let (wtx, mut wrx) = channel::<Msg>(WATCH_QUEUE);
    // Connections made for `:ctx`, handed back to this task (a client is
    // not a message the pure model could hold).
    let (conn_tx, mut conn_rx) = unbounded_channel::<(String, Connection)>();
    let mut session = Session::new(conn.client.clone(), conn.starts.clone(), &app, scope, wtx);
    if let Effect::Watch(keys) = app.watch_effect() {
        session.watchers.sync(&keys);
    }

    let mut tui = Tui::start(opts.mouse, tx.clone()).wrap_err("setting up the terminal")?;
    let ticker = tokio::spawn(tick(tx.clone()));
    let mut frames = FrameLimiter::new();
    // A frame the user waits for (a key press, an answer): drawn at once.
    let mut urgent = true;

    let result: Result<()> = async {
        loop {
            if app.dirty && frames.ready(Instant::now(), urgent) {
                let started = Instant::now();
                app.refresh();
                if let Some(term) = tui.terminal() {
                    term.draw(|f| views::draw(f, &app)).wrap_err("drawing")?;
                }
                frames.drawn(started, started.elapsed());
                app.dirty = false;
                urgent = false;
                if panic_requested() {
                    panic!("panic requested by {PANIC_ENV} (terminal restore test)");
                }
            }
            // Only watch events wait for a frame; with nothing to draw the
            // loop sleeps until a message comes (idle is no work).
            let due = app
                .dirty
                .then(|| frames.due())
                .flatten()
                .map_or_else(far_future, tokio::time::Instant::from_std);
            let mut msgs = Vec::new();
            tokio::select! {
                // Key presses before watch events.
                biased;
                m = rx.recv() => {
                    let Some(m) = m else {
                        return Ok(());
                    };
                    msgs.push(m);
                    while let Ok(m) = rx.try_recv() {
                        msgs.push(m);
                    }
                    urgent |= msgs.iter().any(|m| !matches!(m, Msg::Tick(_)));
                }
                Some((context, conn)) = conn_rx.recv() => {
                    session.adopt(&mut app, context, conn);
                    urgent = true;
                    continue;
                }
                Some(m) = wrx.recv() => {
                    msgs.push(m);
                    while msgs.len() < BATCH {
                        match wrx.try_recv() {
                            Ok(m) => msgs.push(m),
                            Err(_) => break,
                        }
                    }
                }
                () = tokio::time::sleep_until(due) => continue,
            }
            let was_loaded = app.current_loaded();
            for msg in msgs {
                for effect in update(&mut app, msg) {
                    match effect {
                        Effect::Quit => return Ok(()),
                        Effect::Review {
                            action,
                            namespace,
                            name,
                        } => {
                            let (client, tx) = (session.client.clone(), tx.clone());
                            tokio::spawn(async move {
                                let r = retire::review::review(&client, &action, &namespace, &name)
                                    .await;
                                let _ = tx.send(Msg::Reviewed(Box::new(r)));
                            });
                        }
                        Effect::Execute(review) => {
                            let (client, tx) = (session.client.clone(), tx.clone());
                            tokio::spawn(async move {
                                let r = retire::execute::execute(&client, &review).await;
                                let _ = tx.send(Msg::Executed(Box::new(r)));
                            });
                        }
                        Effect::Watch(keys) => session.watchers.sync(&keys),
                        Effect::Fetch(kind, key) => {
                            let (client, tx) = (session.client.clone(), tx.clone());
                            let generation = app.generation;
                            tokio::spawn(async move {
                                let r = watch::fetch(client, kind, &key)
                                    .await
                                    .map_err(|e| e.to_string());
                                let _ = tx.send(Msg::Fetched(generation, kind, key, r));
                            });
                        }
                        Effect::Rescope(scope) => session.rescope(&app, scope),
                        Effect::Connect { context } => {
                            let copts = ConnectOptions {
                                context: Some(context.clone()),
                                ..opts.connect.clone()
                            };
                            if prompts_on_terminal(&copts) {
                                // The plugin may prompt: it gets the terminal
                                // until the connection is made or refused.
                                tui.suspend();
                                println!(
                                    "berth: switching to context {}; its credential plugin may ask for input.",
                                    berth_shared::sanitize::short(&context)
                                );
                                let r = tokio::spawn(async move { connect_checked(&copts).await })
                                    .await;
                                tui.resume().wrap_err("setting up the terminal again")?;
                                app.dirty = true;
                                match r {
                                    Ok(Ok(c)) => session.adopt(&mut app, context, c),
                                    Ok(Err(e)) => {
                                        update(&mut app, Msg::SwitchFailed { context, error: e.to_string() });
                                    }
                                    Err(e) => {
                                        update(&mut app, Msg::SwitchFailed { context, error: e.to_string() });
                                    }
                                }
                            } else {
                                let (tx, conn_tx) = (tx.clone(), conn_tx.clone());
                                tokio::spawn(async move {
                                    match tokio::spawn(async move { connect_checked(&copts).await }).await {
                                        Ok(Ok(c)) => {
                                            let _ = conn_tx.send((context, c));
                                        }
                                        Ok(Err(e)) => {
                                            let _ = tx.send(Msg::SwitchFailed {
                                                context,
                                                error: e.to_string(),
                                            });
                                        }
                                        Err(e) => {
                                            let _ = tx.send(Msg::SwitchFailed {
                                                context,
                                                error: e.to_string(),
                                            });
                                        }
                                    }
                                });
                            }
                        }
                    }
                }
                if app.quit {
                    return Ok(());
                }
            }
            // The view's last list just completed: its first complete frame
            // is what the user waits for, not one more coalesced update.
            if was_loaded == Some(false) && app.current_loaded() == Some(true) {
                urgent = true;
            }
        }
    }
    .await;

    ticker.abort();
    session.watchers.stop();
    drop(tui);
    result
}

/// Test hook: with this variable set the app panics after its first
/// frame, so the smoke test can check that a panic restores the terminal.
pub const PANIC_ENV: &str = "BERTH_CONSOLE_TEST_PANIC";

/// A deadline that never comes in practice (nothing to draw).
fn far_future() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(86_400)
}

fn panic_requested() -> bool {
    std::env::var_os(PANIC_ENV).is_some()
}

async fn tick(tx: UnboundedSender<Msg>) {
    let mut iv = tokio::time::interval(Duration::from_secs(1));
    loop {
        iv.tick().await;
        if tx.send(Msg::Tick(Timestamp::now())).is_err() {
            return;
        }
    }
}
