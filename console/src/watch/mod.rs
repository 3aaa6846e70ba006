//! Collecting data from the cluster: a client built from the kubeconfig
//! like kubectl does, and one watcher task per kind that reduces, strips
//! and sanitizes every object ([`crate::store::ingest::admit`]) and sends
//! it to the app task. (Named `watch`, not `kube`, so that it does not shadow
//! the `kube` crate.)

mod starts;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::PathBuf;

use berth_shared::api::PendingGrantsFile;
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::config::{ExecInteractiveMode, KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;
use kube::{Api, Client, Config};
use tokio::sync::mpsc::Sender as MsgSender;
use tokio::task::JoinHandle;

mod load;

pub use load::{Loaded, PAGE, fetch, load, load_available, load_paged};

use crate::model::{Filter, Msg, Origin, Scope, WatchEvent, WatchKey};
use crate::store::ingest::admit;
use crate::store::visit::{KindFn, Watched};
use crate::store::{Kind, ObjKey};
use starts::StartsLayer;
pub use starts::WatchStarts;

/// How to connect: like kubectl's flags.
#[derive(Clone, Debug, Default)]
pub struct ConnectOptions {
    /// `--kubeconfig` (else `KUBECONFIG`, else `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
    /// `--context` (else the kubeconfig's current context).
    pub context: Option<String>,
}

impl ConnectOptions {
    /// The same kubeconfig, context `context`.
    pub fn for_context(&self, context: &str) -> ConnectOptions {
        ConnectOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: Some(context.to_string()),
        }
    }
}

/// A connected client and what the kubeconfig said.
#[derive(Clone)]
pub struct Connection {
    pub client: Client,
    /// Watch starts seen by `client` (for [`Watchers`]).
    pub starts: WatchStarts,
    /// The context in use.
    pub context: String,
    /// Every context of the kubeconfig.
    pub contexts: Vec<String>,
    /// The context's namespace (or `default`).
    pub default_namespace: String,
}

impl Connection {
    /// The cluster this connection reaches: its context.
    pub fn cluster(&self) -> crate::store::ClusterId {
        crate::store::ClusterId::new(&self.context)
    }
}

/// Errors connecting.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("reading kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error("creating client: {0}")]
    Client(#[from] kube::Error),
    #[error("the cluster of context {context} does not answer: {error}")]
    Unreachable { context: String, error: String },
}

/// Whether connecting with these options runs a credential plugin that may
/// prompt on the terminal: an `exec` user whose `interactiveMode` is not
/// `Never` gets the terminal's stdin and stderr (kube, like kubectl, treats
/// an unset mode as interactive). The TUI is suspended for those.
pub fn prompts_on_terminal(opts: &ConnectOptions) -> bool {
    let kc = match &opts.kubeconfig {
        Some(p) => Kubeconfig::read_from(p),
        None => Kubeconfig::read(),
    };
    let Ok(kc) = kc else {
        return false;
    };
    let Some(context) = opts.context.clone().or_else(|| kc.current_context.clone()) else {
        return false;
    };
    let user = kc
        .contexts
        .iter()
        .find(|c| c.name == context)
        .and_then(|c| c.context.as_ref())
        .and_then(|c| c.user.clone());
    let Some(user) = user else {
        return false;
    };
    kc.auth_infos
        .iter()
        .find(|a| a.name == user)
        .and_then(|a| a.auth_info.as_ref())
        .and_then(|a| a.exec.as_ref())
        .is_some_and(|e| e.interactive_mode != Some(ExecInteractiveMode::Never))
}

/// How long a new context may take to answer before the switch is given
/// up (an exec auth plugin runs within this too).
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// [`connect`], then one request (the apiserver version) to prove that the
/// context works — credentials, exec plugins, reachability — before the
/// console gives up the connection it has.
pub async fn connect_checked(opts: &ConnectOptions) -> Result<Connection, ConnectError> {
    match connect_answering(opts).await? {
        (conn, None) => Ok(conn),
        (conn, Some(error)) => Err(ConnectError::Unreachable {
            context: conn.context,
            error,
        }),
    }
}

/// [`connect`], then one request (the apiserver version) to see whether
/// the context works: the connection, and why it does not answer if it
/// does not (a cluster of a fleet that is down now is kept, its watches
/// retry on their own). `Err` only when no client could be made.
pub async fn connect_answering(
    opts: &ConnectOptions,
) -> Result<(Connection, Option<String>), ConnectError> {
    let conn = connect(opts).await?;
    let silent = match tokio::time::timeout(CONNECT_TIMEOUT, conn.client.apiserver_version()).await
    {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(_) => Some(format!("no answer within {}s", CONNECT_TIMEOUT.as_secs())),
    };
    Ok((conn, silent))
}

/// Every context of the kubeconfig at `path` (else `KUBECONFIG`, else
/// `~/.kube/config`), in its order (`--all-contexts`).
pub fn kubeconfig_contexts(path: Option<&std::path::Path>) -> Result<Vec<String>, ConnectError> {
    let kc = match path {
        Some(p) => Kubeconfig::read_from(p)?,
        None => Kubeconfig::read()?,
    };
    Ok(kc.contexts.iter().map(|c| c.name.clone()).collect())
}

/// Builds a client from the kubeconfig and context, like kubectl.
pub async fn connect(opts: &ConnectOptions) -> Result<Connection, ConnectError> {
    let kc = match &opts.kubeconfig {
        Some(p) => Kubeconfig::read_from(p)?,
        None => Kubeconfig::read()?,
    };
    let contexts: Vec<String> = kc.contexts.iter().map(|c| c.name.clone()).collect();
    let context = opts
        .context
        .clone()
        .or_else(|| kc.current_context.clone())
        .unwrap_or_default();
    let config = Config::from_custom_kubeconfig(
        kc,
        &KubeConfigOptions {
            context: opts.context.clone(),
            ..Default::default()
        },
    )
    .await?;
    let default_namespace = config.default_namespace.clone();
    let (client, starts) = client_from_config(config)?;
    Ok(Connection {
        client,
        starts,
        context,
        contexts,
        default_namespace,
    })
}

/// The User-Agent of every request, so that the apiserver's audit log
/// and metrics tell the console's requests from the agent's and kubectl's.
pub fn user_agent() -> String {
    format!("berth-console/{}", env!("CARGO_PKG_VERSION"))
}

/// How long one read from the apiserver may wait for bytes. kube 5 sets no
/// read timeout and speaks HTTP/1.1 without pings: a connection that goes
/// silent (a dropped NAT entry, a stalled path) would leave a watch hanging
/// forever and the console saying "connected" over data that no longer
/// changes. Every watch is ended by the server well before this
/// ([`WATCH_TIMEOUT_SECONDS`]), so only a dead connection reaches it.
pub const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(40);

/// `timeoutSeconds` of every watch: the server ends it cleanly this often,
/// inside [`READ_TIMEOUT`] even on a quiet kind, and the watcher resumes
/// from its last resourceVersion (no relist, nothing shown).
pub const WATCH_TIMEOUT_SECONDS: u32 = 30;

/// The console's client for `config`: the User-Agent, the read timeout, and
/// the layer that reports watch starts to the returned [`WatchStarts`].
pub fn client_from_config(mut config: Config) -> Result<(Client, WatchStarts), kube::Error> {
    config.read_timeout = Some(READ_TIMEOUT);
    if let Ok(agent) = http::HeaderValue::from_str(&user_agent()) {
        config.headers.push((http::header::USER_AGENT, agent));
    }
    let starts = WatchStarts::default();
    let client = berth_client::builder(config)?
        .with_layer(&StartsLayer(starts.clone()))
        .build();
    Ok((client, starts))
}

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

    #[test]
    fn only_exec_users_that_may_prompt_suspend_the_tui() {
        let kubeconfig = r#"
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: certs
  user: {client-certificate: /nonexistent}
- name: never
  user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: x, interactiveMode: Never}}
- name: if-available
  user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: x, interactiveMode: IfAvailable}}
- name: unset
  user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: x}}
contexts:
- {name: certs, context: {cluster: c, user: certs}}
- {name: never, context: {cluster: c, user: never}}
- {name: if-available, context: {cluster: c, user: if-available}}
- {name: unset, context: {cluster: c, user: unset}}
current-context: unset
"#;
        let path =
            std::env::temp_dir().join(format!("berth-console-prompts-{}.yaml", std::process::id()));
        std::fs::write(&path, kubeconfig).expect("write kubeconfig");
        let prompts = |context: Option<&str>| {
            prompts_on_terminal(&ConnectOptions {
                kubeconfig: Some(path.clone()),
                context: context.map(str::to_string),
            })
        };
        assert!(!prompts(Some("certs")));
        assert!(!prompts(Some("never")));
        assert!(prompts(Some("if-available")));
        assert!(prompts(Some("unset")));
        assert!(prompts(None), "the current context");
        assert!(!prompts(Some("missing")));
        let _ = std::fs::remove_file(&path);
    }
}
