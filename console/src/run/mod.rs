//! The interactive app: one task owns the [`App`] and applies messages from
//! the input thread, the ticker, the watchers and the answers of requests;
//! it redraws only when something changed, key presses first and at once,
//! watch events coalesced into at most ~20 frames a second
//! ([`crate::frames`]). Every effect of an update goes through the one
//! interpreter, [`perform::Effects::perform`], and everything it learns
//! comes back as a message: [`update`] is the only path that changes the
//! state. Nothing that talks to the cluster runs on this task: a `:ctx`
//! switch connects in its own task and the console stays usable on the old
//! context meanwhile — unless the new context's credential plugin may
//! prompt, in which case the TUI is suspended and the plugin gets the
//! terminal.

pub mod perform;
#[cfg(test)]
mod perform_tests;

use std::time::{Duration, Instant};

use color_eyre::eyre::{Result, WrapErr};
use k8s_openapi::jiff::Timestamp;
use tokio::sync::mpsc::{UnboundedSender, channel, unbounded_channel};

use crate::frames::FrameLimiter;
use crate::model::{App, ClusterId, Msg, ObjKey, Scope, update};
use crate::tui::Tui;
use crate::views;
use crate::watch::{ConnectOptions, Connection, connect};
use perform::{Effects, Flow, Outbox};

/// Options of the interactive app.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The kubeconfig (its context unused: see `contexts`).
    pub connect: ConnectOptions,
    /// The contexts to show, one cluster each (empty: the kubeconfig's
    /// current context).
    pub contexts: Vec<String>,
    /// Groups of contexts declared to run the same grants file.
    pub same_grants: Vec<Vec<String>>,
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

/// Runs the TUI until the user quits.
pub async fn run(opts: RunOptions) -> Result<()> {
    let conns = connect_all(&opts.connect, &opts.contexts).await?;
    // The first context's namespace, as with one context.
    let scope = opts
        .scope
        .clone()
        .unwrap_or_else(|| Scope::Namespace(conns[0].default_namespace.clone()));
    let mut app = new_app(&opts, &conns, &scope);

    let (tx, mut rx) = unbounded_channel::<Msg>();
    let (wtx, mut wrx) = channel::<Msg>(WATCH_QUEUE);
    let mut effects = Effects::new(
        conns,
        scope,
        app.session.generation,
        opts.agent_lease.clone(),
        opts.connect.clone(),
        Outbox {
            answers: tx.clone(),
            events: wtx,
        },
    );
    let first = app.watch_effects();

    let mut tui = Tui::start(opts.mouse, tx.clone()).wrap_err("setting up the terminal")?;
    let ticker = tokio::spawn(tick(tx.clone()));
    let result: Result<()> = async {
        for effect in first {
            effects.perform(effect, &mut tui).await?;
        }
        let mut frames = FrameLimiter::new();
        // A frame the user waits for (a key press, an answer): drawn at once.
        let mut urgent = true;
        loop {
            draw_when_due(&mut app, &mut tui, &mut frames, &mut urgent)?;
            // Only watch events wait for a frame; with nothing to draw the
            // loop sleeps until a message comes (idle is no work).
            let due = app
                .ui
                .dirty
                .then(|| frames.due())
                .flatten()
                .map_or_else(far_future, tokio::time::Instant::from_std);
            let mut msgs = Vec::new();
            tokio::select! {
                // Key presses and answers before watch events.
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
            let before = app.completion();
            for msg in msgs {
                for effect in update(&mut app, msg) {
                    if effects.perform(effect, &mut tui).await? == Flow::Quit {
                        return Ok(());
                    }
                }
                if app.ui.quit {
                    return Ok(());
                }
            }
            // The view's last list, or the last syncing watch, just
            // completed: its first complete frame is what the user waits
            // for, not one more coalesced update.
            if before.completed_by(app.completion()) {
                urgent = true;
            }
        }
    }
    .await;

    ticker.abort();
    effects.stop();
    drop(tui);
    result
}

/// Draws a frame when the state changed and the limiter allows one now
/// (at once when `urgent`); a drawn frame is no longer urgent.
fn draw_when_due(
    app: &mut App,
    tui: &mut Tui,
    frames: &mut FrameLimiter,
    urgent: &mut bool,
) -> Result<()> {
    if app.ui.dirty && frames.ready(Instant::now(), *urgent) {
        let started = Instant::now();
        draw(app, tui)?;
        frames.drawn(started, started.elapsed());
        app.ui.dirty = false;
        *urgent = false;
        if panic_requested() {
            panic!("panic requested by {PANIC_ENV} (terminal restore test)");
        }
    }
    Ok(())
}

/// The console's state at start: the fleet's clusters, the session's
/// options, the scope.
fn new_app(opts: &RunOptions, conns: &[Connection], scope: &Scope) -> App {
    let ids: Vec<ClusterId> = conns.iter().map(|c| c.cluster()).collect();
    let mut app = App::of_fleet(ids, scope.clone(), Timestamp::now());
    app.session.contexts = conns[0].contexts.clone();
    app.session.read_only = opts.read_only;
    app.session.agent_lease = opts.agent_lease.clone();
    app.session.same_grants = opts
        .same_grants
        .iter()
        .map(|g| g.iter().map(ClusterId::new).collect())
        .collect();
    app.ui.no_color = opts.no_color;
    app
}

/// One frame: the derived rows refreshed, drawn, and what fitted on the
/// screen handed back to the model (the viewport).
fn draw(app: &mut App, tui: &mut Tui) -> Result<()> {
    app.refresh();
    if let Some(term) = tui.terminal() {
        let mut fit = None;
        term.draw(|f| fit = Some(views::draw(f, app)))
            .wrap_err("drawing")?;
        if let Some(fit) = fit {
            update(app, Msg::Drawn(fit));
        }
    }
    Ok(())
}

/// A client for each context (the current one when none is named). A
/// context that cannot be used at all (not in the kubeconfig, broken
/// credentials) is an error naming it; one that does not answer is not:
/// its watches retry, its rows say so, the others are shown meanwhile.
async fn connect_all(base: &ConnectOptions, contexts: &[String]) -> Result<Vec<Connection>> {
    if contexts.is_empty() {
        let conn = connect(base).await.wrap_err("connecting to the cluster")?;
        return Ok(vec![conn]);
    }
    let attempts = futures::future::join_all(contexts.iter().map(|c| {
        let opts = base.for_context(c);
        async move { connect(&opts).await }
    }))
    .await;
    contexts
        .iter()
        .zip(attempts)
        .map(|(c, a)| a.wrap_err_with(|| format!("connecting to context {c}")))
        .collect()
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

/// The TUI hands the terminal to a prompting credential plugin.
impl perform::Hold for Tui {
    fn suspend(&mut self) {
        Tui::suspend(self);
    }
    fn resume(&mut self) -> std::io::Result<()> {
        Tui::resume(self)
    }
}
