//! Free loopback ports for the components.

use std::net::{Ipv4Addr, TcpListener};

use super::Error;

/// Asks the kernel for `n` distinct free ports on 127.0.0.1. The listeners are
/// held until all are chosen so that the same port is never handed out twice;
/// another process may still take one before the component binds it, which
/// the start-up checks report as a port clash naming the component.
pub fn free_loopback_ports(n: usize) -> Result<Vec<u16>, Error> {
    let mut listeners = Vec::with_capacity(n);
    for _ in 0..n {
        let l =
            TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| Error::Ports(e.to_string()))?;
        listeners.push(l);
    }
    listeners
        .iter()
        .map(|l| {
            l.local_addr()
                .map(|a| a.port())
                .map_err(|e| Error::Ports(e.to_string()))
        })
        .collect()
}

/// True when something accepts TCP connections on 127.0.0.1:`port`.
pub fn is_listening(port: u16) -> bool {
    std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok()
}
