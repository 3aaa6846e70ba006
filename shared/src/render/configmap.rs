//! The ConfigMap holding `spec.config.env`, and its checksum.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use sha2::{Digest, Sha256};

use super::ctx::Ctx;
use super::labels::Component;

/// sha256 (hex) over the ConfigMap data. Keys and values are length-prefixed
/// so that `{"A": "BC"}` and `{"AB": "C"}` hash differently; BTreeMap order
/// makes it deterministic.
pub fn config_checksum(data: &BTreeMap<String, String>) -> String {
    let mut hasher = Sha256::new();
    for (k, v) in data {
        hasher.update((k.len() as u64).to_be_bytes());
        hasher.update(k.as_bytes());
        hasher.update((v.len() as u64).to_be_bytes());
        hasher.update(v.as_bytes());
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub(crate) fn render(ctx: &Ctx<'_>) -> ConfigMap {
    ConfigMap {
        metadata: ctx.meta(&ctx.names.config_map, Component::Server),
        // Always present, even when empty, so envFrom never points at
        // nothing.
        data: Some(ctx.config_data.clone()),
        ..Default::default()
    }
}
