//! The Service in front of the server pods' `http` port.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::ctx::{Ctx, HTTP_PORT_NAME};
use super::labels::{self, Component};

pub(crate) fn render(ctx: &Ctx<'_>) -> Service {
    let type_ = ctx
        .spec
        .expose
        .as_ref()
        .and_then(|e| e.type_)
        .unwrap_or_default();
    Service {
        metadata: ctx.meta(&ctx.names.workload, Component::Server),
        spec: Some(ServiceSpec {
            type_: Some(type_.as_str().to_string()),
            // Rendered, not left to the apiserver's default: an update that
            // leaves the policy out keeps the stored one, so a foreign
            // `PreferDualStack` could only be set back by naming the value
            // (the schema-driven adversary found it, issue 52).
            ip_family_policy: Some("SingleStack".to_string()),
            selector: Some(labels::selector(ctx.name)),
            ports: Some(vec![ServicePort {
                name: Some(HTTP_PORT_NAME.to_string()),
                port: ctx.port,
                // By name, so the Service follows the container port.
                target_port: Some(IntOrString::String(HTTP_PORT_NAME.to_string())),
                protocol: Some("TCP".to_string()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}
