//! Start-up checks: each waits for one component to answer, and fails fast
//! (naming the component and its log) if the process has exited.

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ServiceAccount;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

use super::process::Component;
use super::{Error, ports};

const POLL: Duration = Duration::from_millis(250);

fn unhealthy(c: &Component, timeout: Duration, detail: String) -> Error {
    Error::Unhealthy {
        component: c.name.clone(),
        secs: timeout.as_secs(),
        detail,
        log: c.log.clone(),
    }
}

/// A client for a kubeconfig file.
pub async fn client_from_kubeconfig(path: &Path) -> Result<Client, Error> {
    let kc = Kubeconfig::read_from(path).map_err(|e| Error::Kube(e.to_string()))?;
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| Error::Kube(e.to_string()))?;
    Client::try_from(config).map_err(|e| Error::Kube(e.to_string()))
}

/// Waits until something listens on `port`.
pub async fn wait_for_port(c: &mut Component, port: u16, timeout: Duration) -> Result<(), Error> {
    let deadline = Instant::now() + timeout;
    loop {
        c.check_running()?;
        if ports::is_listening(port) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(unhealthy(
                c,
                timeout,
                format!("nothing listens on 127.0.0.1:{port}"),
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn get_text(client: &Client, path: &str) -> Result<String, kube::Error> {
    let req = http::Request::get(path)
        .body(Vec::new())
        .map_err(kube::Error::HttpError)?;
    client.request_text(req).await
}

/// Waits for the apiserver's /readyz and returns an admin client.
pub async fn wait_for_apiserver(
    c: &mut Component,
    kubeconfig: &Path,
    timeout: Duration,
) -> Result<Client, Error> {
    let client = client_from_kubeconfig(kubeconfig).await?;
    let deadline = Instant::now() + timeout;
    loop {
        c.check_running()?;
        let last = match get_text(&client, "/readyz").await {
            Ok(body) if body.trim() == "ok" => return Ok(client),
            Ok(body) => body,
            Err(e) => e.to_string(),
        };
        if Instant::now() > deadline {
            return Err(unhealthy(c, timeout, last));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits for a component's /healthz (HTTPS with its self-signed serving
/// certificate, or plain HTTP for kwok).
pub async fn wait_for_healthz(
    c: &mut Component,
    port: u16,
    https: bool,
    timeout: Duration,
) -> Result<(), Error> {
    let scheme = if https { "https" } else { "http" };
    let url = format!("{scheme}://127.0.0.1:{port}")
        .parse()
        .map_err(|e: http::uri::InvalidUri| Error::Kube(e.to_string()))?;
    let mut config = Config::new(url);
    // Loopback-only health probe of a component's own generated certificate.
    config.accept_invalid_certs = true;
    let client = Client::try_from(config).map_err(|e| Error::Kube(e.to_string()))?;
    let deadline = Instant::now() + timeout;
    loop {
        c.check_running()?;
        let last = match get_text(&client, "/healthz").await {
            Ok(body) if body.trim() == "ok" => return Ok(()),
            Ok(body) => body,
            Err(e) => e.to_string(),
        };
        if Instant::now() > deadline {
            return Err(unhealthy(c, timeout, last));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The controller-manager's ServiceAccount controller creates `default` in
/// every namespace; pods cannot be admitted before it exists.
pub async fn wait_for_default_service_account(
    client: &Client,
    components: &mut [Component],
    timeout: Duration,
) -> Result<(), Error> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let deadline = Instant::now() + timeout;
    loop {
        for c in components.iter_mut() {
            c.check_running()?;
        }
        if let Ok(Some(_)) = api.get_opt("default").await {
            return Ok(());
        }
        if Instant::now() > deadline {
            let kcm = components
                .iter()
                .find(|c| c.name == "kube-controller-manager")
                .map(|c| c.log.clone())
                .unwrap_or_default();
            return Err(Error::Unhealthy {
                component: "kube-controller-manager".into(),
                secs: timeout.as_secs(),
                detail: "the default ServiceAccount was never created".into(),
                log: kcm,
            });
        }
        tokio::time::sleep(POLL).await;
    }
}
