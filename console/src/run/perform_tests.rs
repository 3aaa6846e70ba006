//! The effect interpreter without a cluster: every effect answers with a
//! message (or stops the loop), whatever the cluster does. The client
//! points at a port nobody listens on, so requests fail at once; the
//! watchers' first message needs no answer at all.

use std::time::Duration;

use kube::Client;
use tokio::sync::mpsc::{Receiver, UnboundedReceiver, channel, unbounded_channel};

use super::perform::{Effects, Flow, Hold, Outbox};
use crate::model::{
    App, ClusterId, DEFAULT_AGENT_LEASE, Effect, Handover, Kind, Msg, Origin, Scope, WatchEvent,
    WatchKey, update,
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

/// A connection of context `context` through `client`.
fn connection(context: &str, (client, starts): (Client, WatchStarts)) -> Connection {
    Connection {
        client,
        starts,
        context: context.into(),
        contexts: vec!["kwok-test".into(), "prod".into()],
        default_namespace: "default".into(),
    }
}

fn rig_of(generation: u64, connect: ConnectOptions, conns: Vec<Connection>) -> Rig {
    let (atx, answers) = unbounded_channel();
    let (etx, events) = channel(64);
    let lease = (
        DEFAULT_AGENT_LEASE.0.to_string(),
        DEFAULT_AGENT_LEASE.1.to_string(),
    );
    let effects = Effects::new(
        conns,
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

/// One cluster, `kwok-test`, unreachable.
fn rig(generation: u64, connect: ConnectOptions) -> Rig {
    rig_of(
        generation,
        connect,
        vec![connection("kwok-test", unreachable_client())],
    )
}

fn kwok() -> ClusterId {
    ClusterId::new("kwok-test")
}

fn origin(generation: u64) -> Origin {
    Origin {
        cluster: kwok(),
        generation,
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

/// The origin and key of the first watch message queued.
fn first_watch(rx: &mut Receiver<Msg>) -> (Origin, WatchKey) {
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
async fn watches_are_tagged_with_the_cluster_and_generation_of_their_connection() {
    let mut rig = rig(4, ConnectOptions::default());
    let runtimes = WatchKey::all(Kind::Runtime);
    let flow = perform(&mut rig, Effect::Watch(kwok(), vec![runtimes.clone()])).await;
    assert_eq!(flow, Flow::Continue);
    assert_eq!(first_watch(&mut rig.events), (origin(4), runtimes.clone()));
    // Running already: not started again.
    perform(&mut rig, Effect::Watch(kwok(), vec![runtimes.clone()])).await;
    assert!(rig.events.try_recv().is_err());
    // A cluster not connected here starts nothing.
    perform(
        &mut rig,
        Effect::Watch(ClusterId::new("prod"), vec![runtimes.clone()]),
    )
    .await;
    assert!(rig.events.try_recv().is_err());

    // A new scope: every watch starts over, as the new generation.
    let rescope = Effect::Rescope {
        scope: Scope::Namespace("demo".into()),
        generation: 5,
    };
    perform(&mut rig, rescope).await;
    perform(&mut rig, Effect::Watch(kwok(), vec![runtimes.clone()])).await;
    assert_eq!(first_watch(&mut rig.events), (origin(5), runtimes));
}

#[tokio::test]
async fn requests_answer_as_messages_even_when_the_cluster_is_unreachable() {
    let mut rig = rig(7, ConnectOptions::default());
    let key = ("demo".to_string(), "web".to_string());
    perform(&mut rig, Effect::Fetch(origin(7), Kind::Pod, key.clone())).await;
    match next(&mut rig.answers).await {
        Msg::Fetched(o, Kind::Pod, k, Err(_)) => {
            assert_eq!(k, key);
            assert_eq!(o, origin(7));
        }
        other => panic!("expected a failed fetch, got {other:?}"),
    }

    let review = Effect::Review {
        id: 3,
        cluster: kwok(),
        action: Action::Suspend,
        namespace: "demo".into(),
        name: "web".into(),
    };
    perform(&mut rig, review).await;
    match next(&mut rig.answers).await {
        Msg::Reviewed { id: 3, result } => assert!(result.is_err(), "{result:?}"),
        other => panic!("expected a review, got {other:?}"),
    }
}

/// A loopback HTTP server that answers every request with 500 and counts
/// the requests it was sent: which cluster a request went to.
async fn counting_server() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let count = count.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16384];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 {
                        return;
                    }
                    if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                        count.fetch_add(1, Ordering::SeqCst);
                        let body = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no","reason":"InternalError","code":500}"#;
                        let reply = format!(
                            "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if s.write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (port, seen)
}

fn client_at(port: u16) -> (Client, WatchStarts) {
    let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().expect("url"));
    client_from_config(config).expect("client")
}

/// Two clusters: a review, an execution and a fetch of one go to that
/// cluster's connection only; one of a cluster not connected, or of an
/// older generation, goes nowhere and says so.
#[tokio::test]
async fn requests_go_to_their_clusters_connection_and_no_other() {
    use std::sync::atomic::Ordering;
    let ((pa, a), (pb, b)) = (counting_server().await, counting_server().await);
    let mut rig = rig_of(
        2,
        ConnectOptions::default(),
        vec![
            connection("a", client_at(pa)),
            connection("b", client_at(pb)),
        ],
    );
    let review = |cluster: &str| Effect::Review {
        id: 1,
        cluster: ClusterId::new(cluster),
        action: Action::Suspend,
        namespace: "demo".into(),
        name: "web".into(),
    };
    perform(&mut rig, review("b")).await;
    assert!(matches!(next(&mut rig.answers).await, Msg::Reviewed { .. }));
    let (seen_a, seen_b) = (a.load(Ordering::SeqCst), b.load(Ordering::SeqCst));
    assert!(seen_b > 0, "the review reached b");
    assert_eq!(seen_a, 0, "a was sent nothing");

    // A cluster that is not connected: nothing is sent anywhere.
    perform(&mut rig, review("c")).await;
    match next(&mut rig.answers).await {
        Msg::Reviewed { result, .. } => {
            let e = result.expect_err("not connected").to_string();
            assert!(e.contains("cluster c is not connected"), "{e}");
        }
        other => panic!("{other:?}"),
    }

    // An execution of a review made in b, for this generation: b only.
    let plan = crate::retire::plan::plan_runtime(
        &Action::Suspend,
        &serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
            "metadata": {"name": "web", "namespace": "demo", "uid": "u", "resourceVersion": "1"},
            "spec": {"application": "shop", "service": "web",
                     "image": {"repository": "r", "tag": "1"}},
        }))
        .expect("runtime"),
        &Default::default(),
        "me",
        "2026-11-29T12:00:00Z",
    )
    .expect("plan");
    let reviewed = crate::retire::Review {
        cluster: ClusterId::new("b"),
        plan,
        user: "me".into(),
        verdict: crate::retire::Verdict::Accepted,
    };
    let before = (a.load(Ordering::SeqCst), b.load(Ordering::SeqCst));
    perform(
        &mut rig,
        Effect::Execute {
            generation: 2,
            review: Box::new(reviewed.clone()),
        },
    )
    .await;
    assert!(matches!(next(&mut rig.answers).await, Msg::Executed(_)));
    assert_eq!(a.load(Ordering::SeqCst), before.0, "a was sent nothing");
    assert!(b.load(Ordering::SeqCst) > before.1, "the change reached b");

    // The same review after a switch (another generation): sent nowhere.
    let before = (a.load(Ordering::SeqCst), b.load(Ordering::SeqCst));
    perform(
        &mut rig,
        Effect::Execute {
            generation: 1,
            review: Box::new(reviewed),
        },
    )
    .await;
    match next(&mut rig.answers).await {
        Msg::Executed(r) => {
            let e = r.expect_err("old generation").to_string();
            assert!(e.contains("nothing was changed"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        (a.load(Ordering::SeqCst), b.load(Ordering::SeqCst)),
        before,
        "nothing was sent"
    );
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
    // Not in the kubeconfig, then in it but not answering, then both.
    for asked in [vec!["nope"], vec!["only"], vec!["nope", "only"]] {
        let asked: Vec<String> = asked.into_iter().map(str::to_string).collect();
        let effect = Effect::Connect {
            contexts: asked.clone(),
        };
        let flow = rig
            .effects
            .perform(effect, &mut term)
            .await
            .expect("perform");
        assert_eq!(flow, Flow::Continue);
        match next(&mut rig.answers).await {
            Msg::SwitchFailed { asked: a, error } => {
                assert_eq!(a, asked);
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
    let old = crate::fixtures::origin(&app);
    app.session.switching = Some(vec!["prod".into()]);
    // What the connect task sends once the context answered.
    let conn = connection("prod", unreachable_client());
    let msg = Msg::Connected {
        asked: vec!["prod".into()],
        contexts: conn.contexts.clone(),
        conns: vec![(conn.cluster(), Handover::new(conn))],
        problems: Vec::new(),
    };
    for effect in update(&mut app, msg) {
        perform(&mut rig, effect).await;
    }
    let new = crate::fixtures::origin(&app);
    assert_ne!(new, old);
    assert_eq!(new.cluster, ClusterId::new("prod"));
    // The new watchers tag their events with the new cluster and
    // generation, which the model accepts; the old ones' are dropped.
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
    assert!(app.clusters[0].data.pending.contains_key(&key));
    update(
        &mut app,
        Msg::Watched(old, key.clone(), WatchEvent::InitDone),
    );
    assert!(
        app.clusters[0].data.pending.contains_key(&key),
        "old generation ignored"
    );
}

#[tokio::test]
async fn a_handover_of_something_else_is_not_adopted() {
    let mut rig = rig(1, ConnectOptions::default());
    let adopt = Effect::Adopt {
        conns: vec![(kwok(), Handover::new("not a connection"))],
        scope: Scope::All,
        generation: 2,
    };
    perform(&mut rig, adopt).await;
    let runtimes = WatchKey::all(Kind::Runtime);
    perform(&mut rig, Effect::Watch(kwok(), vec![runtimes.clone()])).await;
    assert!(
        rig.events.try_recv().is_err(),
        "nothing adopted, nothing runs"
    );
    // Nor a connection handed over under another cluster's name.
    let adopt = Effect::Adopt {
        conns: vec![(
            kwok(),
            Handover::new(connection("prod", unreachable_client())),
        )],
        scope: Scope::All,
        generation: 3,
    };
    perform(&mut rig, adopt).await;
    for c in [kwok(), ClusterId::new("prod")] {
        perform(&mut rig, Effect::Watch(c, vec![runtimes.clone()])).await;
    }
    assert!(rig.events.try_recv().is_err());
}

/// The app type is what the loop drives; a fresh one asks for watches
/// first, which the interpreter starts.
#[tokio::test]
async fn the_first_effect_of_a_fresh_app_starts_its_watches() {
    let mut app = App::new("kwok-test", Scope::All, crate::fixtures::now());
    let mut rig = rig(app.session.generation, ConnectOptions::default());
    for e in app.watch_effects() {
        perform(&mut rig, e).await;
    }
    let (g, _) = first_watch(&mut rig.events);
    assert_eq!(g, crate::fixtures::origin(&app));
}
