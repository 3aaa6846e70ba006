//! A fresh namespace per test, so that tests sharing one cluster never see
//! each other's objects.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};

use super::clients::admin_client;
use super::waiting::wait_for;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A fresh namespace for one test, with an admin client.
#[derive(Clone)]
pub struct TestNamespace {
    pub client: Client,
    pub name: String,
}

impl TestNamespace {
    /// Creates `PREFIX-<pid>-<n>` and waits for its default ServiceAccount
    /// (pods are refused before it exists).
    pub async fn new(prefix: &str) -> Self {
        Self::with_labels(prefix, &[]).await
    }

    /// Like [`TestNamespace::new`], with extra namespace labels (for example
    /// berth's identity labels).
    pub async fn with_labels(prefix: &str, labels: &[(&str, &str)]) -> Self {
        let client = admin_client().await;
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let name = format!("{prefix}-{}-{n}", std::process::id());
        Self::create(client, name, labels).await
    }

    /// Creates namespace `name` with these labels through `client` (for
    /// example a private cluster's) and waits for its default
    /// ServiceAccount.
    pub async fn create(client: Client, name: String, labels: &[(&str, &str)]) -> Self {
        let mut all =
            std::collections::BTreeMap::from([("berth.dev/test".to_string(), "true".to_string())]);
        for (k, v) in labels {
            all.insert((*k).to_string(), (*v).to_string());
        }
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(all),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("create test namespace");
        let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &name);
        wait_for("default ServiceAccount", Duration::from_secs(60), || {
            let sas = sas.clone();
            async move { matches!(sas.get_opt("default").await, Ok(Some(_))) }
        })
        .await;
        Self { client, name }
    }
}
