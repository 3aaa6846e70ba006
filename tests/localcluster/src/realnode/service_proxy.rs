//! The one Service a pod on a real node can reach: `kubernetes`, the API
//! server, at its ClusterIP. A pod's in-cluster client (the agent's, as
//! shipped) dials `KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT`, which
//! the kubelet sets to that Service's ClusterIP (10.96.0.1:443). There is
//! no kube-proxy here, and there must not be: it would write iptables rules
//! on this shared machine. Instead, without a rule or IP forwarding:
//! - the node's bridge also carries 10.96.0.1/32 (`host::create_bridge`), so
//!   that address is this machine's own and a packet to it is delivered
//!   locally, not forwarded;
//! - the CNI network gives each pod a route to 10.96.0.1/32 through the
//!   bridge's address (`config::cni`), the only route besides its subnet;
//! - this proxy, a task of `berth-localcluster up`, listens on
//!   10.96.0.1:443 and copies bytes to the API server on loopback. It does
//!   not terminate TLS: the pod talks to the API server itself, whose
//!   certificate names 10.96.0.1 (`pki`), as a real cluster's does.
//!
//! Every other Service stays unreachable from pods, as before; the API
//! server reaches a Service's pods (webhooks) by `--enable-aggregator-routing`
//! (docs/local-cluster.md, "Real node").

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::Error;

pub use crate::pki::KUBERNETES_SERVICE_IP;

/// The `kubernetes` Service's port.
pub const KUBERNETES_SERVICE_PORT: u16 = 443;

/// Listens on 10.96.0.1:443 (the address must already be on a bridge) and
/// forwards every connection to the API server at `apiserver`; the task
/// runs until aborted.
pub async fn start(apiserver: SocketAddr) -> Result<JoinHandle<()>, Error> {
    let listen = SocketAddr::from((KUBERNETES_SERVICE_IP, KUBERNETES_SERVICE_PORT));
    let listener = TcpListener::bind(listen).await.map_err(|e| Error::Start {
        component: "kubernetes-service-proxy".into(),
        detail: format!("listening on {listen}: {e}"),
        log: std::path::PathBuf::from(super::host::HOST_DIR),
    })?;
    Ok(tokio::spawn(async move {
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                // A connection the API server refuses (it is restarting)
                // is closed; the pod's client retries as it would anywhere.
                if let Ok(mut outbound) = TcpStream::connect(apiserver).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    }))
}

/// The API server's address from its URL (`https://127.0.0.1:PORT`).
pub fn apiserver_addr(server: &str) -> Result<SocketAddr, Error> {
    server
        .strip_prefix("https://")
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| Error::Start {
            component: "kubernetes-service-proxy".into(),
            detail: format!("no address in the API server's URL {server}"),
            log: std::path::PathBuf::from(super::host::HOST_DIR),
        })
}
