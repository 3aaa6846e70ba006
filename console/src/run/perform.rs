//! The effect interpreter: [`Effects::perform`] carries out one
//! [`Effect`] of the model. Everything it learns comes back as a [`Msg`]
//! (into `answers`, or `events` for watch events), so the model's
//! [`crate::model::update`] stays the only thing that changes the state.
//! Nothing here blocks the app task, except connecting to a context whose
//! credential plugin may prompt: then the terminal is handed over until it
//! is done.

use kube::Client;
use tokio::sync::mpsc::{Sender, UnboundedSender};

use crate::model::{ClusterId, Effect, Handover, Msg, ObjKey, Origin, Scope};
use crate::retire::{self, RetireError};
use crate::watch::{
    self, ConnectOptions, Connection, WatchStarts, Watchers, connect_answering, prompts_on_terminal,
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

/// One cluster's connection in use: requests about that cluster run with
/// its client, its watchers feed `events` tagged with its id.
struct Live {
    cluster: ClusterId,
    client: Client,
    starts: WatchStarts,
    watchers: Watchers,
    /// The app's generation these watchers and requests belong to.
    generation: u64,
}

/// Where what the I/O side learns goes: two queues into the app task.
#[derive(Clone, Debug)]
pub struct Outbox {
    /// Keys, ticks and answers to requests: few, never held back.
    pub answers: UnboundedSender<Msg>,
    /// Watch events: many, bounded (backpressure on the watchers).
    pub events: Sender<Msg>,
}

/// Carries out the model's effects against one connection per cluster. A
/// request about a cluster goes to that cluster's connection or nowhere:
/// there is no "current" connection to fall back on.
pub struct Effects {
    lives: Vec<Live>,
    /// How to connect for `:ctx` (the kubeconfig of the start).
    connect: ConnectOptions,
    agent_lease: ObjKey,
    answers: UnboundedSender<Msg>,
    events: Sender<Msg>,
}

impl Effects {
    /// Uses `conns` (one per cluster) for connection `generation`,
    /// watching `scope`; no watch runs until an [`Effect::Watch`].
    pub fn new(
        conns: Vec<Connection>,
        scope: Scope,
        generation: u64,
        agent_lease: ObjKey,
        connect: ConnectOptions,
        outbox: Outbox,
    ) -> Self {
        let Outbox { answers, events } = outbox;
        let mut effects = Effects {
            lives: Vec::new(),
            connect,
            agent_lease,
            answers,
            events,
        };
        let conns = conns
            .into_iter()
            .map(|c| (c.cluster(), c.client, c.starts))
            .collect();
        effects.use_connections(conns, scope, generation);
        effects
    }

    /// The connection of `cluster`, if it is one of those in use.
    fn live(&self, cluster: &ClusterId) -> Option<&Live> {
        self.lives.iter().find(|l| l.cluster == *cluster)
    }

    /// The connection of `origin`'s cluster, if it is still the one of
    /// `origin`'s generation.
    fn live_of(&self, origin: &Origin) -> Option<&Live> {
        self.live(&origin.cluster)
            .filter(|l| l.generation == origin.generation)
    }

    /// Carries out one effect.
    pub async fn perform(&mut self, effect: Effect, term: &mut dyn Hold) -> std::io::Result<Flow> {
        match effect {
            Effect::Quit => return Ok(Flow::Quit),
            Effect::Watch(cluster, keys) => {
                if let Some(l) = self.lives.iter_mut().find(|l| l.cluster == cluster) {
                    l.watchers.sync(&keys);
                }
            }
            Effect::Review {
                id,
                cluster,
                action,
                namespace,
                name,
            } => match self.live(&cluster) {
                Some(l) => {
                    // The review records the cluster of the connection
                    // that made it, which is the only one it may go to.
                    let (client, cluster) = (l.client.clone(), l.cluster.clone());
                    self.answer(async move {
                        let r =
                            retire::review::review(&client, &cluster, &action, &namespace, &name)
                                .await;
                        Msg::Reviewed {
                            id,
                            result: Box::new(r),
                        }
                    });
                }
                None => {
                    let _ = self.answers.send(Msg::Reviewed {
                        id,
                        result: Box::new(Err(not_connected(&cluster))),
                    });
                }
            },
            Effect::Execute { generation, review } => {
                let origin = Origin {
                    cluster: review.cluster.clone(),
                    generation,
                };
                match self.live_of(&origin) {
                    Some(l) => {
                        let client = l.client.clone();
                        self.answer(async move {
                            let r = retire::execute::execute(&client, &review).await;
                            Msg::Executed(Box::new(r))
                        });
                    }
                    None => {
                        let _ = self
                            .answers
                            .send(Msg::Executed(Box::new(Err(not_connected(&review.cluster)))));
                    }
                }
            }
            Effect::Fetch(origin, kind, key) => {
                // Not connected (any more): the Details screen of that
                // connection is gone too, nothing waits for an answer.
                if let Some(l) = self.live_of(&origin) {
                    let client = l.client.clone();
                    self.answer(async move {
                        let r = watch::fetch(client, kind, &key)
                            .await
                            .map_err(|e| e.to_string());
                        Msg::Fetched(origin, kind, key, r)
                    });
                }
            }
            Effect::Rescope { scope, generation } => {
                let conns = self
                    .lives
                    .iter()
                    .map(|l| (l.cluster.clone(), l.client.clone(), l.starts.clone()))
                    .collect();
                self.use_connections(conns, scope, generation);
            }
            Effect::Adopt {
                conns,
                scope,
                generation,
            } => {
                // Only the Connections this interpreter handed over come
                // back here, each under the cluster it connects to.
                let conns = conns
                    .iter()
                    .filter_map(|(id, h)| h.get::<Connection>().filter(|c| c.cluster() == *id))
                    .map(|c| (c.cluster(), c.client.clone(), c.starts.clone()))
                    .collect();
                self.use_connections(conns, scope, generation);
            }
            Effect::Connect { contexts } => self.connect(contexts, term).await?,
        }
        Ok(Flow::Continue)
    }

    /// Stops every watcher (leaving the app).
    pub fn stop(&mut self) {
        for l in &mut self.lives {
            l.watchers.stop();
        }
    }

    /// Runs a request off the app task; its answer comes back as a
    /// message.
    fn answer<F>(&self, request: F)
    where
        F: Future<Output = Msg> + Send + 'static,
    {
        let tx = self.answers.clone();
        tokio::spawn(async move {
            let _ = tx.send(request.await);
        });
    }

    /// Drops every watch and uses these connections from now on.
    fn use_connections(
        &mut self,
        conns: Vec<(ClusterId, Client, WatchStarts)>,
        scope: Scope,
        generation: u64,
    ) {
        self.stop();
        self.lives = conns
            .into_iter()
            .map(|(cluster, client, starts)| {
                let watchers = Watchers::new(
                    client.clone(),
                    starts.clone(),
                    scope.clone(),
                    self.agent_lease.clone(),
                    Origin {
                        cluster: cluster.clone(),
                        generation,
                    },
                    self.events.clone(),
                );
                Live {
                    cluster,
                    client,
                    starts,
                    watchers,
                    generation,
                }
            })
            .collect();
    }

    /// Connects to `contexts` off the app task (the console stays usable
    /// on the old ones meanwhile), or with the terminal handed over when
    /// a credential plugin may prompt. Answers [`Msg::Connected`] or
    /// [`Msg::SwitchFailed`].
    async fn connect(&mut self, contexts: Vec<String>, term: &mut dyn Hold) -> std::io::Result<()> {
        let options: Vec<ConnectOptions> = contexts
            .iter()
            .map(|c| self.connect.for_context(c))
            .collect();
        let prompts = options.iter().any(prompts_on_terminal);
        if prompts {
            // A plugin may prompt: it gets the terminal until every
            // connection is made or refused.
            term.suspend();
            let names = berth_shared::sanitize::short(&contexts.join(","));
            if contexts.len() == 1 {
                println!(
                    "berth: switching to context {names}; its credential plugin may ask for input."
                );
            } else {
                println!(
                    "berth: switching to contexts {names}; their credential plugins may ask for input."
                );
            }
        }
        // Each in its own task: a panic while connecting is a failed
        // context, not a dead console. One after the other when a plugin
        // may prompt (two prompts at once would share the terminal).
        let attempt = connect_each(options, !prompts);
        if prompts {
            let r = attempt.await;
            term.resume()?;
            // The terminal was set up again: everything is drawn anew.
            let _ = self.answers.send(Msg::Resize);
            let _ = self.answers.send(connected(contexts, r));
        } else {
            let tx = self.answers.clone();
            tokio::spawn(async move {
                let _ = tx.send(connected(contexts, attempt.await));
            });
        }
        Ok(())
    }
}

/// Why a request about `cluster` was not sent.
fn not_connected(cluster: &ClusterId) -> RetireError {
    RetireError::Invalid(format!(
        "cluster {cluster} is not connected any more (the console switched contexts); nothing was changed"
    ))
}

/// One connection attempt: the connection (and why it does not answer,
/// if it does not), or why none could be made.
type Attempt = Result<(Connection, Option<String>), String>;

/// Connects with each of `options`, all at once or one after another.
async fn connect_each(options: Vec<ConnectOptions>, at_once: bool) -> Vec<Attempt> {
    let one = |o: ConnectOptions| async move {
        match tokio::spawn(async move { connect_answering(&o).await }).await {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    };
    if at_once {
        futures::future::join_all(options.into_iter().map(one)).await
    } else {
        let mut out = Vec::new();
        for o in options {
            out.push(one(o).await);
        }
        out
    }
}

/// The message a switch answers with: the connections made, if any
/// context answered; otherwise why the switch failed.
fn connected(asked: Vec<String>, attempts: Vec<Attempt>) -> Msg {
    let mut conns = Vec::new();
    let mut problems = Vec::new();
    let mut answered = false;
    let mut contexts = Vec::new();
    for (context, attempt) in asked.iter().zip(attempts) {
        match attempt {
            Ok((c, silent)) => {
                contexts.clone_from(&c.contexts);
                match silent {
                    None => answered = true,
                    Some(e) => problems.push((context.clone(), e)),
                }
                conns.push((c.cluster(), Handover::new(c)));
            }
            Err(e) => problems.push((context.clone(), e)),
        }
    }
    if !answered {
        let error = problems
            .iter()
            .map(|(c, e)| {
                if asked.len() > 1 {
                    format!("{c}: {e}")
                } else {
                    e.clone()
                }
            })
            .collect::<Vec<_>>()
            .join("; ");
        return Msg::SwitchFailed { asked, error };
    }
    Msg::Connected {
        asked,
        contexts,
        conns,
        problems,
    }
}
