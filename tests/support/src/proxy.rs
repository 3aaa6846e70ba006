//! A TCP proxy in front of the apiserver that tests can stall and cut, to
//! fault the network path of one client (the agent, the console) without
//! touching the others.
//!
//! - [`Proxy::stall`]: a partition. Nothing passes in either direction;
//!   bytes sent meanwhile are dropped, not delayed (a write sent into a
//!   partition is lost, as a real one's would eventually be, rather than
//!   arriving late). New connections are accepted and stall too.
//! - [`Proxy::restore`]: the path heals; every connection that lived
//!   through the stall is cut (its byte stream has gaps), so clients
//!   reconnect.
//! - [`Proxy::cut`]: every open connection is closed at once; new ones
//!   work.
//! - [`Proxy::refuse`] / [`Proxy::accept`]: the apiserver is unreachable
//!   for a while (every open connection cut, new ones closed at once, as
//!   when the apiserver is down), then reachable again.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct State {
    /// Connections from an older epoch are closed.
    epoch: u64,
    stalled: bool,
    /// New connections are closed at once.
    refusing: bool,
}

/// A running proxy; stops when dropped.
pub struct Proxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    state: Arc<watch::Sender<State>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(watch::Sender::new(State {
            epoch: 0,
            stalled: false,
            refusing: false,
        }));
        let accept = tokio::spawn({
            let state = state.clone();
            async move {
                while let Ok((client, _)) = listener.accept().await {
                    if state.borrow().refusing {
                        drop(client);
                        continue;
                    }
                    let state = state.clone();
                    tokio::spawn(async move {
                        let Ok(server) = TcpStream::connect(upstream).await else {
                            return;
                        };
                        connection(client, server, &state).await;
                    });
                }
            }
        });
        Ok(Self {
            addr,
            state,
            accept,
        })
    }

    /// Starts a partition (see the module docs).
    pub fn stall(&self) {
        self.state.send_modify(|s| s.stalled = true);
    }

    /// Ends a partition, cutting the connections that lived through it.
    pub fn restore(&self) {
        self.state.send_modify(|s| {
            s.stalled = false;
            s.epoch += 1;
        });
    }

    /// Closes every open connection.
    pub fn cut(&self) {
        self.state.send_modify(|s| s.epoch += 1);
    }

    /// Closes every open connection and every new one until [`Proxy::accept`].
    pub fn refuse(&self) {
        self.state.send_modify(|s| {
            s.refusing = true;
            s.epoch += 1;
        });
    }

    /// Lets connections through again after [`Proxy::refuse`].
    pub fn accept(&self) {
        self.state.send_modify(|s| s.refusing = false);
    }

    /// Writes a copy of `kubeconfig` whose server is this proxy, next to it.
    pub fn kubeconfig(&self, kubeconfig: &Path, name: &str) -> PathBuf {
        let text = std::fs::read_to_string(kubeconfig).expect("read kubeconfig");
        let out: String = text
            .lines()
            .map(|l| match l.trim().strip_prefix("server: https://") {
                Some(_) => format!("    server: https://{}\n", self.addr),
                None => format!("{l}\n"),
            })
            .collect();
        let path = kubeconfig.with_file_name(format!("kubeconfig-{name}"));
        std::fs::write(&path, out).expect("write proxied kubeconfig");
        path
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

async fn connection(client: TcpStream, server: TcpStream, state: &watch::Sender<State>) {
    let epoch = state.borrow().epoch;
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    tokio::select! {
        () = pump(cr, sw, state.subscribe(), epoch) => {}
        () = pump(sr, cw, state.subscribe(), epoch) => {}
    }
}

/// Copies `from` to `to` until either ends or the connection's epoch is over;
/// drops what arrives while stalled.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut state: watch::Receiver<State>,
    epoch: u64,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        tokio::select! {
            changed = state.changed() => {
                if changed.is_err() || state.borrow().epoch != epoch {
                    return;
                }
            }
            n = from.read(&mut buf) => {
                let n = match n {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let current = *state.borrow();
                if current.epoch != epoch {
                    return;
                }
                if current.stalled {
                    continue;
                }
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}
