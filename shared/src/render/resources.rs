//! The container's resources: the team's amounts, and the contract's
//! defaults for what the spec leaves out (issue 27, point 10), so that no
//! pod runs without a memory bound or an ephemeral-storage bound and the
//! scheduler always reserves something for it.
//!
//! The rule, per resource (docs/runtime-semantics.md, "Resources"):
//! - a missing *request* is the limit when one is set (what the apiserver
//!   itself does), else the default request;
//! - a missing *limit* is the default limit, raised to the request when the
//!   request is larger (a limit below the request is invalid);
//! - CPU gets no default limit: a CPU limit throttles a service that could
//!   use an idle core, and CPU is shared fairly by requests anyway
//!   (docs/kube-score.md says why that check is ignored).
//!
//! Every quantity is rendered in canonical form (`crate::quantity`): the
//! apiserver stores that form, and anything else would differ from the
//! stored Deployment at every reconcile.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::api::{ResourceAmounts, ResourcesSpec};
use crate::quantity;

/// CPU request when the spec sets neither a CPU request nor a CPU limit.
pub const DEFAULT_CPU_REQUEST: &str = "100m";
/// Memory request when the spec sets neither a memory request nor limit.
pub const DEFAULT_MEMORY_REQUEST: &str = "256Mi";
/// Memory limit when the spec sets none (raised to the request if that is
/// larger): the same as the default request, so a pod that sets nothing
/// never uses memory the scheduler did not reserve for it.
pub const DEFAULT_MEMORY_LIMIT: &str = "256Mi";
/// Ephemeral-storage request when the spec sets neither request nor limit.
pub const DEFAULT_EPHEMERAL_STORAGE_REQUEST: &str = "256Mi";
/// Ephemeral-storage limit when the spec sets none (raised to the request
/// if that is larger): the writable `/tmp`, logs and the container layer
/// together; the kubelet evicts a pod above it.
pub const DEFAULT_EPHEMERAL_STORAGE_LIMIT: &str = "1Gi";

/// The resource names, as the container's maps key them.
const CPU: &str = "cpu";
const MEMORY: &str = "memory";
const EPHEMERAL_STORAGE: &str = "ephemeral-storage";

/// The larger of two quantities (`a` when they cannot be compared: the
/// CRD refuses a value that is not a quantity before it gets here).
fn larger(a: String, b: &str) -> String {
    match (quantity::nanos(&a), quantity::nanos(b)) {
        (Ok(x), Ok(y)) if y > x => b.to_string(),
        _ => a,
    }
}

fn canonical(q: Option<&Quantity>) -> Option<String> {
    q.map(|q| quantity::canonical_or_same(&q.0))
}

/// Request and limit of one resource; the limit is `None` only when
/// `default_limit` is.
fn pair(
    request: Option<&Quantity>,
    limit: Option<&Quantity>,
    default_request: &str,
    default_limit: Option<&str>,
) -> (String, Option<String>) {
    let limit_given = canonical(limit);
    let request = canonical(request)
        .or_else(|| limit_given.clone())
        .unwrap_or_else(|| default_request.to_string());
    let limit = limit_given.or_else(|| default_limit.map(|d| larger(d.to_string(), &request)));
    (request, limit)
}

/// The container's resources for `spec`: never empty.
pub(crate) fn requirements(spec: Option<&ResourcesSpec>) -> ResourceRequirements {
    let none = ResourceAmounts::default();
    let req = spec.and_then(|s| s.requests.as_ref()).unwrap_or(&none);
    let lim = spec.and_then(|s| s.limits.as_ref()).unwrap_or(&none);
    let mut requests = BTreeMap::new();
    let mut limits = BTreeMap::new();
    let rows = [
        (
            CPU,
            req.cpu.as_ref(),
            lim.cpu.as_ref(),
            DEFAULT_CPU_REQUEST,
            None,
        ),
        (
            MEMORY,
            req.memory.as_ref(),
            lim.memory.as_ref(),
            DEFAULT_MEMORY_REQUEST,
            Some(DEFAULT_MEMORY_LIMIT),
        ),
        (
            EPHEMERAL_STORAGE,
            req.ephemeral_storage.as_ref(),
            lim.ephemeral_storage.as_ref(),
            DEFAULT_EPHEMERAL_STORAGE_REQUEST,
            Some(DEFAULT_EPHEMERAL_STORAGE_LIMIT),
        ),
    ];
    for (name, request, limit, default_request, default_limit) in rows {
        let (request, limit) = pair(request, limit, default_request, default_limit);
        requests.insert(name.to_string(), Quantity(request));
        if let Some(limit) = limit {
            limits.insert(name.to_string(), Quantity(limit));
        }
    }
    ResourceRequirements {
        requests: Some(requests),
        limits: Some(limits),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Option<Quantity> {
        Some(Quantity(s.to_string()))
    }

    fn get(map: &Option<BTreeMap<String, Quantity>>, key: &str) -> Option<String> {
        map.as_ref().and_then(|m| m.get(key)).map(|q| q.0.clone())
    }

    #[test]
    fn nothing_given_gets_every_default() {
        let r = requirements(None);
        assert_eq!(get(&r.requests, "cpu").as_deref(), Some("100m"));
        assert_eq!(get(&r.requests, "memory").as_deref(), Some("256Mi"));
        assert_eq!(
            get(&r.requests, "ephemeral-storage").as_deref(),
            Some("256Mi")
        );
        assert_eq!(get(&r.limits, "cpu"), None, "no default CPU limit");
        assert_eq!(get(&r.limits, "memory").as_deref(), Some("256Mi"));
        assert_eq!(get(&r.limits, "ephemeral-storage").as_deref(), Some("1Gi"));
        assert_eq!(r, requirements(Some(&ResourcesSpec::default())));
    }

    #[test]
    fn defaults_are_canonical() {
        for d in [
            DEFAULT_CPU_REQUEST,
            DEFAULT_MEMORY_REQUEST,
            DEFAULT_MEMORY_LIMIT,
            DEFAULT_EPHEMERAL_STORAGE_REQUEST,
            DEFAULT_EPHEMERAL_STORAGE_LIMIT,
        ] {
            assert_eq!(quantity::canonical(d).as_deref(), Ok(d));
        }
    }

    #[test]
    fn given_amounts_win_in_canonical_form() {
        let spec = ResourcesSpec {
            requests: Some(ResourceAmounts {
                cpu: q("0.5"),
                memory: q("1024Mi"),
                ephemeral_storage: q("2048Mi"),
            }),
            limits: Some(ResourceAmounts {
                cpu: q("2"),
                memory: q("2Gi"),
                ephemeral_storage: q("4Gi"),
            }),
        };
        let r = requirements(Some(&spec));
        assert_eq!(get(&r.requests, "cpu").as_deref(), Some("500m"));
        assert_eq!(get(&r.requests, "memory").as_deref(), Some("1Gi"));
        assert_eq!(
            get(&r.requests, "ephemeral-storage").as_deref(),
            Some("2Gi")
        );
        assert_eq!(get(&r.limits, "cpu").as_deref(), Some("2"));
        assert_eq!(get(&r.limits, "memory").as_deref(), Some("2Gi"));
        assert_eq!(get(&r.limits, "ephemeral-storage").as_deref(), Some("4Gi"));
    }

    #[test]
    fn a_missing_request_is_the_limit() {
        let spec = ResourcesSpec {
            requests: None,
            limits: Some(ResourceAmounts {
                cpu: q("50m"),
                memory: q("64Mi"),
                ephemeral_storage: q("100Mi"),
            }),
        };
        let r = requirements(Some(&spec));
        assert_eq!(get(&r.requests, "cpu").as_deref(), Some("50m"));
        assert_eq!(get(&r.requests, "memory").as_deref(), Some("64Mi"));
        assert_eq!(
            get(&r.requests, "ephemeral-storage").as_deref(),
            Some("100Mi")
        );
    }

    #[test]
    fn a_default_limit_is_raised_to_a_larger_request() {
        let spec = ResourcesSpec {
            requests: Some(ResourceAmounts {
                cpu: None,
                memory: q("1.5Gi"),
                ephemeral_storage: q("3Gi"),
            }),
            limits: None,
        };
        let r = requirements(Some(&spec));
        assert_eq!(get(&r.limits, "memory").as_deref(), Some("1536Mi"));
        assert_eq!(get(&r.limits, "ephemeral-storage").as_deref(), Some("3Gi"));
        // A smaller request keeps the default limit.
        let small = ResourcesSpec {
            requests: Some(ResourceAmounts {
                cpu: None,
                memory: q("100Mi"),
                ephemeral_storage: q("10Mi"),
            }),
            limits: None,
        };
        let r = requirements(Some(&small));
        assert_eq!(get(&r.limits, "memory").as_deref(), Some("256Mi"));
        assert_eq!(get(&r.limits, "ephemeral-storage").as_deref(), Some("1Gi"));
    }
}
