//! `berth explain [KIND/]NS/NAME [-o table|json|yaml]`: the I/O around
//! [`crate::rows::explain`]. Reads the cluster once, reads the target in
//! full (the store keeps pod templates without their scheduling fields),
//! and asks the apiserver's admission chain for its verdict with a
//! server-side dry-run: a create of an identical copy, which runs every
//! webhook and policy and stores nothing. The copy has the same name, so
//! an admitted copy ends in AlreadyExists — the admission verdict is
//! "allowed"; a denial comes back with the webhook's or policy's message.

use berth_shared::api::Runtime;
use berth_shared::explain::{Admission, Explanation};
use color_eyre::eyre::{WrapErr as _, eyre};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};

use crate::get::Format;
use crate::rows::explain::{Target, explain, json, kinds, lines};
use crate::store::Kind;
use crate::watch::{ConnectOptions, connect, load_available};

const TRIED: &str = "server-side dry-run create of an identical copy";

fn resource(kind: Kind) -> Option<ApiResource> {
    Some(match kind {
        Kind::Runtime => ApiResource::erase::<Runtime>(&()),
        Kind::Deployment => ApiResource::erase::<Deployment>(&()),
        Kind::ReplicaSet => ApiResource::erase::<ReplicaSet>(&()),
        Kind::StatefulSet => ApiResource::erase::<StatefulSet>(&()),
        Kind::DaemonSet => ApiResource::erase::<DaemonSet>(&()),
        Kind::Job => ApiResource::erase::<Job>(&()),
        Kind::CronJob => ApiResource::erase::<CronJob>(&()),
        Kind::Pod => ApiResource::erase::<Pod>(&()),
        _ => return None,
    })
}

/// The pod spec of a workload's template, or a pod's own.
fn pod_spec(kind: Kind, obj: &DynamicObject) -> Option<PodSpec> {
    let spec = obj.data.get("spec")?;
    let v = match kind {
        Kind::Pod => spec.clone(),
        Kind::CronJob => spec.pointer("/jobTemplate/spec/template/spec")?.clone(),
        _ => spec.pointer("/template/spec")?.clone(),
    };
    serde_json::from_value(v).ok()
}

/// What the admission chain says of an identical copy of `obj`.
async fn dry_run(api: &Api<DynamicObject>, obj: &DynamicObject) -> Admission {
    let mut copy = obj.clone();
    let m = &mut copy.metadata;
    m.resource_version = None;
    m.uid = None;
    m.creation_timestamp = None;
    m.deletion_timestamp = None;
    m.generation = None;
    m.managed_fields = None;
    copy.data.as_object_mut().map(|d| d.remove("status"));
    match api
        .create(
            &PostParams {
                dry_run: true,
                field_manager: None,
            },
            &copy,
        )
        .await
    {
        Ok(_) => Admission::Allowed {
            tried: TRIED.into(),
            warnings: Vec::new(),
        },
        Err(kube::Error::Api(e)) if e.code == 409 => Admission::Allowed {
            tried: format!("{TRIED} (admitted; only the name is taken)"),
            warnings: Vec::new(),
        },
        Err(kube::Error::Api(e))
            if e.message.contains("denied")
                || e.reason == "Invalid" && e.message.contains("ValidatingAdmissionPolicy") =>
        {
            Admission::Denied {
                tried: TRIED.into(),
                message: e.message.clone(),
            }
        }
        Err(e) => Admission::NotChecked {
            why: format!("the dry-run failed: {e}"),
        },
    }
}

/// Reads what explaining `target` needs and explains it.
pub async fn run(
    opts: &ConnectOptions,
    lease: &(String, String),
    target: &Target,
) -> color_eyre::Result<Explanation> {
    let conn = connect(opts).await.wrap_err("connecting to the cluster")?;
    let client: Client = conn.client.clone();
    // Only the target's namespace holds what explaining it reads (its
    // Runtime, its workloads); grants, classes, nodes and namespaces are
    // cluster-scoped and listed whole anyway.
    let scope = crate::model::Scope::Namespace(target.key.0.clone());
    let loaded = load_available(&conn, &scope, lease, &kinds())
        .await
        .wrap_err("reading from the cluster")?;
    let ar =
        resource(target.kind).ok_or_else(|| eyre!("cannot explain a {}", target.kind.label()))?;
    let api: Api<DynamicObject> = Api::namespaced_with(client, &target.key.0, &ar);
    let full = api
        .get_opt(&target.key.1)
        .await
        .wrap_err_with(|| {
            format!(
                "reading {} {}/{}",
                target.kind.label(),
                target.key.0,
                target.key.1
            )
        })?
        .ok_or_else(|| {
            eyre!(
                "{} {}/{} not found",
                target.kind.label(),
                target.key.0,
                target.key.1
            )
        })?;
    let spec = pod_spec(target.kind, &full);
    let admission = dry_run(&api, &full).await;
    let mut store = loaded.store;
    // The target itself from the full read, so that it is known even when
    // the list refused its kind.
    if let Some(o) = serde_json::to_value(&full)
        .ok()
        .and_then(|obj| object_of(target.kind, obj))
    {
        store.apply(o);
    }
    let mut e = explain(&store, target, spec.as_ref(), Some(&admission)).ok_or_else(|| {
        eyre!(
            "{} {}/{} not found",
            target.kind.label(),
            target.key.0,
            target.key.1
        )
    })?;
    for (kind, error) in &loaded.refused {
        e.message.push_str(&format!(
            "; note: cannot list {} ({}), steps that need it may be wrong",
            kind.label(),
            berth_shared::sanitize::short(error)
        ));
    }
    Ok(e)
}

fn object_of(kind: Kind, v: serde_json::Value) -> Option<crate::store::Object> {
    use crate::store::Object;
    let o: Object = match kind {
        Kind::Runtime => serde_json::from_value::<Runtime>(v).ok()?.into(),
        Kind::Deployment => serde_json::from_value::<Deployment>(v).ok()?.into(),
        Kind::ReplicaSet => serde_json::from_value::<ReplicaSet>(v).ok()?.into(),
        Kind::StatefulSet => serde_json::from_value::<StatefulSet>(v).ok()?.into(),
        Kind::DaemonSet => serde_json::from_value::<DaemonSet>(v).ok()?.into(),
        Kind::Job => serde_json::from_value::<Job>(v).ok()?.into(),
        Kind::CronJob => serde_json::from_value::<CronJob>(v).ok()?.into(),
        Kind::Pod => serde_json::from_value::<Pod>(v).ok()?.into(),
        _ => return None,
    };
    // Through the same gate as every watched object: stripped, compacted,
    // sanitized.
    crate::store::compact::compact(o).prepared()
}

/// The explanation in `fmt` (sanitized).
pub fn render(e: &Explanation, fmt: Format) -> String {
    match fmt {
        Format::Table => {
            let mut s = lines(e).join("\n");
            s.push('\n');
            s
        }
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&json(e))
                .unwrap_or_else(|err| format!("{{\"error\": \"{err}\"}}"));
            s.push('\n');
            s
        }
        Format::Yaml => {
            yaml_serde::to_string(&json(e)).unwrap_or_else(|err| format!("error: {err}\n"))
        }
    }
}
