//! Cluster-scoped objects tests install: berth's CRDs (and any others,
//! applied idempotently and awaited until Established) and RuntimeClasses.

use std::time::Duration;

use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};

use super::waiting::wait_for;

/// Applies berth's CRDs (server-side apply, so concurrent tests and reruns
/// are idempotent) and waits until each is Established.
pub async fn install_crds(client: &Client) {
    apply_crds(client, berth_shared::api::crds(), "berth-tests").await;
}

/// Applies `crds` as field manager `manager` (server-side apply, forced:
/// idempotent across tests and reruns) and waits until each is
/// Established.
pub async fn apply_crds(
    client: &Client,
    crds: impl IntoIterator<
        Item = k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    >,
    manager: &str,
) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Patch, PatchParams};

    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        let name = crd.metadata.name.clone().expect("CRD has a name");
        api.patch(
            &name,
            &PatchParams::apply(manager).force(),
            &Patch::Apply(&crd),
        )
        .await
        .unwrap_or_else(|e| panic!("apply CRD {name}: {e}"));
        let api = api.clone();
        wait_for(
            &format!("CRD {name} Established"),
            Duration::from_secs(60),
            || {
                let api = api.clone();
                let name = name.clone();
                async move {
                    api.get_opt(&name)
                        .await
                        .ok()
                        .flatten()
                        .and_then(|c| c.status)
                        .and_then(|s| s.conditions)
                        .is_some_and(|cs| {
                            cs.iter()
                                .any(|c| c.type_ == "Established" && c.status == "True")
                        })
                }
            },
        )
        .await;
    }
}

/// Creates a RuntimeClass `name` with `handler`. RuntimeClasses are
/// cluster-scoped: tests prefix the name with their namespace.
pub async fn create_runtime_class(client: &Client, name: &str, handler: &str) {
    let rc = k8s_openapi::api::node::v1::RuntimeClass {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        handler: handler.to_string(),
        ..Default::default()
    };
    Api::<k8s_openapi::api::node::v1::RuntimeClass>::all(client.clone())
        .create(&PostParams::default(), &rc)
        .await
        .expect("create RuntimeClass");
}
