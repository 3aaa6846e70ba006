//! Collecting data from the cluster: a client built from the kubeconfig
//! like kubectl does ([`connection`]), and one watcher task per kind that
//! reduces, strips and sanitizes every object
//! ([`crate::store::ingest::admit`]) and sends it to the app task. (Named
//! `watch`, not `kube`, so that it does not shadow the `kube` crate.)

mod connection;
mod load;
mod starts;

use std::collections::BTreeMap;

use berth_shared::api::PendingGrantsFile;
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::runtime::watcher;
use kube::{Api, Client};
use tokio::sync::mpsc::Sender as MsgSender;
use tokio::task::JoinHandle;

pub use connection::{
    CONNECT_TIMEOUT, ConnectError, ConnectOptions, Connection, READ_TIMEOUT, WATCH_TIMEOUT_SECONDS,
    client_from_config, connect, connect_answering, connect_checked, kubeconfig_contexts,
    prompts_on_terminal, user_agent,
};
pub use load::{Loaded, PAGE, fetch, load, load_available, load_paged};
pub use starts::WatchStarts;

use crate::model::{Filter, Msg, Origin, Scope, WatchEvent, WatchKey};
use crate::store::ingest::admit;
use crate::store::visit::{KindFn, Watched};
use crate::store::{Kind, ObjKey};

/// The running watchers of one connection (one cluster).
pub struct Watchers {
    client: Client,
    starts: WatchStarts,
    scope: Scope,
    agent_lease: ObjKey,
    tx: MsgSender<Msg>,
    origin: Origin,
    tasks: BTreeMap<WatchKey, JoinHandle<()>>,
}

impl Watchers {
    /// No watcher runs yet. Events are sent as [`Msg::Watched`] tagged
    /// with `origin` (the cluster `client` reaches, and the app's
    /// generation at connection time) into a bounded channel: a watcher
    /// waits while the app is behind (backpressure; no event is dropped,
    /// the apiserver holds the rest). `starts` must be the one of `client`
    /// ([`client_from_config`]); without it a resumed watch is only
    /// noticed at its next event.
    pub fn new(
        client: Client,
        starts: WatchStarts,
        scope: Scope,
        agent_lease: ObjKey,
        origin: Origin,
        tx: MsgSender<Msg>,
    ) -> Self {
        Self {
            client,
            starts,
            scope,
            agent_lease,
            tx,
            origin,
            tasks: BTreeMap::new(),
        }
    }

    /// Starts a watcher of the whole kind for every kind not yet watched
    /// so.
    pub fn ensure(&mut self, kinds: &[Kind]) {
        for &kind in kinds {
            self.start(WatchKey::all(kind));
        }
    }

    /// Runs exactly `keys`: starts the missing watchers, stops the others
    /// (the app has already dropped what they held and ignores their
    /// events still queued).
    pub fn sync(&mut self, keys: &[WatchKey]) {
        let wanted: std::collections::BTreeSet<&WatchKey> = keys.iter().collect();
        self.tasks.retain(|k, t| {
            let keep = wanted.contains(k);
            if !keep {
                t.abort();
            }
            keep
        });
        for k in keys {
            self.start(k.clone());
        }
    }

    fn start(&mut self, key: WatchKey) {
        if self.tasks.contains_key(&key) {
            return;
        }
        // Not awaited (the app task calls this and is the receiver): if
        // the channel is full this one is dropped, which loses nothing,
        // as the watcher's own first event is an Init too.
        let _ = self.tx.try_send(Msg::Watched(
            self.origin.clone(),
            key.clone(),
            WatchEvent::Init,
        ));
        let handle = spawn_kind(
            self.client.clone(),
            &self.starts,
            &self.scope,
            &self.agent_lease,
            &key,
            Sender {
                tx: self.tx.clone(),
                origin: self.origin.clone(),
                key: key.clone(),
            },
        );
        self.tasks.insert(key, handle);
    }

    /// Stops every watcher.
    pub fn stop(&mut self) {
        for (_, t) in std::mem::take(&mut self.tasks) {
            t.abort();
        }
    }
}

impl Drop for Watchers {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Sends one watch's events tagged with its cluster and the connection's
/// generation.
struct Sender {
    tx: MsgSender<Msg>,
    origin: Origin,
    key: WatchKey,
}

impl Sender {
    /// Waits while the channel is full (backpressure).
    async fn send(&self, ev: WatchEvent) -> Result<(), ()> {
        self.tx
            .send(Msg::Watched(self.origin.clone(), self.key.clone(), ev))
            .await
            .map_err(|_| ())
    }
}

/// The namespace a watch reads: the console's scope for the whole kind,
/// the filter's own otherwise (`None`: every namespace).
fn namespace_of<'a>(scope: &'a Scope, key: &'a WatchKey) -> Option<&'a str> {
    match &key.filter {
        Filter::All => scope_namespace(scope),
        Filter::Select { namespace, .. } => (!namespace.is_empty()).then_some(namespace),
    }
}

/// The one namespace of the console's scope, if it is one.
fn scope_namespace(scope: &Scope) -> Option<&str> {
    match scope {
        Scope::Namespace(ns) => Some(ns),
        Scope::All => None,
    }
}

/// Whether `kind` is listed in one request rather than in pages of
/// [`PAGE`]: berth's own custom resources. The apiserver serves an
/// unpaged LIST of a custom resource from its watch cache, and a paged
/// one (in v1.37, this machine) at several times the cost: on the held
/// cluster of S run 10, with no agent running, the 2,000 Runtimes (8.5 MB
/// of JSON) took 0.31 s unpaged and 1.17–1.35 s in four pages of 500
/// (0.98 s in two of 1,000; median of three each), while Deployments took
/// the same either way (0.40 s, 0.42 s). Their objects are a few kilobytes
/// each, so one page stays small next to the Pods and ReplicaSets that do
/// come in pages (10,000 Runtimes: about 42 MB of JSON while it is read).
pub fn lists_whole(kind: Kind) -> bool {
    matches!(kind, Kind::Runtime | Kind::RuntimeGrant)
}

/// The watcher's config: the selectors of a scoped watch, and one LIST
/// for the kinds that list whole ([`lists_whole`]).
fn config_of(key: &WatchKey) -> watcher::Config {
    let mut cfg = watcher::Config::default().timeout(WATCH_TIMEOUT_SECONDS);
    if lists_whole(key.kind) {
        cfg.page_size = None;
    }
    if let Filter::Select { labels, fields, .. } = &key.filter {
        if !labels.is_empty() {
            cfg = cfg.labels(labels);
        }
        if !fields.is_empty() {
            cfg = cfg.fields(fields);
        }
    }
    cfg
}

fn spawn_kind(
    client: Client,
    starts: &WatchStarts,
    scope: &Scope,
    lease: &ObjKey,
    key: &WatchKey,
    tx: Sender,
) -> JoinHandle<()> {
    let s = starts.clone();
    // Only the agent's, whatever the key says (screens ask for these
    // whole: see `Screen::watches`); the PendingGrantsFile is named after
    // the agent's Lease.
    let agents = watcher::Config::default()
        .timeout(WATCH_TIMEOUT_SECONDS)
        .fields(&format!("metadata.name={}", lease.1));
    match key.kind {
        Kind::Lease => spawn::<Lease>(Api::<Lease>::namespaced(client, &lease.0), agents, s, tx),
        Kind::PendingGrantsFile => {
            spawn::<PendingGrantsFile>(Api::<PendingGrantsFile>::all(client), agents, s, tx)
        }
        kind => kind.visit(Spawn {
            client,
            namespace: namespace_of(scope, key),
            cfg: config_of(key),
            starts: s,
            tx,
        }),
    }
}

/// [`spawn`] for a kind's type ([`Kind::visit`]).
struct Spawn<'a> {
    client: Client,
    namespace: Option<&'a str>,
    cfg: watcher::Config,
    starts: WatchStarts,
    tx: Sender,
}

impl KindFn for Spawn<'_> {
    type Out = JoinHandle<()>;
    fn call<K: Watched>(self) -> JoinHandle<()> {
        spawn::<K>(
            K::wire_api(self.client, self.namespace),
            self.cfg,
            self.starts,
            self.tx,
        )
    }
}

/// Watches `api`, each object parsed as `K::Wire` and sent on as `K`
/// ([`crate::store::wire`]).
fn spawn<K: Watched>(
    api: Api<K::Wire>,
    cfg: watcher::Config,
    starts: WatchStarts,
    tx: Sender,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        // One watcher stream for the task's life: after an error it resumes
        // from the last resourceVersion it saw and relists (Init …
        // InitDone) only when the apiserver no longer has that version
        // (410 Gone). Starting a new stream would relist every time.
        let mut started = starts.subscribe(api.resource_url());
        let mut stream = watcher(api, cfg).boxed();
        let mut delay = RETRY_MIN;
        // Since the last error, until the watch runs again.
        let mut failing = false;
        loop {
            let item = if failing {
                tokio::select! {
                    item = stream.next() => item,
                    // The resumed watch request succeeded: the watcher
                    // itself says nothing until the kind's next change.
                    changed = started.changed() => {
                        // (Err: the registry is gone, which it is not
                        // while this task holds it; stop waiting on it.)
                        failing = false;
                        delay = RETRY_MIN;
                        if changed.is_ok() && tx.send(WatchEvent::Resumed).await.is_err() {
                            return;
                        }
                        continue;
                    }
                }
            } else {
                stream.next().await
            };
            // The watcher's stream never ends.
            let Some(item) = item else {
                return;
            };
            let ev = match item {
                Ok(watcher::Event::Init) => WatchEvent::Init,
                Ok(watcher::Event::InitDone) => WatchEvent::InitDone,
                Ok(watcher::Event::InitApply(o)) => match admit::<K>(o.into()) {
                    Some(o) => WatchEvent::InitApply(o),
                    None => continue,
                },
                Ok(watcher::Event::Apply(o)) => match admit::<K>(o.into()) {
                    Some(o) => WatchEvent::Apply(o),
                    None => continue,
                },
                Ok(watcher::Event::Delete(o)) => match admit::<K>(o.into()) {
                    Some(o) => WatchEvent::Delete(o),
                    None => continue,
                },
                Err(e) => {
                    let msg = e.to_string();
                    let ev = if denied(&e) {
                        // Not a connection problem: no rights, or the API
                        // (e.g. berth's CRDs) is not installed.
                        delay = RETRY_MAX;
                        WatchEvent::Denied(msg)
                    } else {
                        WatchEvent::Error(msg)
                    };
                    if tx.send(ev).await.is_err() {
                        return;
                    }
                    // Only a watch started after this error proves recovery.
                    started.borrow_and_update();
                    failing = true;
                    // Backoff: the watcher retries when it is polled next.
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(RETRY_MAX);
                    continue;
                }
            };
            if failing {
                failing = false;
                delay = RETRY_MIN;
            }
            if tx.send(ev).await.is_err() {
                return;
            }
        }
    })
}

/// Whether the apiserver refused the request (403) or does not serve the
/// resource (404), rather than being unreachable.
fn denied(e: &watcher::Error) -> bool {
    let client_err = match e {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => e,
        watcher::Error::WatchError(s) => return matches!(s.code, 403 | 404),
        watcher::Error::NoResourceVersion => return false,
    };
    matches!(client_err, kube::Error::Api(s) if matches!(s.code, 403 | 404))
}

/// First retry after a watch error.
const RETRY_MIN: std::time::Duration = std::time::Duration::from_millis(500);
/// Longest wait between retries.
const RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(15);

#[cfg(test)]
mod tests {
    use super::*;

    /// berth's custom resources are listed in one request, everything
    /// else in pages of [`PAGE`] (kube's watcher default, checked here so
    /// that a change there shows).
    #[test]
    fn custom_resources_list_whole_and_the_rest_in_pages() {
        for kind in Kind::ALL {
            let cfg = config_of(&WatchKey::all(*kind));
            let expected = (!lists_whole(*kind)).then_some(PAGE);
            assert_eq!(cfg.page_size, expected, "{kind:?}");
        }
        assert!(lists_whole(Kind::Runtime) && lists_whole(Kind::RuntimeGrant));
        assert!(!lists_whole(Kind::Pod) && !lists_whole(Kind::ReplicaSet));
    }
}
