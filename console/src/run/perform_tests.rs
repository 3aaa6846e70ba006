//! The effect interpreter without a cluster: every effect answers with a
//! message (or stops the loop), whatever the cluster does. The client
//! points at a port nobody listens on, so requests fail at once; the
//! watchers' first message needs no answer at all.

use std::time::Duration;

use kube::Client;
use tokio::sync::mpsc::{Receiver, UnboundedReceiver, channel, unbounded_channel};

use super::perform::{Effects, Flow, Hold, Outbox};
use crate::model::{
    App, DEFAULT_AGENT_LEASE, Effect, Handover, Kind, Msg, Scope, WatchEvent, WatchKey, update,
};
use crate::retire::Action;
use crate::watch::{ConnectOptions, Connection, WatchStarts, client_from_config};

/// A terminal that records being handed over.
#[derive(Default)]
struct Recorder {
    suspended: usize,
    resumed: usize,
}

impl Hold for Recorder {
    fn suspend(&mut self) {
        self.suspended += 1;
    }
    fn resume(&mut self) -> std::io::Result<()> {
        self.resumed += 1;
        Ok(())
    }
}

/// A closed port on this machine: connecting is refused at once.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

fn unreachable_client() -> (Client, WatchStarts) {
    let url = format!("http://127.0.0.1:{}", closed_port());
    let config = kube::Config::new(url.parse().expect("url"));
    client_from_config(config).expect("client")
}

/// A kubeconfig with one context, `only`, on a closed port.
fn kubeconfig(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "berth-perform-{}-{name}.kubeconfig",
        std::process::id()
    ));
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"http://127.0.0.1:{}\"}}\n\
         contexts:\n- name: only\n  context: {{cluster: c, user: u}}\nusers:\n- name: u\n  user: {{}}\n\
         current-context: only\n",
        closed_port()
    );
    std::fs::write(&path, text).expect("write kubeconfig");
    path
}

struct Rig {
    effects: Effects,
    answers: UnboundedReceiver<Msg>,
    events: Receiver<Msg>,
}

fn rig(generation: u64, connect: ConnectOptions) -> Rig {
    let (client, starts) = unreachable_client();
    let (atx, answers) = unbounded_channel();
    let (etx, events) = channel(64);
    let lease = (
        DEFAULT_AGENT_LEASE.0.to_string(),
        DEFAULT_AGENT_LEASE.1.to_string(),
    );
    let effects = Effects::new(
        client,
        starts,
        Scope::All,
        generation,
        lease,
        connect,
        Outbox {
            answers: atx,
            events: etx,
        },
    );
    Rig {
        effects,
        answers,
        events,
    }
}

/// The next answer; generous, as the machine may be slow (a refused
/// connection answers at once).
async fn next(rx: &mut UnboundedReceiver<Msg>) -> Msg {
    tokio::time::timeout(Duration::from_secs(120), rx.recv())
        .await
        .expect("an answer")
        .expect("channel open")
}

/// The generation and key of the first watch message queued.
fn first_watch(rx: &mut Receiver<Msg>) -> (u64, WatchKey) {
    match rx.try_recv() {
        Ok(Msg::Watched(g, key, WatchEvent::Init)) => (g, key),
        other => panic!("expected a watch start, got {other:?}"),
    }
}

async fn perform(rig: &mut Rig, effect: Effect) -> Flow {
    rig.effects.perform(effect, &mut ()).await.expect("perform")
}

#[tokio::test]
async fn quit_ends_the_loop_and_answers_nothing() {
    let mut rig = rig(0, ConnectOptions::default());
    assert_eq!(perform(&mut rig, Effect::Quit).await, Flow::Quit);
    assert!(rig.answers.try_recv().is_err());
    assert!(rig.events.try_recv().is_err());
}

#[tokio::test]
async fn watches_are_tagged_with_the_generation_of_their_connection() {
    let mut rig = rig(4, ConnectOptions::default());
    let runtimes = WatchKey::all(Kind::Runtime);
    let flow = perform(&mut rig, Effect::Watch(vec![runtimes.clone()])).await;
    assert_eq!(flow, Flow::Continue);
    assert_eq!(first_watch(&mut rig.events), (4, runtimes.clone()));
    // Running already: not started again.
    perform(&mut rig, Effect::Watch(vec![runtimes.clone()])).await;
    assert!(rig.events.try_recv().is_err());

    // A new scope: every watch starts over, as the new generation.
    let rescope = Effect::Rescope {
        scope: Scope::Namespace("demo".into()),
        generation: 5,
    };
    perform(&mut rig, rescope).await;
    perform(&mut rig, Effect::Watch(vec![runtimes.clone()])).await;
    assert_eq!(first_watch(&mut rig.events), (5, runtimes));
}

#[tokio::test]
async fn requests_answer_as_messages_even_when_the_cluster_is_unreachable() {
    let mut rig = rig(7, ConnectOptions::default());
    let key = ("demo".to_string(), "web".to_string());
    perform(&mut rig, Effect::Fetch(7, Kind::Pod, key.clone())).await;
    match next(&mut rig.answers).await {
        Msg::Fetched(7, Kind::Pod, k, Err(_)) => assert_eq!(k, key),
        other => panic!("expected a failed fetch, got {other:?}"),
    }

    let review = Effect::Review {
        action: Action::Suspend,
        namespace: "demo".into(),
        name: "web".into(),
    };
    perform(&mut rig, review).await;
    match next(&mut rig.answers).await {
        Msg::Reviewed(r) => assert!(r.is_err(), "{r:?}"),
        other => panic!("expected a review, got {other:?}"),
    }
}

#[tokio::test]
async fn a_context_that_cannot_be_used_answers_switch_failed() {
    let path = kubeconfig("failed");
    let connect = ConnectOptions {
        kubeconfig: Some(path.clone()),
        context: None,
    };
    let mut rig = rig(0, connect);
    let mut term = Recorder::default();
    // Not in the kubeconfig, then in it but not answering.
    for context in ["nope", "only"] {
        let effect = Effect::Connect {
            context: context.into(),
        };
        let flow = rig
            .effects
            .perform(effect, &mut term)
            .await
            .expect("perform");
        assert_eq!(flow, Flow::Continue);
        match next(&mut rig.answers).await {
            Msg::SwitchFailed { context: c, error } => {
                assert_eq!(c, context);
                assert!(!error.is_empty());
            }
            other => panic!("expected SwitchFailed, got {other:?}"),
        }
    }
    // No credential plugin: the terminal was never handed over.
    assert_eq!((term.suspended, term.resumed), (0, 0));
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn a_switch_is_a_message_and_its_effects_move_the_watchers() {
    let mut app = crate::fixtures::app();
    app.session.contexts = vec!["kwok-test".into(), "prod".into()];
    let mut rig = rig(app.session.generation, ConnectOptions::default());
    let old = app.session.generation;
    app.session.switching = Some("prod".into());
    // What the connect task sends once the context answered.
    let (client, starts) = unreachable_client();
    let conn = Connection {
        client,
        starts,
        context: "prod".into(),
        contexts: vec!["kwok-test".into(), "prod".into()],
        default_namespace: "default".into(),
    };
    let msg = Msg::Connected {
        context: "prod".into(),
        contexts: conn.contexts.clone(),
        conn: Handover::new(conn),
    };
    for effect in update(&mut app, msg) {
        perform(&mut rig, effect).await;
    }
    let new = app.session.generation;
    assert_ne!(new, old);
    // The new watchers tag their events with the new generation, which
    // the model accepts; the old generation's are dropped.
    let mut started = Vec::new();
    while let Ok(m) = rig.events.try_recv() {
        started.push(m);
    }
    assert!(!started.is_empty());
    assert!(
        started
            .iter()
            .all(|m| matches!(m, Msg::Watched(g, _, WatchEvent::Init) if *g == new))
    );
    let key = WatchKey::all(Kind::Runtime);
    update(&mut app, Msg::Watched(new, key.clone(), WatchEvent::Init));
    assert!(app.data.pending.contains_key(&key));
    update(
        &mut app,
        Msg::Watched(old, key.clone(), WatchEvent::InitDone),
    );
    assert!(
        app.data.pending.contains_key(&key),
        "old generation ignored"
    );
}

#[tokio::test]
async fn a_handover_of_something_else_is_not_adopted() {
    let mut rig = rig(1, ConnectOptions::default());
    let adopt = Effect::Adopt {
        conn: Handover::new("not a connection"),
        scope: Scope::All,
        generation: 2,
    };
    perform(&mut rig, adopt).await;
    let runtimes = WatchKey::all(Kind::Runtime);
    perform(&mut rig, Effect::Watch(vec![runtimes.clone()])).await;
    assert_eq!(first_watch(&mut rig.events), (1, runtimes));
}

/// The app type is what the loop drives; a fresh one asks for watches
/// first, which the interpreter starts.
#[tokio::test]
async fn the_first_effect_of_a_fresh_app_starts_its_watches() {
    let mut app = App::new("ctx", Scope::All, crate::fixtures::now());
    let mut rig = rig(app.session.generation, ConnectOptions::default());
    let first = app.watch_effect();
    perform(&mut rig, first).await;
    let (g, _) = first_watch(&mut rig.events);
    assert_eq!(g, app.session.generation);
}
