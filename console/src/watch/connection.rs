//! Connecting to a cluster the way kubectl does: the kubeconfig and its
//! context, the console's client (its User-Agent, the layer that reports
//! watch starts, and the read and watch timeouts that keep a dead
//! connection from looking alive), and the one request that proves a
//! context answers. Kept apart from the watchers because it is what a
//! command or a context switch does once, before anything is watched, and
//! what the integration tests call on its own.

use std::path::PathBuf;

use kube::config::{ExecInteractiveMode, KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use super::starts::{StartsLayer, WatchStarts};

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

#[cfg(test)]
mod tests {
    use super::*;

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
