//! One-shot reads for `berth get` and `berth plan-grants`: every kind
//! listed at once (concurrently), each in pages of [`PAGE`] objects (berth's
//! own custom resources in one: `super::lists_whole`) that are
//! reduced and sanitized as they arrive ([`crate::store::ingest::admit`]),
//! so neither the wait nor the memory grows with the number of kinds or of
//! objects more than it must.

use std::fmt::Debug;

use berth_shared::api::PendingGrantsFile;
use futures::FutureExt;
use futures::future::{BoxFuture, join_all};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::ListParams;
use kube::{Api, Client};

use super::Connection;
use crate::model::Scope;
use crate::store::ingest::admit;
use crate::store::visit::{KindFn, Watched};
use crate::store::{Kind, ObjKey, Object, Store};

/// Objects per LIST request (kubectl's default chunk size).
pub const PAGE: u32 = 500;

/// What [`load_available`] read, and the kinds the apiserver refused.
#[derive(Debug, Default)]
pub struct Loaded {
    pub store: Store,
    /// Kinds that may not be listed (403) or are not served (404), with
    /// the apiserver's message: their rows are missing, the rest is whole.
    pub refused: Vec<(Kind, String)>,
}

/// Lists every kind once into a fresh store; any error fails the whole.
pub async fn load(
    conn: &Connection,
    scope: &Scope,
    agent_lease: &ObjKey,
    kinds: &[Kind],
) -> Result<Store, kube::Error> {
    let mut store = Store::default();
    for (kind, r) in list_all(conn, scope, agent_lease, kinds, PAGE).await {
        store.replace(kind, r?);
    }
    Ok(store)
}

/// Like [`load`], but a kind the apiserver refuses (403, 404) is reported
/// in [`Loaded::refused`] instead of failing the rest; other errors
/// (unreachable, timeouts) still fail.
pub async fn load_available(
    conn: &Connection,
    scope: &Scope,
    agent_lease: &ObjKey,
    kinds: &[Kind],
) -> Result<Loaded, kube::Error> {
    load_paged(conn, scope, agent_lease, kinds, PAGE).await
}

/// [`load_available`] with `page` objects per request of the kinds read
/// in pages (tests use small pages to see that every page is read).
pub async fn load_paged(
    conn: &Connection,
    scope: &Scope,
    agent_lease: &ObjKey,
    kinds: &[Kind],
    page: u32,
) -> Result<Loaded, kube::Error> {
    let mut out = Loaded::default();
    for (kind, r) in list_all(conn, scope, agent_lease, kinds, page).await {
        match r {
            Ok(objs) => out.store.replace(kind, objs),
            Err(kube::Error::Api(s)) if matches!(s.code, 403 | 404) => {
                out.refused.push((kind, s.message.clone()));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Every kind listed concurrently, results in the order of `kinds`.
async fn list_all(
    conn: &Connection,
    scope: &Scope,
    agent_lease: &ObjKey,
    kinds: &[Kind],
    page: u32,
) -> Vec<(Kind, Result<Vec<Object>, kube::Error>)> {
    let lists = kinds
        .iter()
        .map(|&kind| async move { (kind, list_kind(conn, scope, agent_lease, kind, page).await) });
    join_all(lists).await
}

async fn list_kind(
    conn: &Connection,
    scope: &Scope,
    agent_lease: &ObjKey,
    kind: Kind,
    page: u32,
) -> Result<Vec<Object>, kube::Error> {
    let client = conn.client.clone();
    match kind {
        Kind::Lease => {
            let api = Api::<Lease>::namespaced(client, &agent_lease.0);
            Ok(match api.get_opt(&agent_lease.1).await {
                Ok(l) => l.and_then(admit).into_iter().collect(),
                // Reading the Lease is optional (RBAC may refuse it).
                Err(_) => Vec::new(),
            })
        }
        Kind::PendingGrantsFile => {
            let api = Api::<PendingGrantsFile>::all(client);
            Ok(match api.get_opt(&agent_lease.1).await {
                Ok(p) => p.and_then(admit).into_iter().collect(),
                // Optional, as the Lease: older installs lack the CRD.
                Err(_) => Vec::new(),
            })
        }
        kind => {
            let namespace = super::scope_namespace(scope);
            kind.visit(List {
                client,
                namespace,
                page: (!super::lists_whole(kind)).then_some(page),
            })
            .await
        }
    }
}

/// [`list`] for a kind's type ([`Kind::visit`]).
struct List<'a> {
    client: Client,
    namespace: Option<&'a str>,
    /// `None`: one request (`super::lists_whole`).
    page: Option<u32>,
}

impl<'a> KindFn for List<'a> {
    type Out = BoxFuture<'a, Result<Vec<Object>, kube::Error>>;
    fn call<K: Watched>(self) -> Self::Out {
        list::<K>(K::wire_api(self.client, self.namespace), self.page).boxed()
    }
}

/// Every object of `api`, page by page (or in one request: `page`
/// `None`), each parsed as `K::Wire` ([`crate::store::wire`]).
async fn list<K: Watched>(
    api: Api<K::Wire>,
    page: Option<u32>,
) -> Result<Vec<Object>, kube::Error> {
    let mut out = Vec::new();
    let mut params = ListParams {
        limit: page,
        ..ListParams::default()
    };
    loop {
        let page = api.list(&params).await?;
        out.extend(
            page.items
                .into_iter()
                .map(Into::<K>::into)
                .filter_map(admit),
        );
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(out),
        }
    }
}

/// One whole object, stripped and sanitized but not reduced (the Details
/// screen of a kind the store keeps reduced); `None` if it does not exist.
pub async fn fetch(
    client: kube::Client,
    kind: Kind,
    key: &ObjKey,
) -> Result<Option<Object>, kube::Error> {
    let (ns, name) = (key.0.as_str(), key.1.as_str());
    kind.visit(Get { client, ns, name }).await
}

/// [`get`] for a kind's type ([`Kind::visit`]).
struct Get<'a> {
    client: kube::Client,
    ns: &'a str,
    name: &'a str,
}

impl<'a> KindFn for Get<'a> {
    type Out = BoxFuture<'a, Result<Option<Object>, kube::Error>>;
    fn call<K: Watched>(self) -> Self::Out {
        get(K::api(self.client, Some(self.ns)), self.name).boxed()
    }
}

async fn get<K: Watched>(api: Api<K>, name: &str) -> Result<Option<Object>, kube::Error> {
    Ok(api.get_opt(name).await?.and_then(|o| o.into().prepared()))
}
