//! The effect interpreter: [`Effects::perform`] carries out one
//! [`Effect`] of the model. Everything it learns comes back as a [`Msg`]
//! (into `answers`, or `events` for watch events), so the model's
//! [`crate::model::update`] stays the only thing that changes the state.
//! Nothing here blocks the app task, except connecting to a context whose
//! credential plugin may prompt: then the terminal is handed over until it
//! is done.

use kube::Client;
use tokio::sync::mpsc::{Sender, UnboundedSender};

use crate::model::{Effect, Handover, Msg, ObjKey, Scope};
use crate::retire;
use crate::watch::{
    self, ConnectError, ConnectOptions, Connection, WatchStarts, Watchers, connect_checked,
    prompts_on_terminal,
};

/// What the loop does after an effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Quit,
}

/// The terminal, as far as the interpreter needs it: let go while a
/// credential plugin may prompt, taken back after.
pub trait Hold {
    /// Gives the terminal back (restored, input stopped).
    fn suspend(&mut self);
    /// Takes it again.
    fn resume(&mut self) -> std::io::Result<()>;
}

/// No terminal (`berth` without a TUI, tests): nothing to hand over.
impl Hold for () {
    fn suspend(&mut self) {}
    fn resume(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The connection in use: requests run with its client, its watchers feed
/// `events`.
struct Live {
    client: Client,
    starts: WatchStarts,
    watchers: Watchers,
}

/// Where what the I/O side learns goes: two queues into the app task.
#[derive(Clone, Debug)]
pub struct Outbox {
    /// Keys, ticks and answers to requests: few, never held back.
    pub answers: UnboundedSender<Msg>,
    /// Watch events: many, bounded (backpressure on the watchers).
    pub events: Sender<Msg>,
}

/// Carries out the model's effects against one connection at a time.
pub struct Effects {
    live: Live,
    /// How to connect for `:ctx` (the kubeconfig of the start).
    connect: ConnectOptions,
    agent_lease: ObjKey,
    answers: UnboundedSender<Msg>,
    events: Sender<Msg>,
}

impl Effects {
    /// Uses `client` for connection `generation`, watching `scope`; no
    /// watch runs until an [`Effect::Watch`].
    pub fn new(
        client: Client,
        starts: WatchStarts,
        scope: Scope,
        generation: u64,
        agent_lease: ObjKey,
        connect: ConnectOptions,
        outbox: Outbox,
    ) -> Self {
        let Outbox { answers, events } = outbox;
        let watchers = Watchers::new(
            client.clone(),
            starts.clone(),
            scope,
            agent_lease.clone(),
            generation,
            events.clone(),
        );
        Effects {
            live: Live {
                client,
                starts,
                watchers,
            },
            connect,
            agent_lease,
            answers,
            events,
        }
    }

    /// Carries out one effect.
    pub async fn perform(&mut self, effect: Effect, term: &mut dyn Hold) -> std::io::Result<Flow> {
        match effect {
            Effect::Quit => return Ok(Flow::Quit),
            Effect::Watch(keys) => self.live.watchers.sync(&keys),
            Effect::Review {
                action,
                namespace,
                name,
            } => self.answer(move |client| async move {
                let r = retire::review::review(&client, &action, &namespace, &name).await;
                Msg::Reviewed(Box::new(r))
            }),
            Effect::Execute(review) => self.answer(move |client| async move {
                let r = retire::execute::execute(&client, &review).await;
                Msg::Executed(Box::new(r))
            }),
            Effect::Fetch(generation, kind, key) => self.answer(move |client| async move {
                let r = watch::fetch(client, kind, &key)
                    .await
                    .map_err(|e| e.to_string());
                Msg::Fetched(generation, kind, key, r)
            }),
            Effect::Rescope { scope, generation } => {
                let (client, starts) = (self.live.client.clone(), self.live.starts.clone());
                self.use_connection(client, starts, scope, generation);
            }
            Effect::Adopt {
                conn,
                scope,
                generation,
            } => {
                // Only the Connection this interpreter handed over comes
                // back here.
                if let Some(c) = conn.get::<Connection>() {
                    self.use_connection(c.client.clone(), c.starts.clone(), scope, generation);
                }
            }
            Effect::Connect { context } => self.connect(context, term).await?,
        }
        Ok(Flow::Continue)
    }

    /// Stops every watcher (leaving the app).
    pub fn stop(&mut self) {
        self.live.watchers.stop();
    }

    /// Runs a request with the current client off the app task; its answer
    /// comes back as a message.
    fn answer<F>(&self, request: impl FnOnce(Client) -> F)
    where
        F: Future<Output = Msg> + Send + 'static,
    {
        let (fut, tx) = (request(self.live.client.clone()), self.answers.clone());
        tokio::spawn(async move {
            let _ = tx.send(fut.await);
        });
    }

    /// Drops every watch and uses `client` from now on.
    fn use_connection(
        &mut self,
        client: Client,
        starts: WatchStarts,
        scope: Scope,
        generation: u64,
    ) {
        self.live.watchers.stop();
        let watchers = Watchers::new(
            client.clone(),
            starts.clone(),
            scope,
            self.agent_lease.clone(),
            generation,
            self.events.clone(),
        );
        self.live = Live {
            client,
            starts,
            watchers,
        };
    }

    /// Connects to `context` off the app task (the console stays usable on
    /// the old one meanwhile), or with the terminal handed over when its
    /// credential plugin may prompt. Answers [`Msg::Connected`] or
    /// [`Msg::SwitchFailed`].
    async fn connect(&mut self, context: String, term: &mut dyn Hold) -> std::io::Result<()> {
        let opts = ConnectOptions {
            context: Some(context.clone()),
            ..self.connect.clone()
        };
        let prompts = prompts_on_terminal(&opts);
        if prompts {
            // The plugin may prompt: it gets the terminal until the
            // connection is made or refused.
            term.suspend();
            println!(
                "berth: switching to context {}; its credential plugin may ask for input.",
                berth_shared::sanitize::short(&context)
            );
        }
        // In its own task: a panic while connecting is a failed switch,
        // not a dead console.
        let attempt = tokio::spawn(async move { connect_checked(&opts).await });
        if prompts {
            let r = attempt.await;
            term.resume()?;
            // The terminal was set up again: everything is drawn anew.
            let _ = self.answers.send(Msg::Resize);
            let _ = self.answers.send(connected(context, r));
        } else {
            let tx = self.answers.clone();
            tokio::spawn(async move {
                let _ = tx.send(connected(context, attempt.await));
            });
        }
        Ok(())
    }
}

/// The message a connection attempt answers with.
fn connected(
    context: String,
    attempt: Result<Result<Connection, ConnectError>, tokio::task::JoinError>,
) -> Msg {
    let error = match attempt {
        Ok(Ok(c)) => {
            return Msg::Connected {
                context,
                contexts: c.contexts.clone(),
                conn: Handover::new(c),
            };
        }
        Ok(Err(e)) => e.to_string(),
        Err(e) => e.to_string(),
    };
    Msg::SwitchFailed { context, error }
}
