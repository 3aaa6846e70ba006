//! The reads an admission review makes ([`Lookup`]), and the
//! implementation against the API server ([`KubeLookup`]). A trait so the
//! whole review path is unit-tested without a cluster.

use std::collections::BTreeMap;
use std::future::Future;

use berth_shared::api::Runtime;
use berth_shared::claims::Claim;
use berth_shared::decide::{self, Identity, ObservedClass};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::api::{ApiResource, ListParams, ObjectMeta};
use kube::core::DynamicObject;
use kube::{Api, Client};

use super::runtime_view::spec_of;

/// A read of a review failed (the review then refuses the change: fail
/// closed), naming what was read.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// Reading the Runtime's Namespace.
    #[error("reading namespace {name}: {source}")]
    Namespace {
        /// The Namespace.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Reading the RuntimeClass of the matching binding.
    #[error("reading RuntimeClass {name}: {source}")]
    RuntimeClass {
        /// The RuntimeClass.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Listing the Namespaces that carry an identity's labels.
    #[error("listing namespaces of {identity}: {source}")]
    Namespaces {
        /// The identity.
        identity: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Listing the Runtimes claiming an identity.
    #[error("listing Runtimes of {identity}: {source}")]
    Runtimes {
        /// The identity.
        identity: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Listing the Runtimes of one namespace (a CRD without selectable
    /// fields).
    #[error("listing Runtimes in {namespace}: {source}")]
    RuntimesIn {
        /// The namespace.
        namespace: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// The two reads a review needs.
pub trait Lookup: Send + Sync {
    /// The Namespace's labels; `Ok(None)` when it does not exist.
    fn namespace_labels(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<BTreeMap<String, String>>, LookupError>> + Send;
    /// The RuntimeClass; `Ok(None)` when it does not exist.
    fn runtime_class(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<ObservedClass>, LookupError>> + Send;
    /// Every stored Runtime claiming `identity` (in the namespaces this
    /// webhook reviews).
    fn claims(
        &self,
        identity: &Identity,
    ) -> impl Future<Output = Result<Vec<Claim>, LookupError>> + Send;
}

/// [`Lookup`] against the API server (direct GETs: a cache could miss a
/// Namespace created a moment ago and refuse a valid Runtime).
#[derive(Clone)]
pub struct KubeLookup {
    client: Client,
    scope: BTreeMap<String, String>,
}

impl KubeLookup {
    /// Reads with `client` (needs get/list on namespaces, get on
    /// runtimeclasses, list on runtimes).
    pub fn new(client: Client) -> Self {
        Self {
            client,
            scope: BTreeMap::new(),
        }
    }

    /// Counts claimants only in namespaces carrying these labels: the
    /// webhook's own namespace selector (`--webhook-namespace-label`). A
    /// webhook scoped to some namespaces judges identities among them.
    pub fn with_scope(mut self, labels: BTreeMap<String, String>) -> Self {
        self.scope = labels;
        self
    }
}

impl Lookup for KubeLookup {
    async fn namespace_labels(
        &self,
        name: &str,
    ) -> Result<Option<BTreeMap<String, String>>, LookupError> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        api.get_opt(name)
            .await
            .map(|ns| ns.map(|ns| ns.metadata.labels.unwrap_or_default()))
            .map_err(|source| LookupError::Namespace {
                name: name.to_string(),
                source,
            })
    }

    async fn runtime_class(&self, name: &str) -> Result<Option<ObservedClass>, LookupError> {
        let api: Api<RuntimeClass> = Api::all(self.client.clone());
        api.get_opt(name)
            .await
            .map(|rc| rc.as_ref().map(ObservedClass::from_runtime_class))
            .map_err(|source| LookupError::RuntimeClass {
                name: name.to_string(),
                source,
            })
    }

    async fn claims(&self, identity: &Identity) -> Result<Vec<Claim>, LookupError> {
        // Label values were validated (scope names), so they are safe in a
        // selector as they are.
        let mut selector = vec![
            format!("{}={}", decide::PROJECT_LABEL, identity.project),
            format!("{}={}", decide::ENVIRONMENT_LABEL, identity.environment),
        ];
        selector.extend(self.scope.iter().map(|(k, v)| format!("{k}={v}")));
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let in_scope: std::collections::BTreeSet<String> = namespaces
            .list_metadata(&ListParams::default().labels(&selector.join(",")))
            .await
            .map_err(|source| LookupError::Namespaces {
                identity: identity.to_string(),
                source,
            })?
            .items
            .into_iter()
            .filter_map(|ns| ns.metadata.name)
            .collect();
        if in_scope.is_empty() {
            return Ok(Vec::new());
        }
        // The CRD declares spec.application and spec.service selectable.
        let fields = format!(
            "spec.application={},spec.service={}",
            identity.application, identity.service
        );
        let runtimes: Api<Runtime> = Api::all(self.client.clone());
        let listed: Vec<ObjectMeta> = match runtimes
            .list_metadata(&ListParams::default().fields(&fields))
            .await
        {
            Ok(list) => list.items.into_iter().map(|m| m.metadata).collect(),
            // A Runtime CRD from before `selectableFields` (Helm never
            // upgrades CRDs) refuses the field selector: read the
            // namespaces in scope instead, rather than refusing every
            // Runtime change until the CRD is upgraded.
            Err(kube::Error::Api(e)) if e.code == 400 => {
                tracing::warn!(error = %e.message, "the Runtime CRD has no selectable spec.application/spec.service; listing per namespace (upgrade the CRDs)");
                self.claims_without_field_selector(&in_scope, identity)
                    .await?
            }
            Err(source) => {
                return Err(LookupError::Runtimes {
                    identity: identity.to_string(),
                    source,
                });
            }
        };
        Ok(listed
            .into_iter()
            .filter_map(|meta| {
                let namespace = meta.namespace?;
                in_scope.contains(&namespace).then(|| Claim {
                    namespace,
                    name: meta.name.unwrap_or_default(),
                    created: meta.creation_timestamp,
                    deleting: meta.deletion_timestamp.is_some(),
                })
            })
            .collect())
    }
}

impl KubeLookup {
    /// The metadata of the Runtimes with `identity`'s application and
    /// service in `namespaces`, filtered here instead of by the API server.
    async fn claims_without_field_selector(
        &self,
        namespaces: &std::collections::BTreeSet<String>,
        identity: &Identity,
    ) -> Result<Vec<ObjectMeta>, LookupError> {
        let resource = ApiResource::erase::<Runtime>(&());
        let mut out = Vec::new();
        for ns in namespaces {
            let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, &resource);
            let list = api.list(&ListParams::default()).await.map_err(|source| {
                LookupError::RuntimesIn {
                    namespace: ns.clone(),
                    source,
                }
            })?;
            out.extend(
                list.items
                    .into_iter()
                    .filter(|o| {
                        spec_of(o).is_ok_and(|v| {
                            v.application == identity.application && v.service == identity.service
                        })
                    })
                    .map(|o| o.metadata),
            );
        }
        Ok(out)
    }
}
