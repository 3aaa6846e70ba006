//! The Runtime's own ServiceAccount: pods never share one with another
//! service, and no API token is mounted.

use k8s_openapi::api::core::v1::ServiceAccount;

use super::ctx::Ctx;
use super::labels::Component;

pub(crate) fn render(ctx: &Ctx<'_>) -> ServiceAccount {
    ServiceAccount {
        metadata: ctx.meta(&ctx.names.workload, Component::Server),
        automount_service_account_token: Some(false),
        ..Default::default()
    }
}
