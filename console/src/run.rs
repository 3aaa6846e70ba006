//! The interactive app: one task owns the [`App`] and applies messages from
//! the input thread, the ticker, the watchers and connection attempts; it
//! redraws only when something changed. Nothing that talks to the cluster
//! runs on this task: a `:ctx` switch connects in its own task and the
//! console stays usable on the old context meanwhile.

use std::time::Duration;

use color_eyre::eyre::{Result, WrapErr};
use crossterm::event::{self, Event as TermEvent, KeyCode, KeyEvent, KeyModifiers, MouseEventKind};
use k8s_openapi::jiff::Timestamp;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::model::{App, Effect, Msg, ObjKey, Scope, update};
use crate::retire;
use crate::terminal;
use crate::views;
use crate::watch::{ConnectOptions, Connection, Watchers, connect, connect_checked};

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

    let (tx, mut rx) = unbounded_channel::<Msg>();
    // Connections made for `:ctx`, handed back to this task (a client is
    // not a message the pure model could hold).
    let (conn_tx, mut conn_rx) = unbounded_channel::<(String, Connection)>();
    // The client of the current connection: retirements run with it.
    let mut client = conn.client.clone();
    let mut watchers = Watchers::new(
        conn.client.clone(),
        scope,
        app.agent_lease.clone(),
        app.generation,
        tx.clone(),
    );
    watchers.ensure(&app.needed_kinds());

    let mut guard = terminal::setup(opts.mouse).wrap_err("setting up the terminal")?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let input = spawn_input(tx.clone(), stop.clone());
    let ticker = tokio::spawn(tick(tx.clone()));

    let result: Result<()> = async {
        loop {
            if app.dirty {
                app.refresh();
                guard
                    .terminal
                    .draw(|f| views::draw(f, &app))
                    .wrap_err("drawing")?;
                app.dirty = false;
                if panic_requested() {
                    panic!("panic requested by {PANIC_ENV} (terminal restore test)");
                }
            }
            let first = tokio::select! {
                m = rx.recv() => m,
                c = conn_rx.recv() => match c {
                    Some((context, conn)) => {
                        // Only the context still asked for is taken.
                        if app.switching.as_deref() != Some(context.as_str()) {
                            continue;
                        }
                        let effects = update(
                            &mut app,
                            Msg::Switched {
                                context,
                                contexts: conn.contexts.clone(),
                            },
                        );
                        client = conn.client.clone();
                        watchers.stop();
                        watchers = Watchers::new(
                            conn.client,
                            app.scope.clone(),
                            app.agent_lease.clone(),
                            app.generation,
                            tx.clone(),
                        );
                        for e in effects {
                            if let Effect::Watch(kinds) = e {
                                watchers.ensure(&kinds);
                            }
                        }
                        continue;
                    }
                    None => continue,
                },
            };
            let Some(first) = first else {
                return Ok(());
            };
            let mut msgs = vec![first];
            while msgs.len() < BATCH {
                match rx.try_recv() {
                    Ok(m) => msgs.push(m),
                    Err(_) => break,
                }
            }
            for msg in msgs {
                for effect in update(&mut app, msg) {
                    match effect {
                        Effect::Quit => return Ok(()),
                        Effect::Review {
                            action,
                            namespace,
                            name,
                        } => {
                            let (client, tx) = (client.clone(), tx.clone());
                            tokio::spawn(async move {
                                let r = retire::review::review(&client, &action, &namespace, &name)
                                    .await;
                                let _ = tx.send(Msg::Reviewed(Box::new(r)));
                            });
                        }
                        Effect::Execute(review) => {
                            let (client, tx) = (client.clone(), tx.clone());
                            tokio::spawn(async move {
                                let r = retire::execute::execute(&client, &review).await;
                                let _ = tx.send(Msg::Executed(Box::new(r)));
                            });
                        }
                        Effect::Watch(kinds) => watchers.ensure(&kinds),
                        Effect::Rescope(scope) => {
                            watchers.stop();
                            watchers = Watchers::new(
                                client.clone(),
                                scope,
                                app.agent_lease.clone(),
                                app.generation,
                                tx.clone(),
                            );
                        }
                        Effect::Connect { context } => {
                            let opts = ConnectOptions {
                                context: Some(context.clone()),
                                ..opts.connect.clone()
                            };
                            let (tx, conn_tx) = (tx.clone(), conn_tx.clone());
                            tokio::spawn(async move {
                                match connect_checked(&opts).await {
                                    Ok(c) => {
                                        let _ = conn_tx.send((context, c));
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
                if app.quit {
                    return Ok(());
                }
            }
        }
    }
    .await;

    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    ticker.abort();
    watchers.stop();
    drop(guard);
    let _ = input.join();
    result
}

/// Test hook: with this variable set the app panics after its first
/// frame, so the smoke test can check that a panic restores the terminal.
pub const PANIC_ENV: &str = "BERTH_CONSOLE_TEST_PANIC";

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

fn spawn_input(
    tx: UnboundedSender<Msg>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<()> {
    // Mouse events arrive only with --mouse (capture is off otherwise).
    std::thread::spawn(move || {
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            match event::poll(Duration::from_millis(100)) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(_) => return,
            }
            let msg = match event::read() {
                Ok(TermEvent::Key(k)) => Msg::Key(k),
                Ok(TermEvent::Resize(..)) => Msg::Resize,
                Ok(TermEvent::Paste(text)) => Msg::Paste(text),
                Ok(TermEvent::Mouse(m)) => match m.kind {
                    MouseEventKind::ScrollDown => {
                        Msg::Key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE))
                    }
                    MouseEventKind::ScrollUp => {
                        Msg::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE))
                    }
                    _ => continue,
                },
                Ok(_) => continue,
                Err(_) => return,
            };
            if tx.send(msg).is_err() {
                return;
            }
        }
    })
}
